"""Fixed tendons (:mod:`sodyn.simulate.tendons`) against MuJoCo at MuJoCo's own states: lengths,
velocities, the passive spring (dead band) and damper forces, tendon actuators and tendon
sensors; the limit and friction-loss laws against their documented values; the implicit slopes
against the Jacobians; a rollout gradient against central differences; and the loader's and
API's errors and warnings."""

from __future__ import annotations

import dataclasses
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.io.mjcf import tau_to_mujoco, v_from_mujoco
from sodyn.sensor_readings import sensor_readings
from sodyn.sensors import Sensors
from sodyn.simulate.actuation import actuator_forces
from sodyn.simulate.joint_forces import JointForces
from sodyn.simulate.tendons import Tendons, tendon_forces, tendon_lengths, tendon_potential_energy, tendon_velocities

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")

TENDON_XML = """
<mujoco>
  <worldbody>
    <body name="ball" pos="1 1 1">
      <freejoint name="free"/>
      <geom type="sphere" size="0.1" mass="0.5"/>
    </body>
    <body name="b1" pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 1 0" damping="0.1" stiffness="0.5"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="1"/>
      <body name="b2" pos="0.4 0 0">
        <joint name="h2" type="hinge" axis="0 1 0"/>
        <joint name="s2" type="slide" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
        <body name="b3" pos="0.3 0 0">
          <joint name="h3" type="hinge" axis="0 0 1" damping="0.05"/>
          <geom type="box" size="0.05 0.05 0.05" mass="0.3"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t1" stiffness="3" springlength="-0.1 0.2" damping="0.4" actuatorfrcrange="-0.5 0.8">
      <joint joint="h1" coef="1"/>
      <joint joint="h2" coef="-0.5"/>
    </fixed>
    <fixed name="t2" stiffness="2" springlength="0.05" damping="0.3" limited="true" range="-0.5 0.5">
      <joint joint="s2" coef="2"/>
      <joint joint="h3" coef="0.7"/>
    </fixed>
    <fixed name="t3" frictionloss="0.2" limited="true" range="-1 1">
      <joint joint="h1" coef="0.3"/>
      <joint joint="h3" coef="-1"/>
    </fixed>
  </tendon>
  <actuator>
    <motor name="m1" tendon="t1" gear="2" ctrlrange="-1 1"/>
    <motor name="mj" joint="h2"/>
    <position name="p2" tendon="t2" kp="10" kv="1" gear="1.5"/>
  </actuator>
  <sensor>
    <tendonpos name="L1" tendon="t1"/>
    <tendonvel name="V2" tendon="t2"/>
    <tendonactuatorfrc name="F1" tendon="t1"/>
    <tendonactuatorfrc name="F2" tendon="t2"/>
    <actuatorpos name="ap" actuator="p2"/>
    <actuatorvel name="av" actuator="p2"/>
    <actuatorfrc name="af" actuator="m1"/>
  </sensor>
</mujoco>
"""

SUITE = os.path.join(os.path.dirname(mujoco.__file__), os.pardir, "dm_control", "suite")
#: passive forces only: MuJoCo's limits and friction loss are constraints
PASSIVE = JointForces(limits=False, friction=False, gravcomp=False)


@pytest.fixture(scope="module")
def loaded():
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # every element of the file is modelled
        model = sd.load_mjcf(TENDON_XML).astype(jnp.float64)
    return mujoco.MjModel.from_xml_string(TENDON_XML), model


def random_state(mj, rng):
    d = mujoco.MjData(mj)
    qpos = rng.uniform(-1, 1, mj.nq)
    qpos[3:7] /= np.linalg.norm(qpos[3:7])
    d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, rng.uniform(-2, 2, mj.nv), rng.uniform(-1.5, 1.5, mj.nu)
    mujoco.mj_forward(mj, d)
    return d


def tendon_share(mj, qpos, qvel):
    """MuJoCo's ``qfrc_passive`` of the tendons alone (joint springs and dampers zeroed)."""
    m = mujoco.MjModel.from_xml_string(TENDON_XML) if mj is None else mj
    m.jnt_stiffness[:] = 0
    m.dof_damping[:] = 0
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    return d.qfrc_passive.copy()


@pytest.mark.fast
def test_fixed_tendons_match_mujoco(loaded):
    """At 10 random states (tendons inside and beyond their spring dead bands, a free body before
    the tendon joints): ``ten_length``, ``ten_velocity``, the tendons' share of ``qfrc_passive``,
    the whole ``qfrc_passive`` as a step records it (joint springs and dampers included),
    ``qfrc_actuator``, ``actuator_force`` of joint and tendon actuators (a tendon's
    ``actuatorfrcrange`` clamping some) and ``sensordata`` of the tendon and tendon-actuator
    sensors, to 1e-10."""
    mj, model = loaded
    assert model.tendons.names == ("t1", "t2", "t3") and model.actuators.tendon == (0, -1, 1)
    assert model.tendons.limited == (False, True, True)
    bare = mujoco.MjModel.from_xml_string(TENDON_XML)

    @jax.jit
    def evaluate(q, v, u):
        state = sd.simulate.State.initial(model, q, v)
        _, rec = sd.simulate.step_and_forces(model, state, u, 1e-3, integrator="semi_implicit",
                                             joint_forces=PASSIVE)
        act = actuator_forces(model, model.actuators, q, v, u)
        return (tendon_lengths(model, q), tendon_velocities(model, v), tendon_forces(model, PASSIVE, q, v).force,
                rec.joint, act.force, act.actuator_force, rec.sensors)

    rng = np.random.default_rng(0)
    outside = clamped = 0
    for _ in range(10):
        d = random_state(mj, rng)
        q = d.qpos.copy()
        v = v_from_mujoco(model, q, d.qvel)
        length, rate, ten, joint, force, act_force, readings = evaluate(q, v, d.ctrl.copy())
        np.testing.assert_allclose(length, d.ten_length, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(rate, d.ten_velocity, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(tau_to_mujoco(model, q, ten), tendon_share(bare, q, d.qvel), atol=1e-10)
        np.testing.assert_allclose(tau_to_mujoco(model, q, joint), d.qfrc_passive, atol=1e-10)
        np.testing.assert_allclose(tau_to_mujoco(model, q, force), d.qfrc_actuator, atol=1e-10)
        np.testing.assert_allclose(act_force, d.actuator_force, atol=1e-10)
        np.testing.assert_allclose(readings, d.sensordata, atol=1e-10)
        lo, hi = mj.tendon_lengthspring[0]
        outside += not lo <= d.ten_length[0] <= hi
        clamped += not -0.5 < d.ctrl[0] < 0.8
    assert 0 < outside < 10 and 0 < clamped < 10    # both sides of t1's dead band and of its force range


MJX_ACTUATOR = os.path.join(os.path.dirname(mujoco.__file__), "mjx", "test_data", "actuator")


@pytest.mark.fast
@pytest.mark.parametrize("path", [os.path.join(SUITE, "point_mass.xml"), os.path.join(SUITE, "manipulator.xml"),
                                  os.path.join(MJX_ACTUATOR, "tendon_force_clamp.xml")],
                         ids=["point_mass", "manipulator", "tendon_force_clamp"])
def test_shipped_models_with_tendon_actuators(path):
    """dm_control's point mass (two tendon motors) and manipulator (a tendon motor beside joint
    actuators, a tendon equality as a loop closure), and MuJoCo's tendon force clamp test
    model (``actuatorfrcrange`` on fixed tendons; the actuators on its spatial tendons warned and
    silenced in MuJoCo): lengths, ``qfrc_actuator`` and ``actuator_force`` at random states."""
    if not os.path.exists(path):
        pytest.skip(f"{path} is not installed")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = sd.load_mjcf(path).astype(jnp.float64)
    elements = [e for w in caught if isinstance(w.message, sd.UnsupportedElementWarning) for e in w.message.elements]
    mj = mujoco.MjModel.from_xml_path(path)
    spatial = [t for t in range(mj.ntendon) if mj.wrap_type[mj.tendon_adr[t]] != mujoco.mjtWrap.mjWRAP_JOINT]
    warned = [e for e in elements if e.startswith(("<tendon", "<actuator"))]
    assert len(warned) == len(spatial) + sum(mj.actuator_trnid[i, 0] in spatial for i in range(mj.nu)), elements
    assert not any(e.startswith("<equality>") for e in elements), elements
    if path.endswith("manipulator.xml"):          # its tendon equality is a closure of the model
        assert model.closures.kind == ("tendon",) and model.closures.names == ("coupling",)
    assert any(t >= 0 for t in model.actuators.tendon) and len(model.actuators) == mj.nu - len(warned) + len(spatial)
    index = {mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_ACTUATOR, i) or f"actuator{i}": i for i in range(mj.nu)}
    ids = [index[n] for n in model.actuators.names]
    for i in set(range(mj.nu)) - set(ids):       # the actuators on spatial tendons
        mj.actuator_gainprm[i] = 0
    rng = np.random.default_rng(1)
    fn = jax.jit(lambda q, v, u: (tendon_lengths(model, q), actuator_forces(model, model.actuators, q, v, u)))
    fixed = [t for t in range(mj.ntendon) if t not in spatial]
    for _ in range(4):
        d = random_state(mj, rng)
        q = d.qpos.copy()
        v = v_from_mujoco(model, q, d.qvel)
        length, act = fn(q, v, d.ctrl[ids])
        np.testing.assert_allclose(length, d.ten_length[fixed], atol=1e-12)
        np.testing.assert_allclose(tau_to_mujoco(model, q, act.force), d.qfrc_actuator, atol=1e-10)
        np.testing.assert_allclose(act.actuator_force, d.actuator_force[ids], atol=1e-10)


def _tendon_model(loaded, **changes):
    _, model = loaded
    return dataclasses.replace(model, tendons=dataclasses.replace(model.tendons, **changes))


@pytest.mark.fast
def test_limit_and_friction_follow_the_joint_law(loaded):
    """Beyond a tendon's upper limit by ``e ≥ w`` the limit force along it is
    ``−(k (e − w/2) + d L̇)`` (joint_forces docstring), applied as ``Jᵀ f`` and recorded as the
    limit share; friction loss is ``−F L̇ / sqrt(L̇² + ε²)``; slopes ``Σ k J²``, ``Σ d J²``."""
    model = _tendon_model(loaded, stiffness=jnp.zeros(3), damping=jnp.zeros(3))
    params = JointForces(limit_stiffness=100.0, limit_damping=5.0, limit_onset=0.01, gravcomp=False)
    j = np.asarray(model.tendons.coef)
    q = np.zeros(model.nq)
    q[3] = 1.0
    iq = np.asarray(model.tendons.q_index)
    q[iq[j[1] != 0]] = [0.3, 0.2]             # t2: 2·0.3 + 0.7·0.2 = 0.74 > 0.5;  t3: 0.3·0 − 0.2 inside
    v = np.zeros(model.nv)
    v[j[1] != 0] = [0.1, -0.05]
    length, rate = np.asarray(tendon_lengths(model, q)), j @ v
    assert length[1] == pytest.approx(0.74) and -1 < length[2] < 1
    e, w, k, d = length[1] - 0.5, 0.01, 100.0, 5.0
    f_limit = -(k * (e - w / 2) + d * rate[1])
    eps = float(params.friction_velocity)
    f_fric = -0.2 * rate[2] / np.sqrt(rate[2] ** 2 + eps ** 2)
    terms = jax.jit(lambda q, v: tendon_forces(model, params, q, v))(jnp.asarray(q), jnp.asarray(v))
    np.testing.assert_allclose(terms.limit[0], f_limit * j[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(terms.force, f_limit * j[1] + f_fric * j[2], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(terms.stiffness, k * j[1] ** 2, rtol=1e-12)
    np.testing.assert_allclose(terms.damping, d * j[1] ** 2 + 0.2 / np.sqrt(rate[2] ** 2 + eps ** 2) * j[2] ** 2,
                               rtol=1e-12)
    # the step records it in its limit share (explicit integrator: the force at the start)
    state = sd.simulate.State.initial(model, q, v)
    step = jax.jit(lambda s: sd.simulate.step_and_forces(model, s, jnp.zeros(3), 1e-3, integrator="semi_implicit",
                                                         joint_forces=params, sensors=False)[1].limit)
    np.testing.assert_allclose(step(state), f_limit * j[1], rtol=1e-12, atol=1e-14)


@pytest.mark.fast
def test_slopes_are_the_diagonals_of_the_jacobians(loaded):
    """The stiffness and damping handed to the implicit step are the diagonals of ``−∂τ/∂q``
    (hinge and slide columns) and ``−∂τ/∂v``, for the tendon springs and dampers and for the
    tendon position servo; the spring force is minus the gradient of its potential."""
    _, model = loaded
    rng = np.random.default_rng(3)
    q = jnp.asarray(np.concatenate([[0, 0, 0, 1, 0, 0, 0], rng.uniform(-1, 1, 4)]))
    v = jnp.asarray(rng.uniform(-1, 1, model.nv))
    u = jnp.asarray([0.3, 0.1, -0.4])
    cols = np.flatnonzero(np.asarray(model.tendons.q_index) >= 0)
    iq = np.asarray(model.tendons.q_index)[cols]
    for fn in (lambda q, v: tendon_forces(model, PASSIVE, q, v),
               lambda q, v: actuator_forces(model, model.actuators, q, v, u)):
        terms, dq, dv = jax.jit(lambda q, v, fn=fn: (fn(q, v), jax.jacfwd(lambda q: fn(q, v).force)(q),
                                                     jax.jacfwd(lambda v: fn(q, v).force)(v)))(q, v)
        np.testing.assert_allclose(terms.stiffness[cols], -dq[cols, iq], atol=1e-12)
        np.testing.assert_allclose(terms.damping, -jnp.diag(dv), atol=1e-12)
    grad, spring = jax.jit(lambda q: (jax.grad(lambda q: tendon_potential_energy(model, PASSIVE, q))(q),
                                      tendon_forces(model, PASSIVE, q, jnp.zeros(model.nv)).force))(q)
    np.testing.assert_allclose(spring[cols], -grad[iq], atol=1e-12)


@pytest.mark.slow
def test_rollout_gradient_through_tendons():
    """``∂/∂u`` of a 4-step implicit rollout's final state with tendon springs, dampers and
    tendon actuators (the test model without its free body), along a random direction and each
    tendon actuator's controls, against central differences (float64)."""
    ball = TENDON_XML[TENDON_XML.index('    <body name="ball"'): TENDON_XML.index('    <body name="b1"')]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = sd.load_mjcf(TENDON_XML.replace(ball, "")).astype(jnp.float64)
    state = sd.simulate.State.initial(model, jnp.asarray([0.4, -0.3, 0.1, 0.2]), jnp.zeros(model.nv))

    def final(u):
        out = sd.simulate.rollout(model, state, u, 2e-3, 4, sensors=False)
        return jnp.sum(out.states.q[-1] * jnp.asarray([1.0, -2.0, 0.5, 3.0])) + jnp.sum(out.states.v[-1])

    rng = np.random.default_rng(4)
    u = jnp.asarray(rng.uniform(-0.8, 0.8, (4, 3)))
    grad = jax.jit(jax.grad(final))(u)
    value = jax.jit(final)
    h = 1e-6
    directions = [rng.normal(size=u.shape), np.zeros(u.shape), np.zeros(u.shape)]
    directions[1][:, 0], directions[2][:, 2] = 1.0, 1.0      # the tendon motor's and the tendon servo's
    for e in directions:
        fd = (value(u + h * e) - value(u - h * e)) / (2 * h)
        assert abs(fd) > 1e-4
        np.testing.assert_allclose(float(jnp.sum(grad * e)), fd, rtol=1e-6, atol=1e-9)


@pytest.mark.fast
def test_float32(loaded):
    """The tendon terms run in float32 (the model's dtype) and agree with float64."""
    _, model = loaded
    m32 = model.astype(jnp.float32)
    q = np.concatenate([[0, 0, 0, 1, 0, 0, 0], [0.5, -0.4, 0.3, 0.2]])
    v = np.linspace(-1, 1, model.nv)
    t32 = tendon_forces(m32, PASSIVE, jnp.asarray(q, jnp.float32), jnp.asarray(v, jnp.float32))
    t64 = tendon_forces(model, PASSIVE, jnp.asarray(q), jnp.asarray(v))
    assert t32.force.dtype == jnp.float32
    np.testing.assert_allclose(t32.force, t64.force, rtol=1e-5, atol=1e-6)
    a32 = actuator_forces(m32, m32.actuators, jnp.asarray(q, jnp.float32), jnp.asarray(v, jnp.float32),
                          jnp.asarray([0.3, 0.1, -0.4], jnp.float32))
    assert a32.force.dtype == jnp.float32


@pytest.mark.fast
def test_errors_and_warnings(loaded):
    """Missing tendons are named; a fixed tendon on a free joint is refused; spatial tendons and
    the actuators and sensors on them are warned and left out."""
    _, model = loaded
    with pytest.raises(ValueError, match="unknown tendon 'nope'"):
        Sensors.make(model, [("tendonpos", "nope")])
    with pytest.raises(ValueError, match="has no tendons"):
        Sensors.make(dataclasses.replace(model, tendons=None), [("tendonvel", "t1")])
    with pytest.raises(ValueError, match="a fixed tendon takes hinge and slide joints"):
        Tendons.fixed(model, {"bad": {"free": 1.0}})
    with pytest.raises(ValueError, match="need the model's tendons"):
        actuator_forces(dataclasses.replace(model, tendons=None), model.actuators, model.q_neutral,
                        jnp.zeros(model.nv), jnp.zeros(3))
    made = Tendons.fixed(model, {"a": {"h1": 2.0, "h3": -1.0}}, stiffness=4.0)
    assert made.limited == (False,) and float(made.spring_length[0, 0]) == 0.0
    readings = sensor_readings(dataclasses.replace(model, tendons=made), Sensors.make(
        dataclasses.replace(model, tendons=made), [("tendonpos", "a")]), model.q_neutral.at[7].set(0.25))
    np.testing.assert_allclose(readings, [0.5])
    spatial = """
<mujoco>
  <worldbody>
    <site name="s0" pos="0 0 1"/>
    <body name="b" pos="0 0 0.5">
      <joint name="j" type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.05" mass="1"/>
      <site name="s1"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="rope"><site site="s0"/><site site="s1"/></spatial>
    <fixed name="lin" stiffness="1"><joint joint="j" coef="1"/></fixed>
  </tendon>
  <actuator><motor name="pull" tendon="rope"/><motor name="push" tendon="lin"/></actuator>
  <sensor><tendonpos name="rl" tendon="rope"/><tendonpos name="ll" tendon="lin"/></sensor>
</mujoco>
"""
    with pytest.warns(sd.UnsupportedElementWarning) as rec:
        m = sd.load_mjcf(spatial)
    text = str(next(r.message for r in rec if isinstance(r.message, sd.UnsupportedElementWarning)))
    for element in ("<tendon name='rope'> (a spatial tendon", "<actuator name='pull'>", "<sensor name='rl'"):
        assert element in text
    assert "'lin'" not in text and "'push'" not in text and "'ll'" not in text
    assert m.tendons.names == ("lin",) and m.actuators.names == ("push",) and m.actuators.tendon == (0,)
    assert m.sensors.names == ("ll",)


COUPLED_XML = TENDON_XML.replace("</tendon>", """</tendon>
  <equality>
    <tendon name="pair" tendon1="t1" tendon2="t3" polycoef="0.05 -0.8 0.3 0.1 0.2"/>
    <tendon name="hold" tendon1="t2" polycoef="0.1"/>
    <joint name="jj" joint1="h2" joint2="h3"/>
  </equality>""")


@pytest.mark.fast
def test_tendon_equality_rows_match_mujoco():
    """``<equality><tendon>`` (a polynomial coupling and a single tendon held, beside a joint
    coupling) becomes ``"tendon"`` loop closures of ``model.closures``: their residuals and
    Jacobian rows (MuJoCo's ``qvel`` mapped to sodyn's ``v``) equal MuJoCo's ``efc_pos`` and
    ``efc_J`` equality rows at random states, and the bias rows are ``Ġ v`` (``G v``
    differentiated along the motion)."""
    from sodyn.algorithms.constrained import closure_rows

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = sd.load_mjcf(COUPLED_XML).astype(jnp.float64)
    closures = model.closures
    assert closures.kind == ("joint", "tendon", "tendon") and closures.names == ("jj", "pair", "hold")
    assert closures.tendon1 == (-1, 0, 1) and closures.tendon2 == (-1, 2, -1)
    mj = mujoco.MjModel.from_xml_string(COUPLED_XML)
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                               | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS)
    mj.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    rows = jax.jit(lambda q, v: closure_rows(model, q, v, closures))
    rng = np.random.default_rng(5)
    for _ in range(3):
        d = random_state(mj, rng)
        q = d.qpos.copy()
        v = np.asarray(v_from_mujoco(model, q, d.qvel))
        out = rows(q, v)
        eq = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        order = [mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_EQUALITY, n) for n in closures.names]
        ids = d.efc_id[eq]
        jac = np.asarray(d.efc_J).reshape(d.nefc, mj.nv)[eq]
        want_pos = np.array([d.efc_pos[eq][ids == e][0] for e in order])
        np.testing.assert_allclose(out.residual, want_pos, atol=1e-12)
        # G v (sodyn's v) = J_mj qvel for these joint-space rows (no free-joint columns)
        np.testing.assert_allclose(np.asarray(out.jacobian) @ v, np.array([jac[ids == e][0] for e in order]) @ d.qvel,
                                   atol=1e-12)
        np.testing.assert_allclose(out.jacobian[:, 6:], np.array([jac[ids == e][0] for e in order])[:, 6:], atol=1e-12)
        # Ġ v = d/dt (G(q) v) along q̇ = v (the free body at rest, so that q̇ = v on the other joints)
        w = np.concatenate([np.zeros(6), v[6:]])
        qdot = np.concatenate([np.zeros(7), w[6:]])
        _, want = jax.jvp(lambda q, w=w: rows(q, w).jacobian @ w, (jnp.asarray(q),), (jnp.asarray(qdot),))
        np.testing.assert_allclose(rows(q, w).bias, want, atol=1e-12)
    with pytest.raises(ValueError, match="unknown tendon 'nope'"):
        sd.LoopClosures.tendon_coupling(model, "nope")
    with pytest.raises(ValueError, match="needs the model's tendons"):
        sd.LoopClosures.tendon_coupling(dataclasses.replace(model, tendons=None), "t1")
