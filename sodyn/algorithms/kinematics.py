"""Forward kinematics, body velocities and accelerations, energies (frame Jacobians and frame
motions: :mod:`sodyn.algorithms.frame_jacobians`).

World poses follow Jain Alg. 3.1 (link transforms composed base to tips); spatial
velocities and accelerations follow Alg. 3.2 / eq. 5.14, both as one :func:`scatter`:

    V(k) = φ*(℘(k), k) V(℘(k)) + H*(k) θ̇(k)
    α(k) = φ*(℘(k), k) α(℘(k)) + H*(k) θ̈(k) + a(k),   a(k) = V(k) ×ₘ H*(k) θ̇(k).

Velocities and accelerations are body-frame spatial vectors ``[ω; v]`` at the body origin
(Featherstone's convention; Jain §1.11, "body-frame derivatives").
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import (
    Levels,
    check_vector,
    gravity_acceleration,
    joint_motion,
    model_params,
    prepare,
)
from sodyn.contraction import contract
from sodyn.model import Model
from sodyn.runtime.precision import full_precision
from sodyn.runtime.tuning import MASKED_VELOCITY_SLOTS
from sodyn.sweeps import Fields, in_slots, scatter
from sodyn.topology import dofs_from_levels, dofs_to_levels, from_levels


class Poses(NamedTuple):
    """World poses: ``x_world = rotation @ x_local + translation``."""

    rotation: jax.Array     # (..., 3, 3)
    translation: jax.Array  # (..., 3)


class Kinematics(NamedTuple):
    """Result of :func:`forward_kinematics`."""

    body: Poses   # (n_bodies, ...)
    frame: Poses  # (n_frames, ...)


def world_poses_levels(levels: Levels, topo, unroll: int = 1) -> tuple[jax.Array, jax.Array]:
    """World pose of every body in the slot layout, by one scatter (Jain Alg. 3.1); ``unroll``
    levels per step of its scans."""
    dtype = levels.rel_p.dtype

    def step(parent, level):
        world = spatial.compose(*parent, *level.x.pose)
        return world, level.by_kernel(world)

    root = (jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype))
    return in_slots(scatter(topo, step, root, Fields(pose=(levels.rel_r, levels.rel_p)), unroll=unroll))


def first_body_origin(levels: Levels, topo) -> jax.Array:
    """``o``, the first body's origin in world coordinates ``(3,)``: the point the world-axes
    recursions work about (:func:`centred_world_poses_levels`)."""
    return levels.rel_p[0, int(topo.body_flat[0])]


def _centred_levels(levels: Levels, topo) -> Levels:
    """``levels`` with the roots' placements taken relative to the first body's origin."""
    real = topo.body_slot < topo.n_bodies
    is_root = jnp.asarray(real & (topo.body_level[np.where(real, topo.body_slot, 0)] == 0))
    # subtract o from the roots' own placements, not from composed world positions: no
    # cancellation between large numbers (the first body's becomes exactly zero)
    rel_p = jnp.where(is_root[..., None], levels.rel_p - first_body_origin(levels, topo), levels.rel_p)
    return levels._replace(rel_p=rel_p)


def centred_world_poses_levels(levels: Levels, topo) -> tuple[jax.Array, jax.Array]:
    """Body poses in world axes about the first body's origin ``o`` (``p − o`` for each body).

    The world-frame recursions (mass matrix, its inverse, forward dynamics) work with spatial
    vectors and inertias about one point fixed in space; any point gives the same joint-space
    results.  About the world origin, a floating base far from it carries inertia terms of
    order ``m |p|²`` whose cancellations cost accuracy (float32 above all); about its own
    origin it carries none.
    """
    return world_poses_levels(_centred_levels(levels, topo), topo)


@functools.lru_cache(maxsize=128)
def slot_ancestors(topo) -> np.ndarray:
    """``(W, W)``: ``[s, t] = 1`` if slot ``t`` holds an ancestor-or-self of slot ``s``'s body."""
    anc = np.zeros((topo.width, topo.width))
    for s in range(topo.width):
        k = int(topo.body_slot[0, s])
        while 0 <= k < topo.n_bodies:
            anc[s, topo.body_flat[k]] = 1.0
            k = int(topo.parent[k])
    return anc


class WorldKinematics(NamedTuple):
    """Centred world poses (:func:`centred_world_poses_levels`), world joint axes per kernel
    ``(1, Wk, nv_k, 6)``, and spatial velocities ``V_w`` and joint terms ``H*_w θ̇`` in world
    axes ``(1, W, 6)``."""

    rotation: jax.Array
    translation: jax.Array
    axes: list[jax.Array]
    velocity: jax.Array
    joint_velocity: jax.Array


def world_kinematics_levels(levels: Levels, topo, v_blocks: list[jax.Array], unroll: int = 1) -> WorldKinematics:
    """Poses, joint axes and velocities in world axes about the first body's origin, with
    ``V_w(k) = V_w(℘(k)) + H*_w(k) θ̇(k)`` (Jain eq. 3.19 with every ``φ`` the identity).

    A body's world velocity is the sum of its ancestors' joint terms: a masked sum for narrow
    trees (:data:`MASKED_VELOCITY_SLOTS`); wider trees (long chains) add them up in the poses'
    sweep (:func:`world_motions_levels`), one sweep rather than two.  ``unroll`` levels per step
    of the sweep's scans.
    """
    if topo.width <= MASKED_VELOCITY_SLOTS:
        levels = _centred_levels(levels, topo)
        wr, wp = world_poses_levels(levels, topo, unroll)
        axes = world_subspace_blocks(topo, levels, wr, wp)
        joint = jnp.concatenate([spatial.mtv(a, x) for a, x in zip(axes, v_blocks)], axis=1)
        anc = jnp.asarray(slot_ancestors(topo), joint.dtype)
        return WorldKinematics(wr, wp, axes, contract("...wu,...ui->...wi", anc, joint), joint)

    return world_motions_levels(levels, topo, v_blocks, None, unroll)[0]


def world_motions_levels(levels: Levels, topo, v_blocks: list[jax.Array], root_acceleration: jax.Array | None,
                         unroll: int = 1) -> tuple[WorldKinematics, jax.Array | None]:
    """:func:`world_kinematics_levels`' poses, axes and velocities and (unless
    ``root_acceleration`` is ``None``) each body's spatial acceleration at zero joint
    acceleration ``(1, W, 6)``, all in world axes about the first body's origin, by one sweep:

        V_w(k) = V_w(℘(k)) + H*_w(k) θ̇(k),    α₀(k) = α₀(℘(k)) + V_w(k) ×ₘ H*_w(k) θ̇(k)

    (Jain eqs. 3.19 and 5.14 with ``θ̈ = 0`` and every ``φ`` the identity), the world
    accelerating by ``root_acceleration``."""
    levels = _centred_levels(levels, topo)

    def step(parent, level):
        pr, pp, pv, pa = parent
        wr, wp = spatial.compose(pr, pp, *level.x.pose)
        joint = spatial.motion_to_parent(wr, wp, level.x.joint_velocity)
        vel = pv + joint
        acc = None if pa is None else pa + spatial.motion_cross(vel, joint)
        outs = (wr, wp, vel, joint) + (() if acc is None else (acc,))
        return (wr, wp, vel, acc), level.by_kernel(outs)

    dtype = levels.rel_p.dtype
    root = (jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype), jnp.zeros(6, dtype), root_acceleration)
    xs = Fields(pose=(levels.rel_r, levels.rel_p), joint_velocity=joint_motion(levels.axes, v_blocks))
    wr, wp, vel, joint, *acc = in_slots(scatter(topo, step, root, xs, unroll=unroll))
    return WorldKinematics(wr, wp, world_subspace_blocks(topo, levels, wr, wp), vel, joint), (acc[0] if acc else None)


def frame_poses(model: Model, body_r: jax.Array, body_p: jax.Array) -> Poses:
    """World poses of all frames from the world poses of the bodies."""
    dtype = body_p.dtype
    fb = np.asarray(model.frame_body, dtype=np.int64)
    ext_r = jnp.concatenate([body_r, jnp.eye(3, dtype=dtype)[None]])  # index -1 → world
    ext_p = jnp.concatenate([body_p, jnp.zeros((1, 3), dtype)])
    br, bp = ext_r[fb], ext_p[fb]
    m = model_params(model, dtype)
    r, p = spatial.compose(br, bp, m.frame_rotation, m.frame_translation)
    return Poses(r, p)


def forward_kinematics(model: Model, q) -> Kinematics:
    """World poses of all bodies and frames at configuration ``q`` (Jain Alg. 3.1)."""
    q = check_vector(model, q, model.nq, "q")
    levels = prepare(model, q)
    wr, wp = world_poses_levels(levels, model.topology)
    body_r, body_p = from_levels(model.topology, wr), from_levels(model.topology, wp)
    return Kinematics(Poses(body_r, body_p), frame_poses(model, body_r, body_p))


def frame_pose(model: Model, q, frame: str | int) -> Poses:
    """World pose of one frame (by name or index)."""
    f = model.frame_id(frame)
    fk = forward_kinematics(model, q)
    return Poses(fk.frame.rotation[f], fk.frame.translation[f])


def child_motion(parent: tuple[jax.Array, jax.Array], r, p, vj: jax.Array, aj: jax.Array):
    """One level of the velocity and acceleration scatter (Jain eqs. 5.14, 5.16): from the
    parent's ``(V, α)``, the link transform ``(r, p)`` and the joint's ``H* θ̇``, ``H* θ̈``,

        V = φ* V(℘) + H* θ̇,    a = V ×ₘ H* θ̇,    α = φ* α(℘) + H* θ̈ + a.

    Returns ``(V, α, a)``."""
    vp, ap = parent
    v = spatial.motion_to_child(r, p, vp) + vj
    coriolis = spatial.motion_cross(v, vj)
    a = spatial.motion_to_child(r, p, ap) + aj + coriolis
    return v, a, coriolis


def velocities_levels(levels: Levels, topo, v_blocks, unroll: int = 1) -> tuple[jax.Array, jax.Array]:
    """Body velocities ``V(k) = φ*(℘(k), k) V(℘(k)) + H*(k) θ̇(k)`` (Jain eq. 3.19) by one scatter,
    and the joint terms ``H* θ̇``, both ``(1, W, 6)``; ``unroll`` levels per scan step."""
    vj = joint_motion(levels.axes, v_blocks)

    def step(parent, level):
        vel = spatial.motion_to_child(*level.x.pose, parent) + level.x.joint_velocity
        return vel, level.by_kernel(vel)

    xs = Fields(pose=(levels.rel_r, levels.rel_p), joint_velocity=vj)
    vel = in_slots(scatter(topo, step, jnp.zeros(6, vj.dtype), xs, unroll=unroll))
    return vel, vj


def velocities_and_accelerations_levels(
    levels: Levels, topo, v_blocks, a_blocks, root_acceleration: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Body velocities ``V``, accelerations ``α`` and Coriolis terms ``a`` by one scatter."""
    vj = joint_motion(levels.axes, v_blocks)
    aj = joint_motion(levels.axes, a_blocks) if a_blocks is not None else jnp.zeros_like(vj)
    dtype = vj.dtype

    def step(parent, level):
        x = level.x
        v, a, coriolis = child_motion(parent, *x.pose, x.joint_velocity, x.joint_acceleration)
        return (v, a), level.by_kernel((v, a, coriolis))

    root = (jnp.zeros(6, dtype), root_acceleration)
    xs = Fields(pose=(levels.rel_r, levels.rel_p), joint_velocity=vj, joint_acceleration=aj)
    return in_slots(scatter(topo, step, root, xs))


class PosesAndMotions(NamedTuple):
    """Result of :func:`poses_and_motions_levels`, each ``(1, W, ...)`` in the slot layout."""

    rotation: jax.Array             # world rotation of each body
    translation: jax.Array          # world position of each body's origin
    velocity: jax.Array             # V(k), body frame
    coriolis: jax.Array             # a(k) = V(k) ×ₘ H*(k) θ̇(k)
    acceleration: jax.Array | None  # α(k) at θ̈ = 0 (J̇_k θ̇ plus the world's acceleration), if asked for


def poses_and_motions_levels(levels: Levels, topo, v_blocks, root_acceleration: jax.Array | None,
                             unroll: int = 1) -> PosesAndMotions:
    """World poses (Jain Alg. 3.1), velocities ``V`` (eq. 3.19), the velocity terms ``a`` and
    (unless ``root_acceleration`` is ``None``) the accelerations at zero joint acceleration
    ``α = φ* α(℘) + a`` (eq. 5.14 with ``θ̈ = 0``; the world accelerating by
    ``root_acceleration``) of every body, by one scatter."""
    vj = joint_motion(levels.axes, v_blocks)
    dtype = vj.dtype

    def step(parent, level):
        (pr, pp, vp, ap), (r, p), vk = parent, level.x.pose, level.x.joint_velocity
        wr, wp = spatial.compose(pr, pp, r, p)
        vel = spatial.motion_to_child(r, p, vp) + vk
        coriolis = spatial.motion_cross(vel, vk)
        acc = None if ap is None else spatial.motion_to_child(r, p, ap) + coriolis
        outs = (wr, wp, vel, coriolis) + (() if acc is None else (acc,))
        return (wr, wp, vel, acc), level.by_kernel(outs)

    root = (jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype), jnp.zeros(6, dtype), root_acceleration)
    xs = Fields(pose=(levels.rel_r, levels.rel_p), joint_velocity=vj)
    outs = in_slots(scatter(topo, step, root, xs, unroll=unroll))
    return PosesAndMotions(*outs) if root_acceleration is not None else PosesAndMotions(*outs, None)


def body_velocities(model: Model, q, v) -> jax.Array:
    """Spatial velocity ``[ω; v]`` of every body in its own frame, ``(n_bodies, 6)``."""
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    levels = prepare(model, q)
    vel, _ = velocities_levels(levels, model.topology, dofs_to_levels(model.topology, v, 0.0))
    return from_levels(model.topology, vel)


def body_accelerations(model: Model, q, v, a, gravity: bool = False) -> jax.Array:
    """Spatial accelerations ``[ω̇; v̇]`` (body-frame derivatives) of every body, ``(n_bodies, 6)``.

    With ``gravity=True`` the world accelerates by ``−g`` (as inside inverse dynamics).
    """
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    a = check_vector(model, a, model.nv, "a", q.dtype)
    topo = model.topology
    levels = prepare(model, q)
    root = gravity_acceleration(model, q.dtype) if gravity else jnp.zeros(6, q.dtype)
    _, acc, _ = velocities_and_accelerations_levels(
        levels, topo, dofs_to_levels(topo, v, 0.0), dofs_to_levels(topo, a, 0.0), root
    )
    return from_levels(topo, acc)


def world_subspace_blocks(topo, levels: Levels, wr: jax.Array, wp: jax.Array) -> list[jax.Array]:
    """Per kernel, each dof's motion axis ``H*`` as a spatial vector at the world origin in
    world axes, ``(1, Wk, nv_k, 6)``: the rigid-body transformation ``φ*`` (Jain Ch. 1.4) carries
    each column from its body frame to the world origin."""
    cols = []
    for axes, (_, s0, s1) in zip(levels.axes, topo.kernel_slots):
        rows = axes.row_matrix((1, s1 - s0), wp.dtype)  # (1, Wk, nv_k, 6)
        cols.append(spatial.motion_to_parent(wr[:, s0:s1, None], wp[:, s0:s1, None], rows))
    return cols


def world_subspace_columns(model: Model, levels: Levels, wr, wp) -> jax.Array:
    """Each dof's motion axis ``H*`` as a spatial vector at the world origin, ``(nv, 6)``."""
    return dofs_from_levels(model.topology, world_subspace_blocks(model.topology, levels, wr, wp))


def kinetic_energy(model: Model, q, v) -> jax.Array:
    """``T = ½ Σ_k V(k)ᵀ M(k) V(k) + ½ Σ_j armature_j v_j²`` (Jain eq. 4.23; CDI eq. 11).

    The armature (rotor) term makes ``∂²T/∂v² = 𝓜`` hold for :func:`sodyn.mass_matrix`,
    which includes the armature on its diagonal.
    """
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    topo = model.topology
    levels = prepare(model, q)
    vel, _ = velocities_levels(levels, topo, dofs_to_levels(topo, v, 0.0))
    mask = jnp.asarray(topo.mask, q.dtype)
    e = jnp.sum(vel * spatial.mv(levels.inertia, vel), axis=-1)
    armature = model_params(model, q.dtype).armature
    return 0.5 * jnp.sum(e * mask) + 0.5 * jnp.sum(armature * v * v)


@full_precision
def potential_energy(model: Model, q) -> jax.Array:
    """Gravitational potential energy ``−Σ m_k gᵀ c_k`` (world centres of mass ``c_k``)."""
    fk = forward_kinematics(model, q)
    m = model_params(model, fk.body.translation.dtype)
    c = fk.body.translation + spatial.mv(fk.body.rotation, m.com)
    return -jnp.sum(m.mass * (c @ m.gravity))


def center_of_mass(model: Model, q) -> jax.Array:
    """World position of the system's centre of mass."""
    fk = forward_kinematics(model, q)
    m = model_params(model, fk.body.translation.dtype)
    c = fk.body.translation + spatial.mv(fk.body.rotation, m.com)
    return jnp.sum(m.mass[:, None] * c, axis=0) / jnp.sum(m.mass)
