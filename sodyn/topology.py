"""Static tree topology, the level schedule, and the one scatter/gather engine.

The tree is compiled once into NumPy index arrays.  Bodies are grouped by *level* (depth
below the world); each level holds ``width`` slots, padded with masked dummies.  Inside a
level the slots are partitioned by joint kernel (free, spherical, planar, hinge; see
:mod:`sodyn.joints`), each kernel owning the same slot range at every level, so the code for
a kernel runs on fixed shapes and never pads a hinge to six degrees of freedom.

Every recursion in sodyn is one of two sweeps over levels, each a single ``jax.lax.scan``
whose body is traced once, so the program size does not grow with tree depth:

* :func:`scatter` (base → tips, Jain's ``φ*`` sweeps, e.g. eq. 3.19 for velocities): level
  ``ℓ`` reads the values of its parents at level ``ℓ − 1``;
* :func:`gather` (tips → base, Jain's ``φ`` sweeps, e.g. eq. 4.20 for composite inertias):
  level ``ℓ`` adds what its children at level ``ℓ + 1`` sent up.

Inside a level, a parent is reached through a one-hot ``(width, width)`` matrix; with
``width == 1`` (serial chains) that is elided altogether.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import KERNEL_OF, KERNELS, NQ, NV

PyTree = Any


@dataclasses.dataclass(frozen=True, eq=False)
class Topology:
    """Static description of a kinematic tree (hashable; changing it recompiles).

    Attributes are NumPy arrays or tuples.  ``parent[k] < k`` (``-1`` for the world), and
    body order is depth-first, so ``q``/``v`` follow the source model's joint order.
    """

    parent: np.ndarray            # (n,) int
    joint_type: tuple[str, ...]   # (n,)
    q_start: np.ndarray           # (n,) int
    v_start: np.ndarray           # (n,) int
    nq: int
    nv: int
    # level schedule
    n_levels: int
    width: int
    body_slot: np.ndarray         # (L, W) body index in each slot, n for padding
    mask: np.ndarray              # (L, W) bool, True for real bodies
    parent_onehot: np.ndarray     # (L, W, W) float: [l, c, p] = 1 if slot c's parent is slot p
    body_level: np.ndarray        # (n,) level of each body
    body_flat: np.ndarray         # (n,) flat slot index l * W + s of each body
    kernel_slots: tuple[tuple[str, int, int], ...]  # (kernel, start, stop) slot ranges
    q_index: tuple[np.ndarray, ...]   # per kernel: (L, Wk, nq_k) into q padded with one entry
    v_index: tuple[np.ndarray, ...]   # per kernel: (L, Wk, nv_k) into v padded with one entry
    dof_gather: np.ndarray        # (nv,) index into the concatenated per-kernel dof outputs
    q_gather: np.ndarray          # (nq,) index into the concatenated per-kernel q blocks
    kernel_dof_size: tuple[int, ...]
    support: np.ndarray           # (n, nv) bool: dof j moves body k (j's body is k or an ancestor)
    dof_body: np.ndarray          # (nv,) body of each dof

    @property
    def n_bodies(self) -> int:
        return int(self.parent.shape[0])

    def _key(self) -> bytes:
        h = hashlib.sha1()
        h.update(self.parent.tobytes())
        h.update(repr(self.joint_type).encode())
        return h.digest()

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Topology) and self._key() == other._key()


def compile_topology(parent: np.ndarray, joint_type: tuple[str, ...]) -> Topology:
    """Build the level schedule for bodies with ``parent[k] < k`` and movable joints."""
    parent = np.asarray(parent, dtype=np.int64)
    n = parent.shape[0]
    kernels = [KERNEL_OF[t] for t in joint_type]
    nq_b = np.array([NQ[k] for k in kernels], dtype=np.int64)
    nv_b = np.array([NV[k] for k in kernels], dtype=np.int64)
    q_start = np.concatenate([[0], np.cumsum(nq_b)[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64)
    v_start = np.concatenate([[0], np.cumsum(nv_b)[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64)
    nq, nv = int(nq_b.sum()), int(nv_b.sum())

    level = np.zeros(n, dtype=np.int64)
    for k in range(n):
        level[k] = 0 if parent[k] < 0 else level[parent[k]] + 1
    n_levels = int(level.max()) + 1 if n else 1

    # Slots: each kernel owns a fixed range, as wide as its widest level.
    present = [kn for kn in KERNELS if kn in kernels]
    kernel_arr = np.array(kernels)
    kwidth = {kn: max(int(np.sum((level == lv) & (kernel_arr == kn))) for lv in range(n_levels)) for kn in present}
    kernel_slots, start = [], 0
    for kn in present:
        kernel_slots.append((kn, start, start + kwidth[kn]))
        start += kwidth[kn]
    width = max(start, 1)

    body_slot = np.full((n_levels, width), n, dtype=np.int64)
    slot_of = np.zeros(n, dtype=np.int64)
    fill = {(lv, kn): 0 for lv in range(n_levels) for kn in present}
    for k in range(n):
        kn, lv = kernels[k], level[k]
        s = dict((a, b) for a, b, _ in kernel_slots)[kn] + fill[(lv, kn)]
        fill[(lv, kn)] += 1
        body_slot[lv, s] = k
        slot_of[k] = s
    mask = body_slot < n
    parent_onehot = np.zeros((n_levels, width, width))
    for k in range(n):
        if parent[k] >= 0:
            parent_onehot[level[k], slot_of[k], slot_of[parent[k]]] = 1.0

    q_index, v_index, sizes = [], [], []
    dof_gather = np.zeros(nv, dtype=np.int64)
    q_gather = np.zeros(nq, dtype=np.int64)
    offset = qoffset = 0
    for kn, s0, s1 in kernel_slots:
        wk = s1 - s0
        qi = np.full((n_levels, wk, NQ[kn]), nq, dtype=np.int64)
        vi = np.full((n_levels, wk, NV[kn]), nv, dtype=np.int64)
        for lv in range(n_levels):
            for s in range(wk):
                k = body_slot[lv, s0 + s]
                if k < n:
                    qi[lv, s] = q_start[k] + np.arange(NQ[kn])
                    vi[lv, s] = v_start[k] + np.arange(NV[kn])
                    flat = offset + (lv * wk + s) * NV[kn] + np.arange(NV[kn])
                    dof_gather[v_start[k] + np.arange(NV[kn])] = flat
                    qflat = qoffset + (lv * wk + s) * NQ[kn] + np.arange(NQ[kn])
                    q_gather[q_start[k] + np.arange(NQ[kn])] = qflat
        q_index.append(qi)
        v_index.append(vi)
        sizes.append(n_levels * wk * NV[kn])
        offset += n_levels * wk * NV[kn]
        qoffset += n_levels * wk * NQ[kn]

    dof_body = np.repeat(np.arange(n), nv_b)
    support = np.zeros((n, nv), dtype=bool)
    for k in range(n):
        j = k
        while j >= 0:
            support[k, v_start[j]: v_start[j] + nv_b[j]] = True
            j = parent[j]

    return Topology(
        parent=parent, joint_type=tuple(joint_type), q_start=q_start, v_start=v_start,
        nq=nq, nv=nv, n_levels=n_levels, width=width, body_slot=body_slot, mask=mask,
        parent_onehot=parent_onehot, body_level=level, body_flat=level * width + slot_of,
        kernel_slots=tuple(kernel_slots), q_index=tuple(q_index), v_index=tuple(v_index),
        dof_gather=dof_gather, q_gather=q_gather, kernel_dof_size=tuple(sizes), support=support, dof_body=dof_body,
    )


# ---------------------------------------------------------------------------
# layout conversions
# ---------------------------------------------------------------------------


def to_levels(topo: Topology, body_values: jax.Array, pad_value: jax.Array) -> jax.Array:
    """Body-ordered ``(n, ...)`` values → level layout ``(L, W, ...)``; padding gets ``pad_value``."""
    pad = jnp.broadcast_to(pad_value, (1,) + body_values.shape[1:]).astype(body_values.dtype)
    ext = jnp.concatenate([body_values, pad])
    return ext[topo.body_slot]


def from_levels(topo: Topology, level_values: jax.Array) -> jax.Array:
    """Level layout ``(L, W, ...)`` → body order ``(n, ...)``."""
    flat = level_values.reshape((topo.n_levels * topo.width,) + level_values.shape[2:])
    return flat[topo.body_flat]


def dofs_to_levels(topo: Topology, x: jax.Array, pad: float, which: str = "v") -> list[jax.Array]:
    """Split a ``q`` (``which="q"``) or ``v``-shaped vector into per-kernel ``(L, Wk, n_k)`` blocks."""
    ext = jnp.concatenate([x, jnp.full((1,), pad, x.dtype)])
    idx = topo.q_index if which == "q" else topo.v_index
    return [ext[i] for i in idx]


def dofs_from_levels(topo: Topology, blocks: list[jax.Array], which: str = "v") -> jax.Array:
    """Inverse of :func:`dofs_to_levels`: per-kernel blocks → an ``(nv,)`` (or ``(nq,)``) vector.

    Extra trailing axes of the blocks (e.g. ``(L, Wk, nv_k, m)``) are kept.
    """
    tail = blocks[0].shape[3:]
    flat = jnp.concatenate([b.reshape((-1,) + tail) for b in blocks])
    return flat[topo.q_gather if which == "q" else topo.dof_gather]


# ---------------------------------------------------------------------------
# the scatter/gather engine
# ---------------------------------------------------------------------------


def _from_parent(onehot: jax.Array, carry: PyTree) -> PyTree:
    """Values of each slot's parent: ``out[c] = Σ_p onehot[c, p] carry[p]``."""
    if onehot.shape[-1] == 1:
        return carry

    def pick(x):
        oh = onehot.reshape(onehot.shape + (1,) * (x.ndim - 1)).astype(x.dtype)
        out = oh[:, 0] * x[0]
        for p in range(1, x.shape[0]):
            out = out + oh[:, p] * x[p]
        return out

    return jax.tree_util.tree_map(pick, carry)


def _to_parent(onehot: jax.Array, values: PyTree) -> PyTree:
    """Children's contributions summed into parent slots: ``out[p] = Σ_c onehot[c, p] x[c]``.

    Level-0 bodies (and padding) have no row in ``onehot``; their values are dropped.
    """
    if onehot.shape[-1] == 1:
        return jax.tree_util.tree_map(
            lambda x: x * onehot.reshape((1,) * x.ndim).astype(x.dtype), values
        )

    def put(x):
        oh = onehot.reshape(onehot.shape + (1,) * (x.ndim - 1)).astype(x.dtype)
        out = oh[0] * x[0]
        for c in range(1, x.shape[0]):
            out = out + oh[c] * x[c]
        return out

    return jax.tree_util.tree_map(put, values)


def scatter(
    topo: Topology,
    step: Callable[[PyTree, PyTree], tuple[PyTree, PyTree]],
    root_parent: PyTree,
    xs: PyTree,
) -> PyTree:
    """Base-to-tips sweep: ``(value_ℓ, out_ℓ) = step(value_parent(ℓ), xs_ℓ)`` for ℓ = 0 … L−1.

    ``root_parent`` is the value seen by level-0 bodies as their parent (e.g. the world's
    velocity, or ``−g`` for accelerations), given for one slot; ``xs`` are level-major
    ``(L, W, ...)`` arrays.  Returns the stacked ``out`` of every level.
    """
    w = topo.width
    init = jax.tree_util.tree_map(lambda r: jnp.broadcast_to(r, (w,) + jnp.shape(r)), root_parent)
    onehot = jnp.asarray(topo.parent_onehot)
    level0 = np.zeros((topo.n_levels,), dtype=bool)
    level0[0] = True

    def body(carry, inp):
        oh, is_root, x = inp
        from_parent = _from_parent(oh, carry)
        parent_vals = jax.tree_util.tree_map(lambda i, p: jnp.where(is_root, i, p), init, from_parent)
        value, out = step(parent_vals, x)
        return value, out

    _, outs = jax.lax.scan(body, init, (onehot, jnp.asarray(level0), xs))
    return outs


def gather(
    topo: Topology,
    step: Callable[[PyTree, PyTree], tuple[PyTree, PyTree]],
    zero: PyTree,
    xs: PyTree,
) -> PyTree:
    """Tips-to-base sweep: ``(to_parent_ℓ, out_ℓ) = step(from_children_ℓ, xs_ℓ)``, ℓ = L−1 … 0.

    ``from_children_ℓ`` holds, per slot, the sum of what the slot's children returned as
    ``to_parent`` (``zero`` for leaves; ``zero`` is given for one slot).  Padding slots
    never send anything.  Returns the stacked ``out`` of every level.
    """
    w = topo.width
    init = jax.tree_util.tree_map(lambda z: jnp.broadcast_to(z, (w,) + jnp.shape(z)), zero)
    onehot = jnp.asarray(topo.parent_onehot)

    def body(carry, inp):
        oh, x = inp
        to_parent, out = step(carry, x)
        # Shift to the parent level: each slot's row of the one-hot picks its parent.
        return _to_parent(oh, to_parent), out

    _, outs = jax.lax.scan(body, init, (onehot, xs), reverse=True)
    return outs
