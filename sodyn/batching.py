"""Cache-friendly batching: ``sodyn.vmap`` splits a large batch into chunks.

On XLA:CPU each level of a recursion is a loop over the whole batch; with thousands of
samples the per-level working set (e.g. ``B × 6 × 6`` articulated inertias) leaves the
caches and every pass streams from memory.  Mapping ``jax.vmap`` over chunks of a few
hundred samples with ``lax.map`` keeps it cache-resident: about 1.8× faster forward
dynamics for Panda at B = 4096 on a 2-core CPU (see ``bench/results.md``).  On GPUs plain
``jax.vmap`` is the right choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp


def vmap(fun: Callable, in_axes: int | None | Sequence[int | None] = 0, chunk_size: int = 256) -> Callable:
    """Like ``jax.vmap(fun, in_axes)`` with outputs batched on axis 0, evaluated in chunks.

    ``in_axes`` is ``0`` or ``None`` for all positional arguments, or a sequence of those
    (one per argument; ``0`` batches every leaf of that argument along its first axis).
    A batch that is not a multiple of ``chunk_size`` is padded by repeating its last
    sample, and the padding is dropped from the result.
    """
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")

    def batched(*args: Any):
        axes = in_axes if isinstance(in_axes, (list, tuple)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"in_axes has {len(axes)} entries for {len(args)} arguments")
        if any(a not in (0, None) for a in axes):
            raise ValueError(f"sodyn.vmap supports in_axes of 0 or None, got {in_axes!r}")
        sizes = {x.shape[0] for a, arg in zip(axes, args) if a == 0 for x in jax.tree_util.tree_leaves(arg)}
        if len(sizes) != 1:
            raise ValueError(f"batched arguments must share one leading batch size, got sizes {sorted(sizes)}")
        (size,) = sizes
        inner = jax.vmap(fun, in_axes=tuple(axes))
        if size <= chunk_size:
            return inner(*args)
        n_chunks = -(-size // chunk_size)
        pad = n_chunks * chunk_size - size

        def split(x):
            if pad:
                x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)])
            return x.reshape((n_chunks, chunk_size) + x.shape[1:])

        batched_args = [jax.tree_util.tree_map(split, arg) if a == 0 else None for a, arg in zip(axes, args)]
        static_args = [arg if a is None else None for a, arg in zip(axes, args)]

        def one_chunk(chunk_args):
            full = [c if a == 0 else s for a, c, s in zip(axes, chunk_args, static_args)]
            return inner(*full)

        out = jax.lax.map(one_chunk, batched_args)
        return jax.tree_util.tree_map(lambda y: y.reshape((n_chunks * chunk_size,) + y.shape[2:])[:size], out)

    return batched
