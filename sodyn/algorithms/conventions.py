"""The frames the articulated-body recursions run in, and the velocity terms and bias forces
they start from (Jain eq. 5.14).

**Conventions** (the ``convention`` argument, as Pinocchio's ``Convention``):

* ``"local"`` (default): each body's quantities in its own frame, with the ``φ`` of each level.
  Accurate in every precision.
* ``"world"``: every spatial quantity in world axes about one point fixed in space, the first
  body's origin (:func:`~sodyn.algorithms.kinematics.centred_world_poses_levels`).  There every
  ``φ(℘(k), k)`` is the identity: the gathers add what the children send and the scatter
  passes the parent's value on, with no 6 × 6 congruence per level; the joint axes ``H*_w``,
  the inertias ``M_w`` (Jain eqs. 2.6–2.8, entering the sweep as their ten parameters),
  velocities and bias terms are formed for all bodies outside it, after one more sweep for the
  world poses.  It can be faster in float64.  About one point, a light body far from it carries
  inertia terms of order ``m |r|²`` that cancel in its ``D``: in float32, a humanoid's gripper
  links a metre from the base lose two to three digits of ``𝓜⁻¹``, which body frames keep.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.common import JointAxes, Levels, mass_parameter_levels, prepare
from sodyn.algorithms.kinematics import (
    centred_world_poses_levels,
    velocities_levels,
    world_kinematics_levels,
    world_subspace_blocks,
)
from sodyn.model import Model
from sodyn.topology import dofs_to_levels, to_levels

Convention = Literal["local", "world"]
CONVENTIONS: tuple[str, ...] = ("local", "world")


@functools.partial(jax.tree_util.register_dataclass, data_fields=["pose", "axes", "inertia"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class Frames:
    """The frames the recursions run in, per slot ``(1, W, ...)``.

    ``pose``: each body's ``(R, p)`` in its parent, the ``φ`` between levels (``None`` in world
    axes, where every ``φ`` is the identity); ``axes``: per kernel ``H*`` in those frames;
    ``inertia``: each body's inertia parameters ``(m, h, J)`` about its frame's point
    (:func:`sodyn.spatial.inertia_parameters`).
    """

    pose: tuple[jax.Array, jax.Array] | None
    axes: tuple[JointAxes, ...]
    inertia: tuple[jax.Array, jax.Array, jax.Array]


def pose_inertia_to_parent(pose, p: jax.Array) -> jax.Array:
    """``φ P φ*`` for a :class:`Frames` ``pose`` (the identity for ``None``: world axes)."""
    return p if pose is None else spatial.inertia_to_parent(*pose, p)


def pose_force_to_parent(pose, f: jax.Array) -> jax.Array:
    """``φ f`` for a :class:`Frames` ``pose`` (the identity for ``None``); ``f`` may carry
    columns after the slot axis."""
    if pose is None:
        return f
    r, p = pose
    extra = f.ndim - p.ndim  # columns carried per slot
    return spatial.force_to_parent(expand_slots(r, extra), expand_slots(p, extra), f)


def pose_motion_to_child(pose, m: jax.Array) -> jax.Array:
    """``φ* m`` for a :class:`Frames` ``pose`` (the identity for ``None``)."""
    return m if pose is None else spatial.motion_to_child(*pose, m)


def expand_slots(x: jax.Array, n: int) -> jax.Array:
    """Axes of size one after the slot axis of a per-slot pose."""
    return x.reshape(x.shape[:1] + (1,) * n + x.shape[1:]) if n else x


def check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")


def body_frames(model: Model, levels: Levels) -> Frames:
    """The ``"local"`` frames: body frames, the link transforms as ``φ``."""
    dtype = levels.rel_p.dtype
    params = spatial.inertia_parameters(*mass_parameter_levels(model, dtype))
    return Frames((levels.rel_r, levels.rel_p), levels.axes, params)


def world_frames(model: Model, levels: Levels) -> Frames:
    """The ``"world"`` frames: world axes about the first body's origin."""
    wr, wp = centred_world_poses_levels(levels, model.topology)
    return world_frames_at(model, wr, wp, world_subspace_blocks(model.topology, levels, wr, wp))


def world_frames_at(model: Model, wr: jax.Array, wp: jax.Array, axes: list[jax.Array]) -> Frames:
    """The ``"world"`` frames of bodies at the centred world poses ``(R_w, p_w)`` with world
    joint axes ``axes`` (per kernel, rows ``(1, W_k, nv_k, 6)``)."""
    params = spatial.world_inertia_parameters(*mass_parameter_levels(model, wp.dtype), wr, wp)
    return Frames(None, tuple(JointAxes("rows", rows=a) for a in axes), params)


def frames_for(model: Model, levels: Levels, convention: str) -> Frames:
    """The frames of ``convention`` (``"local"`` or ``"world"``)."""
    check_convention(convention)
    return body_frames(model, levels) if convention == "local" else world_frames(model, levels)


def forward_terms(model: Model, q, v, f_ext, convention: str, unroll: int):
    """The frames, the velocity terms ``a(k) = V(k) ×ₘ H*(k) θ̇(k)`` and the bias forces
    ``b(k) = V(k) ×_f M(k) V(k) − f_ext(k)`` (Jain eq. 5.14) in the convention's frames."""
    topo = model.topology
    dtype = q.dtype
    levels = prepare(model, q)
    v_blocks = dofs_to_levels(topo, v, 0.0)
    f_local = None if f_ext is None else to_levels(topo, f_ext, jnp.zeros(6, dtype))
    if convention == "local":
        frames = body_frames(model, levels)
        vel, joint = velocities_levels(levels, topo, v_blocks, unroll)
    else:
        wr, wp, axes, vel, joint = world_kinematics_levels(levels, topo, v_blocks, unroll)
        frames = world_frames_at(model, wr, wp, axes)
        if f_local is not None:
            f_local = spatial.force_to_parent(wr, wp, f_local)
    coriolis = spatial.motion_cross(vel, joint)
    bias = spatial.force_cross(vel, spatial.apply_inertia(*frames.inertia, vel))
    return frames, coriolis, bias if f_local is None else bias - f_local


__all__ = [
    "CONVENTIONS",
    "Convention",
    "Frames",
    "body_frames",
    "check_convention",
    "expand_slots",
    "forward_terms",
    "frames_for",
    "pose_force_to_parent",
    "pose_inertia_to_parent",
    "pose_motion_to_child",
    "world_frames",
    "world_frames_at",
]
