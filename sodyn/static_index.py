"""Static gathers and sums into static slots: ``x[index]`` and ``out[j] = Σ_{i : target[i] = j} x[i]``.

The simulation terms are computed per point or per actuator and summed into bodies or dofs,
and the closures' kinematics read a few bodies' values.
With ``target`` known when tracing, the sum is one gather from ``x`` padded with a zero row per
"rank" (the r-th entry sent to a slot), so a slot that receives one entry costs one gather.  On
XLA:CPU, batched by ``jax.vmap``, a gather with a static index is several times faster than a
scatter-add, a one-hot contraction or a stack of static slices, and XLA joins it with the
gather that puts body values in the sweeps' level order.  Derivatives go by the stack of
slices instead (:func:`spread_sum`), whose reverse mode needs no scatter.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial


def spread_sum(x: jax.Array, target: np.ndarray, n: int) -> jax.Array:
    """``out (n, ...)`` with ``out[j] = Σ_{i : target[i] = j} x[i]`` for ``x (m, ...)`` and a
    static integer ``target (m,)`` with values in ``[0, n)``; slots no entry targets are zero.

    The value is computed by gathers; its derivative (a linear map of the same form) by
    static slices and a stack, whose transpose in reverse mode is slices and pads, where a
    gather's transpose would be a scatter-add, which is slow on XLA:CPU."""
    target = np.asarray(target, np.int64).reshape(-1)
    if target.shape[0] != x.shape[0]:
        raise ValueError(f"spread_sum: {target.shape[0]} targets for {x.shape[0]} entries")
    if target.size and (target.min() < 0 or target.max() >= n):
        raise ValueError(f"spread_sum: targets must lie in [0, {n}), got {target.min()} … {target.max()}")
    if not target.size:
        return jnp.zeros((n,) + x.shape[1:], x.dtype)
    return _spread_sum(x, tuple(int(t) for t in target), n)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _spread_sum(x: jax.Array, target: tuple[int, ...], n: int) -> jax.Array:
    counts = np.bincount(target, minlength=n)
    padded = jnp.concatenate([x, jnp.zeros((1,) + x.shape[1:], x.dtype)])
    out = None
    for rank in range(int(counts.max())):
        index = np.full(n, len(target))
        for j in np.flatnonzero(counts > rank):
            index[j] = [i for i, t in enumerate(target) if t == j][rank]
        y = padded[index]
        out = y if out is None else out + y
    return out


@_spread_sum.defjvp
def _spread_sum_jvp(target, n, primals, tangents):
    (x,), (dx,) = primals, tangents
    rows = spatial.unstack(dx, 0)
    zero = jnp.zeros(dx.shape[1:], dx.dtype)
    out = [zero] * n
    for i, j in enumerate(target):
        out[j] = rows[i] if out[j] is zero else out[j] + rows[i]
    return _spread_sum(x, target, n), jnp.stack(out)


def take(x: jax.Array, index: np.ndarray) -> jax.Array:
    """``x[index]`` for a static integer ``index (m,)``: the value by a gather, its derivative
    by static slices and a stack (so reverse mode needs no scatter-add)."""
    index = tuple(int(i) for i in np.asarray(index, np.int64).reshape(-1))
    if any(i < 0 or i >= x.shape[0] for i in index):
        raise ValueError(f"take: indices must lie in [0, {x.shape[0]}), got {index}")
    return _take(x, index)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _take(x: jax.Array, index: tuple[int, ...]) -> jax.Array:
    return x[np.asarray(index)]


@_take.defjvp
def _take_jvp(index, primals, tangents):
    (x,), (dx,) = primals, tangents
    rows = spatial.unstack(dx, 0)
    return _take(x, index), jnp.stack([rows[i] for i in index])


__all__ = ["spread_sum", "take"]
