"""``use_cpu_cores``: one JAX CPU device per core, so that :func:`sodyn.batch` can split a batch
across them (XLA:CPU runs one program on one core)."""

from __future__ import annotations

import os

import jax


def use_cpu_cores(n: int | None = None) -> int:
    """Make JAX expose ``n`` CPU devices (default: every core this process may run on), so
    that :func:`sodyn.batch` spreads a batch over all cores.

    Must be called right after ``import jax``, before any JAX computation (JAX fixes its
    devices when its backend starts).  Returns ``n``.  Other JAX code in the process then
    sees ``n`` CPU devices as well; arrays still live on the first one unless placed.
    """
    if n is None:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as e:
        raise RuntimeError(
            "sodyn.use_cpu_cores must be called before the first JAX computation of the process "
            "(JAX's CPU devices are fixed when its backend starts)"
        ) from e
    return n
