"""Cache-friendly batching: ``sodyn.batch`` maps a function over a large batch in chunks.

On XLA:CPU each level of a recursion is a loop over the whole batch; with thousands of
samples the per-level working set (e.g. ``B × 6 × 6`` articulated inertias) leaves the
caches and every pass streams from memory.  Mapping ``jax.vmap`` over chunks of a few
hundred samples, one after the other, keeps it cache-resident.  On GPUs plain ``jax.vmap`` is
the right choice.

Across cores: XLA:CPU runs one program on one core (its thread pool only splits large
single operations, which these small per-level operations are not).  When JAX sees several
local devices, ``sodyn.batch`` splits the batch evenly across them with ``jax.shard_map``, so a
CPU batch runs on every core, as Pinocchio's ``abaInParallel`` does with threads.  On CPU the
devices are made by :func:`sodyn.use_cpu_cores`, called once before the first JAX computation.

sodyn's functions compute exactly what ``jax.vmap`` asks: chunks are this function's (and
:func:`sodyn.simulate.monte_carlo`'s), asked for explicitly.  On the CPU, a plain
``jax.jit(jax.vmap(f))`` over thousands of samples of a large tree runs slower than
``sodyn.batch(f)``; over a few hundred, or on a GPU, the two are alike.

The chunk size adapts to the function: by default (``chunk_size=None``) it is the largest power
of two up to :data:`MAX_CHUNK` whose chunk holds at most :data:`CHUNK_BYTES` of intermediates
(both in :mod:`sodyn.runtime.tuning`), counted once per sample by tracing the function
(:func:`intermediate_bytes`).  Small robots keep the largest chunks; humanoids and long chains,
whose per-level outputs are larger, get smaller ones, so that those outputs stay in cache.

One exception: a function that calls LAPACK (Cholesky, triangular solves, LU, QR, eigen or
singular value decompositions) is kept on one device.  On XLA:CPU every device runs its
program on the shared intra-op thread pool, and jaxlib's batched LAPACK kernels wait on that
pool for helper tasks; with every pool thread running one device's program, they wait for
ever (seen with jaxlib 0.10.2: MJX's ``forward`` split across two CPU devices never returns).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from sodyn.runtime.tuning import CHUNK_BYTES, MAX_CHUNK, MIN_CHUNK, SPLIT_FROM


def batch_devices(devices: str | Sequence[Any] | None) -> list:
    """The devices ``devices`` names: every local device for ``"auto"``, none for ``None``."""
    if devices is None:
        return []
    if isinstance(devices, str):
        if devices != "auto":
            raise ValueError(f"devices must be 'auto', None or a sequence of devices, got {devices!r}")
        return list(jax.local_devices())
    return list(devices)


def batch(
    fun: Callable,
    in_axes: int | None | Sequence[int | None] = 0,
    chunk_size: int | None = None,
    devices: str | Sequence[Any] | None = "auto",
) -> Callable:
    """``fun`` mapped over a batch, as ``jax.vmap(fun, in_axes)`` with outputs batched on axis 0,
    evaluated in chunks and, with several devices, split across them.

    Not a drop-in ``jax.vmap``: ``in_axes`` takes only ``0`` and ``None``, outputs are always
    batched on their first axis, and the result is a function with the methods below.

    ``in_axes`` is ``0`` or ``None`` for all positional arguments, or a sequence of those
    (one per argument; ``0`` batches every leaf of that argument along its first axis).
    ``chunk_size=None`` sizes the chunks from the memory the function uses per sample
    (:func:`auto_chunk_size`, found once per argument shape by tracing it); an integer fixes it.
    A batch that is not a multiple of the chunk size is padded by repeating its last
    sample, and the padding is dropped from the result.  ``devices="auto"`` splits the batch
    evenly across ``jax.local_devices()`` when there is more than one (see
    :func:`sodyn.use_cpu_cores`); ``None`` keeps it on one device; a sequence names the devices.
    A batch is split only when every device gets at least ``chunk_size`` samples (at least
    :data:`~sodyn.runtime.tuning.SPLIT_FROM` with automatic chunks): moving the inputs of a CPU
    batch onto the other devices costs a copy per call, which smaller batches do not repay.

    The returned function has methods ``chunk_size(*args)`` (the chunk size a call on ``args``
    uses), ``split_devices(*args)`` (the devices it is split across; empty when it runs on
    one) and ``place(*args)``, which puts the batched arguments
    where a split call reads them, each device's share on that device (and returns them
    unchanged when the call would not be split, or the batch does not divide evenly).
    Placed inputs skip that copy.  A split call's outputs come back placed the same way,
    so a simulation loop that feeds them back in never copies::

        step = sodyn.jit(batched := sodyn.batch(f))
        state = batched.place(*state)
        for _ in range(n):
            state = step(*state)
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size!r}")
    split_from = SPLIT_FROM if chunk_size is None else chunk_size
    traced: dict = {}  # argument signature -> (chunk size, calls LAPACK), found by one trace

    def facts(args) -> tuple[int, bool]:
        key = _signature(args)
        if key not in traced:
            jaxpr = sample_jaxpr(fun, in_axes, args)
            chunk = _chunk_for_bytes(intermediate_bytes(jaxpr)) if chunk_size is None else chunk_size
            traced[key] = (chunk, bool(jaxpr_primitives(jaxpr) & LAPACK_PRIMITIVES))
        return traced[key]

    def chosen_chunk_size(*args: Any) -> int:
        return chunk_size if chunk_size is not None else facts(args)[0]

    def split_devices(*args: Any) -> list:
        _, size = _batch_axes(in_axes, args)
        devs = batch_devices(devices)
        if len(devs) < 2 or size < len(devs) * split_from or facts(args)[1]:
            return []
        return devs

    def place(*args: Any) -> tuple:
        axes, size = _batch_axes(in_axes, args)
        devs = split_devices(*args)
        if not devs or size % len(devs):
            return args
        sharding = NamedSharding(Mesh(np.array(devs), ("batch",)), PartitionSpec("batch"))
        return tuple(
            jax.tree_util.tree_map(lambda x: jax.device_put(x, sharding), a) if ax == 0 else a
            for ax, a in zip(axes, args)
        )

    def batched(*args: Any):
        axes, size = _batch_axes(in_axes, args)
        chunked = _chunked_vmap(fun, in_axes, chosen_chunk_size(*args))
        devs = split_devices(*args)
        if not devs:
            return chunked(*args)
        n_dev = len(devs)
        per_device = -(-size // n_dev)
        padded = [jax.tree_util.tree_map(lambda x: _pad(x, n_dev * per_device), a) if ax == 0 else a
                  for ax, a in zip(axes, args)]
        mesh = Mesh(np.array(devs), ("batch",))
        specs = tuple(PartitionSpec("batch") if ax == 0 else PartitionSpec() for ax in axes)
        out = jax.shard_map(chunked, mesh=mesh, in_specs=specs, out_specs=PartitionSpec("batch"),
                            check_vma=False)(*padded)
        return jax.tree_util.tree_map(lambda y: y[:size], out)

    batched.place = place
    batched.chunk_size = chosen_chunk_size
    batched.split_devices = split_devices
    return batched


#: Primitives that jaxlib lowers to LAPACK custom calls on CPU.
LAPACK_PRIMITIVES = frozenset({
    "cholesky", "triangular_solve", "lu", "qr", "geqrf", "geqp3", "householder_product", "eig", "eigh",
    "svd", "schur", "hessenberg", "tridiagonal", "tridiagonal_solve",
})


def sub_jaxprs(eqn):
    """The jaxprs nested in an equation's parameters (scan and cond bodies, custom-rule calls)."""
    for param in eqn.params.values():
        for sub in param if isinstance(param, (list, tuple)) else (param,):
            inner = getattr(sub, "jaxpr", sub)
            if hasattr(inner, "eqns"):
                yield inner


def jaxpr_primitives(jaxpr) -> set[str]:
    """Names of the primitives a jaxpr uses, nested jaxprs included."""
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for inner in sub_jaxprs(eqn):
            names |= jaxpr_primitives(inner)
    return names


def intermediate_bytes(jaxpr) -> int:
    """Bytes of every value a jaxpr computes, nested jaxprs counted once each (a scan's body
    once, its stacked outputs in full): the memory one evaluation would write if nothing were
    fused.  Used as a relative measure of a function's per-sample working set."""
    total = 0
    for eqn in jaxpr.eqns:
        total += sum(int(np.prod(v.aval.shape)) * v.aval.dtype.itemsize
                     for v in eqn.outvars if hasattr(v.aval, "shape"))
        total += sum(intermediate_bytes(inner) for inner in sub_jaxprs(eqn))
    return total


def _chunk_for_bytes(per_sample: int) -> int:
    """The largest power of two in [:data:`MIN_CHUNK`, :data:`MAX_CHUNK`] whose chunk holds at
    most :data:`CHUNK_BYTES` of ``per_sample`` bytes (:data:`MIN_CHUNK` when none does)."""
    chunk = MAX_CHUNK
    while chunk > MIN_CHUNK and chunk * per_sample > CHUNK_BYTES:
        chunk //= 2
    return chunk


def _one_sample(x, axis: int | None) -> jax.ShapeDtypeStruct:
    """The shape and dtype of one sample of ``x``, batched along ``axis`` (``0`` or ``None``)."""
    return jax.ShapeDtypeStruct(x.shape[1:] if axis == 0 else x.shape, x.dtype)


def sample_jaxpr(fun: Callable, in_axes, args):
    """The jaxpr of ``fun`` on one sample of ``args`` (batched along ``in_axes``): a trace, no computation."""
    axes, _ = _batch_axes(in_axes, args)
    sample = [jax.tree_util.tree_map(lambda x, ax=ax: _one_sample(x, ax), a) for ax, a in zip(axes, args)]
    return jax.make_jaxpr(fun)(*sample).jaxpr


def _signature(args) -> tuple:
    """What a trace of one sample depends on: the arguments' tree structures, shapes and dtypes."""
    leaves, tree = jax.tree_util.tree_flatten(args)
    return tree, tuple((tuple(x.shape), str(x.dtype)) for x in leaves)


def calls_lapack(fun: Callable, in_axes, *args: Any) -> bool:
    """Whether ``fun`` on one sample of ``args`` (batched along ``in_axes``) uses a LAPACK-backed
    primitive (:data:`LAPACK_PRIMITIVES`), found by tracing it to a jaxpr (no computation)."""
    return bool(jaxpr_primitives(sample_jaxpr(fun, in_axes, args)) & LAPACK_PRIMITIVES)


def auto_chunk_size(fun: Callable, in_axes, *args: Any) -> int:
    """The chunk size :func:`batch` picks for ``fun`` on ``args`` (batched along ``in_axes``):
    the largest power of two in [:data:`MIN_CHUNK`, :data:`MAX_CHUNK`] whose chunk holds at most
    :data:`CHUNK_BYTES` of the function's :func:`intermediate_bytes` per sample."""
    return _chunk_for_bytes(intermediate_bytes(sample_jaxpr(fun, in_axes, args)))


def _pad(x: jax.Array, size: int) -> jax.Array:
    """Pad the leading axis to ``size`` by repeating the last sample."""
    pad = size - x.shape[0]
    return jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)]) if pad else x


def _batch_axes(in_axes, args) -> tuple[tuple, int]:
    axes = tuple(in_axes) if isinstance(in_axes, (list, tuple)) else (in_axes,) * len(args)
    if len(axes) != len(args):
        raise ValueError(f"in_axes has {len(axes)} entries for {len(args)} arguments")
    if any(a not in (0, None) for a in axes):
        raise ValueError(f"sodyn.batch supports in_axes of 0 or None, got {in_axes!r}")
    sizes = {x.shape[0] for a, arg in zip(axes, args) if a == 0 for x in jax.tree_util.tree_leaves(arg)}
    if len(sizes) != 1:
        raise ValueError(f"batched arguments must share one leading batch size, got sizes {sorted(sizes)}")
    return axes, sizes.pop()


def _chunked_vmap(fun: Callable, in_axes, chunk_size: int) -> Callable:
    """``jax.vmap`` over chunks of ``chunk_size`` samples, one chunk per step of a
    ``lax.scan`` (one device).

    Each step maps the chunk held in the scan's carry and loads the next one into it, rather
    than slicing its chunk out of the scan's inputs.  A chunk sliced in the step (as
    ``lax.map`` does) reaches XLA:CPU as a ``dynamic-slice`` that it fuses into every consumer,
    so element-wise work on the inputs (joint rotations from ``q``) is redone, with the slice's
    index arithmetic, inside every product that reads it, slower than one plain ``jax.vmap``
    call over the whole batch.  A chunk read from the carry is a materialised buffer.
    """

    def batched(*args: Any):
        axes, size = _batch_axes(in_axes, args)
        inner = jax.vmap(fun, in_axes=tuple(axes))
        if size <= chunk_size:
            return inner(*args)
        n_chunks = -(-size // chunk_size)

        def split(x):
            return _pad(x, n_chunks * chunk_size).reshape((n_chunks, chunk_size) + x.shape[1:])

        chunks = [jax.tree_util.tree_map(split, arg) if a == 0 else None for a, arg in zip(axes, args)]
        static_args = [arg if a is None else None for a, arg in zip(axes, args)]
        first = jax.tree_util.tree_map(lambda x: x[0], chunks)
        # step i receives chunk i + 1 (the last step's is unused: chunk 0 again)
        following = jax.tree_util.tree_map(lambda x: jnp.roll(x, -1, axis=0), chunks)

        def step(chunk_args, next_chunk_args):
            full = [c if a == 0 else s for a, c, s in zip(axes, chunk_args, static_args)]
            return next_chunk_args, inner(*full)

        _, out = jax.lax.scan(step, first, following)
        return jax.tree_util.tree_map(lambda y: y.reshape((n_chunks * chunk_size,) + y.shape[2:])[:size], out)

    return batched
