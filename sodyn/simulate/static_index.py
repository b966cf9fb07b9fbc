"""Sums into static slots: ``out[j] = Σ_{i : target[i] = j} x[i]`` for a static ``target``.

The simulation terms are computed per point or per actuator and summed into bodies or dofs.
With ``target`` known when tracing, the sum is one gather from ``x`` padded with a zero row per
"rank" (the r-th entry sent to a slot), so a slot that receives one entry costs one gather.  On
XLA:CPU, batched by ``jax.vmap``, a gather with a static index is several times faster than a
scatter-add, a one-hot contraction or a stack of static slices, and XLA joins it with the
gather that puts body values in the sweeps' level order.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def spread_sum(x: jax.Array, target: np.ndarray, n: int) -> jax.Array:
    """``out (n, ...)`` with ``out[j] = Σ_{i : target[i] = j} x[i]`` for ``x (m, ...)`` and a
    static integer ``target (m,)`` with values in ``[0, n)``; slots no entry targets are zero."""
    target = np.asarray(target, np.int64).reshape(-1)
    if target.shape[0] != x.shape[0]:
        raise ValueError(f"spread_sum: {target.shape[0]} targets for {x.shape[0]} entries")
    if target.size and (target.min() < 0 or target.max() >= n):
        raise ValueError(f"spread_sum: targets must lie in [0, {n}), got {target.min()} … {target.max()}")
    counts = np.bincount(target, minlength=n)
    if not target.size:
        return jnp.zeros((n,) + x.shape[1:], x.dtype)
    padded = jnp.concatenate([x, jnp.zeros((1,) + x.shape[1:], x.dtype)])
    out = None
    for rank in range(int(counts.max())):
        index = np.full(n, target.size)
        for j in np.flatnonzero(counts > rank):
            index[j] = np.flatnonzero(target == j)[rank]
        y = padded[index]
        out = y if out is None else out + y
    return out


__all__ = ["spread_sum"]
