"""Frame Jacobians and frame motions (Jain §3.6, eq. 3.25).

A frame ``f`` fixed on body ``b`` moves with ``V_f = B* V(b)``, ``B*`` the rigid-body
transformation from ``b``'s origin to the frame (Jain Ch. 1.4), so its Jacobian is the sum of
its supporting dofs' motion axes carried to the frame, ``J_f = B* Σ_{j ⪯ b} φ*(b, j) H*(j)``.
Here the axes are formed once at the world origin in world axes
(:func:`~sodyn.algorithms.kinematics.world_subspace_blocks`) and each frame takes the columns of
the dofs supporting it, shifted to its origin.  Frame accelerations are ``J a + J̇ v``, from the
body accelerations of one scatter.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import check_vector, model_params, prepare
from sodyn.algorithms.kinematics import (
    frame_pose,
    frame_poses,
    velocities_and_accelerations_levels,
    world_poses_levels,
    world_subspace_columns,
)
from sodyn.model import Model
from sodyn.topology import dofs_to_levels, from_levels

Reference = Literal["local", "world_aligned"]


def _check_reference(reference: str) -> None:
    if reference not in ("local", "world_aligned"):
        raise ValueError(f"reference must be 'local' or 'world_aligned', got {reference!r}")


def frame_jacobian(model: Model, q, frame: str | int, reference: Reference = "local") -> jax.Array:
    """Jacobian ``(6, nv)`` of a frame's spatial velocity ``[ω; v]`` (Jain §3.6, eq. 3.25).

    ``reference="local"``: both parts in the frame's axes, ``v`` of the frame origin.
    ``reference="world_aligned"``: the same velocity in world axes (Pinocchio's
    ``LOCAL_WORLD_ALIGNED``).
    """
    _check_reference(reference)
    return frame_jacobians(model, q, [frame], reference)[0]


def frame_jacobians(model: Model, q, frames, reference: Reference = "local") -> jax.Array:
    """Jacobians ``(len(frames), 6, nv)`` of several frames, sharing one kinematics pass."""
    _check_reference(reference)
    q = check_vector(model, q, model.nq, "q")
    ids = np.array([model.frame_id(f) for f in frames], dtype=np.int64)
    topo = model.topology
    levels = prepare(model, q)
    wr, wp = world_poses_levels(levels, topo)
    body_r, body_p = from_levels(topo, wr), from_levels(topo, wp)
    fp = frame_poses(model, body_r, body_p)
    cols = world_subspace_columns(model, levels, wr, wp)  # (nv, 6) at the world origin
    fb = np.asarray(model.frame_body)[ids]
    support = np.zeros((len(ids), topo.nv), dtype=bool)
    support[fb >= 0] = topo.support[fb[fb >= 0]]
    r_f, p_f = fp.rotation[ids], fp.translation[ids]
    lin = cols[None, :, 3:] + spatial.cross(cols[None, :, :3], p_f[:, None, :])  # frame-origin velocity
    w = jnp.broadcast_to(cols[None, :, :3], lin.shape)
    jac = jnp.concatenate([w, lin], axis=-1) * jnp.asarray(support[..., None], q.dtype)
    if reference == "local":
        jac = jnp.concatenate(
            [spatial.mtv(r_f[:, None], jac[..., :3]), spatial.mtv(r_f[:, None], jac[..., 3:])], -1
        )
    return jnp.swapaxes(jac, -1, -2)


def frame_velocity(model: Model, q, v, frame: str | int, reference: Reference = "local") -> jax.Array:
    """Spatial velocity ``[ω; v]`` of a frame, in its own or world-aligned axes."""
    _check_reference(reference)
    return _frame_motion(model, q, v, None, frame, reference, classical=False)[0]


def frame_acceleration(
    model: Model, q, v, a, frame: str | int, reference: Reference = "local", classical: bool = False
) -> jax.Array:
    """Acceleration of a frame: ``J a + J̇ v``.

    ``classical=False`` returns the spatial acceleration (body-frame derivative of the
    spatial velocity); ``classical=True`` returns ``[ω̇; p̈]``, the time derivative of the
    origin's velocity, ``p̈ = v̇ + ω × v``.
    """
    _check_reference(reference)
    a = check_vector(model, a, model.nv, "a")
    return _frame_motion(model, q, v, a, frame, reference, classical)[1]


def frame_jacobian_dot_times_v(
    model: Model, q, v, frame: str | int, reference: Reference = "local", classical: bool = False
) -> jax.Array:
    """``J̇ v``: the frame's acceleration at zero joint acceleration (see :func:`frame_acceleration`)."""
    _check_reference(reference)
    q = check_vector(model, q, model.nq, "q")
    return _frame_motion(model, q, v, jnp.zeros(model.nv, q.dtype), frame, reference, classical)[1]


def frame_motions(model: Model, q, v, a, frames) -> tuple[jax.Array, jax.Array]:
    """Spatial velocities and accelerations ``(F, 6)`` of ``frames`` in their own axes, at the
    frame origins: ``V_f = B* V(b)`` and ``α_f = B* α(b)`` with ``B*`` the rigid-body
    transformation from the frame's body ``b`` (Jain eq. 3.25); ``a = None`` is zero joint
    acceleration (``α_f = J̇ v``).  Frames on the world get zero."""
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    ids = np.array([model.frame_id(f) for f in frames], dtype=np.int64)
    topo = model.topology
    dtype = q.dtype
    levels = prepare(model, q)
    a_blocks = dofs_to_levels(topo, a, 0.0) if a is not None else None
    vel, acc, _ = velocities_and_accelerations_levels(
        levels, topo, dofs_to_levels(topo, v, 0.0), a_blocks, jnp.zeros(6, dtype)
    )
    bodies = np.asarray(model.frame_body)[ids]
    on_body = jnp.asarray(bodies >= 0)[:, None]
    m = model_params(model, dtype)
    r_bf, p_bf = m.frame_rotation[ids], m.frame_translation[ids]
    pick = np.where(bodies >= 0, bodies, 0)
    vf = spatial.motion_to_child(r_bf, p_bf, from_levels(topo, vel)[pick])
    af = spatial.motion_to_child(r_bf, p_bf, from_levels(topo, acc)[pick])
    return jnp.where(on_body, vf, 0.0), jnp.where(on_body, af, 0.0)


def classical_term(vf: jax.Array) -> jax.Array:
    """``[0; ω × v]``: what turns a spatial acceleration of a frame with velocity ``[ω; v]`` into
    its classical acceleration ``[ω̇; p̈]``, ``p̈ = v̇ + ω × v``."""
    return jnp.concatenate([jnp.zeros_like(vf[..., :3]), spatial.cross(vf[..., :3], vf[..., 3:])], -1)


def _frame_motion(model, q, v, a, frame, reference, classical):
    vf, af = (x[0] for x in frame_motions(model, q, v, a, [frame]))
    if classical:
        af = af + classical_term(vf)
    if reference == "world_aligned":
        r_w = frame_pose(model, q, frame).rotation
        rot6 = lambda x: jnp.concatenate([spatial.mv(r_w, x[:3]), spatial.mv(r_w, x[3:])])  # noqa: E731
        vf, af = rot6(vf), rot6(af)
    return vf, af


__all__ = [
    "Reference",
    "classical_term",
    "frame_acceleration",
    "frame_jacobian",
    "frame_jacobian_dot_times_v",
    "frame_jacobians",
    "frame_motions",
    "frame_velocity",
]
