"""MuJoCo's collision as the oracle for sodyn's narrow phase: two geoms, each on a free body
(or the first one a plane on the world), placed at given world poses, and the contacts that
``mj_collision`` reports for them, with normals oriented from the first geom to the second."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

MJ_TYPES = {"plane": 0, "sphere": 2, "capsule": 3, "ellipsoid": 4, "cylinder": 5, "box": 6}


class OracleContact(NamedTuple):
    distance: float
    position: np.ndarray      # (3,) world
    normal: np.ndarray        # (3,) world, from the first geom to the second


def _size(type_: str, size) -> str:
    s = np.asarray(size, float)
    n = {"plane": 3, "sphere": 1, "capsule": 2, "ellipsoid": 3, "cylinder": 2, "box": 3}[type_]
    if type_ == "plane":
        s = np.array([0.0, 0.0, 1.0]) if not np.any(s) else s
    return " ".join(repr(float(x)) for x in s[:n])


class PairOracle:
    """``PairOracle(type1, size1, type2, size2, margin=0.0)``; ``oracle(pose1, pose2)`` returns the
    list of :class:`OracleContact` for the two geoms at world poses ``(R (3, 3), p (3,))``.

    ``margin`` and ``gap`` are each geom's: MuJoCo adds the two geoms' values, so the pair is
    tested at ``2 margin``.  A plane must be the first geom; it sits on the world and only ``pose2`` relative to
    ``pose1`` matters (the second geom is placed at ``pose1⁻¹ pose2`` and the contacts mapped
    back).  GJK/EPA runs to ``ccd_tolerance = 1e-12`` with 10000 iterations."""

    def __init__(self, type1: str, size1, type2: str, size2, margin: float = 0.0, gap: float = 0.0):
        import mujoco

        self.mujoco = mujoco
        self.plane = type1 == "plane"
        if type2 == "plane":
            raise ValueError("a plane must be the first geom")
        attrs = f'margin="{margin!r}" gap="{gap!r}" contype="1" conaffinity="1" condim="3"'
        first = (f'<geom name="g1" type="plane" size="{_size(type1, size1)}" {attrs}/>' if self.plane else
                 f'<body name="b1"><freejoint/><geom name="g1" type="{type1}" size="{_size(type1, size1)}" '
                 f'{attrs}/></body>')
        xml = f"""<mujoco><option ccd_tolerance="1e-12" ccd_iterations="10000"><flag gravity="disable"/></option>
        <worldbody>{first}<body name="b2"><freejoint/><geom name="g2" type="{type2}" size="{_size(type2, size2)}"
        {attrs}/></body></worldbody></mujoco>"""
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        self.g1 = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, "g1")

    def __call__(self, pose1, pose2) -> list[OracleContact]:
        mj = self.mujoco
        r1, p1 = (np.asarray(x, float) for x in pose1)
        r2, p2 = (np.asarray(x, float) for x in pose2)
        if self.plane:   # the plane stays at the identity; the second geom moves relative to it
            r2, p2 = r1.T @ r2, r1.T @ (p2 - p1)
        qpos = []
        for r, p in ([] if self.plane else [(r1, p1)]) + [(r2, p2)]:
            quat = np.zeros(4)
            mj.mju_mat2Quat(quat, r.reshape(-1))
            qpos += [p, quat]
        self.data.qpos[:] = np.concatenate(qpos)
        mj.mj_kinematics(self.model, self.data)
        mj.mj_collision(self.model, self.data)
        out = []
        for c in self.data.contact[: self.data.ncon]:
            n = np.array(c.frame[:3])
            pos = np.array(c.pos)
            if c.geom1 != self.g1:
                n = -n
            if self.plane:
                n, pos = r1 @ n, p1 + r1 @ pos
            out.append(OracleContact(float(c.dist), pos, n))
        return out


def deepest(contacts: list[OracleContact]) -> OracleContact | None:
    """The contact of minimum signed distance (``None`` for no contact)."""
    return min(contacts, key=lambda c: c.distance) if contacts else None
