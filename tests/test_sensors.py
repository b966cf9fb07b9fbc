"""Sensors (:mod:`sodyn.sensors`) against MuJoCo's ``sensordata``, ``jax.jvp`` of frame poses,
sample statistics of the noise and central differences.

MuJoCo runs ``mj_forward`` at random states (the acceleration-stage sensors run its
``mj_rnePostConstraint``); sodyn reads the same sensors from MuJoCo's ``qpos``, ``qvel`` and
``qacc`` converted to its conventions, with ``f_ext`` from MuJoCo's ``cfrc_ext`` (applied wrenches
``xfrc_applied`` and contacts).
"""

from __future__ import annotations

import functools
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.io import a_from_mujoco, tau_from_mujoco, v_from_mujoco
from sodyn.io.mjcf_sensors import sensors_from_mujoco
from sodyn.sensor_readings import sensor_readings
from sodyn.sensors import Sensors, SensorSpec, sensor

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")

SENSOR_XML = """
<mujoco model="sensor_test">
  <option gravity="0.3 -0.2 -9.81" magnetic="0.1 -0.4 0.3"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="base" pos="0.1 0.2 1.0" euler="5 -10 20">
      <freejoint name="root"/>
      <geom name="gbase" type="box" size=".2 .1 .05" mass="3" pos=".01 .02 -.01" euler="3 0 7"/>
      <site name="imu" pos=".05 -.02 .03" euler="10 20 30"/>
      <body name="l1" pos=".2 0 0" euler="0 15 0">
        <joint name="h1" type="hinge" axis="0 1 0.3" pos=".02 0 0" ref="0.2"/>
        <geom name="g1" type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <site name="s1" pos=".15 .02 0" euler="30 0 -20"/>
        <camera name="cam" pos=".1 0 .2" euler="10 20 30"/>
        <body name="l2" pos=".3 0 0">
          <joint name="h2a" type="hinge" axis="1 0 0"/>
          <joint name="h2b" type="hinge" axis="0 0 1" pos=".01 .02 0"/>
          <geom name="g2" type="box" size=".1 .03 .03" pos=".1 0 0" euler="5 5 5"/>
          <site name="s2" pos=".2 0 .01" euler="0 90 0"/>
          <body name="tool" pos=".2 0 0" euler="0 0 30">
            <geom name="gtool" type="sphere" size=".05" mass=".2" pos=".01 0 0"/>
            <site name="tip" pos=".03 .01 0" euler="0 40 0"/>
          </body>
          <body name="l3" pos=".05 .1 0">
            <joint name="sl" type="slide" axis="0.2 1 0" ref="0.05"/>
            <geom name="g3" type="sphere" size=".04" pos="0 .02 0"/>
            <site name="s3" pos="0 .05 0" euler="45 0 0"/>
            <site name="l3" pos=".01 .02 .03" euler="0 180 0"/>
          </body>
        </body>
      </body>
      <body name="ballb" pos="-.2 0 0">
        <joint name="ball" type="ball" pos="-.02 0 0"/>
        <geom name="gb" type="ellipsoid" size=".05 .08 .1" pos="-.1 0 0" euler="0 20 0"/>
        <site name="sb" pos="-.15 0 .02" euler="0 0 45"/>
      </body>
    </body>
    <site name="ground" pos="0.5 0.5 0" euler="0 180 0"/>
    <body name="arm" pos="1 1 0.5">
      <joint name="a1" type="hinge" axis="0 0 1"/>
      <geom name="garm" type="capsule" fromto="0 0 0 0 0 .4" size=".03"/>
      <site name="ft" pos="0 0 .1" euler="10 -20 30"/>
      <body name="fore" pos="0 0 .4">
        <joint name="a2" type="hinge" axis="1 0 0" pos="0 0 0.01"/>
        <geom name="gfore" type="capsule" fromto="0 0 0 0 .3 0" size=".03"/>
        <site name="ft2" pos="0 .05 0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m1" joint="h1" gear="2"/>
    <position name="p2" joint="h2a" kp="5" kv="0.3"/>
    <motor name="m3" joint="sl"/>
    <motor name="ma1" joint="a1" gear="1.5"/>
  </actuator>
  <sensor>
    <accelerometer name="acc_imu" site="imu"/>
    <accelerometer name="acc_s2" site="s2"/>
    <accelerometer name="acc_tip" site="tip"/>
    <accelerometer name="acc_sb" site="sb"/>
    <gyro name="gyro_imu" site="imu"/>
    <gyro name="gyro_s3" site="s3" cutoff="0.5"/>
    <velocimeter name="vel_imu" site="imu" noise="0.1"/>
    <velocimeter name="vel_s1" site="s1"/>
    <magnetometer name="mag_s2" site="s2"/>
    <force name="f_ft" site="ft"/>
    <torque name="t_ft" site="ft"/>
    <force name="f_ft2" site="ft2"/>
    <torque name="t_ft2" site="ft2"/>
    <force name="f_s1" site="s1"/>
    <torque name="t_s1" site="s1"/>
    <force name="f_sb" site="sb"/>
    <torque name="t_s2" site="s2"/>
    <force name="f_tip" site="tip"/>
    <framepos name="pos_s1" objtype="site" objname="s1"/>
    <framepos name="pos_s1_s3" objtype="site" objname="s1" reftype="site" refname="s3"/>
    <framepos name="pos_l2_base" objtype="body" objname="l2" reftype="xbody" refname="base"/>
    <framepos name="pos_g2_ballb" objtype="geom" objname="g2" reftype="body" refname="ballb"/>
    <framequat name="quat_s2" objtype="site" objname="s2"/>
    <framequat name="quat_s2_base" objtype="site" objname="s2" reftype="body" refname="base"/>
    <framequat name="quat_l3_sb" objtype="xbody" objname="l3" reftype="site" refname="sb"/>
    <framequat name="quat_tip" objtype="site" objname="tip" reftype="geom" refname="gfore"/>
    <framexaxis name="x_s1" objtype="site" objname="s1" reftype="site" refname="imu"/>
    <frameyaxis name="y_g1" objtype="geom" objname="g1"/>
    <framezaxis name="z_l1" objtype="body" objname="l1" reftype="xbody" refname="fore"/>
    <framelinvel name="lv_s1_s3" objtype="site" objname="s1" reftype="site" refname="s3"/>
    <framelinvel name="lv_l2" objtype="xbody" objname="l2" reftype="geom" refname="gb"/>
    <framelinvel name="lv_tip" objtype="site" objname="tip"/>
    <frameangvel name="av_s3_imu" objtype="site" objname="s3" reftype="site" refname="imu"/>
    <frameangvel name="av_l1" objtype="body" objname="l1"/>
    <framelinacc name="la_s3" objtype="site" objname="s3"/>
    <framelinacc name="la_l1" objtype="body" objname="l1"/>
    <frameangacc name="aa_s3" objtype="site" objname="s3"/>
    <frameangacc name="aa_fore" objtype="geom" objname="gfore"/>
    <jointpos name="jp_h1" joint="h1"/>
    <jointpos name="jp_sl" joint="sl"/>
    <jointvel name="jv_h2b" joint="h2b"/>
    <jointvel name="jv_sl" joint="sl"/>
    <ballquat name="bq" joint="ball"/>
    <ballangvel name="bav" joint="ball"/>
    <actuatorpos name="ap_m1" actuator="m1"/>
    <actuatorvel name="av_m3" actuator="m3"/>
    <actuatorfrc name="af_p2" actuator="p2"/>
    <actuatorfrc name="af_ma1" actuator="ma1"/>
    <jointactuatorfrc name="jaf_h1" joint="h1"/>
    <jointactuatorfrc name="jaf_a1" joint="a1"/>
    <subtreecom name="sc_base" body="base"/>
    <subtreecom name="sc_l2" body="l2"/>
    <subtreecom name="sc_world" body="world"/>
    <subtreelinvel name="sl_l1" body="l1"/>
    <subtreeangmom name="sa_base" body="base"/>
    <subtreeangmom name="sa_arm" body="arm"/>
    <subtreecom name="sc_tool" body="tool"/>
    <accelerometer name="acc_ground" site="ground"/>
    <framelinacc name="la_ground" objtype="site" objname="ground"/>
    <framequat name="quat_cam" objtype="camera" objname="cam" reftype="site" refname="ground"/>
    <framepos name="pos_l3site" objtype="site" objname="l3" reftype="camera" refname="cam"/>
    <clock name="clk"/>
    <rangefinder name="range" site="s2"/>
  </sensor>
</mujoco>
"""

MJX_SENSOR_DIR = os.path.join(os.path.dirname(mujoco.__file__), "mjx", "test_data", "sensor")


@functools.cache
def _loaded(source: str):
    mj = (mujoco.MjModel.from_xml_string(source) if source.lstrip().startswith("<")
          else mujoco.MjModel.from_xml_path(source))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = sd.load_mjcf(source)
    sensors, unsupported = sensors_from_mujoco(mj, model)
    return mj, model, sensors, unsupported


@jax.jit
def _batched_readings(model, sensors, q, v, a, actuator_force, joint_actuator_force, f_ext, t):
    def one(q, v, a, af, jaf, fe, t):
        return sensor_readings(model, sensors, q, v, a, actuator_force=af, joint_actuator_force=jaf, f_ext=fe, t=t)

    return jax.vmap(one)(q, v, a, actuator_force, joint_actuator_force, f_ext, t)


def _random_qpos(mj, rng) -> np.ndarray:
    """Hinge angles over three turns (both quaternion signs of every joint), slides, and unit
    quaternions of either sign for balls and free joints."""
    qpos = np.array(mj.qpos0)
    for j in range(mj.njnt):
        s, t = int(mj.jnt_qposadr[j]), int(mj.jnt_type[j])
        if t == mujoco.mjtJoint.mjJNT_FREE:
            qpos[s: s + 3] = rng.normal(size=3)
            s += 3
        if t in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            quat = rng.normal(size=4)
            qpos[s: s + 4] = quat / np.linalg.norm(quat)
        else:
            qpos[s] = rng.uniform(-3 * np.pi, 3 * np.pi)
    return qpos


def _f_ext(mj, d, model) -> np.ndarray:
    """MuJoCo's ``cfrc_ext`` (world axes, about the root's subtree centre of mass) as sodyn's
    ``f_ext``: each body's wrench about its sodyn body's origin in that body's axes, bodies
    without joints added to the body sodyn merged them into."""
    out = np.zeros((model.n_bodies, 6))
    fr, fp = np.asarray(model.frame_rotation), np.asarray(model.frame_translation)
    for i in range(1, mj.nbody):
        f = model.frame_id(mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, i) or f"body{i}")
        k = model.frame_body[f]
        if k < 0:
            continue
        r = d.xmat[i].reshape(3, 3) @ fr[f].T  # the sodyn body's world pose, from MuJoCo's body pose
        p = d.xpos[i] - r @ fp[f]
        torque, force = d.cfrc_ext[i, :3], d.cfrc_ext[i, 3:]
        out[k] += np.concatenate([r.T @ (torque + np.cross(d.subtree_com[mj.body_rootid[i]] - p, force)), r.T @ force])
    return out


def _welded_sensor_bodies(mj) -> np.ndarray:
    """Bodies without joints that carry a force/torque sensor's site, and their jointless
    descendants: sodyn's sensors there do not see external wrenches on them."""
    out = np.zeros(mj.nbody, bool)
    for i in range(mj.nsensor):
        if int(mj.sensor_type[i]) in (int(mujoco.mjtSensor.mjSENS_FORCE), int(mujoco.mjtSensor.mjSENS_TORQUE)):
            b = mj.site_bodyid[mj.sensor_objid[i]]
            out[b] = mj.body_jntnum[b] == 0
    for k in range(1, mj.nbody):
        out[k] |= out[mj.body_parentid[k]] and mj.body_jntnum[k] == 0
    return out


def _compare_with_mujoco(source: str, n_states: int, seed: int, xfrc: bool) -> dict[str, np.ndarray]:
    """sodyn's readings (``jit`` of ``vmap``) equal MuJoCo's ``sensordata`` to 1e-9 at random
    states; ``xfrc``: random ``xfrc_applied`` on every body but those of :func:`_welded_sensor_bodies`."""
    mj, model, sensors, _ = _loaded(source)
    no_xfrc = _welded_sensor_bodies(mj)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(seed)
    cols = {k: [] for k in ("q", "qvel", "qacc", "af", "qfrc", "fext", "t", "data")}
    for _ in range(n_states):
        mujoco.mj_resetData(mj, d)
        d.qpos[:] = _random_qpos(mj, rng)
        d.qvel[:] = rng.normal(size=mj.nv)
        d.ctrl[:] = rng.uniform(-1, 1, size=mj.nu)
        d.time = rng.uniform(0, 10)
        if xfrc:
            d.xfrc_applied[1:] = rng.normal(size=(mj.nbody - 1, 6))
            d.xfrc_applied[no_xfrc] = 0.0
        mujoco.mj_forward(mj, d)
        for k, x in zip(cols, (d.qpos, d.qvel, d.qacc, d.actuator_force, d.qfrc_actuator, _f_ext(mj, d, model),
                               d.time, d.sensordata)):
            cols[k].append(np.array(x))
    c = {k: np.stack(x) for k, x in cols.items()}
    v = v_from_mujoco(model, c["q"], c["qvel"])
    a = a_from_mujoco(model, c["q"], v, c["qacc"])
    af = c["af"][:, [mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_ACTUATOR, n) for n in model.actuators.names]]
    got = np.asarray(_batched_readings(model, sensors, c["q"], v, a, af, tau_from_mujoco(model, c["q"], c["qfrc"]),
                                       c["fext"], c["t"]))
    out = {}
    for name, sl in ((n, sensors.slice(n)) for n in sensors.names):
        i = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_SENSOR, name)
        i = i if i >= 0 else int(name.removeprefix("sensor"))
        want = c["data"][:, mj.sensor_adr[i]: mj.sensor_adr[i] + mj.sensor_dim[i]]
        np.testing.assert_allclose(got[:, sl], want, rtol=1e-9, atol=1e-9, err_msg=f"sensor {name!r}")
        out[name] = got[:, sl]
    return out


# -- (a) against MuJoCo ----------------------------------------------------------------------


@pytest.mark.fast
def test_every_supported_kind_matches_mujoco_sensordata():
    mj, model, sensors, unsupported = _loaded(SENSOR_XML)
    kinds = set(sensors.kind)
    tendon_kinds = {k for k, (_, target) in sd.sensors.KINDS.items() if target == "tendon"}  # test_tendons.py
    assert kinds == set(sd.sensors.KINDS) - {"contact_force"} - tendon_kinds, set(sd.sensors.KINDS) - kinds
    readings = _compare_with_mujoco(SENSOR_XML, n_states=12, seed=0, xfrc=True)
    # both quaternion signs occurred, so MuJoCo's sign convention was checked, not only the rotation
    assert (readings["quat_s2"][:, 0] < 0).any() and (readings["quat_s2"][:, 0] > 0).any()
    assert (np.abs(readings["gyro_s3"]) == 0.5).any()  # the cutoff clipped some readings
    assert sensors.welded_children[sensors.names.index("f_tip")] == ()  # on 'tool', welded to l2: modelled
    assert unsupported == [
        "<sensor name='sc_tool' type='subtreecom'> (body 'tool' has no joint and is merged into its parent)",
        "<sensor name='range' type='rangefinder'>"]


FT_CELL_XML = """
<mujoco model="ft_cell">
  <option gravity="0.2 -0.1 -9.81"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="shoulder" pos="0 0 1" euler="5 0 10">
      <joint name="j1" type="hinge" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
      <body name="elbow" pos=".3 0 0" euler="0 20 0">
        <joint name="j2" type="hinge" axis="0 1 0"/>
        <joint name="j3" type="hinge" axis="1 0 .2" pos=".01 0 0"/>
        <geom type="capsule" fromto="0 0 0 .25 0 0" size=".03"/>
        <body name="ft" pos=".25 .01 0" euler="10 -20 30">
          <inertial pos=".01 .005 -.003" mass=".3" diaginertia=".001 .002 .0015" euler="20 30 40"/>
          <site name="ft_site" pos=".02 0 .01" euler="5 10 15"/>
          <body name="palm" pos=".04 .01 0" euler="0 30 0">
            <geom name="gpalm" type="box" size=".04 .03 .01" mass=".5" pos=".02 0 0" euler="3 4 5"
                  contype="1" conaffinity="1"/>
            <site name="palm_site" pos=".03 -.01 0" euler="-20 0 60"/>
            <body name="finger" pos=".06 0 .01" euler="0 0 15">
              <joint name="jf" type="hinge" axis="0 1 0"/>
              <joint name="jf_slide" type="slide" axis="1 0 0" pos="0 .01 0"/>
              <geom type="capsule" fromto="0 0 0 .05 0 0" size=".01" mass=".1"/>
              <body name="nail">
                <geom type="sphere" size=".01" pos=".05 0 0" mass=".02"/>
              </body>
            </body>
            <body name="thumb" pos=".02 .04 0">
              <joint name="jt" type="ball" pos=".005 0 .002"/>
              <geom type="capsule" fromto="0 0 0 0 .04 0" size=".01" mass=".05"/>
            </body>
          </body>
        </body>
      </body>
    </body>
    <body name="stand" pos="1 0 0">
      <geom type="box" size=".1 .1 .1"/>
      <site name="stand_site"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="j1" gear="2"/>
    <motor joint="j2"/>
    <motor joint="jf"/>
  </actuator>
  <sensor>
    <force name="f_ft" site="ft_site"/>
    <torque name="t_ft" site="ft_site"/>
    <force name="f_palm" site="palm_site"/>
    <torque name="t_palm" site="palm_site"/>
    <force name="f_stand" site="stand_site"/>
  </sensor>
</mujoco>
"""


def test_force_torque_cell_on_a_jointless_body_matches_mujoco():
    """Force/torque sensors on jointless bodies (a cell ``ft`` at the wrist, a ``palm`` welded below
    it, jointed fingers below that) read MuJoCo's ``cfrc_int`` of their body at the site; a
    collidable geom on the welded bodies is listed, a sensor on a body welded to the world is not kept."""
    mj, model, sensors, unsupported = _loaded(FT_CELL_XML)
    assert len(sensors) == 4 and model.nv == mj.nv
    note = ("<sensor name='{}' type='{}'> (contacts on geoms ['gpalm'] of the bodies welded to its body '{}' are "
            "not seen by the sensor; it is kept)")
    assert unsupported == [note.format(n, t, b) for n, t, b in (("f_ft", "force", "ft"), ("t_ft", "torque", "ft"),
                                                                ("f_palm", "force", "palm"),
                                                                ("t_palm", "torque", "palm"))] + [
        "<sensor name='f_stand' type='force'> (its site is on body 'stand', which is welded to the world)"]
    finger, thumb = model.joint_index("jf"), model.joint_index("jt")
    assert sensors.welded_children == ((finger, thumb),) * 4
    # I_W: ft and palm (ft's sensors), palm alone (palm's): the masses and nothing of the arm
    np.testing.assert_allclose(np.asarray(sensors.welded_inertia)[:, 3, 3], [0.8, 0.8, 0.5, 0.5], rtol=1e-12)
    # random states, with xfrc_applied on the arm and the fingers (not on ft and palm): jit of vmap
    _compare_with_mujoco(FT_CELL_XML, n_states=8, seed=3, xfrc=True)


def test_force_torque_cell_gradient_and_user_spec():
    """``grad`` wrt ``q`` of the cell's readings is finite and matches central differences; the
    same sensors made by hand with ``SensorSpec(welded=...)`` read the same."""
    mj, model, sensors, _ = _loaded(FT_CELL_XML)
    rng = np.random.default_rng(7)
    q = jnp.asarray(_random_qpos(mj, rng))
    v, a = jnp.asarray(rng.normal(size=model.nv)), jnp.asarray(rng.normal(size=model.nv))
    f_ext = jnp.asarray(rng.normal(size=(model.n_bodies, 6)))
    weights = jnp.asarray(rng.normal(size=sensors.total_dim))
    f = jax.jit(lambda q: weights @ sensor_readings(model, sensors, q, v, a, f_ext=f_ext))
    grad = np.asarray(jax.jit(jax.grad(lambda q: weights @ sensor_readings(model, sensors, q, v, a, f_ext=f_ext)))(q))
    h = 1e-6
    fd = np.array([(f(q.at[i].add(h)) - f(q.at[i].add(-h))) / (2 * h) for i in range(model.nq)])
    assert np.all(np.isfinite(grad)) and np.abs(grad).max() > 0
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
    # the same sensors given by hand (welded = (I_W, children by name)) read the same
    children = ("finger__jf", model.joint_index("jt"))  # body names or indices
    specs = [("force", "ft_site"), ("torque", "ft_site"), ("force", "palm_site"), ("torque", "palm_site")]
    mine = Sensors.make(model, [SensorSpec(kind, site, welded=(sensors.welded_inertia[i], children))
                                for i, (kind, site) in enumerate(specs)])
    np.testing.assert_allclose(_readings(model, mine, q, v, a, f_ext=f_ext),
                               _readings(model, sensors, q, v, a, f_ext=f_ext), rtol=1e-13, atol=1e-13)
    plain = _readings(model, Sensors.make(model, [("force", "ft_site")]), q, v, a, f_ext=f_ext)
    assert not np.allclose(plain, _readings(model, sensors, q, v, a, f_ext=f_ext)[:3])  # the merged body's


@pytest.mark.parametrize("name", ["sensor.xml", "model.xml"])
def test_mjcf_models_shipped_with_mujoco(name):
    path = os.path.join(MJX_SENSOR_DIR, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not installed")
    mj, model, sensors, unsupported = _loaded(path)
    if name == "model.xml":
        assert mj.nsensor == 0 and len(sensors) == 0 and unsupported == []
        assert sensor_readings(model, sensors, model.q_neutral).shape == (0,)
        assert len(Sensors.empty()) == 0 and sensor_readings(model, Sensors.empty(), model.q_neutral).shape == (0,)
        return
    assert len(sensors) + len(unsupported) == mj.nsensor and len(sensors) > 40
    listed = {s.split("type='")[1].split("'")[0] for s in unsupported}
    assert listed == {"touch", "rangefinder", "camprojection", "tendonpos", "tendonvel"}
    _compare_with_mujoco(path, n_states=10, seed=1, xfrc=False)


# -- (b) accelerometer and gyro: gravity, free fall, derivatives of frame poses ---------------

PENDULUM_XML = """
<mujoco>
  <worldbody>
    <body name="upper" pos="0 0 1" euler="10 0 0">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.5" size=".05"/>
      <body name="lower" pos="0 0 -.5">
        <joint name="j2" type="hinge" axis="1 0 .2"/>
        <joint name="j3" type="slide" axis="0 0 1"/>
        <geom type="box" size=".05 .05 .2" pos="0 0 -.2"/>
        <site name="imu" pos=".03 .02 -.3" euler="20 -30 50"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

FREE_XML = """
<mujoco>
  <worldbody>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom type="box" size=".1 .2 .3" pos=".02 -.01 .03"/>
      <site name="at_com" pos=".02 -.01 .03" euler="30 40 50"/>
    </body>
  </worldbody>
</mujoco>
"""


def _imu(model, site="imu"):
    return Sensors.make(model, [("accelerometer", site), ("gyro", site), ("framelinvel", site)])


_readings = jax.jit(sensor_readings)


def test_accelerometer_reads_gravity_at_rest_and_zero_in_free_fall():
    model = sd.load_mjcf(PENDULUM_XML)
    q = jnp.array([0.4, -1.1, 0.05])
    zero = jnp.zeros(3)
    r = _readings(model, _imu(model), q, zero, zero)
    rot = jax.jit(sd.forward_kinematics)(model, q).frame.rotation[model.frame_id("imu")]
    np.testing.assert_allclose(r[:3], rot.T @ -model.gravity, atol=1e-12)  # +g up, in site axes
    np.testing.assert_allclose(r[3:], 0.0, atol=1e-12)

    free = sd.load_mjcf(FREE_XML)
    q = jnp.array([0.1, -0.2, 0.3, 0.5, -0.5, 0.1, 0.7])  # a unit quaternion
    v = jnp.array([0.3, -1.2, 2.0, 0.5, 0.1, -0.4])
    a = jax.jit(sd.forward_dynamics)(free, q, v, jnp.zeros(6))
    r = _readings(free, _imu(free, "at_com"), q, v, a)
    np.testing.assert_allclose(r[:3], 0.0, atol=1e-12)  # the centre of mass falls with g
    r_bs = free.frame_rotation[free.frame_id("at_com")]
    np.testing.assert_allclose(r[3:6], r_bs.T @ v[:3], atol=1e-12)  # gyro: the body's ω in site axes


def test_accelerometer_and_gyro_are_derivatives_of_the_site_pose():
    model = sd.load_mjcf(PENDULUM_XML)
    q0, v, a = jnp.array([0.4, -1.1, 0.05]), jnp.array([1.3, -0.7, 0.4]), jnp.array([-2.0, 3.0, 0.6])

    def pose(t):
        p = sd.frame_pose(model, q0 + v * t + 0.5 * a * t * t, "imu")
        return jnp.concatenate([p.translation, p.rotation.reshape(-1)])

    def rate(t):
        return jax.jvp(pose, (t,), (1.0,))[1]

    t0 = jnp.zeros(())
    x, dx, ddx = jax.jit(lambda t: (*jax.jvp(pose, (t,), (1.0,)), jax.jvp(rate, (t,), (1.0,))[1]))(t0)
    rot, rot_dot = x[3:].reshape(3, 3), dx[3:].reshape(3, 3)
    w = rot.T @ rot_dot  # ω~ in site axes
    r = _readings(model, _imu(model), q0, v, a)
    np.testing.assert_allclose(r[:3], rot.T @ (ddx[:3] - model.gravity), atol=1e-10)
    np.testing.assert_allclose(r[3:6], [w[2, 1], w[0, 2], w[1, 0]], atol=1e-10)
    np.testing.assert_allclose(r[6:], dx[:3], atol=1e-10)


def test_contact_force_and_clock_read_their_inputs():
    _, model, _, _ = _loaded(SENSOR_XML)
    sensors = Sensors.make(model, [("contact_force", "l2"), ("clock",), ("contact_force", 0)])
    wrench = jnp.arange(model.n_bodies * 6.0).reshape(model.n_bodies, 6)
    r = _readings(model, sensors, model.q_neutral, contact_wrench=wrench, t=1.5)
    l2 = model.frame_body[model.frame_id("l2")]  # the sodyn body carrying MuJoCo body l2
    np.testing.assert_array_equal(r, jnp.concatenate([wrench[l2], jnp.array([1.5]), wrench[0]]))
    with pytest.raises(ValueError, match="contact_wrench is required by sensor 'contact_force0'"):
        sensor_readings(model, sensors, model.q_neutral, t=1.5)


def test_sensor_readings_lives_in_its_own_module_and_is_re_exported():
    import sodyn.sensor_readings
    from sodyn.sensors import sensor_readings as re_exported

    assert re_exported is sodyn.sensor_readings.sensor_readings is sensor_readings
    assert sd.sensors.sensor_readings is sensor_readings
    with pytest.raises(AttributeError, match="has no attribute 'readings'"):
        sd.sensors.readings  # noqa: B018


# -- (c) noise and bias ----------------------------------------------------------------------


def test_noise_and_bias_statistics():
    model = sd.load_mjcf(PENDULUM_XML)
    sensors = Sensors.make(model, [SensorSpec("gyro", "imu", noise=0.2, bias=(0.1, -0.3, 0.5)),
                                   sensor("jointpos", "j2", noise=0.05, bias=1.0), sensor("clock")])
    q, v = jnp.array([0.4, -1.1, 0.05]), jnp.array([1.3, -0.7, 0.4])
    clean = _readings(model, Sensors.make(model, [("gyro", "imu"), ("jointpos", "j2"), ("clock",)]), q, v, t=2.0)
    np.testing.assert_allclose(_readings(model, sensors, q, v, t=2.0) - clean, [0.1, -0.3, 0.5, 1.0, 0.0],
                               atol=1e-14)  # no key: bias only
    n = 4000
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    noisy = jax.jit(jax.vmap(lambda k: sensor_readings(model, sensors, q, v, t=2.0, key=k)))(keys)
    err = np.asarray(noisy - clean)
    std, bias = np.array([0.2, 0.2, 0.2, 0.05, 0.0]), np.array([0.1, -0.3, 0.5, 1.0, 0.0])
    np.testing.assert_allclose(err.mean(0), bias, atol=5 * std.max() / np.sqrt(n))
    np.testing.assert_allclose(err.std(0), std, rtol=0.06, atol=1e-14)
    assert abs(np.corrcoef(err[:, 0], err[:, 1])[0, 1]) < 0.06  # independent per value


# -- (d) bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec, match", [
    (("gyro", "no_such_site"), "'no_such_site'"),
    (("jointpos", "no_such_joint"), "'no_such_joint'"),
    (("actuatorfrc", "no_such_motor"), "'no_such_motor'"),
    (("framepos", "s1", "no_such_ref"), "'no_such_ref'"),
    (("subtreecom", "no_such_body"), "'no_such_body'"),
    (("jointpos", "ball"), "hinge joint"),
    (("ballquat", "h1"), "spherical joint"),
    (("gyro", "s1", "s3"), "no reference frame"),
    (("force", "world"), "moving body"),
    (("thermometer", "s1"), "unknown kind 'thermometer'"),
    (SensorSpec("gyro", "s1", bias=(1.0, 2.0)), "bias must be"),
    (SensorSpec("gyro", "s1", noise=-1.0), "noise and cutoff"),
    (SensorSpec("gyro", "s1", welded=(np.zeros((6, 6)), ())), "only force and torque sensors take welded"),
    (SensorSpec("force", "tip", welded=(np.zeros((3, 3)), ())), "finite \\(6, 6\\) array"),
    (SensorSpec("force", "tip", welded=(np.zeros((6, 6)), ("base",))), "'base' is not a child"),
    (SensorSpec("force", "tip", welded=np.zeros((6, 6))), "welded must be"),
])
def test_bad_sensor_specs_raise_naming_them(spec, match):
    _, model, _, _ = _loaded(SENSOR_XML)
    with pytest.raises(ValueError, match=match) as e:
        Sensors.make(model, [spec])
    kind = spec.kind if isinstance(spec, SensorSpec) else spec[0]
    assert f"'{kind}0'" in str(e.value)  # the sensor's (default) name


def test_bad_mujoco_model_and_missing_inputs_raise():
    mj, model, sensors, _ = _loaded(SENSOR_XML)
    other = sd.load_mjcf(PENDULUM_XML)
    with pytest.raises(ValueError, match="<sensor name='acc_s2' type='accelerometer'>.*'l2'"):
        sensors_from_mujoco(mj, other)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        moved = sd.load_mjcf(SENSOR_XML.replace('name="imu" pos=".05', 'name="imu" pos=".06'))
    with pytest.raises(ValueError, match="<sensor name='acc_imu' type='accelerometer'>: its frame .* not where MuJoCo"):
        sensors_from_mujoco(mj, moved)
    q = model.q_neutral
    with pytest.raises(ValueError, match="a is required by sensor 'acc_imu'"):
        sensor_readings(model, sensors, q, jnp.zeros(model.nv))
    with pytest.raises(ValueError, match="actuator_force is required by sensor 'af_p2'"):
        sensor_readings(model, sensors, q, jnp.zeros(model.nv), jnp.zeros(model.nv))
    with pytest.raises(ValueError, match="q must have shape"):
        sensor_readings(model, sensors, jnp.zeros(3))
    with pytest.raises(ValueError, match="names must be unique"):
        Sensors.make(model, [sensor("gyro", "s1", name="g"), sensor("gyro", "s2", name="g")])


# -- (e) gradients ---------------------------------------------------------------------------


def test_gradient_wrt_q_matches_central_differences():
    mj, model, sensors, _ = _loaded(SENSOR_XML)
    rng = np.random.default_rng(5)
    q = jnp.asarray(_random_qpos(mj, rng))
    v, a = jnp.asarray(rng.normal(size=model.nv)), jnp.asarray(rng.normal(size=model.nv))
    inputs = dict(actuator_force=jnp.asarray(rng.normal(size=len(model.actuators))),
                  joint_actuator_force=jnp.asarray(rng.normal(size=model.nv)),
                  f_ext=jnp.asarray(rng.normal(size=(model.n_bodies, 6))), t=0.5)
    weights = jnp.asarray(rng.normal(size=sensors.total_dim))
    f = jax.jit(lambda q: weights @ sensor_readings(model, sensors, q, v, a, **inputs))
    grad = np.asarray(jax.jit(jax.grad(lambda q: weights @ sensor_readings(model, sensors, q, v, a, **inputs)))(q))
    h = 1e-6
    fd = np.array([(f(q.at[i].add(h)) - f(q.at[i].add(-h))) / (2 * h) for i in range(model.nq)])
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
