"""The forces a step records are the forces it applied: joint limits (bounded by
``JointForces.limit_force_max``), servos and joint damping, each linearized at the end of the
implicit step, balance the momentum change of a single joint to round-off."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd

jax.config.update("jax_enable_x64", True)

INERTIA = 0.02   # kg·m² about the joint axis (gravity along it: no gravity torque)
DT, STEPS = 1e-3, 200


def _disc(damping=0.0) -> sd.Model:
    b = sd.ModelBuilder()
    b.add_body("disc", None, sd.JointSpec.revolute((0.0, 0.0, 1.0)), mass=1.0,
               inertia=np.diag([0.01, 0.01, INERTIA]), joint_name="spin", lower=-0.5, upper=0.5, damping=damping)
    return b.build(jnp.float64)


@pytest.fixture(scope="module")
def run():
    model = _disc(damping=0.01)
    servo = sd.position_servos(model, kp=1.0, kv=0.02)

    @jax.jit
    def go(joint_forces, v0):
        return sd.rollout(model, sd.State.initial(model, v=jnp.reshape(v0, (1,))), jnp.zeros((STEPS, 1)), DT, STEPS,
                          actuators=servo, joint_forces=joint_forces)
    return model, go


def _momentum_rate(traj, v0) -> np.ndarray:
    v = np.concatenate([[v0], np.asarray(traj.states.v[:, 0])])
    return INERTIA * np.diff(v) / DT


def test_a_joint_hitting_its_limit_records_the_force_that_stopped_it(run):
    """At 10 rad/s into the limit with the default stiff limit damper (``d = 10⁴``): the
    recorded ``tau`` (servo, damping and limit) equals ``I Δv / dt`` at every step to round-off,
    and the limit force peaks near ``I v / dt`` (the step that stops the joint), not at
    ``d v = 10⁵``."""
    _, go = run
    traj = go(sd.JointForces(), 10.0)
    np.testing.assert_allclose(np.asarray(traj.tau[:, 0]), _momentum_rate(traj, 10.0), rtol=1e-9, atol=1e-9)
    peak = float(jnp.max(jnp.abs(traj.limit_force)))
    assert 0.2 * INERTIA * 10.0 / DT < peak < 2.0 * INERTIA * 10.0 / DT
    assert float(jnp.max(traj.states.q)) < 0.5 + 0.01


def test_limit_force_max_bounds_the_limit_force(run):
    """``limit_force_max = 20`` N·m: no recorded limit force exceeds it, the momentum balance
    still holds, and the joint goes deeper past its limit than without the bound."""
    _, go = run
    free = go(sd.JointForces(), 10.0)
    bounded = go(sd.JointForces(limit_force_max=20.0), 10.0)
    assert float(jnp.max(jnp.abs(bounded.limit_force))) <= 20.0
    np.testing.assert_allclose(np.asarray(bounded.tau[:, 0]), _momentum_rate(bounded, 10.0), rtol=1e-9, atol=1e-9)
    assert float(jnp.max(bounded.states.q)) > float(jnp.max(free.states.q)) + 1e-3
    assert bool(jnp.all(jnp.isfinite(jax.grad(lambda b: jnp.sum(go(sd.JointForces(limit_force_max=b), 10.0)
                                                                 .states.q))(20.0))))
