"""Steppers, joint forces, actuators and rollouts (``sodyn.simulate``), float64 unless stated.

Oracles: conservation laws (energy, momentum of a free-flying system), the order of RK4,
the passivity of the implicit stepper on real arms with URDF damping, the documented joint
force laws (limits, friction loss, actuator saturation), central differences for gradients
of long rollouts, and XLA's own memory analysis for checkpointing.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import robots_dir

import sodyn as sd
from sodyn import spatial
from sodyn.simulate import JointForces, State, motors, position_servos, rollout, step, step_and_forces, stepping

jax.config.update("jax_enable_x64", True)

NO_JOINT_FORCES = JointForces(limits=False, friction=False, springs=False)


def energy(model, q, v, joint_forces=None):
    """Kinetic + gravity potential (+ spring and limit potentials when ``joint_forces`` is given)."""
    e = sd.kinetic_energy(model, q, v) + sd.potential_energy(model, q)
    return e if joint_forces is None else e + sd.simulate.joint_potential_energy(model, joint_forces, q)


def energies(model, states, joint_forces=None):
    return jax.vmap(lambda q, v: energy(model, q, v, joint_forces))(states.q, states.v)


# ---------------------------------------------------------------------------
# RK4: fourth order, conservation
# ---------------------------------------------------------------------------


def _rk4_energy_drift(model, q0, dt, seconds=10.0):
    steps = int(round(seconds / dt))

    @jax.jit
    def drift():
        traj = rollout(model, State.initial(model, q0), None, dt, steps, integrator="rk4")
        e0 = energy(model, q0, jnp.zeros(model.nv))
        return jnp.max(jnp.abs(energies(model, traj.states) - e0)) / jnp.abs(e0)

    return float(drift())


@pytest.mark.parametrize("case", [
    pytest.param(("double_pendulum", 0.005), id="double_pendulum"),
    pytest.param(("chain10", 0.0015), id="chain10", marks=pytest.mark.slow),
])
def test_rk4_energy_drift_is_small_and_fourth_order(case):
    """Passive, 10 s: drift below 1e-6 and the drift ratio between dt and dt/2 in [12, 20].

    (Near-linear oscillations make RK4's energy error super-convergent, ratio → 32, so the
    motions are large: the double pendulum swings from (1, 0.5) rad, the chain from 0.2 rad
    at every joint.)"""
    name, dt = case
    if name == "double_pendulum":
        model, q0 = sd.models.double_pendulum(), jnp.array([1.0, 0.5])
    else:
        model = sd.models.pendulum_chain(10)
        q0 = 0.2 * jnp.ones(model.nv)
    coarse, fine = _rk4_energy_drift(model, q0, dt), _rk4_energy_drift(model, q0, dt / 2)
    assert fine < 1e-6
    assert 12.0 < coarse / fine < 20.0, (coarse, fine)


def spatial_momentum(model, q, v):
    """Σ_k X_k* I_k V_k: the system's momentum about the world origin, world axes [n; f]."""
    poses = sd.forward_kinematics(model, q).body
    h = spatial.mv(spatial.spatial_inertia(model.mass, model.com, model.inertia), sd.body_velocities(model, q, v))
    f = spatial.mv(poses.rotation, h[:, 3:])
    n = spatial.mv(poses.rotation, h[:, :3]) + jnp.cross(poses.translation, f)
    return jnp.concatenate([n.sum(0), f.sum(0)])


def test_rk4_free_flying_satellite_conserves_momentum_and_unit_quaternion():
    model = sd.models.cdi_satellite()  # no gravity
    q0 = sd.random_configuration(model, jax.random.PRNGKey(0), scale=0.5)
    v0 = jax.random.normal(jax.random.PRNGKey(1), (model.nv,))
    traj = jax.jit(lambda: rollout(model, State.initial(model, q0, v0), None, 1e-3, 1000, integrator="rk4"))()
    h = jax.vmap(lambda q, v: spatial_momentum(model, q, v))(traj.states.q, traj.states.v)
    h0 = spatial_momentum(model, q0, v0)
    assert np.max(np.abs(h - h0)) < 1e-10 * np.linalg.norm(h0)
    assert np.max(np.abs(np.linalg.norm(traj.states.q[:, 3:7], axis=1) - 1)) < 1e-12


# ---------------------------------------------------------------------------
# the implicit stepper on real arms with URDF damping
# ---------------------------------------------------------------------------

ARMS = {  # fixed-base arms and manipulators of example-robot-data whose URDF has joint damping
    "talos_left_arm": "talos_data/robots/talos_left_arm.urdf",
    "xarm7": "xarm_description/urdf/xarm7.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "z1": "z1_description/urdf/z1.urdf",
    "baxter": "baxter_description/urdf/baxter.urdf",
    "tiago_no_hand": "tiago_description/robots/tiago_no_hand.urdf",
    "pr2": "pr2_description/urdf/pr2.urdf",
    "allegro_right_hand": "allegro_hand_description/urdf/allegro_right_hand.urdf",
}
DEFAULT_ARMS = ("talos_left_arm", "xarm7", "panda")


@pytest.mark.parametrize("arm", [pytest.param(a, marks=() if a in DEFAULT_ARMS else pytest.mark.slow)
                                 for a in ARMS])
def test_implicit_stepper_keeps_damped_arms_finite_and_passive(arm):
    """Passive from the neutral pose under gravity, 2 s at dt = 1 ms with the default stepper:
    finite, and the energy (with the limit-spring potential: some neutral poses lie outside a
    joint range) never exceeds its initial value."""
    if robots_dir() is None:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = sd.load_urdf(robots_dir() / ARMS[arm])
    assert float(np.max(model.damping)) > 0
    jf = JointForces()

    @jax.jit
    def run():
        s0 = State.initial(model)
        traj = rollout(model, s0, None, 1e-3, 2000)
        return energy(model, s0.q, s0.v, jf), energies(model, traj.states, jf), traj.states.q

    e0, e, q = run()
    assert np.all(np.isfinite(q))
    assert np.max(e) <= e0 + 1e-9 * max(1.0, abs(float(e0)))
    assert e[-1] < e0


# ---------------------------------------------------------------------------
# joint limits, friction loss, actuators
# ---------------------------------------------------------------------------


def _pendulum(lower=-np.inf, upper=np.inf, friction=0.0, axis=(0.0, 1.0, 0.0), effort=np.inf):
    b = sd.ModelBuilder(name="pendulum")
    b.add_body("rod", None, sd.JointSpec.revolute(axis), mass=1.0, com=(0.0, 0.0, -0.3),
               inertia=np.diag([0.0075, 0.0075, 1e-4]), joint_name="hinge", lower=lower, upper=upper,
               friction=friction, effort_limit=effort)
    return b.build()


def test_joint_limit_holds_a_falling_and_a_driven_pendulum():
    """Released horizontal, the rod swings into its limit at 0.5 rad with ≈ 6 rad/s: overshoot
    below 1°; pushed by 50 N·m against the limit it settles at the documented τ / k."""
    model = _pendulum(lower=-0.5, upper=0.5)
    s0 = State.initial(model, jnp.array([-np.pi / 2]))
    fall = jax.jit(lambda: rollout(model, s0, None, 1e-3, 1500))()
    assert np.max(fall.states.q) - 0.5 < np.deg2rad(1.0)
    push = jax.jit(lambda: rollout(model, State.initial(model, jnp.array([0.4])), jnp.full((1500, 1), 50.0),
                                   1e-3, 1500))()
    gravity = 1.0 * 9.81 * 0.3 * np.sin(0.5)
    settled = float(push.states.q[-1, 0])
    assert settled - 0.5 == pytest.approx((50.0 - gravity) / 1e5 + 0.5e-3, rel=1e-3)  # π(e) = e − w/2


def test_saturated_actuators_and_effort_limits_never_exceed_their_bounds():
    model = _pendulum(effort=3.0)
    s0 = State.initial(model)
    clipped = rollout(model, s0, jnp.full((20, 1), 10.0), 1e-3, 20, joint_forces=NO_JOINT_FORCES)
    np.testing.assert_allclose(clipped.tau, 3.0)  # URDF effort clips a generalised-force control
    motor = motors(model, gear=2.0, force_range=(-1.0, 1.0))
    driven = rollout(model, s0, jnp.linspace(-5, 5, 50)[:, None], 1e-3, 50, actuators=motor,
                     joint_forces=NO_JOINT_FORCES)
    assert np.max(np.abs(driven.tau)) <= 2.0 + 1e-12  # gear · force_range
    np.testing.assert_allclose(driven.tau[[0, -1], 0], [-2.0, 2.0])
    servo = position_servos(model, kp=50.0, kv=5.0, force_range=(-4.0, 4.0))
    tracked = rollout(model, s0, jnp.full((3000, 1), 0.3), 1e-3, 3000, actuators=servo, joint_forces=NO_JOINT_FORCES)
    assert np.max(np.abs(tracked.tau)) <= 4.0 + 1e-12
    held = 0.3  # the servo holds the rod where k_p (0.3 − q) balances gravity's m g l sin q
    for _ in range(50):
        held = 0.3 - 9.81 * 0.3 * np.sin(held) / 50.0
    assert float(tracked.states.q[-1, 0]) == pytest.approx(held, abs=1e-6)


def test_friction_loss_stops_a_slowly_driven_joint_below_breakaway():
    """A vertical-axis hinge with friction loss F = 1 N·m, driven by a torque ramping to 0.9 F:
    it creeps at a few ε; at 1.1 F it breaks away."""
    model = _pendulum(friction=1.0, axis=(0.0, 0.0, 1.0))
    s0 = State.initial(model)
    below = rollout(model, s0, jnp.linspace(0.0, 0.9, 2000)[:, None], 1e-3, 2000)
    eps = float(JointForces().friction_velocity)
    assert np.max(np.abs(below.states.v)) < 3.0 * eps
    above = rollout(model, s0, jnp.full((2000, 1), 1.1), 1e-3, 2000)
    # breakaway: then the net torque 0.1 N·m accelerates the rod (inertia 0.0001 + m·0 about z)
    assert float(above.states.v[-1, 0]) > 100 * eps


def test_stiff_servo_is_stable_only_with_the_implicit_stepper():
    """A servo with k_p = 1e5 and k_v = 1e3 on a 1e-4 kg·m² rod at dt = 1 ms: its gains join
    the articulated-body diagonal, so the default stepper tracks; explicit Euler diverges."""
    model = _pendulum(axis=(0.0, 0.0, 1.0))
    servo = position_servos(model, kp=1e5, kv=1e3)
    controls = jnp.full((200, 1), 0.2)
    implicit = rollout(model, State.initial(model), controls, 1e-3, 200, actuators=servo)
    explicit = rollout(model, State.initial(model), controls, 1e-3, 200, actuators=servo, integrator="semi_implicit")
    assert abs(float(implicit.states.q[-1, 0]) - 0.2) < 1e-6
    assert not np.all(np.abs(np.asarray(explicit.states.q)) < 1.0)


# ---------------------------------------------------------------------------
# rollouts: gradients, checkpointing, float32, checked mode, errors
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def panda():
    if robots_dir() is None:
        pytest.skip("example-robot-data is not installed")
    model = sd.load_urdf(robots_dir() / ARMS["panda"])
    mid = jnp.where(jnp.isfinite(model.lower_limit), 0.5 * (model.lower_limit + model.upper_limit), 0.0)
    return model, mid


def _directional_check(loss, args, keys, rel=1e-6):
    """``jax.grad`` against central differences along 3 random directions per argument."""
    grads = jax.jit(jax.grad(loss, argnums=tuple(range(len(args)))))(*args)
    for i, (x, g) in enumerate(zip(args, grads)):
        for j in range(3):
            d = jax.random.normal(jax.random.fold_in(keys, 10 * i + j), jnp.shape(x))
            plus, minus = list(args), list(args)
            plus[i], minus[i] = x + 1e-6 * d, x - 1e-6 * d
            numeric = (loss(*plus) - loss(*minus)) / 2e-6
            assert float(jnp.sum(g * d)) == pytest.approx(float(numeric), rel=rel, abs=1e-9), (i, j)


def test_gradient_of_a_1000_step_rollout_matches_central_differences(panda):
    """Panda, default stepper (URDF damping implicit), 1000 steps of 1 ms from mid-range under
    gravity compensation plus noise: with respect to the initial velocity, the torques and a
    link mass.  Joint limits are off: like contacts, a stiff limit's onset is only C¹, which
    central differences at this scale resolve to ~1e-6 (contact gradients are tested apart)."""
    model, q0 = panda
    steps = 1000
    tau = sd.gravity_forces(model, q0) + 0.3 * jax.random.normal(jax.random.PRNGKey(3), (steps, model.nv))

    @jax.jit
    def loss(v0, tau, mass3):
        m = model.__class__(**{**model.__dict__, "mass": model.mass.at[3].set(mass3)})
        traj = rollout(m, State.initial(m, q0, v0), tau, 1e-3, steps, joint_forces=JointForces(limits=False))
        return jnp.sum(jnp.sin(traj.states.q[-1])) + 0.1 * jnp.sum(traj.states.v[-1] ** 2)

    _directional_check(loss, (0.05 * jnp.ones(model.nv), tau, model.mass[3]), jax.random.PRNGKey(4))


def test_rematerialised_steps_and_checkpointing_cut_the_gradient_memory(panda, monkeypatch):
    """``compiled.memory_analysis()`` of a 1000-step gradient: the default step keeps only its
    inputs and the forward-dynamics factors for the reverse pass, against storing every
    intermediate of every step (the step's rematerialisation switched off); ``checkpoint=32``
    cuts that tenfold, and keeps a quarter or less of the default's."""
    model, q0 = panda
    steps = 1000

    def memory(checkpoint):
        def loss(tau):
            traj = rollout(model, State.initial(model, q0), tau, 1e-3, steps, checkpoint=checkpoint)
            return jnp.sum(traj.states.q[-1] ** 2)

        compiled = jax.jit(jax.grad(loss)).lower(jnp.zeros((steps, model.nv))).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    rematerialised, checked = memory(None), memory(32)
    monkeypatch.setattr(stepping, "_rematerialised", lambda fn: fn)
    stored = memory(None)
    assert rematerialised <= stored / 5, (stored, rematerialised)
    assert checked <= stored / 10 and checked <= rematerialised / 4, (stored, rematerialised, checked)


def test_float32_gradients_at_rest_and_at_the_identity_quaternion_are_finite():
    model = sd.models.humanoid_like().astype(jnp.float32)  # free base at the identity quaternion
    s0 = State.initial(model)

    def loss(v):
        return jnp.sum(rollout(model, State.initial(model, s0.q, v), None, 1e-3, 5).states.q[-1])

    grad = jax.grad(loss)(jnp.zeros(model.nv, jnp.float32))
    assert grad.dtype == jnp.float32 and np.all(np.isfinite(grad))


def _hopper():
    """A free torso on a two-link leg: the small contact model of the checkpoint test."""
    b = sd.ModelBuilder(name="hopper")
    b.add_body("torso", None, "free", mass=2.0, inertia=np.diag([0.02, 0.03, 0.02]))
    b.add_body("thigh", "torso", sd.JointSpec.revolute((0, 1, 0)), mass=0.5, com=(0, 0, -0.1),
               translation=(0, 0, -0.05), inertia=np.diag([2e-3, 2e-3, 1e-4]))
    b.add_body("shin", "thigh", sd.JointSpec.revolute((0, 1, 0)), mass=0.3, com=(0, 0, -0.1),
               translation=(0, 0, -0.2), inertia=np.diag([1e-3, 1e-3, 5e-5]))
    return b.build()


@pytest.mark.slow
def test_checkpointed_gradient_equals_the_plain_one_to_round_off():
    """A 200-step hopper rollout landing on the ground (``GroundContact.at_frames``), float32:
    the gradient with ``checkpoint=50`` differs from the one without by less than float32's own
    error (against float64), i.e. to round-off.  Both recompute the same steps in different XLA
    programs, whose round-off differs in the last bits; the adjoint of a stiff contact rollout
    amplifies that as it amplifies float32's (see :func:`sodyn.simulate.rollout`: in float64
    the two agreed to 8e-13 on a 300-step Solo12 rollout)."""
    steps = 200
    model = _hopper()
    tau = 0.3 * jax.random.normal(jax.random.PRNGKey(0), (steps, model.nv))

    def gradient(dtype, checkpoints):
        m = model.astype(dtype)
        feet = sd.GroundContact.at_frames(m, ["shin", "torso"], positions=np.array([[0, 0, -0.2], [0.1, 0, 0]]))
        q0 = sd.neutral_configuration(m).at[2].set(0.5).at[8].set(0.4)  # the foot 7 cm up

        def loss(u, checkpoint):
            traj = rollout(m, State.initial(m, q0), u, 1e-3, steps, contact=feet, checkpoint=checkpoint)
            return jnp.sum(traj.states.q[-1, :3] ** 2) + 0.01 * jnp.sum(traj.states.v[-1] ** 2), traj.contact_force

        @jax.jit
        def run(u):
            return [jax.grad(loss, has_aux=True)(u, c) for c in checkpoints]

        return [(g.astype(jnp.float64), force) for g, force in run(tau.astype(dtype))]

    (g32, force), (g32_ck, _) = gradient(jnp.float32, (None, 50))
    [(g64, _)] = gradient(jnp.float64, (None,))
    assert np.max(np.abs(force[:50])) == 0 and np.max(np.abs(force[-50:])) > 1  # in the air, then on the ground
    rel = lambda a, b: float(jnp.linalg.norm(a - b) / jnp.linalg.norm(b))  # noqa: E731
    assert rel(g32_ck, g32) <= rel(g32, g64), (rel(g32_ck, g32), rel(g32, g64))  # 1.3e-3 vs 5.2e-3
    assert rel(g32, g64) < 1e-2


def test_policy_params_external_forces_substeps_and_step_agree_with_rollout():
    model = sd.models.cart_pole()
    s0 = State.initial(model, jnp.array([0.0, 0.2]))

    def policy(params, t, s):
        return -params["k"] * s.q - params["d"] * s.v

    params = {"k": jnp.array([1.0, 20.0]), "d": jnp.array([0.5, 2.0])}
    f_ext = jnp.zeros((10, model.n_bodies, 6)).at[:, 0, 3].set(0.3)
    traj = rollout(model, s0, policy, 1e-2, 10, params=params, f_ext=f_ext, substeps=4)
    one = jax.jit(lambda s, f: step_and_forces(model, s, policy(params, s.t, s), 1e-2, f_ext=f, substeps=4))
    s = s0
    for k in range(10):
        s, forces = one(s, f_ext[k])
    np.testing.assert_allclose(traj.states.q[-1], s.q, atol=1e-12)
    np.testing.assert_allclose(traj.states.t[-1], 0.1, atol=1e-12)
    np.testing.assert_allclose(traj.tau[-1], forces.actuator + forces.joint, atol=1e-12)
    g = jax.grad(lambda p: jnp.sum(rollout(model, s0, policy, 1e-2, 10, params=p).states.q[-1] ** 2))(params)
    assert all(np.all(np.isfinite(x)) for x in jax.tree_util.tree_leaves(g))
    assert step(model, s0, None, 1e-2).q.shape == (model.nq,)


def test_checked_mode_names_the_step_and_the_first_bad_quantity():
    """``checked=True`` blames the NaN control (not the joint it reaches), works under
    ``jax.jit`` and refuses a zero quaternion (more in ``test_checks.py``)."""
    model = _pendulum()
    tau = jnp.zeros((10, 1)).at[6].set(jnp.nan)
    with pytest.raises(FloatingPointError, match=r"non-finite control 0 at step 7"):
        rollout(model, State.initial(model), tau, 1e-3, 10, checked=True)
    humanoid = sd.models.humanoid_like()
    bad = State.initial(humanoid)
    bad = State(bad.q.at[3:7].set(0.0), bad.v, bad.t)
    with pytest.raises(Exception, match=r"quaternion of joint 'root' is zero or not finite"):
        rollout(humanoid, bad, None, 1e-3, 2, checked=True)
    jitted = jax.jit(lambda s, u: rollout(model, s, u, 1e-3, 10, checked=True).states.q)
    with pytest.raises(Exception, match=r"non-finite control 0 at step 7"):
        jax.block_until_ready(jitted(State.initial(model), tau))
    ok = rollout(model, State.initial(model), None, 1e-3, 3, checked=True)
    assert ok.states.q.shape == (3, 1)


def test_bad_input_gets_clear_errors():
    model = sd.models.cart_pole()
    s0 = State.initial(model)
    with pytest.raises(ValueError, match="dt must be a positive"):
        step(model, s0, None, -1e-3)
    with pytest.raises(ValueError, match=r"control must have shape \(2,\)"):
        step(model, s0, jnp.zeros(3), 1e-3)
    with pytest.raises(ValueError, match=r"controls must have shape \(5, 2\)"):
        rollout(model, s0, jnp.zeros((4, 2)), 1e-3, 5)
    with pytest.raises(ValueError, match=r"f_ext must have shape"):
        rollout(model, s0, None, 1e-3, 5, f_ext=jnp.zeros((3, 6)))
    with pytest.raises(ValueError, match="policy must return a control of shape"):
        rollout(model, s0, lambda p, t, s: jnp.zeros(3), 1e-3, 5)
    with pytest.raises(ValueError, match="integrator must be one of"):
        step(model, s0, None, 1e-3, integrator="euler")
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        rollout(model, s0, None, 1e-3, 0)
    with pytest.raises(ValueError, match="checkpoint must be a positive integer"):
        rollout(model, s0, None, 1e-3, 5, checkpoint=0)
    with pytest.raises(ValueError, match=r"q must have shape"):
        State.initial(model, jnp.zeros(5))
    with pytest.raises(ValueError, match="state must be an sodyn.State"):
        step(model, (s0.q, s0.v), None, 1e-3)
    with pytest.raises(ValueError, match="a planar joint|one-dof joints|unknown joint"):
        motors(model, ["nope"])
    with pytest.raises(ValueError, match="JointForces.limit_stiffness must be a scalar"):
        JointForces(limit_stiffness=jnp.ones(2))
