"""Forward dynamics on one shared factorization (:mod:`sodyn.algorithms.factored_dynamics`)
against :func:`sodyn.forward_dynamics`: several right-hand sides ``(θ̇, τ, f_ext)`` on the
Riccati quantities of one ``(q, B)``, their derivatives in every argument (the model's
parameters included) and central differences, float64, on a random tree of every joint kind
with an added body inertia ``B`` as the implicit step's contacts give."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.algorithms.factored_dynamics import factorize, solve
from sodyn.models import random_tree

jax.config.update("jax_enable_x64", True)


@functools.cache
def problem():
    """A floating tree with every joint kind, damping and armature, and three right-hand sides
    at one ``(q, B)``."""
    model = random_tree(10, seed=4, floating_base=True, damping=0.3, armature=0.05)
    rng = np.random.default_rng(1)
    q = sd.random_configuration(model, jax.random.PRNGKey(2))
    vs, taus, fs = (jnp.asarray(rng.normal(size=(3,) + s)) for s in ((model.nv,), (model.nv,), (model.n_bodies, 6)))
    half = rng.normal(size=(model.n_bodies, 6, 2))
    added = jnp.asarray(half @ np.swapaxes(half, 1, 2))  # positive semi-definite, rank 2 per body
    return model, q, vs, taus, fs, added


@jax.jit
def _both(model, q, vs, taus, fs, added):
    fac = factorize(model, q, added)
    shared = jax.vmap(lambda v, t, f: solve(model, q, v, t, f, added, fac))(vs, taus, fs)
    alone = jax.vmap(lambda v, t, f: sd.forward_dynamics(model, q, v, t, f, added_inertia=added))(vs, taus, fs)
    return shared, alone


@pytest.mark.fast
def test_solves_on_one_factorization_equal_forward_dynamics():
    model, q, vs, taus, fs, added = problem()
    shared, alone = _both(model, q, vs, taus, fs, added)
    np.testing.assert_allclose(shared, alone, rtol=0, atol=1e-12 * float(jnp.max(jnp.abs(alone))))
    assert not np.allclose(shared[0], shared[1])  # the right-hand sides differ


def _loss(solver, model, q, v, tau, f, added):
    return jnp.sum(jnp.sin(solver(model, q, v, tau, f, added)))


def _shared(model, q, v, tau, f, added):
    return solve(model, q, v, tau, f, added, factorize(model, q, added))


def _alone(model, q, v, tau, f, added):
    return sd.forward_dynamics(model, q, v, tau, f, added_inertia=added)


@pytest.mark.fast
def test_derivatives_equal_forward_dynamics_and_differences():
    model, q, vs, taus, fs, added = problem()
    args = (model, q, vs[0], taus[0], fs[0], added)
    grad = jax.jit(jax.grad(functools.partial(_loss, _shared), argnums=(0, 1, 2, 3, 4, 5)))
    want = jax.jit(jax.grad(functools.partial(_loss, _alone), argnums=(0, 1, 2, 3, 4, 5)))(*args)
    got = grad(*args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)
    # central differences along one random direction in (q's tangent, v, τ, f, B)
    rng = np.random.default_rng(3)
    dx = [jnp.asarray(rng.normal(size=np.shape(a))) for a in args[2:]]
    dx[-1] = dx[-1] + jnp.swapaxes(dx[-1], -1, -2)  # B stays symmetric
    dq = jnp.asarray(rng.normal(size=model.nv))
    loss = jax.jit(functools.partial(_loss, _shared))

    def moved(h):
        return loss(model, sd.integrate(model, q, h * dq), *(a + h * d for a, d in zip(args[2:], dx)))

    h = 1e-6
    fd = (moved(h) - moved(-h)) / (2 * h)
    dq_loss = jax.grad(lambda e: loss(model, sd.integrate(model, q, e), *args[2:]))(jnp.zeros(model.nv))
    analytic = jnp.dot(dq_loss, dq) + sum(jnp.sum(g * d) for g, d in zip(got[2:], dx))
    np.testing.assert_allclose(analytic, fd, rtol=1e-6)
