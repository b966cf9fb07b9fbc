"""MJCF import (``sodyn.load_mjcf``) against MuJoCo itself: M (``mj_fullM``), inverse dynamics
(``mj_rne``), forward dynamics (``qacc`` of ``mj_forward`` with constraints disabled) and body /
site poses, on small models that exercise free and ball joints, joint anchors, reference
positions, several joints in one body, armature and damping."""

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import random_mujoco_state

import sodyn as sd
from sodyn.io import (
    a_from_mujoco,
    a_to_mujoco,
    load_mjcf,
    mass_matrix_from_mujoco,
    q_from_mujoco,
    q_to_mujoco,
    tau_from_mujoco,
    tau_to_mujoco,
    v_from_mujoco,
    v_to_mujoco,
)

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")
TOL = 1e-9

# A floating torso with two ball-jointed limbs (one ball off the body origin) and a hinge.
FLOATING = """
<mujoco model="floating">
  <option gravity="0.3 -0.2 -9.81"/>
  <worldbody>
    <body name="torso" pos="0 0 1" quat="0.9 0.1 0.2 0.3">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.3" mass="5"/>
      <site name="torso_site" pos="0.1 0 0.2" quat="0.7 0.7 0 0"/>
      <body name="upper_arm" pos="0.25 0 0.2" euler="0.1 0.2 0.3">
        <joint name="shoulder" type="ball" pos="0 0 0.05" damping="0.3" armature="0.02"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.04" mass="1.2"/>
        <body name="forearm" pos="0 0 -0.3">
          <joint name="elbow" type="hinge" axis="0 1 0.2" pos="0 0.01 0.02" ref="0.3"/>
          <geom type="capsule" fromto="0 0 0 0.05 0 -0.25" size="0.03" mass="0.7"/>
          <site name="hand" pos="0.05 0 -0.25"/>
        </body>
      </body>
      <body name="thigh" pos="0 0.1 -0.3">
        <joint name="hip" type="ball"/>
        <geom type="capsule" fromto="0 0 0 0 0.02 -0.4" size="0.05" mass="2"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

# A fixed-base arm with hinges and slides, two and three joints in one body, a static body.
ARM = """
<mujoco model="arm">
  <worldbody>
    <body name="base" pos="0 0 0.1">
      <geom type="cylinder" size="0.1 0.05" mass="3" contype="0" conaffinity="0"/>
      <body name="link1" pos="0 0 0.1" quat="0.96 0 0.28 0">
        <joint name="j1" type="hinge" axis="0 0 1" damping="0.5" armature="0.1"/>
        <joint name="j1b" type="hinge" axis="1 0 0" pos="0 0 0.02"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1.5"/>
        <body name="link2" pos="0.3 0 0">
          <joint name="s2" type="slide" axis="1 1 0" ref="0.05" damping="1.0" armature="0.3"/>
          <joint name="j2" type="hinge" axis="0 1 0" pos="0.05 0 0" range="-1 1"/>
          <joint name="j2b" type="hinge" axis="0 0.6 0.8" pos="0.05 0.01 0"/>
          <geom type="box" size="0.15 0.03 0.02" pos="0.15 0 0" mass="0.8"/>
          <body name="tool" pos="0.3 0 0" euler="0 0.5 0">
            <geom type="sphere" size="0.04" mass="0.2"/>
            <site name="tip" pos="0.02 0 0"/>
          </body>
          <body name="slider" pos="0.1 0 0.05">
            <joint name="s3" type="slide" axis="0 0 1"/>
            <geom type="sphere" size="0.03" mass="0.3" pos="0.01 0.02 0"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module", params=["floating", "arm"])
def case(request):
    xml = {"floating": FLOATING, "arm": ARM}[request.param]
    mj = mujoco.MjModel.from_xml_string(xml)
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    model = load_mjcf(xml)
    qpos, qvel, qacc = random_mujoco_state(mj, np.random.default_rng(3))
    q = np.asarray(q_from_mujoco(model, qpos))
    v = np.asarray(v_from_mujoco(model, q, qvel))
    a = np.asarray(a_from_mujoco(model, q, v, qacc))
    frames = [n for n in model.frame_names if mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, n) >= 0
              or mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_SITE, n) >= 0]

    @jax.jit
    def run(q, v, a):
        tau = sd.inverse_dynamics(model, q, v, a)
        return dict(tau=tau, M=sd.mass_matrix(model, q), qdd=sd.forward_dynamics(model, q, v, tau),
                    poses=[sd.frame_pose(model, q, f) for f in frames])

    out = jax.tree_util.tree_map(np.asarray, run(q, v, a))
    return dict(mj=mj, model=model, mj_state=(qpos, qvel, qacc), state=(q, v, a), out=out, frames=frames)


def rel_err(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y)))


def test_structure(case):
    mj, model = case["mj"], case["model"]
    assert (model.nq, model.nv) == (mj.nq, mj.nv)
    names = [mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(mj.njnt)]
    assert list(model.joint_names) == names
    for j, n in enumerate(names):
        assert model.joint_q_slice(n).start == mj.jnt_qposadr[j]
        assert model.joint_v_slice(n).start == mj.jnt_dofadr[j]


def test_poses(case):
    mj = case["mj"]
    d = mujoco.MjData(mj)
    d.qpos[:] = case["mj_state"][0]
    mujoco.mj_kinematics(mj, d)
    for name, (r, p) in zip(case["frames"], case["out"]["poses"], strict=True):
        b = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, name)
        if b >= 0:
            rp, pp = d.xmat[b].reshape(3, 3), d.xpos[b]
        else:
            s = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_SITE, name)
            rp, pp = d.site_xmat[s].reshape(3, 3), d.site_xpos[s]
        assert rel_err(p, pp) < TOL, name
        assert rel_err(r, rp) < TOL, name


def test_mass_matrix(case):
    mj, model = case["mj"], case["model"]
    d = mujoco.MjData(mj)
    d.qpos[:] = case["mj_state"][0]
    mujoco.mj_forward(mj, d)
    M = np.zeros((mj.nv, mj.nv))
    mujoco.mj_fullM(mj, d, M)  # includes armature, as sodyn's M does
    assert rel_err(mass_matrix_from_mujoco(model, case["state"][0], M), case["out"]["M"]) < TOL


def test_inverse_dynamics(case):
    mj, model = case["mj"], case["model"]
    qpos, qvel, qacc = case["mj_state"]
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(mj, d)  # kinematics and velocities; it overwrites qacc, so set it after
    d.qacc[:] = qacc
    rne = np.zeros(mj.nv)
    mujoco.mj_rne(mj, d, 1, rne)  # M(q) qacc + bias, without armature and damping
    rne += mj.dof_armature * qacc + mj.dof_damping * qvel
    q = case["state"][0]
    assert rel_err(case["out"]["tau"], tau_from_mujoco(model, q, rne)) < TOL
    assert rel_err(tau_to_mujoco(model, q, case["out"]["tau"]), rne) < TOL


def test_forward_dynamics(case):
    mj, model = case["mj"], case["model"]
    qpos, qvel, qacc = case["mj_state"]
    q, v, _ = case["state"]
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = qpos, qvel
    d.qfrc_applied[:] = np.asarray(tau_to_mujoco(model, q, case["out"]["tau"]))
    mujoco.mj_forward(mj, d)  # passive forces = -damping * qvel, like sodyn
    assert rel_err(d.qacc, qacc) < TOL
    assert rel_err(case["out"]["qdd"], a_from_mujoco(model, q, v, d.qacc)) < TOL


def test_converters_round_trip(case):
    model = case["model"]
    q, v, a = case["state"]
    qpos, qvel, qacc = case["mj_state"]
    np.testing.assert_allclose(q_to_mujoco(model, q), qpos, atol=1e-14)
    np.testing.assert_allclose(v_to_mujoco(model, q, v), qvel, atol=1e-12)
    np.testing.assert_allclose(a_to_mujoco(model, q, v, a), qacc, atol=1e-12)


def test_multi_joint_bodies_and_anchor_frames():
    model = load_mjcf(ARM)
    # link1 has two joints: a massless intermediate body, then the anchored body and a frame.
    assert model.body_names[:3] == ("link1__j1", "link1__anchor", "link2__s2")
    assert float(model.mass[0]) == 0.0
    assert "link1" in model.frame_names and "tip" in model.frame_names
    assert model.joint_types == ("continuous", "continuous", "prismatic", "revolute", "continuous",
                                 "prismatic")


def test_equality_constraints_are_the_models_closures_and_returned():
    """Supported equalities load silently as ``Model.closures`` (what the steppers enforce) and,
    with ``with_constraints=True``, as :class:`EqualityConstraints` too."""
    xml = ARM.replace("</worldbody>", "</worldbody><equality><joint name='couple' joint1='j1' joint2='j2' "
                      "polycoef='0.1 2 0 0 0'/><connect body1='tool' body2='slider' anchor='0.1 0 0'/></equality>")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load_mjcf(xml)
        model2, eq = load_mjcf(xml, with_constraints=True)
    assert model.closures.kind == ("joint", "point") and model.closures.names == ("couple", eq.names[1])
    assert isinstance(eq, sd.EqualityConstraints) and eq.kind == ("joint", "connect") and eq.names[0] == "couple"
    assert eq.joint1[0] == model.joint_q_slice("j1").start and eq.joint2[0] == model.joint_q_slice("j2").start
    np.testing.assert_array_equal(eq.polycoef[0], [0.1, 2, 0, 0, 0])
    assert eq.frame1[1] == model2.frame_id("tool") and eq.frame2[1] == model2.frame_id("slider")
    np.testing.assert_allclose(eq.anchor1[1], [0.1, 0, 0])
    _, none = load_mjcf(ARM, with_constraints=True)
    assert len(none) == 0


TENDON_EQUALITIES = """
<mujoco>
  <worldbody>
    <body name="b1">
      <joint name="h1" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="1"/>
      <site name="s0"/>
      <body name="b2" pos="0.4 0 0">
        <joint name="h2" axis="0 1 0"/>
        <joint name="s2" type="slide" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
        <site name="s1" pos="0.3 0 0"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t1"><joint joint="h1" coef="1"/><joint joint="h2" coef="-0.5"/></fixed>
    <spatial name="rope"><site site="s0"/><site site="s1"/></spatial>
    <fixed name="t2"><joint joint="s2" coef="2"/><joint joint="h1" coef="0.7"/></fixed>
    <fixed name="t3"><joint joint="h2" coef="0.3"/></fixed>
  </tendon>
  <equality>
    <tendon name="off" tendon1="t3" tendon2="t1" polycoef="0.2 0.5 0 0 0" active="false"/>
    <tendon name="pair" tendon1="t3" tendon2="t1" polycoef="0.05 -0.8 0.3 0.1 0.2"/>
    <joint name="jj" joint1="h2" joint2="h1"/>
    <tendon name="on_rope" tendon1="rope" tendon2="t1"/>
    <tendon name="hold" tendon1="t2" polycoef="0.1"/>
  </equality>
</mujoco>
"""


def test_tendon_equalities_are_listed_as_in_mujoco():
    """``<equality><tendon>`` between fixed tendons are rows of :class:`EqualityConstraints`
    (MuJoCo's ``eq_obj1id``/``eq_obj2id`` as indices into ``model.tendons``, ``eq_data[:5]`` as
    ``polycoef``, ``eq_active0``), and :meth:`LoopClosures.from_equality` turns the active ones
    into the model's closures, whose residuals equal MuJoCo's ``efc_pos`` equality rows; one on a
    spatial tendon is reported as unsupported and left out."""
    mj = mujoco.MjModel.from_xml_string(TENDON_EQUALITIES)
    with pytest.warns(sd.UnsupportedElementWarning, match="<equality><tendon name='on_rope'>"):
        model, eq = load_mjcf(TENDON_EQUALITIES, with_constraints=True)
    assert model.tendons.names == ("t1", "t2", "t3")
    assert eq.names == ("off", "pair", "jj", "hold") and eq.kind == ("tendon", "tendon", "joint", "tendon")
    assert eq.tendon1 == (2, 2, -1, 1) and eq.tendon2 == (0, 0, -1, -1) and eq.active == (False, True, True, True)
    assert eq.joint1[2] == model.joint_q_slice("h2").start and eq.joint1[:2] == eq.joint2[:2] == (-1, -1)
    assert eq.frame1 == eq.frame2 == (sd.model.WORLD,) * 4
    for i, name in enumerate(eq.names):
        e = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_EQUALITY, name)
        assert eq.active[i] == bool(mj.eq_active0[e])
        np.testing.assert_array_equal(eq.polycoef[i], mj.eq_data[e, :5])
        if eq.kind[i] == "tendon":
            t1, t2 = int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])
            assert model.tendons.names[eq.tendon1[i]] == mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_TENDON, t1)
            assert eq.tendon2[i] == -1 if t2 < 0 else (
                model.tendons.names[eq.tendon2[i]] == mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_TENDON, t2))

    closures = sd.LoopClosures.from_equality(model, eq)
    assert closures.kind == model.closures.kind == ("joint", "tendon", "tendon")  # tendon couplings last
    assert closures.names == model.closures.names == ("jj", "pair", "hold")
    assert closures.tendon1 == (-1, 2, 1) and closures.tendon2 == (-1, 0, -1)
    np.testing.assert_allclose(closures.reference[1:], [mj.tendon_length0[[3, 0]], [mj.tendon_length0[2], 0.0]],
                               rtol=0, atol=1e-15)
    assert sd.LoopClosures.from_equality(model, eq, inactive="keep").names == ("jj", "off", "pair", "hold")

    from sodyn.algorithms.constrained import closure_rows

    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT)
    d = mujoco.MjData(mj)
    d.qpos[:] = np.random.default_rng(3).uniform(-1, 1, mj.nq)
    mujoco.mj_forward(mj, d)
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    want = [d.efc_pos[rows & (d.efc_id == mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_EQUALITY, n))][0]
            for n in closures.names]
    residual = closure_rows(model, jnp.asarray(d.qpos), jnp.zeros(model.nv), closures).residual
    np.testing.assert_allclose(residual, want, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="equality 'pair' couples tendons, but the model has none"):
        sd.LoopClosures.from_equality(dataclasses.replace(model, tendons=None), eq)


OPTIONS = """
<mujoco model="options">
  <compiler angle="radian"/>
  <option density="1.2" viscosity="0.01"><flag gravity="disable" damper="disable"/></option>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="cart" pos="0.5 0.2 1.0" gravcomp="0.5">
      <freejoint name="root"/>
      <geom name="hull" type="box" size="0.2 0.1 0.05" mass="2"/>
      <geom name="drum" type="cylinder" size="0.05 0.1" mass="0.5"/>
      <site name="s1" pos="0.1 0 0"/>
      <body name="pole" pos="0 0 0.1">
        <joint name="hinge" type="hinge" axis="0 1 0" range="-1 1" stiffness="3" springref="0.2" ref="0.1"
               damping="0.7" frictionloss="0.3" armature="0.05"/>
        <geom name="rod" type="capsule" fromto="0 0 0 0 0 0.5" size="0.02" mass="0.3"/>
        <geom name="ghost" type="sphere" size="0.1" contype="0" conaffinity="0"/>
        <site name="s2" pos="0 0 0.5"/>
      </body>
    </body>
  </worldbody>
  <tendon><spatial name="cord"><site site="s1"/><site site="s2"/></spatial></tendon>
  <actuator>
    <motor name="push" joint="hinge" gear="2.5" ctrlrange="-1 1"/>
    <position name="servo" joint="hinge" kp="20" kv="1.5" forcerange="-4 4"/>
    <muscle name="muscle" tendon="cord"/>
  </actuator>
  <keyframe><key name="tilted" qpos="0 0 1 1 0 0 0 0.3" qvel="1 2 3 0.1 0.2 0.3 -1"/></keyframe>
</mujoco>
"""


def test_options_and_model_data():
    """Flags, springs, qpos0, actuators, collision geoms and keyframes become model data; the
    unmodelled elements are named in one warning."""
    with pytest.warns(sd.UnsupportedElementWarning) as rec:
        model = load_mjcf(OPTIONS)
    (w,) = [r.message for r in rec if isinstance(r.message, sd.LoadWarning)]
    for element in ("<tendon name='cord'>", "<actuator name='muscle'>"):
        assert element in str(w) and element in w.elements[[element in e for e in w.elements].index(True)]
    assert "gravcomp" not in str(w) and "fluid" not in str(w)
    assert float(model.fluid.density) == 1.2 and float(model.fluid.viscosity) == 0.01
    mj = mujoco.MjModel.from_xml_string(OPTIONS)
    np.testing.assert_allclose(model.gravcomp[0], [0.5 * 2.5, 0, 0, 0], atol=1e-15)   # the cart's two geoms
    np.testing.assert_array_equal(model.gravcomp[1], 0)
    np.testing.assert_array_equal(model.gravity, [0, 0, 0])  # <flag gravity="disable"/>
    np.testing.assert_array_equal(model.damping, 0)  # <flag damper="disable"/>
    np.testing.assert_array_equal(model.friction, [0] * 6 + [0.3])
    np.testing.assert_array_equal(model.armature, mj.dof_armature)
    np.testing.assert_array_equal(model.stiffness, [0] * 6 + [3])
    np.testing.assert_array_equal(model.spring_reference, mj.qpos_spring)
    np.testing.assert_array_equal([model.lower_limit[7], model.upper_limit[7]], [-1, 1])
    # neutral configuration = qpos0: the free body where the file puts it, the hinge at its ref
    np.testing.assert_array_equal(sd.neutral_configuration(model), mj.qpos0)
    np.testing.assert_allclose(mj.qpos0, [0.5, 0.2, 1, 1, 0, 0, 0, 0.1])
    act = model.actuators
    assert act.names == ("push", "servo") and act.kind == ("motor", "position")
    np.testing.assert_array_equal(act.gear, [2.5, 1])
    np.testing.assert_array_equal(act.gain, [1, 20])
    np.testing.assert_array_equal(act.bias, [[0, 0, 0], [0, -20, -1.5]])
    np.testing.assert_array_equal(act.ctrl_range, [[-1, 1], [-np.inf, np.inf]])
    np.testing.assert_array_equal(act.force_range, [[-np.inf, np.inf], [-4, 4]])
    assert act.dof == (6, 6)
    assert "drum" not in str(w)  # cylinders are collision geometry now
    g = model.geoms
    assert g.names == ("floor", "hull", "drum", "rod") and g.type == ("plane", "box", "cylinder", "capsule")
    assert g.body == (-1, model.body_id("cart"), model.body_id("cart"), model.body_id("pole"))
    np.testing.assert_allclose(g.size[2], [0.05, 0.1, 0])
    np.testing.assert_allclose(g.size[3], [0.02, 0.25, 0])
    np.testing.assert_allclose(g.translation[3], [0, 0, 0.25], atol=1e-15)
    kq, kv = model.keyframes["tilted"]
    np.testing.assert_array_equal(kq, mj.key_qpos[0])
    np.testing.assert_allclose(kv, v_from_mujoco(model, mj.key_qpos[0], mj.key_qvel[0]))
    with pytest.raises(ValueError, match="unknown keyframe 'home'"):
        model.keyframes["home"]
    # jit, vmap and grad see the new leaves
    f = jax.jit(lambda m: jnp.sum(m.actuators.gain) + jnp.sum(m.geoms.size) + jnp.sum(m.stiffness))
    np.testing.assert_allclose(jax.grad(f)(model).actuators.gain, [1, 1])
    batched = jax.tree_util.tree_map(lambda x: jnp.stack([x, 2 * x]), model)
    np.testing.assert_allclose(jax.vmap(f)(batched), [f(model), 2 * f(model)])


def test_constraint_flag_drops_constraint_data():
    xml = OPTIONS.replace('<flag gravity="disable" damper="disable"/>',
                          '<flag constraint="disable" actuation="disable"/>')
    with pytest.warns(sd.UnsupportedElementWarning) as rec:
        model = load_mjcf(xml)
    assert "drum" not in str(rec[0].message)  # no contacts: the cylinder is not missed
    assert len(model.geoms) == 0 and len(model.actuators) == 0
    np.testing.assert_array_equal(model.friction, 0)
    assert np.all(np.isinf(model.lower_limit)) and float(model.gravity[2]) == -9.81


def test_bad_mjcf(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.xml"):
        load_mjcf(tmp_path / "nope.xml")
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body><joint type='hinge'/></body></worldbody>")
    with pytest.raises(ValueError, match="bad.xml"):
        load_mjcf(bad)
    with pytest.raises(ValueError, match="MuJoCo could not compile"):
        load_mjcf("<mujoco><worldbody><body><joint type='screw'/></body></worldbody></mujoco>")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_mjcf(FLOATING)  # a clean model does not warn


def test_lock_joints_keeps_model_data():
    """Locking keeps geoms (re-expressed in the movable body), keyframes (without the locked
    coordinates) and the actuators of joints that stay movable; it names the fluid it drops."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = load_mjcf(OPTIONS)
    q = np.asarray(model.q_neutral).copy()
    q[7] = 0.4
    with pytest.warns(sd.IgnoredElementWarning, match=r"lock_joints: the reduced model has no Model\.fluid"):
        reduced = sd.lock_joints(model, ["hinge"], q)
    assert reduced.joint_names == ("root",) and len(reduced.actuators) == 0 and reduced.fluid is None
    assert reduced.geoms.names == model.geoms.names and reduced.geoms.body == (-1, 0, 0, 0)
    np.testing.assert_array_equal(reduced.keyframes.q, np.asarray(model.keyframes.q)[:, :7])
    np.testing.assert_array_equal(reduced.keyframes.v, np.asarray(model.keyframes.v)[:, :6])
    def world(m, q, i):  # world pose of geom i
        fk, k = jax.jit(lambda q: sd.forward_kinematics(m, q))(q), m.geoms.body[i]
        r, p = np.eye(3), np.zeros(3)
        if k >= 0:
            r, p = np.asarray(fk.body.rotation[k]), np.asarray(fk.body.translation[k])
        return r @ np.asarray(m.geoms.rotation[i]), r @ np.asarray(m.geoms.translation[i]) + p

    for i in range(3):  # geom world poses are unchanged
        for x, y in zip(world(model, q, i), world(reduced, q[:7], i), strict=True):
            np.testing.assert_allclose(x, y, atol=1e-12)
