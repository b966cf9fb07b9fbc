"""The tips-to-base sweep of every unit vector ``e_j`` (``j < nv``) at once, with columns
shared between subtrees, and the static tables that assemble ``Σ_c ν_c(e_a) · D ν_c(e_b)``.

A gather driven by the unit vector ``e_j`` is zero below and beside the body of dof ``j``: it
is non-zero only on the path from that body to the base.  Sweeping the ``nv`` unit vectors
as ``nv`` full columns therefore mostly adds zeros (on Solo12, 5 of every 6 leg-level
column entries).  Here a segment of levels (:class:`sodyn.topology.Segment`) carries only
``C_s`` columns: each body's first-level ancestor in the segment (its *segment root*) owns
the columns, one per dof of the root's subtree, in dof order, and dofs below different
roots share column numbers, since no body of the segment sees both.  A serial chain keeps
all ``nv`` columns on its first segment; a quadruped's legs need three, the base eighteen.
Between segments a static gather renames the columns of each child root to those of its
parent's root.

The joint-space outputs of the sweep (the ``ν`` of Jain's innovations gather, Alg. 7.2, and
``D ν``) give ``𝓜⁻¹ = N* D N`` (eq. 7.20) as a sum over dofs ``c`` of outer products.  On a
segment whose slots keep their root at every level (:attr:`Segment.identity_maps`: serial
chains, a quadruped's legs) the sum over the segment's dofs is formed per slot in its
columns, ``(C_s, C_s)``, and the blocks are added into ``nv × nv`` by one static gather;
other segments (branching inside the segment) gather their columns into ``(nv, nv_s)``
matrices and take one matrix product.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import NV
from sodyn.topology import Topology, _scan, _segment_inputs, _to_parent

PyTree = Any


@dataclasses.dataclass(frozen=True, eq=False)
class UnitColumns:
    """Static layout of :func:`gather_unit_columns` for one topology.

    ``counts[s]`` is segment ``s``'s column count ``C_s``; ``units[s][k]`` ``(L_s, w_sk, C_s,
    nv_k)`` holds the unit inputs (``1`` where a column is the slot's own dof).
    ``cross[s]`` ``(W_s, C_s)`` indexes, for segment ``s``'s last level, the flattened
    ``(W_{s+1} · C_{s+1})`` first-level output of segment ``s + 1`` (the padding index
    ``W_{s+1} · C_{s+1}`` reads zero); ``None`` for the last segment.
    ``block_index`` ``(nv, nv, T)`` indexes the concatenated, flattened per-slot blocks of the
    segments with identity maps (padding reads zero), and ``dense_index[s]`` ``(nv, n_s)`` the
    flattened outputs of another segment ``s`` (``None`` for segments with identity maps).
    """

    counts: tuple[int, ...]
    units: tuple[tuple[np.ndarray, ...], ...]
    cross: tuple[np.ndarray | None, ...]
    block_index: np.ndarray | None
    dense_index: tuple[np.ndarray | None, ...]


@dataclasses.dataclass(frozen=True)
class _Slot:
    segment: int
    level: int   # level inside the segment
    kernel: int
    rank: int    # slot among the kernel's slots of the segment's level
    local: int   # slot among all of the segment's level slots


def _slots(topo: Topology) -> list[_Slot]:
    """Where each body sits in its segment's sweep."""
    segs = topo.segments
    seg_of_level = np.zeros(topo.n_levels, dtype=np.int64)
    for i, s in enumerate(segs):
        seg_of_level[s.start:s.stop] = i
    out = []
    for k in range(topo.n_bodies):
        flat = int(topo.body_flat[k])
        i = int(seg_of_level[topo.body_level[k]])
        seg = segs[i]
        kk = next(j for j, (_, a, b) in enumerate(topo.kernel_slots) if a <= flat < b)
        level, rank = divmod(flat - seg.kernel_offset[kk], seg.kernel_width[kk])
        out.append(_Slot(i, level, kk, rank, sum(seg.kernel_width[:kk]) + rank))
    return out


def _subtree_dofs(topo: Topology) -> list[list[int]]:
    """The dofs of each body's subtree (itself included), ascending."""
    n = topo.n_bodies
    nv_body = np.bincount(topo.dof_body, minlength=n)
    sub: list[list[int]] = [[] for _ in range(n)]
    for k in range(n - 1, -1, -1):  # children come after their parent
        sub[k] = sorted(sub[k] + list(range(int(topo.v_start[k]), int(topo.v_start[k] + nv_body[k]))))
        if topo.parent[k] >= 0:
            sub[topo.parent[k]] += sub[k]
    return sub


@functools.lru_cache(maxsize=128)
def unit_columns(topo: Topology) -> UnitColumns:
    """Build the :class:`UnitColumns` layout of ``topo`` (cached)."""
    n, nv = topo.n_bodies, topo.nv
    segs = topo.segments
    where = _slots(topo)
    sub = _subtree_dofs(topo)
    nv_body = np.bincount(topo.dof_body, minlength=n)
    kernel_names = [kn for kn, _, _ in topo.kernel_slots]

    root = np.arange(n)
    for k in range(n):
        while where[root[k]].level > 0:
            root[k] = topo.parent[root[k]]
    column = [{j: c for c, j in enumerate(sub[root[k]])} for k in range(n)]
    counts = tuple(
        max([len(sub[k]) for k in range(n) if where[k].segment == i and where[k].level == 0] + [1])
        for i in range(len(segs))
    )

    units = [
        [np.zeros((s.n_levels, s.kernel_width[kk], counts[i], NV[kn])) for kk, kn in enumerate(kernel_names)]
        for i, s in enumerate(segs)
    ]
    for k in range(n):
        w = where[k]
        for d in range(nv_body[k]):
            units[w.segment][w.kernel][w.level, w.rank, column[k][int(topo.v_start[k]) + d], d] = 1.0

    cross: list[np.ndarray | None] = []
    for i, s in enumerate(segs):
        if i + 1 == len(segs):
            cross.append(None)
            continue
        below = counts[i + 1]
        idx = np.full((s.width, counts[i]), segs[i + 1].width * below, dtype=np.int64)
        for c in range(n):
            p = int(topo.parent[c])
            if where[c].segment == i + 1 and where[c].level == 0 and p >= 0:
                for j in sub[c]:
                    idx[where[p].local, column[p][j]] = where[c].local * below + column[c][j]
        cross.append(idx)

    # Products: per-slot (C_s × C_s) blocks on identity-map segments, dense columns elsewhere.
    block_shapes, block_offset, total = {}, {}, 0
    for i, s in enumerate(segs):
        if s.identity_maps:
            for kk in range(len(kernel_names)):
                block_shapes[i, kk] = (s.kernel_width[kk], counts[i], counts[i])
                block_offset[i, kk] = total
                total += int(np.prod(block_shapes[i, kk]))
    contributions: list[list[list[int]]] = [[[] for _ in range(nv)] for _ in range(nv)]
    for i, s in enumerate(segs):
        if not s.identity_maps:
            continue
        for k in range(n):
            w = where[k]
            if w.segment != i or w.level != 0:
                continue  # a first-level body stands for its slot at every level of the segment
            for a in sub[k]:
                for b in sub[k]:
                    pos = np.ravel_multi_index((w.rank, column[k][a], column[k][b]), block_shapes[i, w.kernel])
                    contributions[a][b].append(block_offset[i, w.kernel] + int(pos))
    block_index = None
    if total:
        depth = max(len(c) for row in contributions for c in row)
        block_index = np.full((nv, nv, depth), total, dtype=np.int64)
        for a in range(nv):
            for b in range(nv):
                block_index[a, b, :len(contributions[a][b])] = contributions[a][b]

    dense_index: list[np.ndarray | None] = []
    for i, s in enumerate(segs):
        if s.identity_maps:
            dense_index.append(None)
            continue
        offsets = np.cumsum([0] + [u.size for u in units[i]])
        dofs = [j for j in range(nv) if where[topo.dof_body[j]].segment == i]
        idx = np.full((nv, len(dofs)), offsets[-1], dtype=np.int64)
        for c_pos, c in enumerate(dofs):
            k = int(topo.dof_body[c])
            w = where[k]
            shape = units[i][w.kernel].shape
            for a in sub[k]:
                pos = np.ravel_multi_index((w.level, w.rank, column[k][a], c - int(topo.v_start[k])), shape)
                idx[a, c_pos] = offsets[w.kernel] + int(pos)
        dense_index.append(idx)

    return UnitColumns(
        counts, tuple(tuple(u) for u in units), tuple(cross), block_index, tuple(dense_index)
    )


def gather_unit_columns(
    topo: Topology,
    step: Callable[..., tuple[jax.Array, tuple]],
    width: int,
    xs: PyTree,
    kernel_xs: tuple[PyTree, ...],
    dtype,
) -> list[tuple]:
    """Tips-to-base sweep of all unit vectors: per segment, one ``lax.scan`` whose carry is
    ``(W_s, C_s, width)``.

    ``step(from_children, x, xk, slices)`` gets the level's children sums ``(W_s, C_s,
    width)``, the level's ``xs`` (compact-layout ``(1, W, ...)`` arrays, as for
    :func:`sodyn.topology.gather`) and, per kernel, the level's ``kernel_xs`` (``(w_k, ...)``)
    with the unit inputs ``(w_k, C_s, nv_k)`` appended; it returns ``(to_parent, outs)``,
    ``outs`` a tuple over kernels of pytrees with leaves ``(w_k, C_s, ...)``.  Returns, per
    segment, the outputs stacked over its levels, ``(L_s, w_sk, C_s, ...)``.
    """
    layout = unit_columns(topo)
    inputs = _segment_inputs(topo, xs, kernel_xs)
    results: list[tuple] = [()] * len(topo.segments)
    sent = None
    for i in range(len(topo.segments) - 1, -1, -1):
        seg = topo.segments[i]
        x, xk = inputs[i]
        xk = tuple((k, jnp.asarray(u, dtype)) for k, u in zip(xk, layout.units[i]))
        init = jnp.zeros((seg.width, layout.counts[i], width), dtype) if sent is None else sent

        def body(z, level, slices=seg.kernel_slices, straight=seg.identity_maps):
            onehot, x_l, xk_l = level
            to_parent, outs = step(z, x_l, xk_l, slices)
            return (to_parent if straight else _to_parent(onehot, to_parent)), outs

        last, results[i] = _scan(body, init, (seg.onehot, x, xk), reverse=True)
        if i > 0:
            flat = jnp.concatenate([last.reshape(-1, width), jnp.zeros((1, width), dtype)])
            sent = flat[layout.cross[i - 1]]
    return results


def sum_of_column_products(topo: Topology, a: list[tuple], b: list[tuple]) -> jax.Array:
    """``Σ_c A_c(e_i) · B_c(e_j)`` ``(nv, nv)``, summed over every dof ``c``, from per-segment,
    per-kernel sweep outputs ``(L_s, w_sk, C_s, nv_k)`` of :func:`gather_unit_columns`
    (``A_c(e_i)``: output at dof ``c`` of the sweep of ``e_i``)."""
    layout = unit_columns(topo)
    dtype = a[0][0].dtype
    blocks, total = [], None
    for seg, seg_a, seg_b, dense in zip(topo.segments, a, b, layout.dense_index):
        if seg.identity_maps:
            blocks += [_block_products(x, y).reshape(-1) for x, y in zip(seg_a, seg_b)]
            continue
        zero = jnp.zeros(1, dtype)
        cols_a = jnp.concatenate([x.reshape(-1) for x in seg_a] + [zero])[dense]
        cols_b = jnp.concatenate([y.reshape(-1) for y in seg_b] + [zero])[dense]
        term = jnp.einsum("ac,bc->ab", cols_a, cols_b)
        total = term if total is None else total + term
    if blocks:
        flat = jnp.concatenate(blocks + [jnp.zeros(1, dtype)])
        term = jnp.sum(flat[layout.block_index], axis=-1)
        total = term if total is None else total + term
    return total


#: Above this many multiply-adds per sample, a segment's per-slot block products are one
#: ``dot_general``; below it, sums over broadcast products (faster on small blocks on XLA:CPU).
#: Measured (float64, B = 1024, one core): Panda's 567 and Solo12's 1944 run 0.9× the time as
#: sums, a 16-link chain's 4096 2.5× slower (32 links: 12.7 µs per sample by ``dot_general``,
#: 31.9 µs as sums).
BLOCK_PRODUCT_MATMUL_SIZE = 2048


def _block_products(x: jax.Array, y: jax.Array) -> jax.Array:
    """``Σ_{ℓ, i} x[ℓ, w, c, i] y[ℓ, w, d, i]`` ``(w, C, C)`` for ``(L, w, C, nv_k)`` inputs."""
    if x.size * x.shape[2] > BLOCK_PRODUCT_MATMUL_SIZE:
        return jnp.einsum("lwci,lwdi->wcd", x, y)
    return jnp.sum(x[:, :, :, None, :] * y[:, :, None, :, :], axis=(0, -1))
