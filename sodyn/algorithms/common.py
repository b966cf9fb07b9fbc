"""Per-call preparation shared by every algorithm: inputs checked, parameters and joint
quantities in the compact slot layout (see :mod:`sodyn.topology`).

Everything here is vectorised over all bodies at once; only the recursions that truly need
the parent's value run inside the level scans.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sodyn import joints, spatial
from sodyn.model import Model, hinge_coefficients
from sodyn.topology import (
    AncestorSubtree,
    Topology,
    dofs_to_levels,
    restrict_kernel,
    restrict_slots,
    split_slots,
    to_levels,
)


def check_vector(model: Model, x, size: int, name: str, dtype=None) -> jax.Array:
    """Convert ``x`` to an array of shape ``(size,)`` or raise a clear error naming ``name``."""
    if x is None:
        raise TypeError(f"{name} is required")
    x = jnp.asarray(x) if dtype is None else jnp.asarray(x, dtype)
    if x.ndim != 1 or x.shape[0] != size:
        hint = " (for a batch, use jax.vmap)" if x.ndim > 1 else ""
        raise ValueError(f"{name} must have shape ({size},) for model {model.name!r}, got {x.shape}{hint}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.zeros(()).dtype)
    return x


def check_state(model: Model, q, v, x, x_name: str, f_ext=None):
    """Check ``(q, v, x, f_ext)`` of a dynamics call (``x`` is ``a`` or ``tau``); ``v`` and ``x``
    take ``q``'s dtype.  Returns the converted arrays."""
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    x = check_vector(model, x, model.nv, x_name, q.dtype)
    return q, v, x, check_f_ext(model, f_ext, q.dtype)


def state_dtype(*xs) -> jnp.dtype:
    """Floating dtype of the state arguments (the model's parameters are cast to it)."""
    return jnp.result_type(*[x for x in xs if x is not None])


def check_f_ext(model: Model, f_ext, dtype) -> jax.Array | None:
    if f_ext is None:
        return None
    f = jnp.asarray(f_ext, dtype)
    if f.shape != (model.n_bodies, 6):
        raise ValueError(f"f_ext must have shape (n_bodies, 6) = ({model.n_bodies}, 6), got {f.shape}")
    return f


class Subspace(NamedTuple):
    """Motion subspace ``H*`` of the joints of one kernel at every level.

    ``hinge`` kernels carry the 6-vector ``h`` per slot; the others a constant 6 × nv_k.
    """

    kernel: str
    start: int
    stop: int
    h: jax.Array | None  # (1, Wk, 6) for hinges
    const: jax.Array | None  # (6, nv_k) otherwise

    def times(self, x: jax.Array) -> jax.Array:
        """``H* x`` for ``x`` of shape ``(..., nv_k)`` → ``(..., 6)``."""
        if self.h is not None:
            return spatial.scale(x[..., 0], self.h)
        return spatial.mv(self.const, x)

    def transpose_times(self, f: jax.Array) -> jax.Array:
        """``H f`` for ``f`` of shape ``(..., 6)`` → ``(..., nv_k)``."""
        if self.h is not None:
            return spatial.dot(self.h, f)[..., None]
        return spatial.mtv(self.const, f)

    def transpose_times_cols(self, f: jax.Array) -> jax.Array:
        """``H F`` for ``F`` of shape ``(..., 6, m)`` → ``(..., nv_k, m)``."""
        if self.h is not None:
            return spatial.mtv(f, self.h)[..., None, :]
        return spatial.mtm(self.const, f)

    def right_times(self, p: jax.Array) -> jax.Array:
        """``P H*`` for ``P`` of shape ``(..., 6, 6)`` → ``(..., 6, nv_k)``."""
        if self.h is not None:
            return spatial.mv(p, self.h)[..., None]
        return spatial.mm(p, self.const)

    def matrix(self) -> jax.Array:
        """``H*`` as ``(..., 6, nv_k)``."""
        if self.h is not None:
            return self.h[..., None]
        return self.const

    def at_level(self, h_level, slots: slice | None = None):
        """The same subspace with ``h`` sliced to one level (used inside scans) and, with
        ``slots``, its slot range replaced by the level's local one (see
        :attr:`sodyn.topology.Segment.kernel_slices`)."""
        sub = self if self.h is None else self._replace(h=h_level)
        return sub if slots is None else sub._replace(start=slots.start, stop=slots.stop)


class Levels(NamedTuple):
    """Configuration-dependent quantities in the slot layout ``(1, W, ...)``."""

    rel_r: jax.Array      # (1, W, 3, 3) pose of each body in its parent: x_p = R x + p
    rel_p: jax.Array      # (1, W, 3)
    inertia: jax.Array    # (1, W, 6, 6) spatial inertia about the body frame
    subspaces: tuple[Subspace, ...]


def model_params(model: Model, dtype) -> Model:
    return model if model.mass.dtype == dtype else model.astype(dtype)


def prepare(model: Model, q: jax.Array) -> Levels:
    """Joint transforms, body-to-parent poses and spatial inertias at ``q``, in the slot layout."""
    topo: Topology = model.topology
    dtype = q.dtype
    m = model_params(model, dtype)
    rot, trans = hinge_coefficients(m, dtype)
    eye = jnp.eye(3, dtype=dtype)
    zero3 = jnp.zeros(3, dtype)
    axis_l = to_levels(topo, m.axis, jnp.array([0.0, 0.0, 1.0], dtype))
    rot_l = to_levels(topo, rot, jnp.ones((), dtype))
    trans_l = to_levels(topo, trans, jnp.zeros((), dtype))
    q_blocks = dofs_to_levels(topo, q, 1.0, which="q")

    jr, jp, subspaces = [], [], []
    for (kernel, s0, s1), qb in zip(topo.kernel_slots, q_blocks):
        if kernel == "hinge":
            a, r_, t_ = axis_l[:, s0:s1], rot_l[:, s0:s1], trans_l[:, s0:s1]
            r, p = joints.joint_transform(kernel, qb, a, r_, t_)
            subspaces.append(Subspace(kernel, s0, s1, joints.hinge_vector(a, r_, t_), None))
        else:
            r, p = joints.joint_transform(kernel, qb)
            subspaces.append(Subspace(kernel, s0, s1, None, joints.motion_subspace(kernel, dtype)))
        jr.append(r)
        jp.append(p)
    jr = jnp.concatenate(jr, axis=1)
    jp = jnp.concatenate(jp, axis=1)
    tr = to_levels(topo, m.tree_rotation, eye)
    tp = to_levels(topo, m.tree_translation, zero3)
    rel_r, rel_p = spatial.compose(tr, tp, jr, jp)

    inertia = spatial.spatial_inertia(m.mass, m.com, m.inertia)
    inertia = to_levels(topo, inertia, jnp.eye(6, dtype=dtype))
    return Levels(rel_r, rel_p, inertia, tuple(subspaces))


def restrict_levels(subtree: AncestorSubtree, levels: Levels) -> Levels:
    """``levels`` on the bodies of ``subtree`` only, in its own slot layout (``levels`` itself
    when the subtree is the whole tree)."""
    if subtree.is_whole_tree:
        return levels
    dtype = levels.rel_p.dtype
    subspaces = []
    for k, (kernel, s0, s1) in enumerate(subtree.topo.kernel_slots):
        full = levels.subspaces[subtree.full_kernel[k]]
        h = None if full.h is None else restrict_kernel(subtree, k, full.h)
        subspaces.append(Subspace(kernel, s0, s1, h, full.const))
    return Levels(
        restrict_slots(subtree, levels.rel_r, jnp.eye(3, dtype=dtype)),
        restrict_slots(subtree, levels.rel_p),
        restrict_slots(subtree, levels.inertia, jnp.eye(6, dtype=dtype)),
        tuple(subspaces),
    )


def hinge_vectors_by_level(levels: Levels) -> tuple[jax.Array, ...]:
    """Per kernel, the hinge vectors ``h``, as ``kernel_xs`` for the level scans (a
    one-element placeholder for kernels with a constant subspace)."""
    return tuple(s.h if s.h is not None else jnp.zeros((1,), levels.rel_p.dtype) for s in levels.subspaces)


def joint_motion(levels: Levels, x_blocks: list[jax.Array]) -> jax.Array:
    """``H* x`` for every body, ``(1, W, 6)``, from per-kernel dof blocks ``x``."""
    return jnp.concatenate([s.times(x) for s, x in zip(levels.subspaces, x_blocks)], axis=1)


def joint_force(levels: Levels, f: jax.Array) -> list[jax.Array]:
    """``H f`` per kernel, from body forces ``f`` of shape ``(1, W, 6)``."""
    subs = levels.subspaces
    pieces = split_slots(f, [slice(s.start, s.stop) for s in subs], axis=1)
    return [s.transpose_times(x) for s, x in zip(subs, pieces)]


def gravity_acceleration(model: Model, dtype) -> jax.Array:
    """Spatial acceleration of the world that accounts for gravity: ``[0; −g]``.

    (Jain's 𝔤 is the negative of the gravity field; see the errata in the digests.)
    """
    return jnp.concatenate([jnp.zeros(3, dtype), -model.gravity.astype(dtype)])


def zeros_like_levels(topo: Topology, tail: tuple[int, ...], dtype) -> jax.Array:
    return jnp.zeros(topo.layout_shape + tail, dtype)
