"""Built-in models: pendulum chains, double pendulum, cart-pole, the CDI satellite, and a
humanoid-like tree.  All dimensions are SI."""

from __future__ import annotations

import numpy as np

from sodyn.joints import JointSpec
from sodyn.model import Model
from sodyn.model_builder import ModelBuilder


def _rod_inertia(mass: float, length: float, radius: float = 0.02) -> np.ndarray:
    """Solid cylinder along z about its centre."""
    ixx = mass * (3 * radius**2 + length**2) / 12.0
    return np.diag([ixx, ixx, 0.5 * mass * radius**2])


def pendulum_chain(n: int = 7, length: float = 0.3, mass: float = 1.0, axis=(0.0, 1.0, 0.0),
                   damping: float = 0.0) -> Model:
    """A serial chain of ``n`` identical rods hanging along −z, joints about ``axis``."""
    if n < 1:
        raise ValueError(f"pendulum_chain needs n >= 1, got {n}")
    b = ModelBuilder(name=f"pendulum_chain_{n}")
    for i in range(n):
        b.add_body(
            f"link{i}", None if i == 0 else f"link{i - 1}", JointSpec.revolute(axis),
            translation=(0.0, 0.0, 0.0 if i == 0 else -length), mass=mass,
            com=(0.0, 0.0, -length / 2), inertia=_rod_inertia(mass, length), joint_name=f"joint{i}",
            damping=damping,
        )
    b.add_frame("tip", f"link{n - 1}", translation=(0.0, 0.0, -length))
    return b.build()


def double_pendulum(m1=1.0, m2=1.0, l1=1.0, c1=0.5, c2=0.5, ix1=1 / 12, ix2=1 / 12) -> Model:
    """The CDI double pendulum (Example 2): both joints about x, links along −z at zero."""
    b = ModelBuilder(name="double_pendulum")
    b.add_body("link1", None, JointSpec.revolute((1, 0, 0)), mass=m1, com=(0, 0, -c1),
               inertia=np.diag([ix1, ix1, ix1]), joint_name="joint1")
    b.add_body("link2", "link1", JointSpec.revolute((1, 0, 0)), translation=(0, 0, -l1), mass=m2,
               com=(0, 0, -c2), inertia=np.diag([ix2, ix2, ix2]), joint_name="joint2")
    b.add_frame("tip", "link2", translation=(0, 0, -2 * c2))
    return b.build()


def cart_pole(cart_mass=1.0, pole_mass=0.1, pole_length=1.0) -> Model:
    """A cart sliding along x with a pole hinged about y (upright at ``θ = 0``)."""
    b = ModelBuilder(name="cart_pole")
    b.add_body("cart", None, JointSpec.prismatic((1, 0, 0)), mass=cart_mass,
               inertia=np.diag([0.01, 0.01, 0.01]), joint_name="slider")
    b.add_body("pole", "cart", JointSpec.revolute((0, 1, 0)), mass=pole_mass,
               com=(0, 0, pole_length / 2), inertia=_rod_inertia(pole_mass, pole_length), joint_name="hinge")
    b.add_frame("pole_tip", "pole", translation=(0, 0, pole_length))
    return b.build()


def cdi_satellite() -> Model:
    """The CDI satellite with two solar arrays (Example 3): free base, two hinges about x."""
    b = ModelBuilder(name="cdi_satellite", gravity=(0.0, 0.0, 0.0))
    b.add_body("bus", None, JointSpec.free(), mass=100.0, inertia=np.diag([10.0, 20.0, 30.0]),
               joint_name="base")
    for name, side in (("array1", 1.0), ("array2", -1.0)):
        b.add_body(name, "bus", JointSpec.revolute((1, 0, 0)), translation=(0, side * 1.0, 0.2),
                   mass=5.0, com=(0, side * 1.5, 0), inertia=np.diag([1.0, 0.2, 1.2]),
                   joint_name=f"{name}_hinge")
    return b.build()


def alexiou_chain(mass: float = 1.0, length: float = 1.0) -> Model:
    """Alexiou's planar two-link chain (ALX §3.4): uniform links of ``length`` along x, joints
    about z, centres of mass at ``length/2``, ``I_zz = m L²/12``, no gravity.  Frames: ``tip`` at
    the end of link 2, and ``origin_on_link2``, which sits on the world origin at ``q = 0``
    (where ALX expresses its twists)."""
    b = ModelBuilder(gravity=(0.0, 0.0, 0.0), name="alexiou_chain")
    inertia = np.diag([1e-3, mass * length**2 / 12, mass * length**2 / 12])
    b.add_body("link1", None, JointSpec.revolute((0, 0, 1)), mass=mass, com=(length / 2, 0, 0), inertia=inertia)
    b.add_body("link2", "link1", JointSpec.revolute((0, 0, 1)), translation=(length, 0, 0), mass=mass,
               com=(length / 2, 0, 0), inertia=inertia)
    b.add_frame("tip", "link2", translation=(length, 0, 0))
    b.add_frame("origin_on_link2", "link2", translation=(-length, 0, 0))
    return b.build()


def humanoid_like(floating_base: bool = True) -> Model:
    """A 29-dof humanoid-like tree: a free pelvis (6 dof), a 1-dof torso hinge, two 6-dof legs,
    two 4-dof arms on the torso and a 2-dof head on it (every joint but the pelvis's a hinge)."""
    b = ModelBuilder(name="humanoid_like")
    b.add_body("pelvis", None, JointSpec.free() if floating_base else JointSpec.fixed(), mass=8.0,
               inertia=np.diag([0.1, 0.08, 0.1]), joint_name="root")
    if not floating_base:
        raise ValueError("humanoid_like needs floating_base=True (the pelvis is its only root)")

    def chain(prefix, parent, offset, axes, lengths, masses):
        prev = parent
        for i, (ax, ln, m) in enumerate(zip(axes, lengths, masses)):
            name = f"{prefix}_{i}"
            b.add_body(name, prev, JointSpec.revolute(ax), translation=offset if i == 0 else (0, 0, -lengths[i - 1]),
                       mass=m, com=(0, 0, -ln / 2), inertia=_rod_inertia(m, max(ln, 0.05), 0.04),
                       joint_name=f"{prefix}_joint{i}")
            prev = name
        return prev

    x, y, z = (1, 0, 0), (0, 1, 0), (0, 0, 1)
    for side, s in (("left", 1), ("right", -1)):
        chain(f"{side}_leg", "pelvis", (0, s * 0.1, -0.1), [z, x, y, y, y, x],
              [0.0, 0.0, 0.4, 0.4, 0.0, 0.05], [1.0, 1.0, 4.0, 3.0, 0.5, 1.0])
    b.add_body("torso", "pelvis", JointSpec.revolute(z), translation=(0, 0, 0.1), mass=10.0,
               com=(0, 0, 0.2), inertia=np.diag([0.3, 0.3, 0.1]), joint_name="torso_joint")
    for side, s in (("left", 1), ("right", -1)):
        chain(f"{side}_arm", "torso", (0, s * 0.2, 0.4), [y, x, z, y], [0.0, 0.3, 0.0, 0.3],
              [0.5, 2.0, 0.5, 1.0])
    chain("head", "torso", (0, 0, 0.5), [z, y], [0.0, 0.2], [0.5, 2.0])
    return b.build()
