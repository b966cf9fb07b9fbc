"""The sweep engine: every recursion of sodyn is one of two sweeps over the levels of the tree.

* :func:`scatter` (base → tips, Jain's ``φ*`` sweeps, e.g. eq. 3.19 for velocities): level
  ``ℓ`` reads the values of its parents at level ``ℓ − 1``;
* :func:`gather` (tips → base, Jain's ``φ`` sweeps, e.g. eq. 4.20 for composite inertias):
  level ``ℓ`` adds what its children at level ``ℓ + 1`` sent up.  With ``unit_columns=True``
  it sweeps every unit vector ``e_j`` at once, each segment carrying only the columns its
  subtrees can see (:mod:`sodyn.unit_columns`), the sweep behind ``𝓜⁻¹``.

Each is one ``jax.lax.scan`` per segment of levels (:class:`sodyn.topology.Segment`) whose body
is traced once, so program size does not grow with tree depth.  Both call one step function
with one contract::

    carry, out = step(carry, level)

``carry`` holds one value per slot of the level, ``(W_s, ...)``: the parent's value in a
scatter, the children's sum in a gather (``zero`` for leaves).  ``level`` (:class:`Level`) holds
the level's slices of the compact-layout inputs ``xs`` and of the per-kernel inputs
``kernel_xs``, and the static slot range of each joint kernel.  ``out`` is a tuple with one
pytree per kernel (leaves ``(w_sk, ...)``, the kernel's slots); the sweep returns it stacked
over the levels in the compact layout, per kernel ``(1, W_k, ...)`` (:func:`in_slots` joins the
kernels into ``(1, W, ...)``).

A step never splits a level by joint kind itself: what depends on the joint (``H``, ``D``, the
joint's dofs) is written for one kernel's slots and run by :meth:`Level.each_kernel`, which
cuts slot-layout values into the kernels' slots, calls it once per kernel and joins what it
returns.  Inputs are named: ``xs`` and ``kernel_xs`` are usually :class:`Fields`, the latter
holding one entry per kernel for each name, and a step reads ``level.x.pose`` and, inside
``each_kernel``, ``kernel.axes``.

Inside a level, a parent is reached through a one-hot ``(W_s, W_s)`` matrix, elided where
every slot's parent sits in the same slot one level up (:attr:`Segment.identity_maps`); values
cross a segment boundary through a static selection, applied once, outside the scans.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.contraction import contract
from sodyn.spatial import unstack
from sodyn.topology import Topology, concat_parts, split_slots
from sodyn.unit_columns import unit_columns as unit_column_layout

PyTree = Any


@jax.tree_util.register_pytree_with_keys_class
class Fields(Mapping):
    """Named sweep inputs: an immutable mapping read by attribute (``f.pose``), a pytree whose
    names are static and whose values are its children (``None`` values are empty subtrees).

    As ``kernel_xs`` of a sweep, every value is a sequence with one entry per joint kernel
    (``topo.kernel_slots`` order); the sweep hands each kernel a :class:`Fields` of its entries.
    """

    __slots__ = ("_items",)

    def __init__(self, **items: Any):
        object.__setattr__(self, "_items", dict(sorted(items.items())))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not an input (and ``_items`` itself before ``__init__``, as in a copy)
            raise AttributeError(name)
        try:
            return self._items[name]
        except KeyError:
            raise AttributeError(f"no sweep input named {name!r} (inputs: {', '.join(self._items)})") from None

    def __getitem__(self, name: str) -> Any:
        return self._items[name]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Fields({', '.join(self._items)})"

    def replace(self, **items: Any) -> Fields:
        """A copy with ``items`` set."""
        return Fields(**{**self._items, **items})

    def per_kernel(self, n: int) -> tuple[Fields, ...]:
        """Per-kernel inputs (each value a sequence of ``n`` entries) as ``n`` :class:`Fields`."""
        for name, value in self._items.items():
            if value is not None and len(value) != n:
                raise ValueError(f"kernel input {name!r} has {len(value)} entries for {n} joint kernels")
        return tuple(Fields(**{k: None if v is None else v[i] for k, v in self._items.items()}) for i in range(n))

    def tree_flatten_with_keys(self):
        return [(jax.tree_util.GetAttrKey(k), v) for k, v in self._items.items()], tuple(self._items)

    @classmethod
    def tree_unflatten(cls, names, children):
        return cls(**dict(zip(names, children)))


class Kernel(NamedTuple):
    """One joint kernel's part of a level, as :meth:`Level.each_kernel` passes it: ``kind``, the
    kernel's name in ``topo.kernel_slots`` (static); ``x``, its slices ``(w_sk, ...)`` of the
    per-kernel inputs; ``unit``, its unit inputs in a unit-column gather, else ``None``."""

    kind: str
    x: PyTree
    unit: jax.Array | None = None


class Level(NamedTuple):
    """One level of a sweep, as its step sees it.

    ``x``: the level's slices ``(W_s, ...)`` of the sweep's compact-layout inputs;
    ``kernels``: per joint kernel, the level's slices ``(w_sk, ...)`` of the per-kernel inputs;
    ``slices``: each kernel's (static) slot range among the level's ``W_s`` slots;
    ``units``: in a unit-column gather, per kernel the unit inputs ``(w_sk, C_s, nv_k)``
    (``1`` where a column is the slot's own dof), else ``None``;
    ``kinds``: each kernel's name (static).
    """

    x: PyTree
    kernels: tuple
    slices: tuple[slice, ...]
    units: tuple | None = None
    kinds: tuple[str, ...] = ()

    def per_kernel(self, x: jax.Array) -> list[jax.Array]:
        """A slot-layout value ``(W_s, ...)`` cut into the kernels' slots."""
        return split_slots(x, self.slices)

    def by_kernel(self, tree: PyTree) -> tuple:
        """A pytree of slot-layout values ``(W_s, ...)`` cut into one pytree per kernel: a step's
        ``out`` when it is computed for the whole level."""
        leaves, tdef = jax.tree_util.tree_flatten(tree)
        parts = [self.per_kernel(leaf) for leaf in leaves]
        return tuple(jax.tree_util.tree_unflatten(tdef, [p[k] for p in parts]) for k in range(len(self.slices)))

    def each_kernel(self, fn: Callable[..., tuple[PyTree, PyTree]], *values: PyTree) -> tuple[PyTree, tuple]:
        """``fn(kernel, *values_k) -> (joined_k, out_k)`` run once per joint kernel.

        ``kernel`` is the kernel's :class:`Kernel`; each of ``values`` (pytrees of slot-layout
        arrays ``(W_s, ...)``, or ``None``) arrives cut to the kernel's slots ``(w_sk, ...)``.
        Returns ``joined``, the kernels' ``joined_k`` joined back into the slot layout
        ``(W_s, ...)`` (a pytree, or ``None``), and the tuple of the kernels' ``out_k``.
        """
        cut = [self.by_kernel(v) for v in values]
        joined, outs = [], []
        for k, x in enumerate(self.kernels):
            kernel = Kernel(self.kinds[k] if self.kinds else "", x, None if self.units is None else self.units[k])
            j, o = fn(kernel, *(c[k] for c in cut))
            joined.append(j)
            outs.append(o)
        joined = jax.tree_util.tree_map(lambda *ys: jnp.concatenate(ys, axis=0), *joined)
        return joined, tuple(outs)


def in_slots(per_kernel: tuple) -> PyTree:
    """A sweep's per-kernel outputs ``(1, W_k, ...)`` joined into the compact layout ``(1, W, ...)``
    (the layout is kernel-major, so this is one concatenation)."""
    return jax.tree_util.tree_map(lambda *ys: concat_parts(list(ys), axis=1), *per_kernel)


# ---------------------------------------------------------------------------
# parents and children inside a level and across segments
# ---------------------------------------------------------------------------


def _from_parent(onehot: jax.Array, carry: PyTree) -> PyTree:
    """Values of each slot's parent: ``out[c] = Σ_p onehot[c, p] carry[p]`` (products by
    :func:`~sodyn.contraction.contract`, so that reverse mode sums over slots as contractions)."""

    def pick(x):
        oh = onehot.reshape(onehot.shape + (1,) * (x.ndim - 1)).astype(x.dtype)
        xs = unstack(x, 0)
        out = contract("...,...->...", oh[:, 0], xs[0])
        for p in range(1, len(xs)):
            out = out + contract("...,...->...", oh[:, p], xs[p])
        return out

    return jax.tree_util.tree_map(pick, carry)


def _to_parent(onehot: jax.Array, values: PyTree) -> PyTree:
    """Children's contributions summed into parent slots: ``out[p] = Σ_c onehot[c, p] x[c]``
    (level-0 bodies and padding have no row in ``onehot``; their values are dropped)."""
    if onehot.shape[-1] == 1:
        return jax.tree_util.tree_map(lambda x: x * onehot.reshape((1,) * x.ndim).astype(x.dtype), values)

    def put(x):
        oh = onehot.reshape(onehot.shape + (1,) * (x.ndim - 1)).astype(x.dtype)
        xs = unstack(x, 0)
        out = contract("...,...->...", oh[0], xs[0])
        for c in range(1, len(xs)):
            out = out + contract("...,...->...", oh[c], xs[c])
        return out

    return jax.tree_util.tree_map(put, values)


def _sum_selected(xs: tuple[jax.Array, ...], mask: np.ndarray, zero: jax.Array) -> jax.Array:
    """``Σ_i mask[i] xs[i]`` for a static 0/1 ``mask``, as a sum of the selected arrays (its
    transpose is a sum, not a reduction)."""
    picked = [xs[i] for i in np.flatnonzero(mask)]
    return functools.reduce(jnp.add, picked) if picked else zero


def _cross_down(cross: np.ndarray, carry: PyTree) -> PyTree:
    """Parent values for a segment's first level from the previous segment's last level."""

    def pick(x):
        xs, zero = unstack(x, 0), jnp.zeros(x.shape[1:], x.dtype)
        return jnp.stack([_sum_selected(xs, row, zero) for row in cross], axis=0)

    return jax.tree_util.tree_map(pick, carry)


def _cross_up(cross: np.ndarray, values: PyTree) -> PyTree:
    """A segment's first-level contributions summed into the previous segment's last-level slots."""

    def put(x):
        xs, zero = unstack(x, 0), jnp.zeros(x.shape[1:], x.dtype)
        return jnp.stack([_sum_selected(xs, col, zero) for col in cross.T], axis=0)

    return jax.tree_util.tree_map(put, values)


# ---------------------------------------------------------------------------
# inputs and outputs in the compact layout
# ---------------------------------------------------------------------------


def _kernel_pieces(topo: Topology, x: jax.Array, k: int | None) -> list[list[jax.Array]]:
    """A compact-layout leaf ``(1, W, ...)`` (or kernel ``k``'s ``(1, W_k, ...)``) cut, by one
    ``split``, into ``pieces[s][k]`` of shape ``(L_s, w_sk, ...)``: segment ``s``'s slots of kernel
    ``k``."""
    segs = topo.segments
    kernels = range(len(topo.kernel_slots)) if k is None else [k]
    base = 0 if k is None else topo.kernel_slots[k][1]
    slices = [
        slice(s.kernel_offset[kk] - base, s.kernel_offset[kk] - base + s.n_levels * s.kernel_width[kk])
        for s in segs for kk in kernels
    ]
    flat = split_slots(x[0], slices, axis=0)
    nk = len(kernels)
    return [
        [p.reshape((s.n_levels, s.kernel_width[kk]) + x.shape[2:]) for kk, p in zip(kernels, flat[i * nk:(i + 1) * nk])]
        for i, s in enumerate(segs)
    ]


def _segment_inputs(topo: Topology, xs: PyTree, kernel_xs: tuple) -> list[tuple[PyTree, tuple]]:
    """Every segment's ``(xs, kernel_xs)`` in its ``(L_s, W_s, ...)`` / ``(L_s, w_sk, ...)``
    layout, cut from the compact-layout arrays (each array split once, so its cotangent is
    assembled by one ``concatenate``)."""
    n_seg = len(topo.segments)

    def cut(tree, k):
        leaves, tdef = jax.tree_util.tree_flatten(tree)
        parts = [[jnp.concatenate(p, axis=1) if len(p) > 1 else p[0] for p in _kernel_pieces(topo, a, k)]
                 for a in leaves]
        return [jax.tree_util.tree_unflatten(tdef, [p[i] for p in parts]) for i in range(n_seg)]

    x_parts = cut(xs, None)
    k_parts = [cut(kx, k) for k, kx in enumerate(kernel_xs)]
    return [(x_parts[i], tuple(kp[i] for kp in k_parts)) for i in range(n_seg)]


def _to_compact(topo: Topology, ys: list[jax.Array], k: int) -> jax.Array:
    """Kernel ``k``'s per-segment outputs ``(L_s, w_sk, ...)`` → its compact layout ``(1, W_k, ...)``."""
    flat = [y.reshape((-1,) + y.shape[2:]) for y in ys]
    return concat_parts(flat, axis=0)[None]


def _assemble(topo: Topology, outs: list[tuple]) -> tuple:
    """Per-segment, per-kernel outputs → per kernel compact ``(1, W_k, ...)`` arrays."""
    return tuple(
        jax.tree_util.tree_map(lambda *ys, k=k: _to_compact(topo, list(ys), k), *[o[k] for o in outs])
        for k in range(len(topo.kernel_slots))
    )


# ---------------------------------------------------------------------------
# the two sweeps
# ---------------------------------------------------------------------------


def _scan(body, init, xs, reverse: bool, unroll: int = 1):
    """``lax.scan``, or a plain call for a one-level segment (no loop to trace, transpose or compile).

    The body is rematerialised in reverse mode (``jax.checkpoint``): the transposed scan
    recomputes a level's intermediates from its carry and inputs instead of storing each of
    its many small intermediates as a stacked ``(levels, batch, slots, …)`` residual.
    """
    onehot = xs[0]
    if onehot.shape[0] > 1:
        body = jax.checkpoint(body, prevent_cse=False)
        return jax.lax.scan(body, init, (jnp.asarray(onehot),) + xs[1:], reverse=reverse, unroll=unroll)
    level = jax.tree_util.tree_map(lambda a: a[0], (jnp.asarray(onehot),) + xs[1:])
    carry, out = body(init, level)
    return carry, jax.tree_util.tree_map(lambda y: y[None], out)


def _broadcast_slots(value: PyTree, shape: tuple[int, ...]) -> PyTree:
    """One slot's value repeated over the leading ``shape``."""
    return jax.tree_util.tree_map(lambda r: jnp.broadcast_to(r, shape + jnp.shape(r)), value)


def scatter(
    topo: Topology,
    step: Callable[[PyTree, Level], tuple[PyTree, tuple]],
    root_parent: PyTree,
    xs: PyTree = (),
    kernel_xs: tuple = (),
    unroll: int = 1,
) -> tuple:
    """Base-to-tips sweep: ``(value_ℓ, out_ℓ) = step(value_parent(ℓ), level_ℓ)`` for ℓ = 0 … L−1.

    ``root_parent`` is the value level-0 bodies see as their parent (the world's velocity, or
    ``−g`` for accelerations), given for one slot.  ``xs`` are compact-layout ``(1, W, ...)``
    arrays; ``kernel_xs`` is empty or holds, for each of ``topo.kernel_slots``, a pytree of
    ``(1, W_k, ...)`` arrays.  ``unroll`` levels run per step of each scan.  Returns the stacked
    per-kernel outputs (module docstring).
    """
    carry, outs = None, []
    kinds, kernel_xs = _kernel_inputs(topo, kernel_xs)
    for seg, (x, xk) in zip(topo.segments, _segment_inputs(topo, xs, kernel_xs)):
        init = _broadcast_slots(root_parent, (seg.width,)) if carry is None else _cross_down(seg.cross, carry)

        def body(c, inp, seg=seg):
            onehot, x, xk = inp
            parent = c if seg.identity_maps else _from_parent(onehot, c)
            return step(parent, Level(x, xk, seg.kernel_slices, None, kinds))

        carry, out = _scan(body, init, (seg.onehot, x, xk), reverse=False, unroll=unroll)
        outs.append(out)
    return _assemble(topo, outs)


def gather(
    topo: Topology,
    step: Callable[[PyTree, Level], tuple[PyTree, tuple]],
    zero: PyTree,
    xs: PyTree = (),
    kernel_xs: tuple = (),
    unroll: int = 1,
    unit_columns: bool = False,
) -> tuple | list[tuple]:
    """Tips-to-base sweep: ``(to_parent_ℓ, out_ℓ) = step(from_children_ℓ, level_ℓ)``, ℓ = L−1 … 0.

    ``from_children_ℓ`` holds, per slot, the sum of what the slot's children returned as
    ``to_parent`` (``zero``, given for one slot, at the leaves).  Padding slots never send
    anything.  ``xs``, ``kernel_xs`` and ``unroll`` as in :func:`scatter`; returns the stacked
    per-kernel outputs.

    ``unit_columns=True`` sweeps every unit vector ``e_j`` (``j < nv``) at once: segment ``s``
    carries ``C_s`` columns per slot, ``(W_s, C_s) + zero.shape``, each step receives the unit
    inputs in ``level.units`` and returns outputs with leaves ``(w_sk, C_s, ...)``, and the
    result is, per segment, the per-kernel outputs stacked over its levels,
    ``(L_s, w_sk, C_s, ...)`` (the input of :func:`sodyn.unit_columns.sum_of_column_products`).
    """
    layout = unit_column_layout(topo) if unit_columns else None
    kinds, kernel_xs = _kernel_inputs(topo, kernel_xs)
    inputs = _segment_inputs(topo, xs, kernel_xs)
    outs: list = [None] * len(topo.segments)
    sent = None
    for i in range(len(topo.segments) - 1, -1, -1):
        seg = topo.segments[i]
        x, xk = inputs[i]
        units = None
        if layout is None:
            init = _broadcast_slots(zero, (seg.width,)) if sent is None else sent
        else:
            init = _broadcast_slots(zero, (seg.width, layout.counts[i])) if sent is None else sent
            units = tuple(jnp.asarray(u, jnp.result_type(*jax.tree_util.tree_leaves(zero))) for u in layout.units[i])

        def body(c, inp, seg=seg):
            onehot, x, xk, u = inp
            to_parent, out = step(c, Level(x, xk, seg.kernel_slices, u, kinds))
            return (to_parent if seg.identity_maps else _to_parent(onehot, to_parent)), out

        last, outs[i] = _scan(body, init, (seg.onehot, x, xk, units), reverse=True, unroll=unroll)
        if i == 0:
            break
        if layout is None:  # ``last`` is the first level's to_parent (identity map)
            sent = _cross_up(seg.cross, last)
        else:  # the child roots' columns renamed to those of their parents' roots
            sent = jax.tree_util.tree_map(functools.partial(_rename_columns, index=layout.cross[i - 1]), last)
    return outs if layout is not None else _assemble(topo, outs)


def _rename_columns(last: jax.Array, index: np.ndarray) -> jax.Array:
    """A segment's first-level unit-column values ``(W, C, ...)`` → the previous segment's
    last-level slots and columns, by a static gather (padding reads zero)."""
    flat = last.reshape((-1,) + last.shape[2:])
    flat = jnp.concatenate([flat, jnp.zeros((1,) + flat.shape[1:], flat.dtype)])
    return flat[index]


def _kernel_inputs(topo: Topology, kernel_xs) -> tuple[tuple[str, ...], tuple]:
    """The kernels' names and their inputs as one pytree per kernel (empty if none given; a
    :class:`Fields` of per-kernel sequences is split by kernel)."""
    n = len(topo.kernel_slots)
    if isinstance(kernel_xs, Fields):
        kernel_xs = kernel_xs.per_kernel(n)
    return tuple(k for k, _, _ in topo.kernel_slots), tuple(kernel_xs) or ((),) * n


__all__ = ["Fields", "Kernel", "Level", "gather", "in_slots", "scatter"]
