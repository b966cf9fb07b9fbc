"""The forces a step records are the forces it applied: joint limits (bounded by
``JointForces.limit_force_max``), servos and joint damping, each linearized at the end of the
implicit step, balance the momentum change of a single joint to round-off."""

from __future__ import annotations

import warnings

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


@pytest.mark.fast
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


def test_velocity_limits_brake_within_the_step_that_would_pass_them():
    """``JointForces(velocity_limits=True)``: a disc at 4.95 rad/s (limit ``W = 5``) under a
    torque that takes it 0.2 rad/s faster each step reaches ``W`` in the first step and never
    passes it; the recorded force (torque, brake and clip) is what takes it to ``W``, then nearly zero:
    the brake holds it there against the torque (the brake is linearized about the predicted
    end-of-step velocity; the clip to ``W`` takes the ``τ / d_v`` the damper leaves).  Other
    integrators refuse the option."""
    b = sd.ModelBuilder()
    b.add_body("disc", None, sd.JointSpec.continuous((0.0, 0.0, 1.0)), mass=1.0,
               inertia=np.diag([0.01, 0.01, INERTIA]), joint_name="spin", velocity_limit=5.0)
    model = b.build(jnp.float64)
    torque = 0.2 * INERTIA / DT
    start = sd.State.initial(model, v=jnp.array([4.95]))
    braked = sd.JointForces(velocity_limits=True)
    traj = jax.jit(lambda s: sd.rollout(model, s, jnp.full((50, 1), torque), DT, 50, joint_forces=braked))(start)
    v = np.asarray(traj.states.v[:, 0])
    assert np.all(v <= 5.0) and v[0] == pytest.approx(5.0, abs=1e-9)
    tau = np.asarray(traj.tau[:, 0])
    assert tau[0] == pytest.approx(INERTIA * 0.05 / DT, rel=0.01)   # what takes it from 4.95 to W
    assert np.all(np.abs(tau[1:]) < 0.01 * torque)
    free = sd.rollout(model, start, jnp.full((5, 1), torque), DT, 5)
    assert float(free.states.v[0, 0]) == pytest.approx(5.15)
    with pytest.raises(ValueError, match="velocity_limits=True\\) needs integrator='implicit'"):
        sd.rollout(model, start, None, DT, 5, joint_forces=braked, integrator="rk4")


def test_the_velocity_clip_is_recorded_as_the_force_of_its_impulse():
    """The clip of the end-of-step velocity to ``[−W, W]`` is recorded as ``𝓜 Δv / dt``.  On the
    disc above (``I = 0.02``) driven past ``W = 5``: ``tau`` equals ``I Δv / dt`` at every step
    (the clip included) and the velocity limits' share ``velocity_limit_force`` is ``I Δv / dt``
    minus the drive.  On two parallel sliders (``𝓜`` constant and coupled, no velocity products,
    no gravity along them) with ``W`` on the second and no brake (``d_v = 0``): the step without
    velocity limits gives the unclipped ``v_s``; with them the recorded share is exactly
    ``𝓜 (v⁺ − v_s) / dt`` on both dofs, and ``actuator + joint`` is ``𝓜 (v⁺ − v) / dt``."""
    b = sd.ModelBuilder()
    b.add_body("disc", None, sd.JointSpec.continuous((0.0, 0.0, 1.0)), mass=1.0,
               inertia=np.diag([0.01, 0.01, INERTIA]), joint_name="spin", velocity_limit=5.0)
    disc = b.build(jnp.float64)
    torque = 0.2 * INERTIA / DT
    braked = sd.JointForces(velocity_limits=True)
    traj = sd.rollout(disc, sd.State.initial(disc, v=jnp.array([4.95])), jnp.full((20, 1), torque), DT, 20,
                      joint_forces=braked)
    rate = _momentum_rate(traj, 4.95)
    np.testing.assert_allclose(np.asarray(traj.tau[:, 0]), rate, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(traj.velocity_limit_force[:, 0]), rate - torque, rtol=0, atol=1e-9)
    assert np.all(np.asarray(traj.states.v) == 5.0) and traj.velocity_limit_force.shape == (20, 1)
    assert sd.rollout(disc, sd.State.initial(disc), None, DT, 2).velocity_limit_force is None

    b = sd.ModelBuilder()
    b.add_body("cart", None, sd.JointSpec.prismatic((1.0, 0.0, 0.0)), mass=2.0, joint_name="x1")
    b.add_body("slider", "cart", sd.JointSpec.prismatic((1.0, 0.0, 0.0)), mass=0.5, joint_name="x2",
               velocity_limit=1.0)
    sliders = b.build(jnp.float64)
    mass = np.asarray(sd.mass_matrix(sliders, sliders.q_neutral))
    assert mass[0, 1] == pytest.approx(0.5)
    state = sd.State.initial(sliders, v=jnp.array([0.3, 0.9]))
    push = jnp.array([1.0, 400.0])                  # takes x2 to 0.9 + 0.8 dt⁻¹ … past W = 1 in one step
    free, _ = sd.simulate.step_and_forces(sliders, state, push, DT)
    clipped, rec = sd.simulate.step_and_forces(sliders, state, push, DT,
                                      joint_forces=sd.JointForces(velocity_limits=True, velocity_limit_damping=0.0))
    assert float(free.v[1]) > 1.05 and float(clipped.v[1]) == 1.0 and float(clipped.v[0]) == float(free.v[0])
    np.testing.assert_allclose(rec.velocity_limit, mass @ (np.asarray(clipped.v) - np.asarray(free.v)) / DT,
                               rtol=1e-12, atol=1e-9)
    assert abs(float(rec.velocity_limit[0])) > 1.0  # the coupling puts the clip's force on x1 too
    np.testing.assert_allclose(rec.actuator + rec.joint, mass @ (np.asarray(clipped.v) - np.asarray(state.v)) / DT,
                               rtol=1e-12, atol=1e-9)


@pytest.mark.slow
def test_a_go2_hop_optimized_with_the_urdf_limits_keeps_them():
    """A Go2 hop (0.5 s, 2 ms steps, its own mesh hulls on the ground) optimized through the
    rollout (Adam on piecewise-linear motor torques, maximizing the base's peak height) with the
    URDF's limits on: motors with the torque–speed envelope of the velocity limits and the effort
    limits, joint velocity limits, limit forces bounded by ``limit_force_max``.  The hop rises,
    no joint passes its velocity limit by more than 0.1 %, and no limit force exceeds the bound."""
    import optax

    from sodyn.simulate.standing import on_the_ground

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = sd.with_ground_plane(sd.example_robot("go2").load(floating_base=True, max_hull_vertices=16))
    contact = sd.ContactModel.from_model(model)
    q0 = jnp.asarray(on_the_ground(model, model.keyframes["standing"][0]))
    motors = sd.motors(model, velocity_limit="model")
    bound = 10.0 * float(jnp.max(model.effort_limit[6:]))
    limits = sd.JointForces(velocity_limits=True, limit_force_max=bound)
    dt, steps, knots = 2e-3, 250, 11
    hat = jax.vmap(lambda e: jnp.interp(dt * jnp.arange(steps), jnp.linspace(0, dt * steps, knots), e),
                   out_axes=1)(jnp.eye(knots))

    def hop(z):
        return sd.rollout(model, sd.State.initial(model, q0), hat @ (30.0 * z), dt, steps, contact=contact,
                          actuators=motors, joint_forces=limits)

    def loss(z):
        return -jnp.max(hop(z).states.q[:, 2]) + 1e-5 * dt * jnp.sum((hat @ (30.0 * z)) ** 2)

    grad = jax.jit(jax.value_and_grad(loss))
    opt = optax.adam(0.05)
    z = jnp.zeros((knots, 12))
    state = opt.init(z)
    for _ in range(30):
        _, g = grad(z)
        updates, state = opt.update(g, state)
        z = optax.apply_updates(z, updates)
    traj = jax.jit(hop)(z)
    assert bool(jnp.all(jnp.isfinite(traj.states.q)))
    assert float(jnp.max(traj.states.q[:, 2]) - q0[2]) > 0.05
    speed = np.abs(np.asarray(traj.states.v[:, 6:])) / np.asarray(model.velocity_limit[6:])
    assert speed.max() < 1.001
    assert float(jnp.max(jnp.abs(traj.limit_force))) <= bound
