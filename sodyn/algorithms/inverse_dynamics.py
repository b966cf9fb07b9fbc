"""Newton–Euler inverse dynamics (Jain Alg. 5.1 / eq. 5.23).

Base to tips (one scatter): ``V``, ``α`` as in :mod:`sodyn.algorithms.kinematics`, with the
world accelerating by ``−g`` so gravity needs no per-body term.  Tips to base (one gather):

    f(k) = Σ_{c ∈ children(k)} φ(k, c) f(c) + M(k) α(k) + b(k) − f_ext(k),
    b(k) = V(k) ×f M(k) V(k),         T(k) = H(k) f(k),

then ``τ = T + armature ⊙ a + passive(v)``, ``passive(v) = damping ⊙ v`` plus, on a free joint's
rows ``[ω; v]``, the velocity force ``[v × (A v); ω × (A v)]`` of its linear armature ``A``
(:func:`~sodyn.algorithms.common.passive_joint_force`).

The scatter forms each body's own force ``M(k) α(k) + b(k)`` as soon as it has ``V(k)`` and
``α(k)``, and hands the gather only that: the body inertias enter the scatter (a model
parameter, so under ``vmap`` they carry no batch axis), and neither ``V`` nor ``α`` leaves it.
Under ``vmap`` a scan's per-level outputs carry the batch on their second axis and the compact
layout between the sweeps on its first, so every array passed from one sweep to the next is
transposed twice; one array (the forces) crosses instead of two.
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
    joint_motion,
    model_params,
    passive_joint_force,
    prepare,
)
from sodyn.algorithms.kinematics import child_motion
from sodyn.model import Model
from sodyn.sweeps import Fields, gather, in_slots, scatter
from sodyn.topology import dofs_from_levels, dofs_to_levels, to_levels


def local_forces_levels(levels, topo, v_blocks, a_blocks, root_acceleration: jax.Array,
                        added=None) -> jax.Array:
    """Each body's own force ``M(k) α(k) + V(k) ×f M(k) V(k)`` (Jain eq. 5.23), by the
    scatter of ``V`` and ``α`` (:func:`~sodyn.algorithms.kinematics.velocities_and_accelerations_levels`),
    slot layout ``(1, W, 6)``; the world accelerates by ``root_acceleration``.  ``added``
    ``(1, W, 6, 6)`` (or ``None``) adds ``B(k) α(k)``: the residual of forward dynamics with
    ``added_inertia``."""
    vj = joint_motion(levels.axes, v_blocks)
    aj = joint_motion(levels.axes, a_blocks)
    dtype = vj.dtype

    def step(parent, level):
        x = level.x
        vel, acc, _ = child_motion(parent, *x.pose, x.joint_velocity, x.joint_acceleration)
        own = spatial.mv(x.inertia, acc) + spatial.force_cross(vel, spatial.mv(x.inertia, vel))
        own = own if x.added is None else own + spatial.mv(x.added, acc)
        return (vel, acc), level.by_kernel(own)

    root = (jnp.zeros(6, dtype), root_acceleration)
    xs = Fields(pose=(levels.rel_r, levels.rel_p), joint_velocity=vj, joint_acceleration=aj, inertia=levels.inertia,
                added=added)
    return in_slots(scatter(topo, step, root, xs))


def body_forces_levels(levels, topo, local_force: jax.Array) -> jax.Array:
    """Accumulate body forces tips to base: ``f(k) = local(k) + Σ_c φ(k, c) f(c)``."""
    dtype = local_force.dtype

    def step(from_children, level):
        f = level.x.own + from_children
        return spatial.force_to_parent(*level.x.pose, f), level.by_kernel(f)

    xs = Fields(pose=(levels.rel_r, levels.rel_p), own=local_force)
    return in_slots(gather(topo, step, jnp.zeros(6, dtype), xs))


def inverse_dynamics(model: Model, q, v, a, f_ext=None) -> jax.Array:
    """Joint forces ``τ`` that produce acceleration ``a`` at state ``(q, v)``.

    ``f_ext`` (optional, ``(n_bodies, 6)``) are external spatial forces ``[n; f]`` on each
    body, in the body's frame, about its origin.  Gravity is ``model.gravity``; joint
    damping and armature are included (a free joint's linear armature with its velocity
    force: :func:`~sodyn.algorithms.common.passive_joint_force`).
    """
    q, v, a, f_ext = check_state(model, q, v, a, "a", f_ext)
    return unchecked_inverse_dynamics(model, q, v, a, f_ext)


def unchecked_inverse_dynamics(model: Model, q, v, a, f_ext, added=None) -> jax.Array:
    """:func:`inverse_dynamics` on checked arguments; ``added`` ``(n_bodies, 6, 6)`` adds
    ``Σ_k J_k* B_k α(k)`` (the residual of ``forward_dynamics(..., added_inertia=B)``)."""
    dtype = q.dtype
    topo = model.topology
    m = model_params(model, dtype)
    levels = prepare(model, q)
    if added is not None:
        added = to_levels(topo, added, jnp.zeros((6, 6), dtype))
    local = local_forces_levels(
        levels, topo, dofs_to_levels(topo, v, 0.0), dofs_to_levels(topo, a, 0.0), gravity_acceleration(m, dtype),
        added,
    )
    if f_ext is not None:
        local = local - to_levels(topo, f_ext, jnp.zeros(6, dtype))
    forces = body_forces_levels(levels, topo, local)
    tau = dofs_from_levels(topo, joint_force(topo, levels.axes, forces))
    return tau + passive_joint_force(m, v) + m.armature * a


def bias_forces(model: Model, q, v, f_ext=None) -> jax.Array:
    """``C(q, v) = τ`` at zero acceleration: Coriolis, centrifugal, gravity, damping, ``−f_ext``."""
    q = check_vector(model, q, model.nq, "q")
    return inverse_dynamics(model, q, v, jnp.zeros(model.nv, q.dtype), f_ext)


def gravity_forces(model: Model, q) -> jax.Array:
    """Generalised gravity forces ``g(q)`` (inverse dynamics at zero velocity and acceleration)."""
    q = check_vector(model, q, model.nq, "q")
    z = jnp.zeros(model.nv, q.dtype)
    return inverse_dynamics(model, q, z, z)
