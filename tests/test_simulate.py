"""Rollouts (semi-implicit Euler on the manifold) and the command line."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.cli import main
from sodyn.models import cart_pole
from sodyn.simulate import rollout


def test_rollout_conserves_energy_to_first_order_and_is_differentiable():
    model = cart_pole()
    q0, v0 = jnp.array([0.0, 0.3]), jnp.array([0.1, 0.0])

    def final_energy(dt, steps, push=0.0):
        traj = rollout(model, q0, v0 + jnp.array([push, 0.0]), None, dt, steps)
        return sd.kinetic_energy(model, traj.q[-1], traj.v[-1]) + sd.potential_energy(model, traj.q[-1])

    e0 = sd.kinetic_energy(model, q0, v0) + sd.potential_energy(model, q0)
    coarse = abs(float(final_energy(1e-3, 500)) - float(e0))
    fine = abs(float(final_energy(1e-4, 5000)) - float(e0))
    assert fine < 2e-3 and fine < coarse / 3  # first-order method: error shrinks with dt
    grad = jax.grad(lambda p: final_energy(1e-3, 200, p))(0.0)
    numeric = (final_energy(1e-3, 200, 1e-6) - final_energy(1e-3, 200, -1e-6)) / 2e-6
    assert float(grad) == pytest.approx(float(numeric), rel=1e-6)


def test_rollout_with_policy_and_bad_controls():
    model = cart_pole()
    traj = rollout(model, jnp.zeros(2), jnp.zeros(2), lambda t, q, v: -5.0 * v - 20.0 * q, 1e-2, 10)
    assert traj.q.shape == (10, 2) and np.all(np.isfinite(traj.q))
    with pytest.raises(ValueError, match=r"controls must have shape \(steps, nv\)"):
        rollout(model, jnp.zeros(2), jnp.zeros(2), jnp.zeros((3, 2)), 1e-2, 10)


def test_cli_simulate_and_info(capsys):
    assert main(["simulate", "--model", "cart_pole", "--batch", "3", "--steps", "5", "--float64"]) == 0
    out = capsys.readouterr().out
    assert "finite       True" in out and "cart_pole" in out
    assert main(["info", "double_pendulum"]) == 0
    assert "joint2" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="unknown model"):
        main(["info", "nope"])
