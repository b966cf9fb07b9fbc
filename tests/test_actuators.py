"""Actuators against MuJoCo at MuJoCo's own states, and the analytic laws of the builders.

``qfrc_actuator`` and ``act_dot`` of every supported actuator type (motor, position, velocity,
intvelocity, damper, general with affine gain and bias and each activation dynamics, clamped
controls, forces and activations, ``actearly``, a joint's ``actuatorfrcrange``) on a model
written for the test and on MJCF models shipped in PyPI packages; the activation after one step
against ``mj_step``'s; DC motors at stall and no-load speed; velocity-limited motors.
"""

from __future__ import annotations

import os
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.simulate.actuation import actuator_forces, next_activation

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")

ACTUATED_XML = """
<mujoco>
  <option timestep="0.004"/>
  <worldbody>
    <body name="a">
      <joint name="j0" type="hinge" axis="0 1 0" range="-1 1" actuatorfrcrange="-3 3"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05" mass="1"/>
      <body name="b" pos="0 0 -0.4">
        <joint name="j1" type="hinge" axis="1 0 0" ref="0.3"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.04" mass="0.7"/>
        <body name="c" pos="0 0 -0.4">
          <joint name="j2" type="slide" axis="0 0 1"/>
          <geom type="box" size="0.05 0.05 0.05" mass="0.4"/>
          <body name="d">
            <joint name="j3" type="hinge" axis="0 0 1"/>
            <geom type="sphere" size="0.05" pos="0.1 0 0" mass="0.3"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="motor" joint="j0" gear="2" ctrlrange="-1 1"/>
    <position name="position" joint="j0" kp="30" kv="2" forcerange="-5 5"/>
    <velocity name="velocity" joint="j1" kv="4" gear="1.5"/>
    <intvelocity name="intvelocity" joint="j1" kp="20" actrange="-0.5 0.7"/>
    <damper name="damper" joint="j2" kv="3" ctrlrange="0 2"/>
    <general name="affine" joint="j2" gaintype="affine" gainprm="2 0.5 -0.3" biastype="affine"
             biasprm="0.1 -1 -0.2"/>
    <general name="integrator" joint="j3" dyntype="integrator" gainprm="1.5" actlimited="true"
             actrange="-1 2" ctrllimited="true" ctrlrange="-1 1"/>
    <general name="filter" joint="j3" dyntype="filter" dynprm="0.05" gainprm="2" biastype="affine"
             biasprm="0 -1 0"/>
    <general name="filterexact" joint="j1" dyntype="filterexact" dynprm="0.02" gainprm="0.8"/>
    <general name="early" joint="j0" dyntype="filter" dynprm="0.03" gainprm="1.2" actearly="true"/>
    <general name="early_exact" joint="j2" dyntype="filterexact" dynprm="0.01" gainprm="0.6" actearly="true"
             actlimited="true" actrange="-0.4 0.4"/>
  </actuator>
</mujoco>
"""


def _pypi_models() -> list[str]:
    """MJCF models with actuators shipped in PyPI packages: MJX's activation-dynamics test model
    and dm_control's position- and motor-driven models (hinge and slide joints)."""
    out = [os.path.join(os.path.dirname(mujoco.__file__), "mjx", "test_data", "actuator", "general_dyntype.xml")]
    try:
        import dm_control
        suite = os.path.join(os.path.dirname(dm_control.__file__), "suite")
        out += [os.path.join(suite, f"{n}.xml") for n in ("cheetah", "finger", "acrobot", "hopper", "reacher")]
    except ImportError:
        pass
    return [p for p in out if os.path.exists(p)]


def _dof_map(model: sd.Model, mj) -> np.ndarray:
    """sodyn ``v`` index of each MuJoCo hinge/slide dof (by joint name)."""
    out = np.full(mj.nv, -1)
    for j in range(mj.njnt):
        if mj.jnt_type[j] in (2, 3):
            out[mj.jnt_dofadr[j]] = model.joint_v_slice(mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, j)).start
    return out


@pytest.fixture(scope="module")
def written():
    mj = mujoco.MjModel.from_xml_string(ACTUATED_XML)
    return mj, sd.load_mjcf(ACTUATED_XML).astype(jnp.float64)


def _sample(mj, rng):
    """A state, a control (half outside ``ctrlrange``) and activations (a third outside ``actrange``)."""
    d = mujoco.MjData(mj)
    d.qpos[:] = rng.uniform(-1.2, 1.2, mj.nq)
    d.qvel[:] = rng.uniform(-3.0, 3.0, mj.nv)
    lo, hi = mj.actuator_ctrlrange[:, 0], mj.actuator_ctrlrange[:, 1]
    span = np.where(mj.actuator_ctrllimited, hi - lo, 4.0)
    mid = np.where(mj.actuator_ctrllimited, 0.5 * (lo + hi), 0.0)
    d.ctrl[:] = mid + span * rng.uniform(-1.0, 1.0, mj.nu)
    d.act[:] = rng.uniform(-1.5, 1.5, mj.na)
    return d


def _check_against_mujoco(mj, model, seed: int, n: int = 25):
    rng = np.random.default_rng(seed)
    dmap = _dof_map(model, mj)
    dyn = [i for i in range(mj.nu) if mj.actuator_dyntype[i]]
    act_of = np.array([mj.actuator_actadr[i] for i in dyn], dtype=int)
    fn = jax.jit(lambda q, v, u, a: actuator_forces(model, model.actuators, q, v, u, a, mj.opt.timestep))
    step_act = jax.jit(lambda a, adot: next_activation(model.actuators, a, adot, mj.opt.timestep))
    for _ in range(n):
        d = _sample(mj, rng)
        mujoco.mj_forward(mj, d)
        q, v = np.zeros(model.nq), np.zeros(model.nv)
        q[dmap], v[dmap] = d.qpos, d.qvel  # hinge/slide models: qpos, qvel entries are per dof
        act = d.act[act_of]
        terms = fn(q, v, d.ctrl.copy(), act)
        np.testing.assert_allclose(np.asarray(terms.force)[dmap], d.qfrc_actuator, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(terms.actuator_force, d.actuator_force, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(terms.act_dot, d.act_dot[act_of], rtol=1e-10, atol=1e-10)
        nxt = step_act(act, terms.act_dot)
        mujoco.mj_Euler(mj, d)   # act ← mj_nextActivation(act, act_dot), clipped
        np.testing.assert_allclose(nxt, d.act[act_of], rtol=1e-10, atol=1e-10)


@pytest.mark.fast
def test_every_actuator_type_matches_mujoco(written):
    mj, model = written
    assert model.actuators.kind == ("motor", "position", "velocity", "intvelocity", "damper", "general", "general",
                                    "general", "general", "general", "general")
    assert model.actuators.dynamics[6:] == ("integrator", "filter", "filterexact", "filter", "filterexact")
    assert model.actuators.n_act == 6
    np.testing.assert_array_equal(model.effort_limit[model.joint_v_slice("j0")], [3.0])
    _check_against_mujoco(mj, model, seed=0, n=40)


@pytest.mark.parametrize("path", _pypi_models(), ids=lambda p: os.path.basename(p))
def test_pypi_models_actuators_match_mujoco(path):
    mj = mujoco.MjModel.from_xml_path(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # what these models have beyond actuators (contacts, tendons…)
        model = sd.load_mjcf(path).astype(jnp.float64)
    if len(model.actuators) != mj.nu:
        pytest.fail(f"{path}: {mj.nu - len(model.actuators)} actuators dropped")
    _check_against_mujoco(mj, model, seed=1, n=10)



# -- builders: analytic laws --------------------------------------------------------------

DISC_INERTIA = 0.02  # kg·m² about the joint axis


def _disc(velocity_limit=np.inf, effort_limit=np.inf, armature=0.0) -> sd.Model:
    """One continuous joint about z (gravity along it: no gravity torque), a disc on it."""
    b = sd.ModelBuilder()
    b.add_body("disc", None, sd.JointSpec.continuous((0.0, 0.0, 1.0)), mass=1.0,
               inertia=np.diag([0.01, 0.01, DISC_INERTIA]), joint_name="spin", velocity_limit=velocity_limit,
               effort_limit=effort_limit, armature=armature)
    return b.build(jnp.float64)


def _forces_at(model, actuators, speeds, u):
    """Actuator forces (joint torques) at joint speeds ``speeds`` and control ``u``."""
    fn = jax.vmap(lambda w: actuator_forces(model, actuators, jnp.zeros(1), jnp.array([w]), jnp.asarray(u)).force[0])
    return np.asarray(fn(jnp.asarray(speeds)))


@pytest.mark.fast
def test_a_dc_motor_follows_its_torque_speed_line_and_current_limit():
    """Voltage control at ``V_max``: ``τ = N K_t (V − K_e N ω) / R`` from the stall torque to zero
    at the no-load speed ``V / (K_e N)``, clipped to ``N K_t i_max``; current control at the
    current limit gives the same line where the supply limits it and ``N K_t i_max`` below."""
    kt, ke, r, v_max, n, i_max = 0.05, 0.05, 0.4, 24.0, 9.0, 40.0
    model = _disc()
    speeds = np.linspace(-10.0, 80.0, 91)   # joint speeds, past the no-load speed 24 / 0.45 = 53.3 rad/s
    line = n * kt * (v_max - ke * n * speeds) / r
    clipped = np.clip(line, -n * kt * i_max, n * kt * i_max)
    volt = sd.simulate.dc_motors(model, torque_constant=kt, resistance=r, voltage=v_max, gear=n,
                                 current_limit=i_max)
    np.testing.assert_allclose(_forces_at(model, volt, speeds, [v_max]), clipped, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_forces_at(model, volt, speeds, [10 * v_max]), clipped, rtol=1e-12, atol=1e-12)
    no_load = v_max / (ke * n)
    assert _forces_at(model, volt, [no_load], [v_max])[0] == pytest.approx(0.0, abs=1e-12)
    current = sd.simulate.dc_motors(model, torque_constant=kt, resistance=r, voltage=v_max, gear=n,
                                    current_limit=i_max, control="current")
    np.testing.assert_allclose(_forces_at(model, current, speeds, [i_max]), np.minimum(line, n * kt * i_max),
                               rtol=1e-12, atol=1e-12)
    half = _forces_at(model, current, speeds, [0.5 * i_max])
    np.testing.assert_allclose(half, np.minimum(line, 0.5 * n * kt * i_max), rtol=1e-12, atol=1e-12)


def test_a_dc_motor_spins_up_on_its_analytic_curve():
    """From rest at full voltage, without a current limit: ``ω(t) = ω₀ (1 − e^{−t/τ_m})`` with
    ``ω₀ = V / (K_e N)`` and ``τ_m = J R / (N² K_t K_e)``.  The step treats the back-EMF's damping
    implicitly: the speed equals the implicit Euler recurrence ``ω⁺ = (ω + dt N K_t V / (R J)) /
    (1 + dt / τ_m)`` to round-off, within its first-order error ``ω₀ dt / τ_m`` of the analytic
    curve, and never passes ``ω₀``."""
    kt, r, v_max, n, dt, steps = 0.05, 0.4, 24.0, 9.0, 1e-3, 1000
    model = _disc(armature=0.01)
    inertia = DISC_INERTIA + 0.01
    motor = sd.simulate.dc_motors(model, torque_constant=kt, resistance=r, voltage=v_max, gear=n)
    traj = jax.jit(lambda s: sd.rollout(model, s, jnp.full((steps, 1), v_max), dt, steps, actuators=motor))(
        sd.State.initial(model))
    w = np.asarray(traj.states.v[:, 0])
    w0, tau_m = v_max / (kt * n), inertia * r / (n * n * kt * kt)
    rec, x = [], 0.0
    for _ in range(steps):
        x = (x + dt * n * kt * v_max / (r * inertia)) / (1 + dt / tau_m)
        rec.append(x)
    np.testing.assert_allclose(w, rec, rtol=1e-10, atol=1e-10)
    t = dt * np.arange(1, steps + 1)
    assert np.max(np.abs(w - w0 * (1 - np.exp(-t / tau_m)))) < w0 * dt / tau_m
    assert np.all(w <= w0) and w[-1] > 0.99 * w0


def test_a_velocity_limited_motor_never_passes_its_limit():
    """``motors(velocity_limit="model")`` on a joint with a URDF-style velocity limit ``W`` and
    effort ``E``: at full control for 1000 steps the joint approaches ``W`` from below and never
    passes it; spun up past ``W`` by hand, the motor brakes it (the torque ``E (1 − ω/W) < 0``);
    the torque–speed line falls from ``E`` at rest to zero at ``W``."""
    w_lim, effort = 5.0, 2.0
    model = _disc(velocity_limit=w_lim, effort_limit=effort)
    motor = sd.motors(model, velocity_limit="model")
    speeds = np.linspace(-8.0, 8.0, 33)
    line = np.clip(effort * (1 - speeds / w_lim), -effort, effort)
    np.testing.assert_allclose(_forces_at(model, motor, speeds, [10.0]), line, rtol=1e-12, atol=1e-12)
    traj = jax.jit(lambda s: sd.rollout(model, s, jnp.full((1000, 1), 100.0), 1e-3, 1000, actuators=motor))(
        sd.State.initial(model))
    w = np.asarray(traj.states.v[:, 0])
    assert np.all(w <= w_lim) and w[-1] > 0.99 * w_lim
    fast = jax.jit(lambda s: sd.rollout(model, s, jnp.full((300, 1), 100.0), 1e-3, 300, actuators=motor))(
        sd.State.initial(model, v=[2 * w_lim]))
    w = np.asarray(fast.states.v[:, 0])
    assert np.all(np.diff(w) < 0) and w[-1] < 1.01 * w_lim


def test_a_power_limited_motor_does_no_more_work_than_its_limit():
    """``power_limit=P``: where the motor does work (``τ ω > 0``) ``|τ| ≤ P / |ω|``; braking it
    keeps its full force range."""
    model = _disc(effort_limit=4.0)
    motor = sd.motors(model, power_limit=6.0)
    speeds = np.linspace(-6.0, 6.0, 25)
    ahead, back = _forces_at(model, motor, speeds, [10.0]), _forces_at(model, motor, speeds, [-10.0])
    cap = np.minimum(4.0, 6.0 / np.maximum(np.abs(speeds), 1e-9))
    np.testing.assert_allclose(ahead, np.where(speeds > 0, cap, 4.0), rtol=1e-12)
    np.testing.assert_allclose(back, np.where(speeds < 0, -cap, -4.0), rtol=1e-12)


# -- servos a policy commands -----------------------------------------------------------------

def test_a_policy_holds_a_panda_with_servo_targets_and_gravity_feedforward():
    """``pd_servos`` (kp 400 N·m/rad, kv 40 N·m·s/rad on every joint) commanded by a policy with
    the SRDF ``default`` pose as target and the gravity torque as feed-forward, 10 ms steps: the
    arm holds the pose within 1 mrad for 1 s, and within 20 mrad under a ±15 N push along each
    world axis on its last link for 0.1 s, back within 1 mrad 0.3 s after the push."""
    from sodyn.io.robot_data import example_robot

    model = example_robot("panda").load().astype(jnp.float64)
    q0 = jnp.asarray(model.keyframes.q[model.keyframes.names.index("default")])
    servos = sd.pd_servos(model, kp=400.0, kv=40.0)
    iq, iv = sd.simulate.servo_indices(model, servos)

    def policy(_, t, state):
        return sd.servo_control(q0[iq], feedforward=sd.gravity_forces(model, state.q)[iv])

    steps, last = 100, model.body_names.index("panda_link7")
    run = jax.jit(lambda f: sd.rollout(model, sd.State.initial(model, q0), policy, 0.01, steps, actuators=servos,
                                       f_ext=f))
    held = run(jnp.zeros((steps, model.n_bodies, 6)))
    assert float(jnp.max(jnp.abs(held.states.q - q0))) < 1e-3
    rotation = np.asarray(sd.forward_kinematics(model, q0).body.rotation[last])
    arm = slice(0, 7)
    for axis in range(3):
        for sign in (1.0, -1.0):
            push = np.zeros((steps, model.n_bodies, 6))
            push[:10, last, 3:] = rotation.T @ (sign * 15.0 * np.eye(3)[axis])   # body frame, moment first
            pushed = run(jnp.asarray(push))
            error = np.abs(np.asarray(pushed.states.q[:, arm] - q0[arm]))
            assert error.max() < 0.02 and error.max() > 1e-3
            assert error[40:].max() < 1e-3


# -- activations in a rollout, gradients -------------------------------------------------------

def _arm() -> sd.Model:
    """Two hinges about y under gravity, limits ±1 rad."""
    b = sd.ModelBuilder()
    b.add_body("upper", None, sd.JointSpec.revolute((0.0, 1.0, 0.0)), mass=1.0, com=(0.0, 0.0, -0.2),
               inertia=np.diag([0.02, 0.02, 0.005]), joint_name="shoulder", lower=-1.0, upper=1.0, damping=0.05)
    b.add_body("lower", "upper", sd.JointSpec.revolute((0.0, 1.0, 0.0)), translation=(0.0, 0.0, -0.4), mass=0.6,
               com=(0.0, 0.0, -0.15), inertia=np.diag([0.01, 0.01, 0.002]), joint_name="elbow", lower=-1.0,
               upper=1.0)
    b.add_actuator("shoulder_filtered", "shoulder", gain=3.0, dynamics="filter", time_constant=0.05)
    b.add_actuator("elbow_integrated", "elbow", gain=0.5, dynamics="integrator", act_range=(-2.0, 2.0))
    b.add_actuator("elbow_servo", "elbow", kind="position", gain=8.0, bias=(0.0, -8.0, -0.3),
                   force_range=(-3.0, 3.0))
    return b.build(jnp.float64)


def test_activations_are_state_and_follow_their_dynamics_in_a_rollout():
    """The filter's activation follows ``a(t) = u (1 − e^{−t/τ})`` (Euler: ``(1 − dt/τ)^k``),
    the integrator's ``a = u t`` until ``act_range`` clips it; the activations are
    ``rollout(...).states.act`` and a rollout continued from its last state goes on exactly."""
    model = _arm()
    u = jnp.array([1.0, 3.0, 0.0])
    dt, steps = 1e-3, 1000
    run = jax.jit(lambda s: sd.rollout(model, s, jnp.tile(u, (steps, 1)), dt, steps))
    traj = run(sd.State.initial(model))
    assert traj.states.act.shape == (steps, 2)
    k = np.arange(1, steps + 1)
    np.testing.assert_allclose(traj.states.act[:, 0], 1.0 - (1.0 - dt / 0.05) ** k, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(traj.states.act[:, 1], np.minimum(3.0 * dt * k, 2.0), rtol=1e-10, atol=1e-12)
    half = sd.rollout(model, sd.State.initial(model), jnp.tile(u, (steps // 2, 1)), dt, steps // 2)
    last = jax.tree_util.tree_map(lambda x: x[-1], half.states)
    rest = sd.rollout(model, last, jnp.tile(u, (steps // 2, 1)), dt, steps // 2)
    np.testing.assert_allclose(rest.states.q[-1], traj.states.q[-1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rest.states.act[-1], traj.states.act[-1], rtol=1e-12, atol=1e-12)


@pytest.mark.fast
def test_rollout_gradients_through_activations_servos_and_bounded_limits():
    """``jax.grad`` of a rollout's end-state loss with respect to the controls, a filter's time
    constant, a servo's gain and the limit-force bound (the shoulder thrown into its limit at
    8 rad/s), against central differences (float64)."""
    model = _arm()
    dt, steps = 2e-3, 150
    controls = jnp.tile(jnp.array([0.8, 1.5, 0.4]), (steps, 1)) + 0.1 * jnp.sin(jnp.arange(steps))[:, None]

    def loss(p):
        act = model.actuators
        act = eqx.tree_at(lambda a: (a.time_constant, a.gain), act,
                          (act.time_constant.at[0].set(p["tau"]), act.gain.at[2].set(p["kp"])))
        traj = sd.rollout(model, sd.State.initial(model, v=jnp.array([8.0, -12.0])), p["u"], dt, steps,
                          actuators=act, joint_forces=sd.JointForces(limit_force_max=p["bound"]))
        loss = jnp.sum(traj.states.q[-1] ** 2) + jnp.sum(traj.states.v[-1]) + jnp.sum(traj.states.act[-1])
        return loss, jnp.max(jnp.abs(traj.limit_force))

    p = {"u": controls, "tau": jnp.asarray(0.05), "kp": jnp.asarray(8.0), "bound": jnp.asarray(40.0)}
    grad, peak = jax.jit(jax.grad(loss, has_aux=True))(p)
    assert float(peak) == pytest.approx(40.0, rel=1e-6)    # the shoulder hits its limit at the bound
    f = jax.jit(lambda x: loss(x)[0])
    rng = np.random.default_rng(3)
    for name in ("tau", "kp", "bound"):
        h = 1e-6 * float(p[name])   # relative steps: the loss has kinks (force clipping) within 1e-4 of tau
        fd = (f({**p, name: p[name] + h}) - f({**p, name: p[name] - h})) / (2 * h)
        assert float(grad[name]) == pytest.approx(float(fd), rel=1e-5, abs=1e-8), name
    for _ in range(3):
        direction = jnp.asarray(rng.standard_normal(controls.shape))
        fd = (f({**p, "u": controls + 1e-6 * direction}) - f({**p, "u": controls - 1e-6 * direction})) / 2e-6
        assert float(jnp.sum(grad["u"] * direction)) == pytest.approx(float(fd), rel=1e-5)


def test_bad_actuator_input_names_what_is_wrong():
    """An actuator on a missing joint, an unknown option or dynamics, a filter without a time
    constant, a wrong-sized activation, mismatched servo commands, non-positive motor constants
    and velocity limits: each a ValueError naming the argument."""
    b = sd.ModelBuilder()
    b.add_body("link", None, sd.JointSpec.revolute((0.0, 1.0, 0.0)), joint_name="hinge")
    b.add_actuator("ghost", "nowhere")
    with pytest.raises(ValueError, match="actuator 'ghost': joint 'nowhere' does not exist"):
        b.build()
    b = sd.ModelBuilder()
    b.add_body("link", None, sd.JointSpec.revolute((0.0, 1.0, 0.0)), joint_name="hinge")
    with pytest.raises(ValueError, match="actuator 'a': unknown actuator option 'timeconstant'"):
        b.add_actuator("a", "hinge", timeconstant=0.1)
    with pytest.raises(ValueError, match="actuator 'a': dynamics must be one of"):
        b.add_actuator("a", "hinge", dynamics="muscle")
    with pytest.raises(ValueError, match="actuator 'a': a filter needs a positive time_constant"):
        b.add_actuator("a", "hinge", dynamics="filter", time_constant=0.0)
    with pytest.raises(ValueError, match="actuator 'a': act range lower bound 1.0 exceeds upper bound -1.0"):
        b.add_actuator("a", "hinge", dynamics="integrator", act_range=(1.0, -1.0))
    model = _arm()
    with pytest.raises(ValueError, match=r"act must have shape \(2,\)"):
        sd.simulate.step(model, sd.State.initial(model).__class__(jnp.zeros(2), jnp.zeros(2), jnp.zeros(()),
                                                                  jnp.zeros(3)), None, 1e-3)
    with pytest.raises(ValueError, match=r"feedforward must have the shape of q_target \(2,\)"):
        sd.servo_control(jnp.zeros(2), feedforward=jnp.zeros(3))
    with pytest.raises(ValueError, match="dc_motors: resistance must be positive"):
        sd.simulate.dc_motors(model, torque_constant=0.1, resistance=0.0, voltage=24.0)
    with pytest.raises(ValueError, match="dc_motors: control must be 'voltage' or 'current'"):
        sd.simulate.dc_motors(model, torque_constant=0.1, resistance=1.0, voltage=24.0, control="pwm")
    with pytest.raises(ValueError, match="velocity_limit must be positive"):
        sd.motors(model, velocity_limit=0.0)
    with pytest.raises(ValueError, match="velocity_limit needs a finite stall_force"):
        sd.motors(model, velocity_limit=3.0)
    with pytest.raises(ValueError, match="servo_indices takes the actuators of pd_servos"):
        sd.simulate.servo_indices(model, model.actuators)
