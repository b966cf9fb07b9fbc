"""``sodyn.runtime.trig.sincos`` against NumPy's float64 sine and cosine: within one unit of roundoff
at 1 (float64 and float32, over the range where its reduction is exact), exact at 0, derivatives
exact, NaN and infinity propagated.  (The suite runs without LLVM's optimisations,
``tests/conftest.py``, so without multiply-add contraction, which once hid a float32 reduction
exact only to 1.3e4.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sodyn.runtime.trig import sincos

pytestmark = pytest.mark.fast

SINCOS = jax.jit(sincos)
SPECIAL = np.array([0.0, -0.0, np.pi / 4, -np.pi / 4, np.pi / 2, np.pi, 1.5 * np.pi, 2 * np.pi, -np.pi, 1e-300])


@pytest.mark.parametrize("dtype, scale", [(np.float64, 1.0), (np.float64, 30.0), (np.float64, 1e5),
                                          (np.float32, 1.0), (np.float32, 30.0), (np.float32, 1e4),
                                          (np.float32, 2e4)])
def test_sincos_matches_numpy(dtype, scale):
    x = np.concatenate([np.random.default_rng(0).standard_normal(100_000) * scale, SPECIAL]).astype(dtype)
    s, c = SINCOS(x)
    assert s.dtype == c.dtype == dtype
    reference = x.astype(np.float64)  # the same arguments, evaluated in float64
    tol = np.finfo(dtype).eps  # one unit of roundoff at 1
    assert np.max(np.abs(np.asarray(s, np.float64) - np.sin(reference))) <= tol
    assert np.max(np.abs(np.asarray(c, np.float64) - np.cos(reference))) <= tol


def test_sincos_exact_at_zero_and_propagates_non_finite():
    s, c = SINCOS(np.array([0.0, np.nan, np.inf, -np.inf]))
    assert s[0] == 0.0 and c[0] == 1.0
    assert np.all(np.isnan(s[1:])) and np.all(np.isnan(c[1:]))


def test_sincos_derivatives_are_cos_and_minus_sin():
    x = jnp.array([-2.5, -0.3, 0.0, 0.7, 3.0, 40.0])
    ds = jax.vmap(jax.grad(lambda t: sincos(t)[0]))(x)
    dc = jax.vmap(jax.grad(lambda t: sincos(t)[1]))(x)
    d2s = jax.vmap(jax.grad(jax.grad(lambda t: sincos(t)[0])))(x)
    np.testing.assert_allclose(ds, np.cos(x), rtol=0, atol=4e-16)
    np.testing.assert_allclose(dc, -np.sin(x), rtol=0, atol=4e-16)
    np.testing.assert_allclose(d2s, -np.sin(x), rtol=0, atol=4e-16)


def test_sincos_other_dtypes_fall_back_to_jnp():
    x = jnp.linspace(-3, 3, 7, dtype=jnp.bfloat16)
    s, c = sincos(x)
    assert s.dtype == jnp.bfloat16
    np.testing.assert_array_equal(s, jnp.sin(x))
    np.testing.assert_array_equal(c, jnp.cos(x))
