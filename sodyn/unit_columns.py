"""The tips-to-base sweep of every unit vector ``e_j`` (``j < nv``) at once, with columns
shared between subtrees, and the static tables that assemble ``Σ_c ν_c(e_a) · D ν_c(e_b)``.

A gather driven by the unit vector ``e_j`` is zero below and beside the body of dof ``j``: it
is non-zero only on the path from that body to the base.  Sweeping the ``nv`` unit vectors
as ``nv`` full columns therefore mostly adds zeros (on a free-floating quadruped with
three-dof legs, 5 of every 6 leg-level column entries).  Here a segment of levels
(:class:`sodyn.topology.Segment`) carries only ``C_s`` columns: each body's first-level
ancestor in the segment (its *segment root*) owns the columns, one per dof of the root's
subtree, in dof order, and dofs below different roots share column numbers, since no body of
the segment sees both.  A serial chain keeps
all ``nv`` columns on its first segment; a quadruped's legs need three, the base eighteen.
Between segments a static gather renames the columns of each child root to those of its
parent's root.

The joint-space outputs of the sweep (the ``ν`` of Jain's innovations gather, Alg. 7.2, and
``D ν``) give ``𝓜⁻¹ = N* D N`` (eq. 7.20) as a sum over dofs ``c`` of outer products.  On a
segment whose slots keep their root at every level (:attr:`Segment.identity_maps`: serial
chains, a quadruped's legs) the sum over the segment's dofs is formed per slot in its
columns, ``(C_s, C_s)``.  A slot's dofs are its root's subtree, which in a tree numbered
depth first (every built model) is one range of consecutive dofs, and the subtrees of one
segment's slots are disjoint: the segment's blocks form a block-diagonal ``nv × nv`` matrix,
assembled by padding and concatenation (:attr:`UnitColumns.block_placement`), which is no
slower than adding the blocks into ``𝓜⁻¹`` by one static gather, as other numberings still
do.  Other segments (branching inside the segment) gather their columns into
``(nv, nv_s)`` matrices and take one matrix product.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.contraction import contract
from sodyn.joints import NV
from sodyn.runtime.precision import full_precision
from sodyn.runtime.tuning import BLOCK_PRODUCT_MATMUL_SIZE
from sodyn.topology import Topology


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
    ``block_placement[s][k]`` lists, for each first-level slot of kernel ``k`` of a segment
    ``s`` with identity maps, ``(rank, start, n)``: its block's leading ``n × n`` corner sits at
    rows and columns ``start … start + n − 1`` of ``𝓜⁻¹`` (``None`` for other segments).
    ``block_placement`` is ``None`` when some slot's dofs are not consecutive; ``block_index``
    is ``None`` unless it is needed then.
    """

    counts: tuple[int, ...]
    units: tuple[tuple[np.ndarray, ...], ...]
    cross: tuple[np.ndarray | None, ...]
    block_index: np.ndarray | None
    dense_index: tuple[np.ndarray | None, ...]
    block_placement: tuple[tuple[tuple[tuple[int, int, int], ...], ...] | None, ...] | None


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


def _columns(topo: Topology, where: list[_Slot], sub: list[list[int]]) -> list[dict[int, int]]:
    """Each body's column of each dof it sees: the dofs of its segment root's subtree, in order."""
    columns = []
    for k in range(topo.n_bodies):
        root = k
        while where[root].level > 0:
            root = int(topo.parent[root])
        columns.append({j: c for c, j in enumerate(sub[root])})
    return columns


@functools.lru_cache(maxsize=128)
def unit_columns(topo: Topology) -> UnitColumns:
    """Build the :class:`UnitColumns` layout of ``topo`` (cached)."""
    n, nv = topo.n_bodies, topo.nv
    segs = topo.segments
    where = _slots(topo)
    sub = _subtree_dofs(topo)
    nv_body = np.bincount(topo.dof_body, minlength=n)
    kernel_names = [kn for kn, _, _ in topo.kernel_slots]

    column = _columns(topo, where, sub)
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
    block_placement = _block_placement(topo, where, sub)
    block_index = None if block_placement is not None else _block_index(topo, where, sub, column, counts)

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
        counts, tuple(tuple(u) for u in units), tuple(cross), block_index, tuple(dense_index), block_placement
    )


def _block_placement(topo: Topology, where: list[_Slot], sub: list[list[int]]) -> tuple | None:
    """:attr:`UnitColumns.block_placement`, or ``None`` if a slot's dofs are not consecutive."""
    segs = topo.segments
    placement = [[[] for _ in topo.kernel_slots] for _ in segs]
    for k in range(topo.n_bodies):
        w, dofs = where[k], sub[k]
        if not (segs[w.segment].identity_maps and w.level == 0 and dofs):
            continue  # a first-level body stands for its slot at every level of the segment
        if dofs != list(range(dofs[0], dofs[0] + len(dofs))):
            return None
        placement[w.segment][w.kernel].append((w.rank, dofs[0], len(dofs)))
    return tuple(
        tuple(tuple(sorted(p)) for p in per_kernel) if s.identity_maps else None
        for s, per_kernel in zip(segs, placement)
    )


def _block_index(topo: Topology, where: list[_Slot], sub: list[list[int]], column, counts) -> np.ndarray | None:
    """:attr:`UnitColumns.block_index`: for each entry of ``𝓜⁻¹``, the positions of its terms
    in the concatenated, flattened per-slot blocks of the segments with identity maps."""
    nv, segs = topo.nv, topo.segments
    block_shapes, block_offset, total = {}, {}, 0
    for i, s in enumerate(segs):
        if s.identity_maps:
            for kk in range(len(topo.kernel_slots)):
                block_shapes[i, kk] = (s.kernel_width[kk], counts[i], counts[i])
                block_offset[i, kk] = total
                total += int(np.prod(block_shapes[i, kk]))
    if not total:
        return None
    contributions: list[list[list[int]]] = [[[] for _ in range(nv)] for _ in range(nv)]
    for k in range(topo.n_bodies):
        w = where[k]
        if not (segs[w.segment].identity_maps and w.level == 0):
            continue
        for a in sub[k]:
            for b in sub[k]:
                pos = np.ravel_multi_index((w.rank, column[k][a], column[k][b]), block_shapes[w.segment, w.kernel])
                contributions[a][b].append(block_offset[w.segment, w.kernel] + int(pos))
    depth = max(len(c) for row in contributions for c in row)
    index = np.full((nv, nv, depth), total, dtype=np.int64)
    for a in range(nv):
        for b in range(nv):
            index[a, b, :len(contributions[a][b])] = contributions[a][b]
    return index


@full_precision
def sum_of_column_products(topo: Topology, a: list[tuple], b: list[tuple]) -> jax.Array:
    """``Σ_c A_c(e_i) · B_c(e_j)`` ``(nv, nv)``, summed over every dof ``c``, from per-segment,
    per-kernel sweep outputs ``(L_s, w_sk, C_s, nv_k)`` of :func:`sodyn.sweeps.gather` with
    ``unit_columns=True``
    (``A_c(e_i)``: output at dof ``c`` of the sweep of ``e_i``)."""
    layout = unit_columns(topo)
    dtype = a[0][0].dtype
    nv = topo.nv
    blocks, total = [], None
    for i, (seg, seg_a, seg_b, dense) in enumerate(zip(topo.segments, a, b, layout.dense_index)):
        if seg.identity_maps and layout.block_placement is not None:
            placed = []
            for x, y, slots in zip(seg_a, seg_b, layout.block_placement[i]):
                if slots:
                    products = _block_products(x, y)
                    placed += [(start, products[rank, :n, :n]) for rank, start, n in slots]
            term = _block_diagonal(placed, nv, dtype)
            total = term if total is None else total + term
            continue
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
        gathered = flat[layout.block_index]
        term = contract("...k,...k->...", gathered, jnp.ones(gathered.shape[-1], dtype))
        total = term if total is None else total + term
    return total


def _block_diagonal(placed: list[tuple[int, jax.Array]], nv: int, dtype) -> jax.Array:
    """The ``(nv, nv)`` matrix with the square blocks ``(start, block)`` on its diagonal at
    rows and columns ``start …``, zero elsewhere (the blocks are disjoint): one row strip per
    block, padded to ``nv`` columns, and the strips and zero rows concatenated."""
    rows, end = [], 0
    for start, block in sorted(placed, key=lambda p: p[0]):
        n = block.shape[0]
        if start > end:
            rows.append(jnp.zeros((start - end, nv), dtype))
        rows.append(jax.lax.pad(block, jnp.zeros((), dtype), [(0, 0, 0), (start, nv - start - n, 0)]))
        end = start + n
    if end < nv:
        rows.append(jnp.zeros((nv - end, nv), dtype))
    return jnp.concatenate(rows, axis=0)


@full_precision
def _block_products(x: jax.Array, y: jax.Array) -> jax.Array:
    """``Σ_{ℓ, i} x[ℓ, w, c, i] y[ℓ, w, d, i]`` ``(w, C, C)`` for ``(L, w, C, nv_k)`` inputs."""
    if x.size * x.shape[2] > BLOCK_PRODUCT_MATMUL_SIZE:
        return jnp.einsum("lwci,lwdi->wcd", x, y)
    return contract("...cli,...dli->...cd", jnp.moveaxis(x, 0, 2), jnp.moveaxis(y, 0, 2))
