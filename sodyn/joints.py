"""Joint types: configuration spaces, joint transforms and motion subspaces ``H*``.

Every joint belongs to one *kernel*, the code path used inside the level recursions:

=========  =========================================  ====  ====  ==========================
kernel     joint types                                nq    nv    motion subspace ``H*``
=========  =========================================  ====  ====  ==========================
hinge      revolute, continuous, prismatic, helical   1     1     ``h = [ρ a; τ a]`` (6-vector)
spherical  spherical (quaternion ``[w,x,y,z]``)       4     3     ``[I₃; 0]``
planar     planar ``(x, y, θ)`` in the joint xy-plane  3     3     ``[e_z | e_vx | e_vy]``
free       free (6-dof base): ``[p (3), quat (4)]``    7     6     ``I₆``
=========  =========================================  ====  ====  ==========================

``H*`` is expressed in the child (outboard) frame and is constant there, so the joint
contributes no ``Ḣ*`` term to the Coriolis acceleration (Jain eq. 5.15).  For hinges,
``ρ = 1`` for rotation (``0`` for prismatic) and ``τ`` is ``0`` (revolute), ``1``
(prismatic) or the helical pitch (metres per radian).  Velocities of multi-dof joints are
expressed in the child frame: ``ω`` for spherical, ``[ω; v]`` for free, ``[v_x, v_y, ω_z]``
for planar (the order Pinocchio uses).  Fixed joints are merged into their parent at model
compile time and never reach the recursions.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from sodyn import spatial
from sodyn.runtime.trig import sincos

JointType = Literal[
    "revolute", "continuous", "prismatic", "helical", "spherical", "free", "planar", "fixed"
]
JOINT_TYPES: tuple[str, ...] = (
    "revolute", "continuous", "prismatic", "helical", "spherical", "free", "planar", "fixed",
)
#: Kernel of each joint type, see the module docstring.
KERNEL_OF: dict[str, str] = {
    "revolute": "hinge",
    "continuous": "hinge",
    "prismatic": "hinge",
    "helical": "hinge",
    "spherical": "spherical",
    "planar": "planar",
    "free": "free",
}
#: Kernels in the order of their slots inside a level (multi-dof first).
KERNELS: tuple[str, ...] = ("free", "spherical", "planar", "hinge")
NQ: dict[str, int] = {"hinge": 1, "spherical": 4, "planar": 3, "free": 7, "fixed": 0}
NV: dict[str, int] = {"hinge": 1, "spherical": 3, "planar": 3, "free": 6, "fixed": 0}


def nq_of(joint_type: str) -> int:
    """Number of configuration coordinates of a joint type."""
    return NQ[KERNEL_OF.get(joint_type, "fixed")]


def nv_of(joint_type: str) -> int:
    """Number of velocity coordinates (degrees of freedom) of a joint type."""
    return NV[KERNEL_OF.get(joint_type, "fixed")]


@dataclasses.dataclass(frozen=True)
class JointSpec:
    """A joint between a body and its parent, as given to :class:`sodyn.ModelBuilder`.

    ``axis`` is used by hinge joints (revolute, continuous, prismatic, helical) and is
    normalised when the model is built; ``pitch`` is the helical lead in metres per radian.
    """

    type: str = "revolute"
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    pitch: float = 0.0

    @staticmethod
    def revolute(axis=(0.0, 0.0, 1.0)) -> "JointSpec":
        return JointSpec("revolute", tuple(float(a) for a in axis))

    @staticmethod
    def continuous(axis=(0.0, 0.0, 1.0)) -> "JointSpec":
        return JointSpec("continuous", tuple(float(a) for a in axis))

    @staticmethod
    def prismatic(axis=(0.0, 0.0, 1.0)) -> "JointSpec":
        return JointSpec("prismatic", tuple(float(a) for a in axis))

    @staticmethod
    def helical(axis=(0.0, 0.0, 1.0), pitch: float = 0.0) -> "JointSpec":
        return JointSpec("helical", tuple(float(a) for a in axis), float(pitch))

    @staticmethod
    def spherical() -> "JointSpec":
        return JointSpec("spherical")

    @staticmethod
    def free() -> "JointSpec":
        return JointSpec("free")

    @staticmethod
    def planar() -> "JointSpec":
        return JointSpec("planar")

    @staticmethod
    def fixed() -> "JointSpec":
        return JointSpec("fixed")


#: The constant motion subspaces of the multi-dof kernels in the child frame, as the spatial
#: components ``[ω; v]`` each dof moves: ``H*`` is the 6 × nv selection of those components.
SUBSPACE_COMPONENTS: dict[str, tuple[int, ...]] = {
    "free": (0, 1, 2, 3, 4, 5),
    "spherical": (0, 1, 2),
    "planar": (3, 4, 2),
}


def hinge_vector(axis: Array, rot: Array, trans: Array) -> Array:
    """``H*`` of a hinge joint: ``[ρ a; τ a]`` (Jain §3.2, Fig. 3.2)."""
    return jnp.concatenate([rot[..., None] * axis, trans[..., None] * axis], axis=-1)


def joint_transform(kernel: str, q: Array, axis: Array | None = None, rot=None, trans=None):
    """Pose ``(R, p)`` of the child frame in the joint's parent-side frame at ``q``.

    ``q`` has shape ``(..., nq)`` for the kernel.  Hinges need ``axis`` (unit), ``rot`` and
    ``trans`` (the coefficients ``ρ``, ``τ`` of the module docstring).
    """
    if kernel == "hinge":
        theta = jnp.squeeze(q, -1)
        r = spatial.axis_angle_to_rotation(axis, rot * theta)
        return r, spatial.scale(trans * theta, axis)
    if kernel == "spherical":
        r = spatial.quat_to_rotation(q)
        return r, jnp.zeros(q.shape[:-1] + (3,), q.dtype)
    if kernel == "free":
        p, quat = jnp.split(q, [3], axis=-1)
        return spatial.quat_to_rotation(quat), p
    if kernel == "planar":
        x, y, theta = spatial.unstack(q)
        ez = jnp.array([0.0, 0.0, 1.0], dtype=q.dtype)
        r = spatial.axis_angle_to_rotation(ez, theta)
        return r, jnp.stack([x, y, jnp.zeros_like(x)], axis=-1)
    raise ValueError(f"unknown joint kernel {kernel!r}")


def integrate(kernel: str, q: Array, v: Array) -> Array:
    """``q ⊕ v``: move ``q`` along the joint manifold by the velocity ``v`` for unit time.

    Quaternions use the exponential map in the child frame, ``quat ⊗ exp(ω)``; the free
    joint moves its position by ``R v`` (decoupled, so ``difference`` inverts it exactly);
    the planar joint moves ``(x, y)`` by ``R(θ) (v_x, v_y)``.
    """
    if kernel == "hinge":
        return q + v
    if kernel == "spherical":
        return _normalize(spatial.quat_multiply(q, spatial.quat_exp(v)))
    if kernel == "free":
        quat = q[..., 3:7]
        r = spatial.quat_to_rotation(quat)
        p = q[..., :3] + spatial.mv(r, v[..., 3:6])
        return jnp.concatenate([p, _normalize(spatial.quat_multiply(quat, spatial.quat_exp(v[..., :3])))], -1)
    if kernel == "planar":
        s, c = sincos(q[..., 2])
        dx = c * v[..., 0] - s * v[..., 1]
        dy = s * v[..., 0] + c * v[..., 1]
        return jnp.stack([q[..., 0] + dx, q[..., 1] + dy, q[..., 2] + v[..., 2]], axis=-1)
    raise ValueError(f"unknown joint kernel {kernel!r}")


def chart_rate(kernel: str, xi: Array, v: Array) -> Array:
    """``ξ̇`` of the chart ``q(ξ) = q₀ ⊕ ξ`` when the joint moves with velocity ``v`` at ``q(ξ)``.

    Hinges: ``ξ̇ = v``.  Rotations (``q₀ ⊗ exp(ξ)``, ``ω`` in the child frame) use the inverse
    right Jacobian of SO(3), ``ξ̇ = (I + ½[ξ]× + 1/12 [ξ]×²) ω``, exact to ``O(|ξ|⁴)``, which
    keeps Runge–Kutta–Munthe-Kaas schemes of order four.  The free joint's position
    (``p₀ + R₀ ξ_v``) and the planar joint's (``p₀ + R(θ₀) ξ_xy``) follow exactly:
    ``ξ̇_v = exp(ξ_ω) v``, ``ξ̇_xy = R(ξ_θ) v_xy``.
    """
    if kernel == "hinge":
        return v
    if kernel == "spherical":
        return _so3_chart_rate(xi, v)
    if kernel == "free":
        w = _so3_chart_rate(xi[..., :3], v[..., :3])
        r = spatial.quat_to_rotation(spatial.quat_exp(xi[..., :3]))
        return jnp.concatenate([w, spatial.mv(r, v[..., 3:6])], axis=-1)
    if kernel == "planar":
        s, c = sincos(xi[..., 2])
        return jnp.stack([c * v[..., 0] - s * v[..., 1], s * v[..., 0] + c * v[..., 1], v[..., 2]], axis=-1)
    raise ValueError(f"unknown joint kernel {kernel!r}")


def _so3_chart_rate(xi: Array, omega: Array) -> Array:
    half = spatial.cross(xi, omega)
    return omega + 0.5 * half + spatial.cross(xi, half) / 12.0


def difference(kernel: str, q0: Array, q1: Array) -> Array:
    """``q1 ⊖ q0``: the velocity ``v`` with ``integrate(q0, v) = q1``."""
    if kernel == "hinge":
        return q1 - q0
    if kernel == "spherical":
        return spatial.quat_log(spatial.quat_multiply(spatial.quat_conjugate(q0), q1))
    if kernel == "free":
        r0 = spatial.quat_to_rotation(q0[..., 3:7])
        w = spatial.quat_log(spatial.quat_multiply(spatial.quat_conjugate(q0[..., 3:7]), q1[..., 3:7]))
        return jnp.concatenate([w, spatial.mtv(r0, q1[..., :3] - q0[..., :3])], axis=-1)
    if kernel == "planar":
        s, c = sincos(q0[..., 2])
        dx, dy = q1[..., 0] - q0[..., 0], q1[..., 1] - q0[..., 1]
        return jnp.stack([c * dx + s * dy, -s * dx + c * dy, q1[..., 2] - q0[..., 2]], axis=-1)
    raise ValueError(f"unknown joint kernel {kernel!r}")


def neutral(kernel: str) -> np.ndarray:
    """Neutral configuration of one joint (identity quaternion, zero angles)."""
    return {
        "hinge": np.zeros(1),
        "spherical": np.array([1.0, 0.0, 0.0, 0.0]),
        "planar": np.zeros(3),
        "free": np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
    }[kernel]


def random(kernel: str, key: Array, lower: Array, upper: Array, dtype) -> Array:
    """A random configuration of one joint; hinges draw uniformly in ``[lower, upper]``."""
    if kernel == "hinge":
        return jax.random.uniform(key, (1,), dtype, lower, upper)
    k1, k2 = jax.random.split(key)
    quat = _normalize(jax.random.normal(k1, (4,), dtype))
    if kernel == "spherical":
        return quat
    if kernel == "free":
        return jnp.concatenate([jax.random.uniform(k2, (3,), dtype, -1.0, 1.0), quat])
    if kernel == "planar":
        return jax.random.uniform(k2, (3,), dtype, -1.0, 1.0) * jnp.array([1.0, 1.0, np.pi], dtype)
    raise ValueError(f"unknown joint kernel {kernel!r}")


def _normalize(q: Array) -> Array:
    return spatial.scale(1.0 / jnp.sqrt(spatial.dot(q, q)), q)
