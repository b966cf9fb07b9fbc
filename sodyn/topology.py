"""Static tree topology, the level schedule and the compact slot layout that the sweeps of
:mod:`sodyn.sweeps` run on.

The tree is compiled once into NumPy index arrays.  Bodies are grouped by *level* (depth
below the world), and the levels are cut into a few *segments* (runs of consecutive levels,
at most :data:`~sodyn.runtime.tuning.MAX_SEGMENTS`), one ``lax.scan`` each.  Inside a segment
every level has the same slots, partitioned by joint kernel (free, spherical, planar, hinge;
see :mod:`sodyn.joints`), so the code for a kernel runs on fixed shapes and never pads a hinge
to six degrees of freedom; a level with fewer bodies of a kernel than its segment is wide gets
masked dummies.  A manipulator whose gripper fingers make the last level two wide runs its arm
levels one wide; a floating base does not carry its free-joint slot through the legs.  The cut
is chosen at compile time by a small dynamic program over a cost model of the level work
(:func:`_choose_segments`).  Inside a level a parent is reached through a static one-hot map
(:class:`Segment`), elided where every slot's parent sits in the same slot one level up.

Everything outside the sweeps (joint transforms, inertias, bias forces, the products that
need no parent) runs on the *compact slot layout* ``(1, W, ...)`` (:class:`Topology`): the
segments' slots side by side, kernel by kernel, with no slot for levels a segment does not
have.  A segment's scan inputs are reshapes of contiguous pieces of it, and its outputs are
put back the same way.  A seven-joint arm with two gripper fingers has 9 slots for its 9
bodies, where a padded ``levels × widest level`` layout would have 16.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import KERNEL_OF, KERNELS, NQ, NV
from sodyn.runtime.tuning import (
    DOF_ORDER_MAX_RUNS,
    MAX_SEGMENTS,
    SEGMENT_COST,
    SEGMENT_PICK_COST,
    SEGMENT_SLOT_COST,
)


@dataclasses.dataclass(frozen=True, eq=False)
class Segment:
    """A run of levels ``[start, stop)`` swept by one ``lax.scan`` with its own slot layout.

    Inside the scan a level has ``width`` local slots: for each kernel (``topo.kernel_slots``
    order) ``kernel_width[k]`` of them.  The segment's slots of kernel ``k`` are stored in the
    compact layout at ``kernel_offset[k] : kernel_offset[k] + (stop − start) · kernel_width[k]``,
    level by level.  ``onehot[i, c, p] = 1`` if local slot ``c`` at level ``start + i`` has its
    parent in local slot ``p`` of the level above; the first level's map is the identity (its
    parents' values are brought in before the scan, through ``cross``).  ``cross[c, p] = 1``
    if local slot ``c`` of this segment's first level has its parent in local slot ``p`` of
    the previous segment's last level (``None`` for the first segment).
    """

    start: int
    stop: int
    kernel_width: tuple[int, ...]
    kernel_offset: tuple[int, ...]
    onehot: np.ndarray
    cross: np.ndarray | None

    @property
    def n_levels(self) -> int:
        return self.stop - self.start

    @property
    def identity_maps(self) -> bool:
        """Whether every slot's parent sits in the same slot of the level above, at every level
        (parallel chains: a quadruped's legs, a serial arm): the sweeps then pass values
        straight down or up, with no one-hot pick."""
        return bool(np.all(self.onehot == np.eye(self.width)))

    @property
    def width(self) -> int:
        return sum(self.kernel_width)

    @property
    def kernel_slices(self) -> tuple[slice, ...]:
        """Local slot range of each kernel (``topo.kernel_slots`` order)."""
        out, a = [], 0
        for w in self.kernel_width:
            out.append(slice(a, a + w))
            a += w
        return tuple(out)


@dataclasses.dataclass(frozen=True, eq=False)
class Topology:
    """Static description of a kinematic tree (hashable; changing it recompiles).

    Attributes are NumPy arrays or tuples.  ``parent[k] < k`` (``-1`` for the world), and
    body order is depth-first, so ``q``/``v`` follow the source model's joint order.

    Per-body quantities outside the sweeps live in the *compact slot layout* of shape
    ``layout_shape = (1, width)``: kernel by kernel (``kernel_slots`` gives each kernel's
    range), then segment by segment, level by level, the segment's slots of that kernel.  A
    segment's share of an array is thus a reshape of contiguous pieces; padding slots exist
    only where a level of a segment has fewer bodies of a kernel than the segment's width.
    The leading axis of length one stands for the levels axis a sweep's inputs have.
    """

    parent: np.ndarray            # (n,) int
    joint_type: tuple[str, ...]   # (n,)
    q_start: np.ndarray           # (n,) int
    v_start: np.ndarray           # (n,) int
    nq: int
    nv: int
    n_levels: int                 # depth of the tree (levels of the sweeps)
    width: int                    # slots of the compact layout
    body_slot: np.ndarray         # (1, width) body index in each slot, n for padding
    mask: np.ndarray              # (1, width) bool, True for real bodies
    body_level: np.ndarray        # (n,) level of each body
    body_flat: np.ndarray         # (n,) compact slot of each body
    kernel_slots: tuple[tuple[str, int, int], ...]  # (kernel, start, stop) slot ranges
    q_index: tuple[np.ndarray, ...]   # per kernel: (1, Wk, nq_k) into q padded with one entry
    v_index: tuple[np.ndarray, ...]   # per kernel: (1, Wk, nv_k) into v padded with one entry
    dof_gather: np.ndarray        # (nv,) index into the concatenated per-kernel dof outputs
    q_gather: np.ndarray          # (nq,) index into the concatenated per-kernel q blocks
    kernel_dof_size: tuple[int, ...]
    support: np.ndarray           # (n, nv) bool: dof j moves body k (j's body is k or an ancestor)
    dof_body: np.ndarray          # (nv,) body of each dof
    segments: tuple[Segment, ...] = ()  # the sweeps' level segments, see the module docstring

    @property
    def n_bodies(self) -> int:
        return int(self.parent.shape[0])

    @property
    def layout_shape(self) -> tuple[int, int]:
        """Leading shape ``(1, width)`` of per-slot arrays outside the sweeps."""
        return (1, self.width)

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
    """Build the level schedule and compact layout for bodies with ``parent[k] < k``.

    O(n) in the bodies (no walk to the root: levels and ``support`` rows are inherited from
    the parent, which comes first), except where an output is itself larger: ``support`` is
    ``(n, nv)`` and each segment's one-hot maps are ``levels × width²``.
    """
    parent = np.asarray(parent, dtype=np.int64)
    n = parent.shape[0]
    if n == 0:
        raise ValueError("a topology needs at least one body")
    kernels = [KERNEL_OF[t] for t in joint_type]
    nq_b = np.array([NQ[k] for k in kernels], dtype=np.int64)
    nv_b = np.array([NV[k] for k in kernels], dtype=np.int64)
    q_start = np.concatenate([[0], np.cumsum(nq_b)[:-1]]).astype(np.int64)
    v_start = np.concatenate([[0], np.cumsum(nv_b)[:-1]]).astype(np.int64)
    nq, nv = int(nq_b.sum()), int(nv_b.sum())

    level = np.zeros(n, dtype=np.int64)
    for k in range(n):
        level[k] = 0 if parent[k] < 0 else level[parent[k]] + 1
    n_levels = int(level.max()) + 1

    present = [kn for kn in KERNELS if kn in kernels]
    kidx = np.array([present.index(kn) for kn in kernels], dtype=np.int64)
    counts = np.zeros((n_levels, len(present)), dtype=np.int64)  # bodies of each kernel per level, O(n)
    np.add.at(counts, (level, kidx), 1)
    ranges = _choose_segments(counts, present)
    seg_widths = [tuple(int(x) for x in counts[a:b].max(axis=0)) for a, b in ranges]

    # Compact layout: kernel-major, then segment, level, slot within the kernel's group.
    kernel_slots, seg_offsets, start = [], [[] for _ in ranges], 0
    for k, kn in enumerate(present):
        k0 = start
        for i, ((a, b), kw) in enumerate(zip(ranges, seg_widths)):
            seg_offsets[i].append(start)
            start += (b - a) * kw[k]
        kernel_slots.append((kn, k0, start))
    width = start

    # Each body's slot: its rank among same-kernel bodies of its level (in body order).
    seg_of_level = np.zeros(n_levels, dtype=np.int64)
    for i, (a, b) in enumerate(ranges):
        seg_of_level[a:b] = i
    rank = np.zeros(n, dtype=np.int64)
    fill: dict[tuple[int, str], int] = {}
    for k in range(n):
        key = (int(level[k]), kernels[k])
        rank[k] = fill.get(key, 0)
        fill[key] = rank[k] + 1
    body_flat = np.zeros(n, dtype=np.int64)
    local_of = np.zeros(n, dtype=np.int64)  # local slot inside the segment's level
    for k in range(n):
        i, kk = seg_of_level[level[k]], kidx[k]
        a = ranges[i][0]
        kw = seg_widths[i][kk]
        body_flat[k] = seg_offsets[i][kk] + (level[k] - a) * kw + rank[k]
        local_of[k] = sum(seg_widths[i][:kk]) + rank[k]
    body_slot = np.full((1, width), n, dtype=np.int64)
    body_slot[0, body_flat] = np.arange(n)
    mask = body_slot < n

    q_index, v_index, sizes = [], [], []
    dof_gather = np.zeros(nv, dtype=np.int64)
    q_gather = np.zeros(nq, dtype=np.int64)
    offset = qoffset = 0
    for kn, s0, s1 in kernel_slots:
        wk = s1 - s0
        qi = np.full((1, wk, NQ[kn]), nq, dtype=np.int64)
        vi = np.full((1, wk, NV[kn]), nv, dtype=np.int64)
        for s in range(wk):
            k = body_slot[0, s0 + s]
            if k < n:
                qi[0, s] = q_start[k] + np.arange(NQ[kn])
                vi[0, s] = v_start[k] + np.arange(NV[kn])
                dof_gather[v_start[k] + np.arange(NV[kn])] = offset + s * NV[kn] + np.arange(NV[kn])
                q_gather[q_start[k] + np.arange(NQ[kn])] = qoffset + s * NQ[kn] + np.arange(NQ[kn])
        q_index.append(qi)
        v_index.append(vi)
        sizes.append(wk * NV[kn])
        offset += wk * NV[kn]
        qoffset += wk * NQ[kn]

    dof_body = np.repeat(np.arange(n), nv_b)
    # support[k] = support[parent[k]] plus k's own dofs: one row copy per body, O(n · nv) for
    # an (n, nv) output (no walk to the root), since parents come first.
    support = np.zeros((n, nv), dtype=bool)
    for k in range(n):
        if parent[k] >= 0:
            support[k] = support[parent[k]]
        support[k, v_start[k]: v_start[k] + nv_b[k]] = True

    segments = _build_segments(parent, level, local_of, ranges, seg_widths, seg_offsets)
    return Topology(
        parent=parent, joint_type=tuple(joint_type), q_start=q_start, v_start=v_start,
        nq=nq, nv=nv, n_levels=n_levels, width=width, body_slot=body_slot, mask=mask,
        body_level=level, body_flat=body_flat,
        kernel_slots=tuple(kernel_slots), q_index=tuple(q_index), v_index=tuple(v_index),
        dof_gather=dof_gather, q_gather=q_gather, kernel_dof_size=tuple(sizes), support=support, dof_body=dof_body,
        segments=segments,
    )


def _segment_cost(n_levels: int, widths: np.ndarray, kernels: list[str]) -> float:
    w = int(widths.sum())
    per_level = sum(SEGMENT_SLOT_COST[kn] * int(wk) for kn, wk in zip(kernels, widths))
    if w > 1:
        per_level += SEGMENT_PICK_COST * w * w
    return n_levels * per_level + SEGMENT_COST


#: Most runs of equal-width levels that :func:`_choose_segments` cuts between exactly.
_MAX_RUNS = 64


def _choose_segments(counts: np.ndarray, kernels: list[str]) -> list[tuple[int, int]]:
    """Cut the levels into at most :data:`MAX_SEGMENTS` runs minimising :func:`_segment_cost`.

    ``counts[l, k]`` is the number of bodies of kernel ``k`` at level ``l``.  Levels with the
    same counts are grouped into runs first (a chain is one run), then a dynamic program over
    the runs picks the cut.  The program is quadratic in the runs, so a tree with more than
    :data:`_MAX_RUNS` of them (a comb, whose width alternates level by level) is cut only at
    about ``_MAX_RUNS`` evenly spaced run boundaries (each group costed at its widest level),
    which keeps the compile O(n).  Returns ``[(start, stop), ...]`` level ranges.
    """
    n_levels = counts.shape[0]
    if n_levels == 0 or counts.shape[1] == 0:
        return [(0, max(n_levels, 1))]
    changes = np.flatnonzero(np.any(counts[1:] != counts[:-1], axis=1)) + 1
    bounds = [0, *changes.tolist(), n_levels]
    if len(bounds) - 1 > _MAX_RUNS:  # e.g. a comb: cut only between ~_MAX_RUNS groups of runs, O(n)
        targets = np.linspace(0, n_levels, _MAX_RUNS + 1)[1:-1]
        picked = np.unique(np.asarray(bounds)[np.searchsorted(bounds, targets)])
        bounds = [0, *[int(b) for b in picked if 0 < b < n_levels], n_levels]
    runs = list(zip(bounds[:-1], bounds[1:]))
    run_width = np.maximum.reduceat(counts, bounds[:-1], axis=0)  # widest level of each run
    n_runs = len(runs)
    k_max = min(MAX_SEGMENTS, n_runs)
    inf = float("inf")
    # best[j][i]: cost of covering runs [0, i) with j segments; choice for backtracking.
    best = [[inf] * (n_runs + 1) for _ in range(k_max + 1)]
    back = [[-1] * (n_runs + 1) for _ in range(k_max + 1)]
    best[0][0] = 0.0
    seg_cost = {}
    for a in range(n_runs):
        widths = np.zeros(counts.shape[1], dtype=np.int64)
        for b in range(a + 1, n_runs + 1):
            widths = np.maximum(widths, run_width[b - 1])
            seg_cost[a, b] = _segment_cost(runs[b - 1][1] - runs[a][0], widths, kernels)
    for j in range(1, k_max + 1):
        for b in range(1, n_runs + 1):
            for a in range(j - 1, b):
                c = best[j - 1][a] + seg_cost[a, b]
                if c < best[j][b]:
                    best[j][b], back[j][b] = c, a
    j = min(range(1, k_max + 1), key=lambda jj: best[jj][n_runs])
    cuts, b = [], n_runs
    while j > 0:
        a = back[j][b]
        cuts.append((runs[a][0], runs[b - 1][1]))
        b, j = a, j - 1
    return cuts[::-1]


def _build_segments(parent, level, local_of, ranges, seg_widths, seg_offsets) -> tuple[Segment, ...]:
    """Static parent maps of each segment (see :class:`Segment`)."""
    n = parent.shape[0]
    segments: list[Segment] = []
    for (start, stop), kw, offsets in zip(ranges, seg_widths, seg_offsets):
        width = sum(kw)
        onehot = np.zeros((stop - start, width, width))
        onehot[0] = np.eye(width)
        cross = None if not segments else np.zeros((width, segments[-1].width))
        for k in range(n):
            if not start <= level[k] < stop:
                continue
            if level[k] > start:
                onehot[level[k] - start, local_of[k], local_of[parent[k]]] = 1.0
            elif cross is not None:
                cross[local_of[k], local_of[parent[k]]] = 1.0
        segments.append(Segment(start, stop, tuple(kw), tuple(offsets), onehot, cross))
    return tuple(segments)


# ---------------------------------------------------------------------------
# layout conversions
# ---------------------------------------------------------------------------


def _take(x: jax.Array, index: np.ndarray, pad_value=None, max_runs: int = 1) -> jax.Array:
    """``x[index]`` for a static integer ``index``, where ``index == len(x)`` reads ``pad_value``
    (appended only if some index asks for it).  Where ``index`` is at most ``max_runs`` disjoint
    runs ``a, a + 1, …`` (one run, the whole of ``x``, in the usual case), slices of one
    ``split`` (its transpose is one ``concatenate``) and a ``concatenate``, not a gather."""
    n = x.shape[0]
    if index.size and index.max() >= n:
        pad = jnp.broadcast_to(jnp.asarray(pad_value, x.dtype), (1,) + x.shape[1:])
        return jnp.concatenate([x, pad])[index]
    flat = index.ravel()
    if flat.size:
        cuts = np.flatnonzero(np.diff(flat) != 1) + 1
        runs = [slice(int(flat[a]), int(flat[a]) + int(b - a)) for a, b in zip([0, *cuts], [*cuts, flat.size])]
        ordered = sorted(runs, key=lambda r: r.start)
        disjoint = all(r.stop <= nxt.start for r, nxt in zip(ordered, ordered[1:]))
        if len(runs) <= max_runs and disjoint:
            pieces = split_slots(x, runs)
            return concat_parts(pieces, axis=0).reshape(index.shape + x.shape[1:])
    return x[index]


def to_levels(topo: Topology, body_values: jax.Array, pad_value: jax.Array) -> jax.Array:
    """Body-ordered ``(n, ...)`` values → compact layout ``(1, W, ...)``; padding gets ``pad_value``."""
    return _take(body_values, topo.body_slot, pad_value)


def from_levels(topo: Topology, level_values: jax.Array) -> jax.Array:
    """Compact layout ``(1, W, ...)`` → body order ``(n, ...)``."""
    flat = level_values.reshape((topo.width,) + level_values.shape[2:])
    return _take(flat, topo.body_flat)


def dofs_to_levels(topo: Topology, x: jax.Array, pad: float, which: str = "v") -> list[jax.Array]:
    """Split a ``q`` (``which="q"``) or ``v``-shaped vector into per-kernel ``(1, Wk, n_k)`` blocks."""
    idx = topo.q_index if which == "q" else topo.v_index
    return [_take(x, i, pad) for i in idx]


def dofs_from_levels(topo: Topology, blocks: list[jax.Array], which: str = "v") -> jax.Array:
    """Inverse of :func:`dofs_to_levels`: per-kernel blocks → an ``(nv,)`` (or ``(nq,)``) vector.

    Extra trailing axes of the blocks (e.g. ``(1, Wk, nv_k, m)``) are kept.
    """
    tail = blocks[0].shape[3:]
    parts = [b.reshape((-1,) + tail) for b in blocks]
    flat = parts[0] if len(parts) == 1 else jnp.concatenate(parts)
    return _take(flat, topo.q_gather if which == "q" else topo.dof_gather, max_runs=DOF_ORDER_MAX_RUNS)


# ---------------------------------------------------------------------------
# the subtree of ancestors of a few bodies
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class AncestorSubtree:
    """The bodies that are ancestors-or-self of a few given bodies, as a tree of its own.

    Jain's Ω recursions (Ch. 10) need the compliance kernel ``Υ`` and the ψ-path products
    only on the paths from the task bodies to the base: ``Υ(k)`` depends on ``Υ(℘(k))`` and
    on body ``k``'s articulated quantities alone, and the gathered ``ψ(k, b_t)`` vanishes off
    those paths.  Sweeping this subtree instead of the whole tree costs its bodies only (a
    quadruped foot: 4 of 13 bodies; a humanoid's hand: 10 of 45).

    ``topo`` is the subtree's own :class:`Topology` (its bodies in the full tree's order,
    ``bodies[k']`` the full index of subtree body ``k'``, ``local[k]`` the subtree index of
    full body ``k``, −1 off the subtree).  ``slot_index`` ``(1, W')`` maps
    each subtree slot to a full compact slot (``W`` for the subtree's padding), and
    ``kernel_index[k']`` ``(1, W'_k)`` maps the subtree kernel ``k'``'s slots to slots of the
    full kernel ``full_kernel[k']`` (``W_k`` for padding).  ``full_slot_index`` ``(W,)`` maps
    each full slot back to a subtree slot (``W'`` off the subtree), and ``dof_index``
    ``(nv,)`` each full dof to a subtree dof (``nv'`` off the subtree).
    """

    topo: Topology
    bodies: np.ndarray
    local: np.ndarray
    slot_index: np.ndarray
    kernel_index: tuple[np.ndarray, ...]
    full_kernel: tuple[int, ...]
    full_slot_index: np.ndarray
    dof_index: np.ndarray

    @property
    def is_whole_tree(self) -> bool:
        """Whether every body is on the subtree (its layout is then the full tree's)."""
        return bool(np.all(self.local >= 0))


@functools.lru_cache(maxsize=128)
def ancestor_subtree(topo: Topology, bodies: tuple[int, ...]) -> AncestorSubtree:
    """The subtree of the ancestors-or-self of ``bodies`` (see :class:`AncestorSubtree`)."""
    n = topo.n_bodies
    keep = np.zeros(n, dtype=bool)
    for b in bodies:
        b = int(b)
        while b >= 0 and not keep[b]:
            keep[b] = True
            b = int(topo.parent[b])
    members = np.flatnonzero(keep)
    local = np.full(n, -1, dtype=np.int64)
    local[members] = np.arange(members.size)
    sub_parent = np.array([local[topo.parent[k]] if topo.parent[k] >= 0 else -1 for k in members], dtype=np.int64)
    sub = compile_topology(sub_parent, tuple(topo.joint_type[k] for k in members))
    n_sub = members.size

    def to_full_slot(sub_slots: np.ndarray, pad: int) -> np.ndarray:
        full = np.full(sub_slots.shape, pad, dtype=np.int64)
        real = sub_slots < n_sub
        full[real] = topo.body_flat[members[sub_slots[real]]]
        return full

    slot_index = to_full_slot(sub.body_slot, topo.width)
    full_names = [kn for kn, _, _ in topo.kernel_slots]
    kernel_index, full_kernel = [], []
    for kn, s0, s1 in sub.kernel_slots:
        k = full_names.index(kn)
        f0, f1 = topo.kernel_slots[k][1:]
        idx = to_full_slot(sub.body_slot[:, s0:s1], f1) - f0
        kernel_index.append(idx)
        full_kernel.append(k)
    full_slot_index = np.full(topo.width, sub.width, dtype=np.int64)
    real = topo.body_slot[0] < n
    inside = np.zeros(topo.width, dtype=bool)
    inside[real] = keep[topo.body_slot[0, real]]
    full_slot_index[inside] = sub.body_flat[local[topo.body_slot[0, inside]]]
    dof_index = np.full(topo.nv, sub.nv, dtype=np.int64)
    for k in members:
        nv_k = int(np.sum(topo.dof_body == k))
        dof_index[topo.v_start[k]: topo.v_start[k] + nv_k] = sub.v_start[local[k]] + np.arange(nv_k)
    return AncestorSubtree(
        sub, members, local, slot_index, tuple(kernel_index), tuple(full_kernel), full_slot_index, dof_index
    )


def restrict_slots(subtree: AncestorSubtree, x: jax.Array, pad_value=0.0) -> jax.Array:
    """A full compact-layout array ``(1, W, ...)`` → the subtree's ``(1, W', ...)``."""
    return _take(x[0], subtree.slot_index[0], pad_value)[None]


def restrict_kernel(subtree: AncestorSubtree, k: int, x: jax.Array, pad_value=0.0) -> jax.Array:
    """Full kernel ``subtree.full_kernel[k]``'s ``(1, W_k, ...)`` → subtree kernel ``k``'s ``(1, W'_k, ...)``."""
    return _take(x[0], subtree.kernel_index[k][0], pad_value)[None]


def extend_slots(subtree: AncestorSubtree, x: jax.Array) -> jax.Array:
    """A subtree compact-layout array ``(1, W', ...)`` → the full ``(1, W, ...)``, zero off the subtree."""
    return _take(x[0], subtree.full_slot_index, 0.0)[None]


def extend_dofs(subtree: AncestorSubtree, x: jax.Array) -> jax.Array:
    """Subtree dof-ordered ``(nv', ...)`` → full ``(nv, ...)``, zero for the other dofs."""
    return _take(x, subtree.dof_index, 0.0)

def split_slots(x: jax.Array, slices, axis: int = 0) -> list[jax.Array]:
    """``[x[sl] for sl in slices]`` for disjoint slot ranges along ``axis``, by one ``split``.

    A slice transposes to a zero-padded full-size array; a split to one ``concatenate``, so
    reverse-mode sweeps do not pay a full-width write per kernel.
    """
    bounds = [(sl.start, sl.stop) for sl in slices]
    n = x.shape[axis]
    if len(bounds) == 1 and bounds[0] == (0, n):
        return [x]
    cuts = sorted({c for b in bounds for c in b} - {0, n})
    pieces = dict(zip([0] + cuts, jnp.split(x, cuts, axis=axis)))
    empty = jnp.zeros(x.shape[:axis % x.ndim] + (0,) + x.shape[axis % x.ndim + 1:], x.dtype)
    return [pieces[a] if b > a else empty for a, b in bounds]


def concat_parts(parts: list[jax.Array], axis: int) -> jax.Array:
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=axis)
