"""The real robots of the oracle suites, found in ``example-robot-data`` by :mod:`sodyn.io.robot_data`."""

from __future__ import annotations

import pathlib

#: Real robots used by the oracle suites: name -> (URDF path under robots/, floating base).
#: example-robot-data ships no KUKA iiwa: the xArm7 (another 7-dof arm) stands in for it.
ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", False),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "anymal_b": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "go1": ("go1_description/urdf/go1.urdf", True),
    "a1": ("a1_description/urdf/a1.urdf", True),
    "talos_full": ("talos_data/robots/talos_full_v2.urdf", True),
    "allegro": ("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    "baxter": ("baxter_description/urdf/baxter.urdf", False),
    "double_pendulum_continuous": ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", False),
    "kinova": ("kinova_description/robots/kinova.urdf", False),
}


def robots_dir() -> pathlib.Path | None:
    """``<share>/example-robot-data/robots`` (:func:`sodyn.io.robot_data.example_robot_data_share`),
    or ``None`` when example-robot-data is not installed."""
    from sodyn.io.robot_data import example_robot_data_share

    share = example_robot_data_share()
    return None if share is None else share / "example-robot-data" / "robots"


def robot_path(name: str) -> pathlib.Path:
    """Path of a robot's URDF (found by :func:`sodyn.example_robot`); skips the calling test
    when example-robot-data is missing."""
    import pytest

    import sodyn

    if robots_dir() is None:
        pytest.skip("example-robot-data is not installed")
    return sodyn.example_robot(ROBOTS[name][0]).urdf


#: Robots MuJoCo 3.17 refuses to compile from their URDF (it rejects rotational inertias that
#: violate the triangle inequality, which Pinocchio and sodyn accept with a warning).
MUJOCO_REJECTS = {
    "anymal_b": "base inertia violates the triangle inequality ('inertia must have positive eigenvalues')",
    "go1": "base inertia violates the triangle inequality ('inertia must have positive eigenvalues')",
    "allegro": "link_3.0 inertia violates A + B >= C",
}


def urdf_for_mujoco(path) -> str:
    """The URDF text without <visual>/<collision> (meshes) and with a MuJoCo compiler block
    that keeps static links as bodies (``fusestatic="false"``)."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    for e in root.findall("mujoco"):
        root.remove(e)
    mj = ET.SubElement(root, "mujoco")
    ET.SubElement(mj, "compiler", discardvisual="true", fusestatic="false")
    return ET.tostring(root, encoding="unicode")


def all_urdfs() -> list[str]:
    """Every URDF shipped by example-robot-data, relative to :func:`robots_dir` (sorted)."""
    d = robots_dir()
    return [] if d is None else sorted(str(p.relative_to(d)) for p in d.rglob("*.urdf"))


def random_q(model, rng):
    """A random configuration drawn in NumPy (cheaper than compiling random_configuration):
    uniform within the limits intersected with [-π, π] for one-dof joints, random unit
    quaternions and positions in [-1, 1] for free and spherical joints."""
    import numpy as np

    q = np.array(model.q_neutral)
    lo, hi = np.asarray(model.lower_limit), np.asarray(model.upper_limit)
    for name, t in zip(model.joint_names, model.joint_types, strict=True):
        s = model.joint_q_slice(name)
        if t in ("free", "spherical"):
            quat = rng.normal(size=4)
            q[s] = np.concatenate([rng.uniform(-1, 1, 3), quat / np.linalg.norm(quat)])[-(s.stop - s.start):]
        elif t == "planar":
            q[s] = rng.uniform(-1, 1, 3)
        else:
            low, high = max(lo[s.start], -np.pi), min(hi[s.start], np.pi)
            q[s] = rng.uniform(low, high) if low <= high else lo[s.start]
    return q


def random_mujoco_state(mj, rng):
    """A random ``(qpos, qvel, qacc)`` of a compiled MuJoCo model: random unit quaternions (and
    normal positions) for free and ball joints, ``[-1, 1]`` for the others, normal velocities
    and accelerations."""
    import mujoco
    import numpy as np

    qpos = np.array(mj.qpos0)
    for j in range(mj.njnt):
        a, t = mj.jnt_qposadr[j], mj.jnt_type[j]
        if t == mujoco.mjtJoint.mjJNT_FREE:
            quat = rng.normal(size=4)
            qpos[a: a + 7] = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])
        elif t == mujoco.mjtJoint.mjJNT_BALL:
            quat = rng.normal(size=4)
            qpos[a: a + 4] = quat / np.linalg.norm(quat)
        else:
            qpos[a] = rng.uniform(-1, 1)
    return qpos, rng.normal(size=mj.nv), rng.normal(size=mj.nv)
