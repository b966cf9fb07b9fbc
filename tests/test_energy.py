"""No energy from the step (the default linearly implicit Euler step with contact): drops onto
the ground at time steps from 1 to 10 ms, with the default contact parameters and with a
thousand times stiffer ones, never raise the total energy above its initial value.  The stiff
ones, and only they, get a ``StiffStepWarning`` when the rollout is built."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import robot_path

import sodyn as sd
from sodyn.simulate import (
    ContactModel,
    GroundContact,
    JointForces,
    State,
    StiffStepWarning,
    contact_terms,
    position_servos,
    rollout,
    stable_step,
    step,
)
from sodyn.simulate.contact import DAMPING_RATIO, SINK

jax.config.update("jax_enable_x64", True)
pytest.importorskip("mujoco")

STEPS_DT = (1e-3, 2e-3, 5e-3, 1e-2)
STAND = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
BOX = ('<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1"/><body name="box" pos="0 0 0.5">'
       '<freejoint/><geom name="box" type="box" size="0.1 0.1 0.1" mass="1"/></body></worldbody></mujoco>')


def _energy_gain(model, contact, q0, dt, seconds, actuators=None, control=None):
    """``max_t E(t) / E(0) − 1`` (``E`` kinetic plus gravitational energy) over a rollout."""
    steps = int(round(seconds / dt))
    u = None if control is None else jnp.tile(control, (steps, 1))
    traj = jax.jit(lambda s: rollout(model, s, u, dt, steps, contact=contact, actuators=actuators))(
        State.initial(model, q0))
    assert bool(jnp.all(jnp.isfinite(traj.states.q)))
    energy = jax.jit(jax.vmap(lambda q, v: sd.kinetic_energy(model, q, v) + sd.potential_energy(model, q)))(
        traj.states.q, traj.states.v)
    e0 = float(sd.potential_energy(model, q0))
    return (float(jnp.max(energy)) - e0) / abs(e0)


@pytest.mark.parametrize("kind", ["geoms", "points"])
@pytest.mark.parametrize("height", [0.5, 10.0])
def test_a_dropped_box_gains_no_energy_at_any_step(kind, height):
    """A tilted box dropped from 0.5 m and 10 m onto the floor through its geoms
    (``ContactModel``) or its corner points (``GroundContact``), default parameters and
    stiffness × 1000: the energy never exceeds the initial by more than 0.1 %.  The stiff
    rollouts, and only they, warn ``StiffStepWarning`` when they are built (traced)."""
    model = sd.load_mjcf(BOX)
    quat = np.array([0.95, 0.2, 0.1, 0.05])
    q0 = State.initial(model).q.at[2].set(0.2 + height).at[3:7].set(quat / np.linalg.norm(quat))
    make = ContactModel.from_model if kind == "geoms" else GroundContact.from_model
    k0 = float(make(model).stiffness)
    for scale in (1.0, 1000.0):
        contact = make(model, stiffness=k0 * scale)
        for dt in STEPS_DT:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", StiffStepWarning)
                gain = _energy_gain(model, contact, q0, dt, np.sqrt(2 * height / 9.81) + 1.0)
            assert gain < 1e-3, (scale, dt, gain)
            stiff = [w for w in caught if issubclass(w.category, StiffStepWarning)]
            assert len(stiff) == (scale > 1), (scale, dt, [str(w.message) for w in stiff])


def test_solo12_dropped_from_30_cm_gains_no_energy_at_any_step():
    """Solo12, limp, its standing posture dropped from a base height of 0.3 m (every contact
    point above the ground) onto its feet and knees, at 1, 2, 5 and 10 ms.  (With the
    velocity-product forces explicit, the legs splaying on the ground gained energy at 10 ms:
    their work did not match the change of ``𝓜(q)`` over the step; the step now takes them
    linearly implicitly, :mod:`sodyn.simulate.stepping`.)"""
    model = sd.load_urdf(robot_path("solo12"), floating_base=True)
    legs = ("FL", "FR", "HL", "HR")
    contact = GroundContact.at_frames(model, [f"{leg}_FOOT" for leg in legs] + [f"{leg}_LOWER_LEG" for leg in legs],
                                      radius=[0.0175] * 4 + [0.02] * 4)
    q0 = jnp.concatenate([jnp.array([0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0]), STAND])
    assert float(jnp.min(contact_terms(model, contact, q0, jnp.zeros(model.nv)).penetration)) < -0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", StiffStepWarning)
        for dt in STEPS_DT:
            assert _energy_gain(model, contact, q0, dt, 1.0) < 1e-3, dt


def _box():
    model = sd.load_mjcf(BOX)
    return model, State.initial(model), GroundContact.from_model(model)


def _trace(model, state, dt, **kwargs):
    """Trace (without compiling) a 3-step rollout under ``jit``: where the warning is given."""
    return jax.eval_shape(lambda s: rollout(model, s, None, dt, 3, **kwargs), state)


def test_stable_step_of_the_defaults_and_of_stiff_terms():
    """The default contact (``k = M g / SINK``, ``c = 2ζ sqrt(k M)``, against the model's mass)
    gives the spring-back ``(ζ + sqrt(ζ² − 1)) sqrt(SINK / g)``, above 10 ms; ``k × 1000`` a
    1000^½ times shorter step; a
    default joint limit (overdamped) its spring-back ``≈ d / k``; an undamped stiff servo
    ``sqrt(I / k_p)``."""
    model, _, contact = _box()
    slow = DAMPING_RATIO + np.sqrt(DAMPING_RATIO ** 2 - 1.0)
    assert stable_step(model, contact=contact) == pytest.approx(slow * np.sqrt(SINK / 9.81), rel=1e-9)
    assert stable_step(model, contact=contact) > 1e-2
    stiff = GroundContact.from_model(model, stiffness=1000 * contact.stiffness)
    assert stable_step(model, contact=stiff) == pytest.approx(slow * np.sqrt(SINK / 9.81 / 1000), rel=1e-9)
    assert stable_step(model) == np.inf
    pendulum = sd.load_mjcf('<mujoco><worldbody><body><joint name="j" type="hinge" range="-1 1"/>'
                            '<geom type="sphere" size="0.1" pos="0 0 -0.5" mass="1"/></body></worldbody></mujoco>')
    inertia = float(sd.mass_matrix(pendulum, State.initial(pendulum).q)[0, 0])
    jf = JointForces()
    k, d = float(jf.limit_stiffness), float(jf.limit_damping)
    rate = 2 * k / (d + np.sqrt(d * d - 4 * k * inertia))
    assert stable_step(pendulum) == pytest.approx(1 / rate, rel=1e-9)
    assert stable_step(pendulum, joint_forces=JointForces(limits=False)) == np.inf
    servo = position_servos(pendulum, kp=1e4)
    assert stable_step(pendulum, actuators=servo, joint_forces=JointForces(limits=False)) == pytest.approx(
        np.sqrt(inertia / 1e4), rel=1e-9)


def test_a_stiff_step_warns_once_at_construction_naming_dt_the_stable_step_and_substeps():
    """Stiff contact at 1 ms: the warning names dt, the estimate and the substeps that resolve
    it, and those substeps (static) silence it; so does a filter.  The defaults at 10 ms, the
    explicit integrators and traced parameters (``jit`` over the stiffness) do not warn, and a
    traced stiffness does not break the estimate (``None``)."""
    model, state, contact = _box()
    stiff = GroundContact.from_model(model, stiffness=1000 * contact.stiffness)
    dt_s = stable_step(model, contact=stiff)
    with pytest.warns(StiffStepWarning) as record:
        _trace(model, state, 1e-3, contact=stiff)
    message = str(record[0].message)
    assert len(record) == 1
    assert "dt = 0.001 s" in message and f"{dt_s:.4g} s" in message
    assert f"substeps={int(np.ceil(1e-3 / dt_s))}" in message
    with pytest.warns(StiffStepWarning):
        jax.eval_shape(lambda s: step(model, s, None, 1e-3, contact=stiff), state)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StiffStepWarning)
        _trace(model, state, 1e-3, contact=stiff, substeps=4)
        _trace(model, state, 1e-2, contact=contact)
        _trace(model, state, 1e-3, contact=stiff, integrator="semi_implicit")
        jax.eval_shape(lambda k, s: rollout(model, s, None, 1e-3, 3, contact=eqx.tree_at(
            lambda c: c.stiffness, stiff, k)), stiff.stiffness, state)
        assert jax.jit(lambda k: jnp.float64(stable_step(model, contact=eqx.tree_at(
            lambda c: c.stiffness, stiff, k)) is None))(stiff.stiffness)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", category=StiffStepWarning)
        _trace(model, state, 1e-3, contact=stiff)


def _arm(joint: str = "", tendon: str = "") -> sd.Model:
    """Two hinges (``h2`` on the first's link) without limits; ``joint``: attributes of ``h1``,
    ``tendon``: a ``<tendon>`` block."""
    return sd.load_mjcf(
        f'<mujoco><worldbody><body><joint name="h1" axis="0 1 0" {joint}/>'
        '<geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="1"/><body pos="0.4 0 0">'
        '<joint name="h2" axis="0 1 0"/><geom type="sphere" size="0.05" pos="0.3 0 0" mass="0.5"/></body>'
        f'</body></worldbody>{tendon}</mujoco>')


def test_stable_step_counts_the_tendon_springs_and_dampers():
    """A fixed tendon's spring ``k`` and damper ``d`` act on dof ``i`` as the diagonal
    ``k J_i²``, ``d J_i²`` of ``Jᵀ k J``, ``Jᵀ d J``: on one joint with ``coef 1`` the estimate
    equals that of the same spring and damper placed on the joint; it shrinks as
    ``sqrt(𝓜_ii / (k J_i²))`` as ``k`` grows; the damper turns an overdamped term's estimate into
    its spring-back; a tendon on two joints gives the smaller of the two dofs' estimates;
    ``JointForces(springs=False)`` drops the spring; a position servo on a tendon adds
    ``k_p gear² J_i²``.  A step above the estimate warns naming the
    tendon spring, one below does not."""
    def fixed(k, coefs, d=0.0):
        joints = "".join(f'<joint joint="h{i + 1}" coef="{c}"/>' for i, c in enumerate(coefs))
        return f'<tendon><fixed name="t" stiffness="{k}" damping="{d}">{joints}</fixed></tendon>'

    inertia = np.diag(np.asarray(sd.mass_matrix(_arm(), _arm().q_neutral)))
    assert stable_step(_arm()) == np.inf
    estimates = []
    for k in (10.0, 1e3, 1e5):
        tendon = stable_step(_arm(tendon=fixed(k, [1.0])))
        assert tendon == stable_step(_arm(joint=f'stiffness="{k}"'))
        assert tendon == pytest.approx(np.sqrt(inertia[0] / k), rel=1e-12)
        estimates.append(tendon)
    assert estimates[0] > estimates[1] > estimates[2]
    k, d = 1e3, 500.0          # overdamped on h1: ζ = d / (2 sqrt(k 𝓜₁₁)) > 1
    damped = stable_step(_arm(tendon=fixed(k, [1.0], d)))
    assert damped == stable_step(_arm(joint=f'stiffness="{k}" damping="{d}"'))
    assert damped == pytest.approx((d + np.sqrt(d * d - 4 * k * inertia[0])) / (2 * k), rel=1e-12)
    both = _arm(tendon=fixed(k, [1.0, -3.0]))
    assert stable_step(both) == pytest.approx(min(np.sqrt(inertia[0] / k), np.sqrt(inertia[1] / (9 * k))), rel=1e-12)
    assert stable_step(both, joint_forces=JointForces(springs=False)) == np.inf
    servo = _arm(tendon=fixed(0.0, [2.0]) + '<actuator><position tendon="t" kp="100" gear="1.5"/></actuator>')
    assert servo.actuators.tendon == (0,)
    assert stable_step(servo) == pytest.approx(np.sqrt(inertia[0] / (100 * 1.5 ** 2 * 4)), rel=1e-12)

    model = _arm(tendon=fixed(1e5, [1.0]))
    dt_s = stable_step(model)
    state = State.initial(model)
    with pytest.warns(StiffStepWarning, match=r"joint 'h1' \(tendon spring: stiffness 1e\+05") as record:
        _trace(model, state, 2 * dt_s)
    assert f"{dt_s:.4g} s" in str(record[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StiffStepWarning)
        _trace(model, state, 0.5 * dt_s)
        _trace(model, state, 2 * dt_s, substeps=2)
