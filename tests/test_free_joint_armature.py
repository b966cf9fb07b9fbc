"""A free joint's linear armature with MuJoCo's convention (issue 46).

MuJoCo adds a free joint's ``dof_armature`` ``a`` to ``M`` for the world-frame linear velocity
``ṗ``: in sodyn's body-frame coordinates ``a (v̇_lin + ω × v_lin)``, the diagonal armature
plus the velocity force of :func:`sodyn.algorithms.common.passive_joint_force`.  Oracle:
MuJoCo on a floating tree with equal linear armature, different angular armature and damping
everywhere, at a state with a large angular velocity (bias forces and accelerations to 1e-8);
every dynamics algorithm agrees with inverse dynamics; gradients of forward dynamics with
respect to ``v`` match central differences."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.algorithms.common import passive_joint_force
from sodyn.io import a_from_mujoco, a_to_mujoco, from_mujoco, tau_from_mujoco, tau_to_mujoco, v_from_mujoco

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")

XML = """<mujoco model="floating_tree">
  <option gravity="0.3 -0.2 -9.81"><flag contact="disable"/></option>
  <worldbody>
    <body name="torso" pos="0 0 1" quat="0.9 0.1 0.2 0.3">
      <joint name="root" type="free" armature="0.4" damping="0.2"/>
      <geom type="box" size="0.2 0.1 0.3" mass="5"/>
      <body name="upper_arm" pos="0.25 0 0.2">
        <joint name="shoulder" type="hinge" axis="0 1 0.2" armature="0.05" damping="0.3"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.04" mass="1.2"/>
        <body name="forearm" pos="0 0 -0.3">
          <joint name="elbow" type="hinge" axis="1 0 0" pos="0 0 0.02" armature="0.02" damping="0.1"/>
          <geom type="capsule" fromto="0 0 0 0.05 0 -0.25" size="0.03" mass="0.7"/>
        </body>
      </body>
      <body name="thigh" pos="0 0.1 -0.3">
        <joint name="hip" type="hinge" axis="0 1 0" armature="0.03"/>
        <geom type="capsule" fromto="0 0 0 0 0.02 -0.4" size="0.05" mass="2"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def compiled(angular_armature=(0.3, 0.2, 0.1), linear_armature=None):
    """The compiled MuJoCo model: equal linear armature (MJCF's one value per joint) unless
    ``linear_armature`` is given, and per-dof angular armature and damping."""
    mj = mujoco.MjModel.from_xml_string(XML)
    mj.dof_armature[3:6] = angular_armature
    mj.dof_damping[3:6] = [0.5, 0.4, 0.3]
    if linear_armature is not None:
        mj.dof_armature[0:3] = linear_armature
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    return mj


def mujoco_state(mj, seed):
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(mj)
    d.qpos[:3] = rng.normal(size=3)
    quat = rng.normal(size=4)
    d.qpos[3:7] = quat / np.linalg.norm(quat)
    d.qpos[7:] = rng.uniform(-1.0, 1.0, mj.nq - 7)
    d.qvel[:] = rng.normal(size=mj.nv)
    d.qvel[3:6] = 3.0 * rng.normal(size=3)  # a large body angular velocity: the velocity force matters
    return d, rng


@pytest.fixture(scope="module")
def floating():
    mj = compiled()
    with warnings.catch_warnings():
        warnings.simplefilter("error", sd.LoadWarning)  # equal linear values: exact, no warning
        model = from_mujoco(mj)
    return mj, model


@pytest.fixture(scope="module")
def fns(floating):
    _, model = floating
    return dict(
        fd=jax.jit(lambda q, v, tau: sd.forward_dynamics(model, q, v, tau)),
        fd_world=jax.jit(lambda q, v, tau: sd.forward_dynamics(model, q, v, tau, convention="world")),
        id=jax.jit(lambda q, v, a: sd.inverse_dynamics(model, q, v, a)),
        bias=jax.jit(lambda q, v: sd.bias_forces(model, q, v)),
        base=jax.jit(lambda q, v, tau: sd.base_invariant_forward_dynamics(model, q, v, tau).qdd),
    )


@pytest.mark.fast
def test_passive_force_is_the_armature_velocity_force(floating):
    """Damping ⊙ v plus ``a ω × v_lin`` on the free joint's linear rows (angular rows: ``v × a v = 0``)."""
    _, model = floating
    v = np.random.default_rng(0).normal(size=model.nv)
    expected = np.asarray(model.damping) * v
    expected[3:6] += 0.4 * np.cross(v[:3], v[3:6])
    np.testing.assert_allclose(passive_joint_force(model, jnp.asarray(v)), expected, atol=1e-14)


@pytest.mark.fast
def test_bias_and_forward_dynamics_against_mujoco(floating, fns):
    mj, model = floating
    d, rng = mujoco_state(mj, 46)
    tau = rng.normal(size=model.nv)
    q = d.qpos.copy()
    v = np.asarray(v_from_mujoco(model, q, d.qvel))
    assert np.linalg.norm(0.4 * np.cross(v[:3], v[3:6])) > 0.5  # the term the test is about
    # forward dynamics: MuJoCo's qacc under the same generalised force
    d.qfrc_applied[:] = np.asarray(tau_to_mujoco(model, q, tau))
    mujoco.mj_forward(mj, d)
    for name in ("fd", "fd_world", "base"):
        qdd = np.asarray(fns[name](q, v, tau))
        np.testing.assert_allclose(a_to_mujoco(model, q, v, qdd), d.qacc, atol=1e-8, err_msg=name)
    # bias forces: τ at v̇ = 0 is M qacc₀ + qfrc_bias − qfrc_passive in MuJoCo's coordinates
    M = np.zeros((mj.nv, mj.nv))
    mujoco.mj_fullM(mj, d, M)
    qacc0 = np.asarray(a_to_mujoco(model, q, v, np.zeros(model.nv)))
    c_mj = M @ qacc0 + d.qfrc_bias - d.qfrc_passive
    np.testing.assert_allclose(fns["bias"](q, v), tau_from_mujoco(model, q, c_mj), atol=1e-8)
    # inverse dynamics at MuJoCo's acceleration gives back the applied force
    a = np.asarray(a_from_mujoco(model, q, v, d.qacc))
    np.testing.assert_allclose(fns["id"](q, v, a), tau, atol=1e-8)


@pytest.mark.fast
def test_every_dynamics_agrees_with_inverse_dynamics(floating, fns):
    """Forward, hybrid and constrained dynamics at one state: ``ID(q, v, θ̈) = τ`` (plus the
    constraint force ``G_c* λ``)."""
    mj, model = floating
    d, rng = mujoco_state(mj, 7)
    q = d.qpos.copy()
    v = np.asarray(v_from_mujoco(model, q, d.qvel))
    tau = rng.normal(size=model.nv)
    qdd = np.asarray(fns["fd"](q, v, tau))
    np.testing.assert_allclose(fns["id"](q, v, qdd), tau, atol=1e-9)
    # hybrid: the free joint's linear dofs and the elbow prescribed, the rest free
    mask = np.zeros(model.nv, bool)
    mask[[3, 4, 5, 7]] = True
    h = jax.jit(lambda q, v, a, t: sd.hybrid_dynamics(model, q, v, tuple(mask), a, t))(q, v, qdd, tau)
    np.testing.assert_allclose(h.a, qdd, atol=1e-9)
    np.testing.assert_allclose(h.tau, tau, atol=1e-9)
    # constrained: the hand's tip pinned to where it is
    closures = sd.LoopClosures.point(model, "forearm", "world", q=q, anchor1=jnp.array([0.05, 0.0, -0.25]))
    for method in ("augmented", "projected"):
        solve = jax.jit(lambda q, v, t, m=method: sd.constrained_forward_dynamics(model, q, v, t, closures, method=m))
        a_c, cf = solve(q, v, tau)
        np.testing.assert_allclose(fns["id"](q, v, a_c), tau + cf.generalized, atol=1e-7, err_msg=method)


@pytest.mark.fast
def test_forward_dynamics_gradient_in_v(floating, fns):
    """``∂θ̈/∂v`` (forward and reverse mode) against central differences."""
    mj, model = floating
    d, rng = mujoco_state(mj, 3)
    q = d.qpos.copy()
    v = np.asarray(v_from_mujoco(model, q, d.qvel))
    tau = rng.normal(size=model.nv)
    fd = fns["fd"]
    h = 1e-6
    fdiff = np.stack([(np.asarray(fd(q, v + h * e, tau)) - np.asarray(fd(q, v - h * e, tau))) / (2 * h)
                      for e in np.eye(model.nv)], axis=1)
    jac_fwd = np.asarray(jax.jit(jax.jacfwd(lambda v: sd.forward_dynamics(model, q, v, tau)))(v))
    jac_rev = np.asarray(jax.jit(jax.jacrev(lambda v: sd.forward_dynamics(model, q, v, tau)))(v))
    scale = np.abs(fdiff).max()
    np.testing.assert_allclose(jac_fwd, fdiff, atol=1e-7 * scale)
    np.testing.assert_allclose(jac_rev, jac_fwd, atol=1e-12 * scale)


@pytest.mark.fast
def test_unequal_linear_values_still_warn():
    mj = compiled(linear_armature=[0.4, 0.5, 0.6])
    with pytest.warns(sd.ApproximatedElementWarning, match=r"'root' have unequal armature values") as rec:
        from_mujoco(mj)
    (w,) = [r.message for r in rec if isinstance(r.message, sd.ApproximatedElementWarning)]
    assert w.elements == ("root",)
    mj = compiled()
    mj.dof_damping[0:3] = [0.2, 0.3, 0.2]
    with pytest.warns(sd.ApproximatedElementWarning, match=r"'root' have unequal damping values"):
        from_mujoco(mj)
