"""Small tensor contractions as one JAX primitive whose compiled form sodyn chooses.

Every product of sodyn's spatial algebra (3×3 and 6×6 matrices, 3- and 6-vectors, joint-space
blocks, per body and per sample) is one :func:`contract`, an Einstein sum over a few small
trailing axes,

    c[..., C] = Σ_K a[..., A] · b[..., B],      K = (A ∪ B) \\ C,

with the leading ``...`` axes broadcast as in NumPy.  It is a primitive of its own, rather than
``jnp.einsum`` or a sum of broadcast products, so that its compiled form is decided here for
every program it appears in, the user's own ``jax.jit`` included:

* **No library reductions on the CPU.**  XLA:CPU's default pipeline hands a large ``reduce``
  whose reducer is a plain ``add`` to a YNNPACK fusion, which runs these tiny, many-times
  repeated sums several times slower than XLA's own loops (and XLA runs a tiny ``dot_general``
  slowly too).  On the CPU the sum is therefore a ``reduce`` of the broadcast product whose
  reducer is ``p − (−q)``: exactly ``p + q``, which XLA compiles as its own loop and the library
  matcher does not take.  As a reduction it is computed once, not re-evaluated inside every
  consumer as an element-wise multiply-add chain would be.  Other backends get the plain sum.
* **Bilinear, with contractions as transposes.**  ``∂c/∂a`` applied to a cotangent ``ḡ`` is
  ``ḡ`` contracted with ``b``, so reverse mode produces contractions again rather than the
  reductions that transposing a broadcast produces, and forward mode (``jvp``) and higher
  derivatives follow from the same two rules.
* **Batching** moves the mapped axis to the front, where it is one more leading axis.
"""

from __future__ import annotations

import functools
import string

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

__all__ = ["contract"]

contract_p = Primitive("sodyn_contract")

Spec = tuple[str, str, str]


def _parse(spec: str) -> Spec:
    """``"...ij,...jk->...ik"`` → ``("ij", "jk", "ik")`` (every operand carries ``...``)."""
    try:
        lhs, out = spec.replace(" ", "").split("->")
        a, b = lhs.split(",")
    except ValueError:
        raise ValueError(f"contract: spec must read '...A,...B->...C', got {spec!r}") from None
    parts = []
    for s in (a, b, out):
        if not s.startswith("..."):
            raise ValueError(f"contract: every operand of {spec!r} must start with '...'")
        s = s[3:]
        if len(set(s)) != len(s) or any(ch not in string.ascii_letters for ch in s):
            raise ValueError(f"contract: the indices of {spec!r} must be distinct letters")
        parts.append(s)
    a, b, c = parts
    if not set(c) <= set(a) | set(b):
        raise ValueError(f"contract: an output index of {spec!r} is in neither operand")
    if not (set(a) <= set(b) | set(c) and set(b) <= set(a) | set(c)):
        raise ValueError(f"contract: {spec!r} sums an index of one operand only")
    return a, b, c


def _sizes(a_shape, b_shape, spec: Spec) -> tuple[tuple[int, ...], dict[str, int]]:
    """The broadcast leading shape and the size of each index."""
    ia, ib, _ = spec
    na, nb = len(a_shape) - len(ia), len(b_shape) - len(ib)
    size: dict[str, int] = {}
    for idx, shape in ((ia, a_shape[na:]), (ib, b_shape[nb:])):
        for ch, n in zip(idx, shape):
            if size.setdefault(ch, n) != n:
                raise ValueError(f"contract: index {ch!r} has sizes {size[ch]} and {n}")
    try:
        lead = np.broadcast_shapes(tuple(a_shape[:na]), tuple(b_shape[:nb]))
    except ValueError:
        raise ValueError(f"contract: leading shapes {tuple(a_shape[:na])} and {tuple(b_shape[:nb])} "
                         "do not broadcast") from None
    return tuple(lead), size


def _summed(spec: Spec) -> str:
    ia, ib, ic = spec
    return "".join(ch for ch in dict.fromkeys(ia + ib) if ch not in ic)


def _abstract_eval(a, b, *, spec: Spec):
    lead, size = _sizes(a.shape, b.shape, spec)
    return jax.core.ShapedArray(lead + tuple(size[ch] for ch in spec[2]), a.dtype,
                                weak_type=a.weak_type and b.weak_type)


# ---------------------------------------------------------------------------
# lowerings
# ---------------------------------------------------------------------------


def _arranged(x, idx: str, n_lead: int, order: str):
    """``x[..., idx]`` with its trailing axes in ``order``, size 1 where an index is absent."""
    present = [ch for ch in order if ch in idx]
    perm = tuple(range(n_lead)) + tuple(n_lead + idx.index(ch) for ch in present)
    if perm != tuple(range(x.ndim)):
        x = jnp.transpose(x, perm)
    return x.reshape(x.shape[:n_lead] + tuple(x.shape[n_lead + present.index(ch)] if ch in idx else 1 for ch in order))


def _product(a, b, spec: Spec):
    """The broadcast product ``a · b`` laid out as ``(..., C, K)`` and the axes of ``K``."""
    ia, ib, ic = spec
    n_lead = a.ndim - len(ia)
    order = ic + _summed(spec)
    x = _arranged(a, ia, n_lead, order) * _arranged(b, ib, n_lead, order)
    return x, tuple(range(n_lead + len(ic), n_lead + len(order)))


def _out_shape(a, b, spec: Spec) -> tuple[int, ...]:
    lead, size = _sizes(a.shape, b.shape, spec)
    return lead + tuple(size[ch] for ch in spec[2])


def _masked_add(p, q):
    """``p − (−q)``: exactly ``p + q``, written as a reducer that no library matcher takes."""
    return p - (-q)


def _summed_product(a, b, *, spec: Spec, add=lax.add):
    """The broadcast product of ``a`` and ``b``, reduced over the summed indices with ``add``
    (``lax.add``: XLA's own sum, for other backends; :func:`_masked_add` on XLA:CPU)."""
    x, axes = _product(a, b, spec)
    if axes:
        x = lax.reduce(x, np.zeros((), x.dtype), add, axes)
    return jnp.broadcast_to(x, _out_shape(a, b, spec))


# ---------------------------------------------------------------------------
# differentiation and batching
# ---------------------------------------------------------------------------


def _cotangent(ct, other, x_aval, x_idx: str, other_idx: str, out_idx: str):
    """One operand's cotangent: ``ct`` contracted with the other operand, summed over the
    leading axes along which this operand was broadcast."""
    g = contract_p.bind(ct, other, spec=(out_idx, other_idx, x_idx))
    n_lead = len(x_aval.shape) - len(x_idx)
    axes = [i for i, n in enumerate(x_aval.shape[:n_lead]) if n == 1 and g.shape[i] != 1]
    if axes:  # summed as one more contraction (with ones), not as a reduction of its own
        kept = [i for i in range(g.ndim) if i not in axes]
        g = jnp.transpose(g, kept + axes)
        g = g.reshape(g.shape[:len(kept)] + (-1,))
        k = next(ch for ch in string.ascii_letters if ch not in x_idx)
        g = _bind(g, jnp.ones(g.shape[-1], g.dtype), (x_idx + k, k, x_idx)).reshape(x_aval.shape)
    return g.astype(x_aval.dtype)


def _transpose_lhs(ct, a, b, *, spec: Spec):
    ia, ib, ic = spec
    return _cotangent(ct, b, a.aval, ia, ib, ic)


def _transpose_rhs(ct, a, b, *, spec: Spec):
    ia, ib, ic = spec
    return _cotangent(ct, a, b.aval, ib, ia, ic)


def _batch(args, dims, *, spec: Spec):
    a, b = (jnp.expand_dims(x, 0) if d is None else jnp.moveaxis(x, d, 0) for x, d in zip(args, dims))
    return _bind(a, b, spec), 0


@functools.cache
def _compiled(spec: Spec):
    """The primitive alone, compiled (its evaluation outside ``jit``)."""
    return jax.jit(lambda a, b: contract_p.bind(a, b, spec=spec))


contract_p.def_abstract_eval(_abstract_eval)
contract_p.def_impl(lambda a, b, *, spec: _compiled(spec)(a, b))
mlir.register_lowering(contract_p, mlir.lower_fun(_summed_product, multiple_results=False))
mlir.register_lowering(contract_p, mlir.lower_fun(functools.partial(_summed_product, add=_masked_add),
                                                  multiple_results=False), platform="cpu")
ad.defbilinear(contract_p, _transpose_lhs, _transpose_rhs)
batching.primitive_batchers[contract_p] = _batch


# ---------------------------------------------------------------------------
# public entry point
# ---------------------------------------------------------------------------


@functools.cache
def _parsed(spec: str) -> Spec:
    return _parse(spec)


def _bind(a, b, spec: Spec):
    """Bind with both operands carrying the same number of leading axes."""
    na, nb = a.ndim - len(spec[0]), b.ndim - len(spec[1])
    if na < nb:
        a = a.reshape((1,) * (nb - na) + a.shape)
    elif nb < na:
        b = b.reshape((1,) * (na - nb) + b.shape)
    return contract_p.bind(a, b, spec=spec)


def contract(spec: str, a, b) -> jax.Array:
    """``jnp.einsum(spec, a, b)`` over small trailing axes, e.g. ``contract("...ij,...j->...i", m, x)``.

    Every operand starts with ``...`` (leading axes, broadcast as in NumPy); each index is one
    letter, and an index that is summed over appears in both operands.  The operands are
    promoted to a common dtype.  It is meant for small trailing axes: the broadcast product of
    the operands is formed before it is summed.
    """
    parsed = _parsed(spec)
    a, b = jnp.asarray(a), jnp.asarray(b)
    dtype = jnp.result_type(a, b)
    a, b = a.astype(dtype), b.astype(dtype)
    if a.ndim < len(parsed[0]) or b.ndim < len(parsed[1]):
        raise ValueError(f"contract: operands of rank {a.ndim} and {b.ndim} are too small for {spec!r}")
    return _bind(a, b, parsed)
