"""Newton–Euler inverse dynamics (Jain Alg. 5.1 / eq. 5.23).

Base to tips (one scatter): ``V``, ``α`` as in :mod:`sodyn.algorithms.kinematics`, with the
world accelerating by ``−g`` so gravity needs no per-body term.  Tips to base (one gather):

    f(k) = Σ_{c ∈ children(k)} φ(k, c) f(c) + M(k) α(k) + b(k) − f_ext(k),
    b(k) = V(k) ×f M(k) V(k),         T(k) = H(k) f(k),

then ``τ = T + damping ⊙ v + armature ⊙ a``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.common import (
    check_state,
    check_vector,
    gravity_acceleration,
    joint_force,
    model_params,
    prepare,
)
from sodyn.algorithms.kinematics import velocities_and_accelerations_levels
from sodyn.model import Model
from sodyn.topology import dofs_from_levels, dofs_to_levels, gather, to_levels


def body_forces_levels(levels, topo, local_force: jax.Array) -> jax.Array:
    """Accumulate body forces tips to base: ``f(k) = local(k) + Σ_c φ(k, c) f(c)``."""
    dtype = local_force.dtype

    def step(from_children, x):
        r, p, fl = x
        f = fl + from_children
        return spatial.force_to_parent(r, p, f), f

    return gather(topo, step, jnp.zeros(6, dtype), (levels.rel_r, levels.rel_p, local_force))


def inverse_dynamics(model: Model, q, v, a, f_ext=None) -> jax.Array:
    """Joint forces ``τ`` that produce acceleration ``a`` at state ``(q, v)``.

    ``f_ext`` (optional, ``(n_bodies, 6)``) are external spatial forces ``[n; f]`` on each
    body, in the body's frame, about its origin.  Gravity is ``model.gravity``; joint
    damping and armature are included.
    """
    q, v, a, f_ext = check_state(model, q, v, a, "a", f_ext)
    dtype = q.dtype
    topo = model.topology
    m = model_params(model, dtype)
    levels = prepare(model, q)
    vel, acc, _ = velocities_and_accelerations_levels(
        levels, topo, dofs_to_levels(topo, v, 0.0), dofs_to_levels(topo, a, 0.0),
        gravity_acceleration(m, dtype),
    )
    local = spatial.mv(levels.inertia, acc) + spatial.force_cross(vel, spatial.mv(levels.inertia, vel))
    if f_ext is not None:
        local = local - to_levels(topo, f_ext, jnp.zeros(6, dtype))
    forces = body_forces_levels(levels, topo, local)
    tau = dofs_from_levels(topo, joint_force(levels, forces))
    return tau + m.damping * v + m.armature * a


def bias_forces(model: Model, q, v, f_ext=None) -> jax.Array:
    """``C(q, v) = τ`` at zero acceleration: Coriolis, centrifugal, gravity, damping, ``−f_ext``."""
    q = check_vector(model, q, model.nq, "q")
    return inverse_dynamics(model, q, v, jnp.zeros(model.nv, q.dtype), f_ext)


def gravity_forces(model: Model, q) -> jax.Array:
    """Generalised gravity forces ``g(q)`` (inverse dynamics at zero velocity and acceleration)."""
    q = check_vector(model, q, model.nq, "q")
    z = jnp.zeros(model.nv, q.dtype)
    return inverse_dynamics(model, q, z, z)
