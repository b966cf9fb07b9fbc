"""Compile cost is flat in tree depth: every recursion is one ``lax.scan`` over levels, so the
program for a 256-link chain is (nearly) the same size as for an 8-link chain."""

import jax
import jax.numpy as jnp
import pytest

import sodyn as sd
from sodyn.models import pendulum_chain

pytestmark = pytest.mark.fast


def _count_equations(jaxpr) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    total += _count_equations(sub.jaxpr)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    total += _count_equations(sub)
    return total


def _sizes(n):
    model = pendulum_chain(n)
    z = jnp.zeros(n)
    fd = lambda q, v, t: sd.forward_dynamics(model, q, v, t)  # noqa: E731
    jaxpr = jax.make_jaxpr(fd)(z, z, z)
    hlo = jax.jit(fd).lower(z, z, z).as_text()
    ops = [line for line in hlo.splitlines() if "=" in line and "constant" not in line]
    return _count_equations(jaxpr.jaxpr), len(ops)


def test_forward_dynamics_program_size_flat_in_depth():
    eq8, hlo8 = _sizes(8)
    eq256, hlo256 = _sizes(256)
    assert eq256 <= 1.5 * eq8, (eq8, eq256)
    assert hlo256 <= 1.5 * hlo8, (hlo8, hlo256)
