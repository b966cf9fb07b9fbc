"""Benchmark models: the same robot for sodyn, Pinocchio and MuJoCo/MJX.

Robots come from the ``example-robot-data`` share folder (installed with the wheel, no
Python module).  Chains are ``sodyn.models.pendulum_chain(N)``; the Pinocchio and MJCF
versions are built here with the same parameters (and checked against sodyn in the harness).
"""

from __future__ import annotations

import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

import numpy as np

CHAIN_LENGTH = 0.3
CHAIN_MASS = 1.0
CHAIN_RADIUS = 0.02


def robots_dir() -> str:
    """The ``example-robot-data`` robots folder: ``$SODYN_ROBOTS_DIR`` if set (a copy of the
    URDFs, e.g. on a machine without the package), else the installed package's."""
    if os.environ.get("SODYN_ROBOTS_DIR"):
        return os.environ["SODYN_ROBOTS_DIR"]
    cands = []
    for base in sys.path + [sys.prefix]:
        cands += glob.glob(os.path.join(base, "cmeel.prefix", "share", "example-robot-data", "robots"))
    cands += glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "cmeel.prefix",
                                    "share", "example-robot-data", "robots"))
    if not cands:
        raise FileNotFoundError("example-robot-data robots folder not found (pip install example-robot-data)")
    return cands[0]


# name -> (relative urdf path, floating base, end-effector frame for Λ)
ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", False, "panda_hand"),
    "solo12": ("solo_description/robots/solo12.urdf", True, "FL_FOOT"),
    "talos": ("talos_data/robots/talos_full_v2.urdf", True, "gripper_left_base_link"),
}


def is_chain(name: str) -> bool:
    return name.startswith("chain")


def chain_n(name: str) -> int:
    return int(name[len("chain"):])


def urdf_path(name: str) -> str:
    return os.path.join(robots_dir(), ROBOTS[name][0])


def ee_frame(name: str) -> str:
    return "tip" if is_chain(name) else ROBOTS[name][2]


def floating(name: str) -> bool:
    return False if is_chain(name) else ROBOTS[name][1]


def _rod_inertia(mass, length, radius=CHAIN_RADIUS):
    ixx = mass * (3 * radius**2 + length**2) / 12.0
    return np.diag([ixx, ixx, 0.5 * mass * radius**2])


def pin_chain(n: int):
    """Pinocchio model equal to ``sodyn.models.pendulum_chain(n)`` (joints about y)."""
    import pinocchio as pin

    m = pin.Model()
    m.name = f"chain{n}"
    parent = 0
    inertia = pin.Inertia(CHAIN_MASS, np.array([0.0, 0.0, -CHAIN_LENGTH / 2]), _rod_inertia(CHAIN_MASS, CHAIN_LENGTH))
    for i in range(n):
        placement = pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.0 if i == 0 else -CHAIN_LENGTH]))
        jid = m.addJoint(parent, pin.JointModelRY(), placement, f"joint{i}")
        m.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        parent = jid
    m.addFrame(pin.Frame("tip", parent, pin.SE3(np.eye(3), np.array([0.0, 0.0, -CHAIN_LENGTH])),
                         pin.FrameType.OP_FRAME))
    return m


def pin_model(name: str):
    import pinocchio as pin

    if is_chain(name):
        return pin_chain(chain_n(name))
    path = urdf_path(name)
    if floating(name):
        return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(path)


def sodyn_model(name: str, pm=None):
    if is_chain(name):
        from sodyn.models import pendulum_chain

        return pendulum_chain(chain_n(name), length=CHAIN_LENGTH, mass=CHAIN_MASS)
    from sodyn.io import from_pinocchio

    return from_pinocchio(pm if pm is not None else pin_model(name))


def chain_mjcf(n: int) -> str:
    ixx, _, izz = np.diag(_rod_inertia(CHAIN_MASS, CHAIN_LENGTH))
    body = ""
    for i in reversed(range(n)):
        pos = "0 0 0" if i == 0 else f"0 0 {-CHAIN_LENGTH}"
        body = (f'<body name="link{i}" pos="{pos}"><joint name="joint{i}" type="hinge" axis="0 1 0"/>'
                f'<inertial pos="0 0 {-CHAIN_LENGTH / 2}" mass="{CHAIN_MASS}" diaginertia="{ixx} {ixx} {izz}"/>'
                f"{body}</body>")
    return f'<mujoco model="chain{n}"><option gravity="0 0 -9.81"/><worldbody>{body}</worldbody></mujoco>'


def _strip_urdf(text: str) -> str:
    text = re.sub(r"<visual\b.*?</visual>", "", text, flags=re.S)
    text = re.sub(r"<collision\b.*?</collision>", "", text, flags=re.S)
    return text


def mujoco_model(name: str):
    """``mujoco.MjModel`` with constraints and contacts disabled (smooth dynamics only)."""
    import mujoco

    if is_chain(name):
        m = mujoco.MjModel.from_xml_string(chain_mjcf(chain_n(name)))
    else:
        with open(urdf_path(name)) as f:
            text = _strip_urdf(f.read())
        if floating(name):
            # URDF "floating" joint from a dummy root: MuJoCo imports it as a free joint
            root = ET.fromstring(text)
            children = {j.find("child").get("link") for j in root.findall("joint")}
            base = next(lk.get("name") for lk in root.findall("link") if lk.get("name") not in children)
            root.append(ET.Element("link", {"name": "mjx_world"}))
            j = ET.SubElement(root, "joint", {"name": "root", "type": "floating"})
            ET.SubElement(j, "parent", {"link": "mjx_world"})
            ET.SubElement(j, "child", {"link": base})
            text = ET.tostring(root, encoding="unicode")
        m = mujoco.MjModel.from_xml_string(text)
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT) | int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    return m


def mujoco_on_spheres(name: str, spheres, radius: float, kp: float, kv: float, dt: float, iterations: int,
                      ls_iterations: int):
    """``mujoco.MjModel`` of a floating robot's URDF without meshes (a free joint on the base)
    with a floor plane, contact spheres ``spheres = [(link, position in the link), ...]`` of
    ``radius`` (they collide with the plane only, not with each other) and ``<position>``-like
    servos ``kp``, ``kv`` on every other joint; Newton's ``iterations`` / ``ls_iterations``."""
    import mujoco

    with open(urdf_path(name)) as f:
        root = ET.fromstring(_strip_urdf(f.read()))
    children = {j.find("child").get("link") for j in root.findall("joint")}
    base = next(lk.get("name") for lk in root.findall("link") if lk.get("name") not in children)
    for e in root.findall("mujoco"):
        root.remove(e)
    mj = ET.SubElement(root, "mujoco")
    ET.SubElement(mj, "compiler", discardvisual="true", fusestatic="false")  # keeps the feet's links
    spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
    spec.body(base).add_freejoint(name="root")
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], contype=0,
                            conaffinity=1)
    for i, (link, pos) in enumerate(spheres):
        spec.body(link).add_geom(name=f"sphere{i}", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[radius, 0, 0],
                                 pos=list(pos), contype=1, conaffinity=0, mass=0)
    for j in spec.joints:
        if j.name == "root":
            continue
        a = spec.add_actuator(name=j.name, target=j.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        a.gaintype, a.biastype = mujoco.mjtGain.mjGAIN_FIXED, mujoco.mjtBias.mjBIAS_AFFINE
        a.gainprm[0] = kp
        a.biasprm[0], a.biasprm[1], a.biasprm[2] = 0.0, -kp, -kv
    m = spec.compile()
    m.opt.timestep = dt
    m.opt.iterations = iterations
    m.opt.ls_iterations = ls_iterations
    return m
