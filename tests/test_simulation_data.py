"""What a model loaded from MJCF brings to the steppers by default: its sensors (read every step
of a rollout, with noise from a key, and observed by a policy with MuJoCo's one-step lag), its
fluid and its equality constraints; checked against MuJoCo's ``mj_step`` and ``sensordata``."""

from __future__ import annotations

import copy
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")

ARM_XML = """
<mujoco>
  <option timestep="0.002" density="50" viscosity="0.2" wind="0.5 0 0"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 -0.3" size="0.04" mass="1"/>
      <site name="imu" pos="0.1 0.02 -0.1" euler="0.3 0.2 0.1"/>
      <body name="lower" pos="0.3 0 -0.3">
        <joint name="elbow" type="hinge" axis="0 1 0.2"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" mass="0.5"/>
        <site name="cell" pos="0 0 0.01"/>
        <site name="tip" pos="0 0 -0.3"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder_motor" joint="shoulder" gear="2"/>
    <general name="elbow_filter" joint="elbow" dyntype="filter" dynprm="0.05" gainprm="3"/>
  </actuator>
  <sensor>
    <accelerometer name="acc" site="imu"/>
    <gyro name="gyro" site="imu"/>
    <framequat name="quat" objtype="site" objname="tip"/>
    <force name="force" site="cell"/>
    <torque name="torque" site="cell"/>
    <jointpos name="q_elbow" joint="elbow"/>
    <jointvel name="v_elbow" joint="elbow"/>
    <actuatorfrc name="f_elbow" actuator="elbow_filter"/>
    <framelinvel name="tip_velocity" objtype="site" objname="tip"/>
  </sensor>
</mujoco>
"""


@pytest.fixture(scope="module")
def arm():
    mj = mujoco.MjModel.from_xml_string(ARM_XML)
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    return mj, sd.load_mjcf(ARM_XML).astype(jnp.float64)


def test_a_loaded_models_sensors_and_fluid_are_its_own(arm):
    _, model = arm
    assert model.sensors is not None and model.sensors.names[0] == "acc" and model.sensors.total_dim == 22
    assert model.fluid is not None and float(model.fluid.density) == 50.0


@pytest.mark.parametrize("fluid", [True, False])
def test_a_rollout_reads_the_sensors_and_applies_the_fluid_as_mujoco_steps(arm, fluid):
    """300 Euler steps (``"semi_implicit"``, MuJoCo's Euler without damping) with controls, with
    and without the model's fluid: the states follow ``mj_step`` to 1e-9 and each step's
    readings equal MuJoCo's ``sensordata`` of that step.  With the fluid, the force and torque
    cells are left out: sodyn's include the fluid's wrench on the bodies below them, MuJoCo's
    ``cfrc_int`` does not (it applies fluid forces as generalised forces)."""
    mj, model = arm
    if not fluid:
        mj = copy.deepcopy(mj)
        mj.opt.density = mj.opt.viscosity = 0.0
        model = dataclasses.replace(model, fluid=None)
    steps = 300
    rng = np.random.default_rng(0)
    controls = rng.uniform(-2, 2, (steps, 2))
    start = sd.State.initial(model, q=[0.4, -0.3], v=[1.0, -2.0])
    traj = jax.jit(lambda s: sd.rollout(model, s, controls, mj.opt.timestep, steps, integrator="semi_implicit",
                                        joint_forces=sd.JointForces(limits=False)))(start)
    cells = np.r_[model.sensors.slice("force"), model.sensors.slice("torque")]
    compared = np.setdiff1d(np.arange(model.sensors.total_dim), cells if fluid else [])
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = start.q, start.v
    for k in range(steps):
        d.ctrl[:] = controls[k]
        mujoco.mj_step(mj, d)
        np.testing.assert_allclose(traj.sensors[k][compared], d.sensordata[compared], rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(traj.states.q[k], d.qpos, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(traj.states.v[k], d.qvel, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(traj.states.act[k], d.act, rtol=1e-9, atol=1e-9)


def test_a_policy_observes_the_previous_steps_readings_with_noise_from_a_key(arm):
    """``observe="sensors"``: the policy gets the previous step's readings (the first step the
    initial state's at rest); with ``sensor_key`` each value gets ``noise · N(0, 1)`` from
    ``fold_in(key, step)``, the same in the output and in what the policy saw."""
    _, model = arm
    noise = jnp.linspace(0.01, 0.2, len(model.sensors))
    sensors = dataclasses.replace(model.sensors, noise=noise)
    gains = jnp.asarray(np.random.default_rng(1).normal(0, 0.1, (2, sensors.total_dim)))
    start = sd.State.initial(model, q=[0.4, -0.3])
    key = jax.random.PRNGKey(7)
    steps, dt = 200, 2e-3

    def run(key):
        return sd.rollout(model, start, lambda p, t, y: p @ y, dt, steps, params=gains, sensors=sensors,
                          sensor_key=key, observe="sensors")

    traj = jax.jit(run)(key)
    seen = jnp.concatenate([traj.sensors[:1] * 0, traj.sensors[:-1]])
    np.testing.assert_allclose(traj.controls[1:], (seen[1:] @ gains.T), rtol=1e-12, atol=1e-12)
    clean = jax.jit(lambda: sd.rollout(model, start, traj.controls, dt, steps, sensors=sensors))()
    spread = np.std(np.asarray(traj.sensors - clean.sensors), axis=0)
    expected = np.repeat(np.asarray(noise), np.asarray(sensors.dim))
    np.testing.assert_allclose(spread, expected, rtol=0.25)
    with pytest.raises(ValueError, match="observe must be 'state', 'sensors' or 'both'"):
        sd.rollout(model, start, lambda p, t, y: p @ y, dt, 2, params=gains, observe="camera")


def test_a_resting_boxs_contact_sensor_reads_its_weight(tmp_path):
    """A box (2 kg) resting on the floor with a ``contact_force`` sensor: the contact force the
    steps applied reads ``m g`` upward in the box's frame, and the accelerometer at its centre
    reads ``+g``."""
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1"/>
             <body name="box" pos="0 0 0.0995"><freejoint/><geom type="box" size="0.2 0.1 0.1" mass="2"/>
             <site name="centre"/></body></worldbody>
             <sensor><accelerometer site="centre"/></sensor></mujoco>"""
    model = sd.load_mjcf(xml).astype(jnp.float64)
    sensors = sd.sensors.Sensors.make(model, [("accelerometer", "centre"), ("contact_force", "box")])
    contact = sd.ContactModel.from_model(model)
    traj = jax.jit(lambda s: sd.rollout(model, s, None, 1e-3, 1500, contact=contact, sensors=sensors))(
        sd.State.initial(model))
    last = np.asarray(traj.sensors[-1])
    np.testing.assert_allclose(last[:3], [0, 0, 9.81], atol=1e-3)
    np.testing.assert_allclose(last[6:9], [0, 0, 2 * 9.81], rtol=1e-3, atol=1e-3)


def test_equality_constraints_apply_by_default():
    """An MJCF joint coupling (``elbow = 0.5 shoulder``) holds in a rollout of the loaded model;
    without the model's closures the joints move apart."""
    xml = """<mujoco><worldbody><body name="a"><joint name="j1" type="hinge" axis="0 1 0"/>
             <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
             <body name="b" pos="0.3 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
             <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/></body></body></worldbody>
             <equality><joint joint1="j2" joint2="j1" polycoef="0 0.5 0 0 0"/></equality></mujoco>"""
    model = sd.load_mjcf(xml).astype(jnp.float64)
    assert model.closures is not None and model.closures.kind == ("joint",)
    traj = sd.rollout(model, sd.State.initial(model), None, 1e-3, 500)
    q = np.asarray(traj.states.q)
    assert np.max(np.abs(q[:, 1] - 0.5 * q[:, 0])) < 1e-8 and np.max(np.abs(q[:, 0])) > 0.1
    free = sd.rollout(dataclasses.replace(model, closures=None), sd.State.initial(model), None, 1e-3, 500)
    assert np.max(np.abs(np.asarray(free.states.q[:, 1] - 0.5 * free.states.q[:, 0]))) > 0.05
