"""``full_precision``: matrix products in the full precision of their dtype, on every backend.

With JAX's default precision, XLA may compute a float32 ``dot_general`` with reduced-precision
hardware arithmetic: TensorFloat-32 (a 10-bit mantissa) on recent NVIDIA GPUs, bfloat16 passes
on TPUs.  Joint-space quantities such as ``M⁻¹`` of a long chain then lose several of float32's
seven digits.  Every sodyn function that writes a matrix product as ``@`` or ``jnp.einsum`` is
therefore traced under ``jax.default_matmul_precision("highest")`` (plain float32 arithmetic),
whatever the caller's default; ``tests/test_precision.py`` checks that no ``dot_general`` of
sodyn's programs is left at the default.  The spatial algebra's small products
(:func:`sodyn.contraction.contract`) are sums of element-wise products and need nothing.
Float64 products are exact float64 either way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax


def full_precision[**P, R](fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` with its matrix products traced at ``Precision.HIGHEST``."""

    @functools.wraps(fn)
    def traced_at_highest(*args: P.args, **kwargs: P.kwargs) -> R:
        with jax.default_matmul_precision("highest"):
            return fn(*args, **kwargs)

    return traced_at_highest
