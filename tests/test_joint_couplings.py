"""Joint couplings (``LoopClosures`` kind ``"joint"``, MJCF ``<equality><joint>``): the rows
against their analytic form and MuJoCo's ``efc_pos``/``efc_J``, closed-chain dynamics against a
dense KKT solve, a simulated rollout, gradients with respect to the polynomial, bad input."""

from __future__ import annotations

import functools
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import sodyn as sd
from sodyn.algorithms.constrained import (
    closure_rows,
    constrained_forward_dynamics,
    constraint_residual,
)
from sodyn.algorithms.inverse_dynamics import bias_forces
from sodyn.algorithms.mass_matrix import mass_matrix
from sodyn.constraints import LoopClosures
from sodyn.io.mjcf import q_to_mujoco, v_to_mujoco

mujoco = pytest.importorskip("mujoco")

#: A slider carrying two hinge chains (all joints one-dof, so ``q̇ = v`` and MuJoCo's ``qvel`` is
#: sodyn's ``v``); non-zero ``ref`` on the slider and ``h1`` makes ``qpos0`` (the couplings'
#: reference values) non-zero.  The equalities interleave couplings with a ``connect``.
XML = """
<mujoco model="coupled">
  <option><flag contact="disable"/></option>
  <worldbody>
  <body name="base"><joint name="slide" type="slide" axis="1 0 0" ref="0.05"/>
    <geom type="box" size="0.1 0.05 0.05" mass="1"/>
    <body name="l1" pos="0 0 -0.05"><joint name="h1" axis="0 1 0" ref="20"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.5"/>
      <body name="l2" pos="0 0 -0.3"><joint name="h2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.05 0 -0.25" size="0.02" mass="0.4"/>
        <body name="l3" pos="0.05 0 -0.25"><joint name="h3" axis="1 0 0"/>
          <geom type="capsule" fromto="0 0 0 0 0.05 -0.2" size="0.02" mass="0.3"/></body></body></body>
    <body name="r1" pos="0.1 0 -0.05"><joint name="h4" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0 0.1 -0.3" size="0.02" mass="0.5"/>
      <body name="r2" pos="0 0.1 -0.3"><joint name="h5" axis="0 0.6 0.8"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 -0.2" size="0.02" mass="0.3"/></body></body>
  </body></worldbody>
  <equality>
    <joint name="linear" joint1="h2" joint2="h1" polycoef="0.1 -0.5 0 0 0"/>
    <connect name="tip" body1="l3" body2="r2" anchor="0 0.05 -0.2"/>
    <joint name="cubic" joint1="h5" joint2="slide" polycoef="0.05 0.3 -0.2 0.4 0.1"/>
    <joint name="lock" joint1="h3" polycoef="0.3 0 0 0 0"/>
  </equality>
</mujoco>"""

CONSTRAINTS_XML = os.path.join(os.path.dirname(mujoco.__file__), "mjx", "test_data", "constraints.xml")

_rows = jax.jit(closure_rows)
_cfd = jax.jit(constrained_forward_dynamics, static_argnames=("method",))
_dense = jax.jit(lambda model, q, v: (mass_matrix(model, q), bias_forces(model, q, v)))


@functools.cache
def _model():
    return sd.load_mjcf(XML, with_constraints=True)


@functools.cache
def _couplings():
    """A linear and a cubic coupling (the second joint of the cubic one a slider with a
    non-zero reference), built with :meth:`LoopClosures.joint_coupling`."""
    model, _ = _model()
    return (LoopClosures.joint_coupling(model, "h2", "h1", (0.1, -0.5))
            + LoopClosures.joint_coupling(model, "h5", "slide", (0.05, 0.3, -0.2, 0.4, 0.1)))


def _analytic(model, closures, q, v):
    """``𝔡``, ``G_c`` and ``Ġ_c θ̇`` of joint couplings on one-dof joints, by hand."""
    q, v = np.asarray(q), np.asarray(v)
    res, jac, bias = [], [], []
    for c, ref, j1, j2 in zip(np.asarray(closures.polycoef), np.asarray(closures.reference), closures.joint1,
                              closures.joint2):
        i1 = model.joint_q_slice(j1).start
        row = np.zeros(model.nv)
        row[i1] = 1.0
        if j2 < 0:
            res.append(q[i1] - ref[0] - c[0])
            bias.append(0.0)
        else:
            i2 = model.joint_q_slice(j2).start
            p = np.polynomial.Polynomial(c)
            x = q[i2] - ref[1]
            res.append(q[i1] - ref[0] - p(x))
            row[i2] -= p.deriv()(x)
            bias.append(-p.deriv(2)(x) * v[i2] ** 2)
        jac.append(row)
    return np.array(res), np.array(jac), np.array(bias)


def _kkt(model, q, v, tau, g, gdot_v):
    """``[[𝓜, G_cᵀ], [G_c, 0]] [θ̈; −λ] = [τ − C; −Ġ_c θ̇]``: ``θ̈`` and ``λ``."""
    m, c = (np.asarray(x) for x in _dense(model, q, v))
    n_c = g.shape[0]
    sol = np.linalg.solve(np.block([[m, g.T], [g, np.zeros((n_c, n_c))]]),
                          np.concatenate([np.asarray(tau) - c, -gdot_v]))
    return sol[:model.nv], -sol[model.nv:]


def _on_manifold(model, closures, q):
    """``q`` moved onto the closures (``𝔡 = 0``) by Newton steps."""
    for _ in range(8):
        rows = _rows(model, q, jnp.zeros(model.nv), closures)
        res, g = np.asarray(rows.residual), np.asarray(rows.jacobian)
        q = sd.integrate(model, q, jnp.asarray(-np.linalg.lstsq(g, res, rcond=None)[0]))
    return q


# ---------------------------------------------------------------------------
# rows and dynamics
# ---------------------------------------------------------------------------


@pytest.mark.fast
def test_rows_and_dynamics_against_dense_kkt():
    """At random states (off the couplings: no stabilization) the rows equal their analytic form
    and θ̈, λ equal a dense KKT solve; the projected method agrees."""
    model, _ = _model()
    closures = _couplings()
    assert closures.kind == ("joint", "joint") and closures.n_rows == 2
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, tau = (jnp.asarray(rng.normal(size=model.nv)) for _ in range(3))
        rows = _rows(model, q, v, closures)
        res, g, gdot_v = _analytic(model, closures, q, v)
        np.testing.assert_allclose(rows.residual, res, atol=1e-14)
        np.testing.assert_allclose(rows.jacobian, g, atol=1e-14)
        np.testing.assert_allclose(rows.bias, gdot_v, atol=1e-13)
        qdd, f = _cfd(model, q, v, tau, closures, stabilization=(0.0, 0.0))
        qdd_p, _ = _cfd(model, q, v, tau, closures, stabilization=(0.0, 0.0), method="projected")
        qdd_k, lam_k = _kkt(model, q, v, tau, g, gdot_v)
        scale = max(1.0, np.abs(qdd_k).max())
        np.testing.assert_allclose(qdd, qdd_k, atol=1e-10 * scale, rtol=0)
        np.testing.assert_allclose(qdd_p, qdd_k, atol=1e-10 * scale, rtol=0)
        np.testing.assert_allclose(f.lambda_, lam_k, atol=1e-10 * max(1.0, np.abs(lam_k).max()), rtol=0)
        np.testing.assert_allclose(f.generalized, g.T @ lam_k, atol=1e-10 * max(1.0, np.abs(lam_k).max()))


@pytest.mark.fast
def test_mixed_closures_keep_their_order():
    """Couplings interleaved with a point closure (from MJCF): the rows are each closure's rows,
    in the closures' order, and θ̈, λ equal a dense KKT solve with Baumgarte terms."""
    model, eq = _model()
    closures = LoopClosures.from_equality(model, eq)
    assert closures.kind == ("joint", "point", "joint", "joint") and closures.n_rows == 6
    assert closures.names == ("linear", "tip", "cubic", "lock")
    rng = np.random.default_rng(1)
    q, v, tau = (jnp.asarray(rng.normal(size=model.nv)) for _ in range(3))
    rows = _rows(model, q, v, closures)
    point = _rows(model, q, v, LoopClosures.point(model, "l3", "r2", anchor1=eq.anchor1[1], anchor2=eq.anchor2[1]))
    couplings = closures.concatenate(*(_only(closures, i) for i in (0, 2, 3)))
    res, g, gdot_v = _analytic(model, couplings, q, v)
    order = [0, 4, 5]  # the couplings' rows among the six
    np.testing.assert_allclose(rows.residual[np.array(order)], res, atol=1e-14)
    np.testing.assert_allclose(rows.jacobian[np.array(order)], g, atol=1e-14)
    np.testing.assert_allclose(rows.bias[np.array(order)], gdot_v, atol=1e-13)
    # the point's rows sit at 1..3 (the order is [joint, point, joint, joint], the point has 3 rows)
    np.testing.assert_allclose(rows.residual[1:4], point.residual, atol=1e-14)
    np.testing.assert_allclose(rows.jacobian[1:4], point.jacobian, atol=1e-14)
    np.testing.assert_allclose(rows.bias[1:4], point.bias, atol=1e-13)
    # dynamics without the lock (with it, six rows on six dofs leave 𝓜 no freedom and G_c 𝓜⁻¹ G_c*
    # a condition number of 1e8): θ̈, λ of a dense KKT solve with Baumgarte terms
    closures = closures.concatenate(*(_only(closures, i) for i in (0, 1, 2)))
    rows = _rows(model, q, v, closures)
    qdd, f = _cfd(model, q, v, tau, closures, stabilization=(3.0, 5.0))
    g = np.asarray(rows.jacobian)
    target = -np.asarray(rows.bias) - 3.0 * g @ np.asarray(v) - 5.0 * np.asarray(rows.residual)
    qdd_k, lam_k = _kkt(model, q, v, tau, g, -target)
    np.testing.assert_allclose(qdd, qdd_k, atol=1e-10 * np.abs(qdd_k).max(), rtol=0)
    np.testing.assert_allclose(f.lambda_, lam_k, atol=1e-10 * np.abs(lam_k).max(), rtol=0)


def _only(closures: LoopClosures, i: int) -> LoopClosures:
    """Closure ``i`` of ``closures`` on its own."""
    leaves = {k: getattr(closures, k)[i:i + 1] for k in ("anchor1", "anchor2", "rotation", "length", "polycoef",
                                                         "reference")}
    statics = {k: getattr(closures, k)[i:i + 1] for k in ("kind", "frame1", "frame2", "joint1", "joint2", "names")}
    return LoopClosures(**leaves, **statics)


# ---------------------------------------------------------------------------
# MuJoCo
# ---------------------------------------------------------------------------


def _mujoco_equality_rows(mj, qpos):
    """MuJoCo's equality rows at ``qpos``: ``efc_id``, ``efc_pos`` and ``efc_J`` (dense)."""
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                               | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS)
    mj.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    d = mujoco.MjData(mj)
    d.qpos[:] = qpos
    mujoco.mj_forward(mj, d)
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    jac = np.asarray(d.efc_J).reshape(d.nefc, mj.nv)
    return d.efc_id[rows], d.efc_pos[rows], jac[rows]


@pytest.mark.fast
def test_rows_against_mujoco():
    """All the equality rows (two couplings, a single-joint lock and a connect, interleaved)
    equal MuJoCo's ``efc_pos`` and ``efc_J`` rows, in the same order and with the same sign."""
    model, eq = _model()
    closures = LoopClosures.from_equality(model, eq)
    mj = mujoco.MjModel.from_xml_string(XML)
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = jnp.asarray(np.asarray(model.q_neutral) + rng.normal(scale=0.5, size=model.nv))
        ids, pos, jac = _mujoco_equality_rows(mj, np.asarray(q_to_mujoco(model, q)))
        assert ids.tolist() == [0, 1, 1, 1, 2, 3]
        rows = _rows(model, q, jnp.zeros(model.nv), closures)
        np.testing.assert_allclose(rows.residual, pos, atol=1e-12)
        np.testing.assert_allclose(rows.jacobian, jac, atol=1e-12)


@pytest.mark.fast
@pytest.mark.skipif(not os.path.exists(CONSTRAINTS_XML), reason="MuJoCo's mjx test data is not installed")
def test_rows_against_mujoco_constraints_xml():
    """MuJoCo's ``constraints.xml`` (free and ball joints beside the coupled hinges): the
    coupling's residual and Jacobian (MuJoCo's ``qvel`` mapped to sodyn's ``v``) equal MuJoCo's
    rows at random configurations and at the file's keyframes."""
    with pytest.warns(UserWarning):
        model, eq = sd.load_mjcf(CONSTRAINTS_XML, with_constraints=True)
    closures = LoopClosures.from_equality(model, eq)
    assert "joint" in closures.kind
    k = closures.kind.index("joint")
    row = sum(sd.constraints.ROWS[kind] for kind in closures.kind[:k])
    mj = mujoco.MjModel.from_xml_path(CONSTRAINTS_XML)
    e = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_EQUALITY, closures.names[k])
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    states = [sd.random_configuration(model, key) for key in keys] + [jnp.asarray(mj.key_qpos[i]) for i in (0, 1)]

    @jax.jit
    def coupling_row(q):  # the coupling's residual and Jacobian row, and ∂qvel/∂v at q
        zero = jnp.zeros(model.nv)
        rows = closure_rows(model, q, zero, closures)
        return rows.residual[row], rows.jacobian[row], jax.jacfwd(lambda w: v_to_mujoco(model, q, w))(zero)

    for q in states:
        ids, pos, jac = _mujoco_equality_rows(mj, np.asarray(q_to_mujoco(model, q)))
        res, g, to_qvel = coupling_row(q)
        np.testing.assert_allclose(res, pos[ids == e][0], atol=1e-12)
        np.testing.assert_allclose(g, jac[ids == e][0] @ np.asarray(to_qvel), atol=1e-12)


# ---------------------------------------------------------------------------
# simulation, gradients, bad input
# ---------------------------------------------------------------------------


def test_rollout_keeps_the_couplings():
    """1000 steps (dt = 1 ms, the default implicit stepper) under gravity: the couplings hold to
    1e-8 while the joints swing."""
    model, _ = _model()
    closures = _couplings() + LoopClosures.joint_coupling(model, "h3", None, (0.3,))
    q0 = _on_manifold(model, closures, model.q_neutral + jnp.array([0.0, 0.8, 0.0, 0.0, 0.6, 0.0]))
    assert np.abs(constraint_residual(model, q0, closures)).max() < 1e-13
    state = sd.State.initial(model, q0, jnp.zeros(model.nv))
    out = jax.jit(lambda s: sd.rollout(model, s, None, 1e-3, 1000, constraints=closures))(state)
    residual = jax.jit(jax.vmap(lambda q: constraint_residual(model, q, closures)))(out.states.q)
    assert np.abs(out.states.v).max() > 1.0  # it does move
    assert np.abs(residual).max() < 1e-8


def test_grad_with_respect_to_polycoef_and_reference():
    """jit of grad of a vmapped (two states) objective with respect to the couplings'
    polynomial coefficients and reference values equals float64 central differences."""
    model, _ = _model()
    closures = _couplings()
    rng = np.random.default_rng(5)
    qs, vs, ts = (jnp.asarray(rng.normal(size=(2, model.nv))) for _ in range(3))
    w = jnp.asarray(rng.normal(size=model.nv))

    def objective(params):
        poly, ref = params
        c = eqx.tree_at(lambda x: (x.polycoef, x.reference), closures, (poly, ref))

        def one(q, v, tau):
            qdd, f = constrained_forward_dynamics(model, q, v, tau, c)
            return jnp.dot(w, qdd) + 0.1 * jnp.dot(w, f.generalized)

        return jnp.sum(jax.vmap(one)(qs, vs, ts))

    params = (closures.polycoef, closures.reference)
    grads = jax.jit(jax.grad(objective))(params)
    value = jax.jit(objective)
    flat, unflatten = ravel_pytree(params)
    g_flat = ravel_pytree(grads)[0]
    h = 1e-6
    fd = np.array([(value(unflatten(flat.at[j].add(h))) - value(unflatten(flat.at[j].add(-h)))) / (2 * h)
                   for j in range(flat.size)])
    assert np.all(np.isfinite(g_flat)) and np.abs(g_flat).max() > 0
    np.testing.assert_allclose(g_flat, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())


@pytest.mark.fast
def test_bad_input():
    """Coupling a free or ball joint, an unknown joint, a joint with itself, or a wrong
    polynomial raises ``ValueError`` naming it; ``from_equality(joint=...)`` still raises or
    skips on request."""
    xml = """<mujoco><worldbody>
      <body name="free"><freejoint name="float"/><geom type="sphere" size="0.1" mass="1"/>
        <body name="arm" pos="0.2 0 0"><joint name="hinge" axis="0 1 0"/>
          <geom type="sphere" size="0.05" mass="0.2"/>
          <body name="ballbody" pos="0.2 0 0"><joint name="ball" type="ball"/>
            <geom type="sphere" size="0.05" mass="0.2"/></body></body></body>
      </worldbody></mujoco>"""
    model = sd.load_mjcf(xml)
    with pytest.raises(ValueError, match="joint 'float' is a free joint"):
        LoopClosures.joint_coupling(model, "float", "hinge")
    with pytest.raises(ValueError, match="joint 'ball' is a spherical joint"):
        LoopClosures.joint_coupling(model, "hinge", "ball")
    with pytest.raises(ValueError, match="unknown joint 'nope'"):
        LoopClosures.joint_coupling(model, "nope")
    with pytest.raises(ValueError, match="'hinge' with itself"):
        LoopClosures.joint_coupling(model, "hinge", "hinge")
    with pytest.raises(ValueError, match="polycoef must hold 1 to 5"):
        LoopClosures.joint_coupling(model, "hinge", polycoef=np.zeros(6))
    with pytest.raises(ValueError, match=r"reference must be the pair"):
        LoopClosures.joint_coupling(model, "hinge", reference=0.1)
    coupled, eq = _model()
    with pytest.raises(NotImplementedError, match="'linear' is a joint coupling"):
        LoopClosures.from_equality(coupled, eq, joint="raise")
    with pytest.warns(UserWarning, match="left out"):
        assert LoopClosures.from_equality(coupled, eq, joint="skip").kind == ("point",)
    with pytest.raises(ValueError, match="joint must be 'convert', 'raise' or 'skip'"):
        LoopClosures.from_equality(coupled, eq, joint="keep")
    # closures built for another model: the joint index is checked
    other = LoopClosures.joint_coupling(coupled, "h5", "h4")
    with pytest.raises(ValueError, match="another model"):
        constrained_forward_dynamics(model, model.q_neutral, jnp.zeros(model.nv), jnp.zeros(model.nv), other)
