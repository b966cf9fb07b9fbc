"""``sodyn.vmap`` (chunked batching) equals ``jax.vmap``."""

import jax
import numpy as np
import pytest

import sodyn as sd
from sodyn.models import pendulum_chain


def test_chunked_vmap_matches_jax_vmap_with_padding():
    model = pendulum_chain(3)
    q = jax.random.normal(jax.random.PRNGKey(0), (10, 3))
    v = jax.random.normal(jax.random.PRNGKey(1), (10, 3))
    fd = lambda m, q, v: sd.forward_dynamics(m, q, v, v)  # noqa: E731
    expected = jax.jit(jax.vmap(fd, in_axes=(None, 0, 0)))(model, q, v)
    got = jax.jit(sd.vmap(fd, in_axes=(None, 0, 0), chunk_size=4))(model, q, v)  # 3 chunks, 2 padded
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    small = jax.jit(sd.vmap(fd, in_axes=(None, 0, 0), chunk_size=64))(model, q, v)
    np.testing.assert_allclose(small, expected, rtol=1e-12)


def test_chunked_vmap_rejects_bad_arguments():
    f = lambda x, y: x + y  # noqa: E731
    with pytest.raises(ValueError, match="chunk_size"):
        sd.vmap(f, chunk_size=0)
    with pytest.raises(ValueError, match="share one leading batch size"):
        sd.vmap(f)(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="in_axes of 0 or None"):
        sd.vmap(f, in_axes=(1, 0))(np.zeros((2, 3)), np.zeros(3))
