"""Loop closures and closed-chain forward dynamics (Jain Ch. 11) against Pinocchio 4's
``constraintDynamics``, the dense projected equations, a dense KKT solve and automatic
differentiation; drift of a simulated four-bar."""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mechanisms import DELTA, FOURBAR

import sodyn as sd
from sodyn.algorithms.constrained import (
    closure_rows,
    constrained_forward_dynamics,
    constraint_jacobian,
    constraint_residual,
)
from sodyn.algorithms.frame_jacobians import frame_jacobians
from sodyn.algorithms.inverse_dynamics import bias_forces
from sodyn.algorithms.kinematics import body_accelerations
from sodyn.algorithms.mass_matrix import mass_matrix
from sodyn.constraints import LoopClosures
from sodyn.io.mjcf import q_to_mujoco, v_to_mujoco
from sodyn.simulate.rollout import rollout
from sodyn.simulate.state import State
from sodyn.simulate.stepping import step_and_forces

pin = pytest.importorskip("pinocchio")


# ---------------------------------------------------------------------------
# fixtures: models, Pinocchio, consistent states
# ---------------------------------------------------------------------------


@functools.cache
def _setup(name: str):
    import pathlib
    import tempfile

    xml = {"fourbar": FOURBAR, "delta": DELTA}[name]
    model, eq = sd.load_mjcf(xml, with_constraints=True)
    closures = LoopClosures.from_equality(model, eq)
    path = pathlib.Path(tempfile.mkdtemp()) / f"{name}.xml"
    path.write_text(xml)
    pm, cons, _ = pin.buildModelAndConstraintsFromMJCF(str(path))
    rc = [pin.convertToRigidConstraintModel(pm, c) for c in cons]
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for r in rc:
        models.append(r)
        datas.append(r.createData())
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, models, datas)
    assert tuple(pm.names)[1:] == model.joint_names  # same joint (and so q/v) order
    return model, closures, (pm, pd, models, datas)


def _q_to_pin(model, q) -> np.ndarray:
    """sodyn q → Pinocchio's (MJCF) q: MuJoCo's qpos with ball quaternions as [x, y, z, w]."""
    qm = np.asarray(q_to_mujoco(model, q), float).copy()
    for k, t in enumerate(model.joint_types):
        if t == "spherical":
            s = int(model.topology.q_start[k])
            qm[s:s + 4] = np.roll(qm[s:s + 4], -1)
    return qm


_residual = jax.jit(constraint_residual)
_jacobian = jax.jit(constraint_jacobian)
_integrate = jax.jit(sd.integrate)
_rows = jax.jit(closure_rows)


def _consistent_state(model, closures, seed: int, spread: float = 0.3):
    """A random ``(q, v, τ)`` on the closures (``𝔡 = 0``, ``G_c v = 0``) by Newton steps."""
    rng = np.random.default_rng(seed)
    q = _integrate(model, model.q_neutral, jnp.asarray(rng.uniform(-spread, spread, model.nv)))
    for _ in range(12):
        g = np.asarray(_jacobian(model, q, closures))
        res = np.asarray(_residual(model, q, closures))
        q = _integrate(model, q, jnp.asarray(-np.linalg.lstsq(g, res, rcond=1e-10)[0]))
    assert np.abs(_residual(model, q, closures)).max() < 1e-13
    g = np.asarray(_jacobian(model, q, closures))
    _, s, vt = np.linalg.svd(g)
    null = vt[(s > 1e-9 * s[0]).sum():]
    v = jnp.asarray(null.T @ rng.normal(size=null.shape[0]))
    return q, v, jnp.asarray(0.1 * rng.normal(size=model.nv))


_cfd = jax.jit(constrained_forward_dynamics, static_argnames=("method", "iterations"))


def _pinocchio(name, q, v, tau, model):
    pm, pd, models, datas = _setup(name)[2]
    qp = _q_to_pin(model, q)
    vp, tp = np.asarray(v_to_mujoco(model, q, v)), np.asarray(tau)
    a = pin.constraintDynamics(pm, pd, qp, vp, tp, models, datas, pin.ProximalSettings(1e-14, 1e-10, 50))
    a = np.array(a)
    generalized = np.array(pin.rnea(pm, pm.createData(), qp, vp, a)) - tp  # Jᵀλ
    data = pm.createData()
    pin.forwardKinematics(pm, data, qp)
    frames = [data.oMi[m.joint1_id] * m.joint1_placement for m in models]
    return a, generalized, np.array(pd.lambda_c), frames


# ---------------------------------------------------------------------------
# oracles
# ---------------------------------------------------------------------------


@pytest.mark.fast
@pytest.mark.parametrize("name", ["fourbar", "delta"])
def test_mjcf_loops_against_pinocchio_and_projected(name):
    """q̈ and G_c*λ equal Pinocchio's constraintDynamics (the four-bar's 3D point is redundant:
    proximal settings); augmented = projected; λ itself where the rows have full rank."""
    model, closures, _ = _setup(name)
    for seed in range(3):
        q, v, tau = _consistent_state(model, closures, seed)
        qdd, f = _cfd(model, q, v, tau, closures)
        qdd_p, f_p = _cfd(model, q, v, tau, closures, method="projected")
        np.testing.assert_allclose(qdd, qdd_p, atol=1e-10, rtol=0)
        np.testing.assert_allclose(f.generalized, f_p.generalized, atol=1e-10, rtol=0)
        a_pin, gen_pin, lam_pin, frames = _pinocchio(name, q, v, tau, model)
        np.testing.assert_allclose(qdd, a_pin, atol=1e-8, rtol=0)
        np.testing.assert_allclose(f.generalized, gen_pin, atol=1e-8, rtol=0)
        assert np.all(np.isfinite(f.lambda_))
        g = np.asarray(_jacobian(model, q, closures))
        if np.linalg.matrix_rank(g) == closures.n_rows:  # Pinocchio's λ: in frame 1's local axes
            lam_local = np.concatenate([m.rotation.T @ np.asarray(f.lambda_[3 * i:3 * i + 3])
                                        for i, m in enumerate(frames)])
            np.testing.assert_allclose(lam_local, lam_pin, atol=1e-8, rtol=0)
            np.testing.assert_allclose(f.lambda_, f_p.lambda_, atol=1e-9, rtol=0)
        else:
            assert name == "fourbar" and np.linalg.matrix_rank(g) == 2
        np.testing.assert_allclose(g @ np.asarray(qdd), -np.asarray(_rows(model, q, v, closures).bias),
                                   atol=1e-9)


def _chain_model():
    """A branched tree of hinges (two 4-link arms on a slider) for weld and distance closures."""
    cap = '<geom type="capsule" fromto="0 0 0 {}" size="0.02" mass="{}"/>'
    xml = f"""
<mujoco><worldbody>
  <body name="cart"><joint name="slide" type="slide" axis="1 0.2 0"/>
    <geom type="box" size="0.1 0.1 0.05" mass="1"/>
    <body name="a1" pos="0.1 0 0"><joint name="a1" axis="0 1 0"/>{cap.format("0 0 -0.3", 0.5)}
      <body name="a2" pos="0 0 -0.3"><joint name="a2" axis="1 0 0"/>{cap.format("0.1 0 -0.3", 0.4)}
        <body name="a3" pos="0.1 0 -0.3"><joint name="a3" axis="0 0.6 0.8"/>{cap.format("0 0.1 -0.2", 0.3)}
          <body name="a4" pos="0 0.1 -0.2"><joint name="a4" axis="1 0 0"/>{cap.format("0 0 -0.1", 0.2)}
            <site name="tip" pos="0 0 -0.1"/></body></body></body></body>
    <body name="b1" pos="-0.1 0 0"><joint name="b1" axis="0 1 0"/>{cap.format("0 0 -0.3", 0.5)}
      <body name="b2" pos="0 0 -0.3"><joint name="b2" axis="1 0 0"/>{cap.format("-0.1 0 -0.3", 0.4)}
        <body name="b3" pos="-0.1 0 -0.3"><joint name="b3" axis="0 0 1"/>{cap.format("0.1 0 -0.2", 0.3)}
          <body name="b4" pos="0.1 0 -0.2"><joint name="b4" axis="0 1 0"/>{cap.format("0.1 0 0", 0.2)}
        </body></body></body></body>
  </body></worldbody></mujoco>"""
    return sd.load_mjcf(xml)


@functools.cache
def _weld_and_distance():
    model = _chain_model()
    q0 = _integrate(model, model.q_neutral, jnp.asarray(np.random.default_rng(3).uniform(-0.5, 0.5, model.nv)))
    closures = (LoopClosures.weld(model, "a4", "b4", anchor1=jnp.array([0.0, 0.02, -0.05]), q=q0)
                + LoopClosures.distance(model, "a2", "world", q=q0, anchor2=jnp.array([0.3, 0.1, 0.2])))
    return model, q0, closures


@jax.jit
def _dense(model, q, v):
    """𝓜, C, the bodies' local Jacobians and their accelerations at θ̈ = 0 (world at −g)."""
    return (mass_matrix(model, q), bias_forces(model, q, v), frame_jacobians(model, q, list(model.body_names)),
            body_accelerations(model, q, v, jnp.zeros(model.nv, q.dtype), gravity=True))


def _kkt(model, q, v, tau, g, target, extra_m=None, extra_rhs=None, f_ext=None):
    """``θ̈`` and ``λ`` of the dense KKT system ``[𝓜 −G_cᵀ; G_c 0] [θ̈; λ] = [τ − C; target]``."""
    m = np.asarray(mass_matrix(model, q)) + (0 if extra_m is None else extra_m)
    rhs = np.asarray(tau) - np.asarray(bias_forces(model, q, v, f_ext)) + (0 if extra_rhs is None else extra_rhs)
    n_c = g.shape[0]
    kkt = np.block([[m, -g.T], [g, np.zeros((n_c, n_c))]])
    sol = np.linalg.solve(kkt, np.concatenate([rhs, target]))
    return sol[:model.nv], sol[model.nv:]


def test_weld_and_distance_against_dense_oracles():
    """A weld between two arms' tips and a distance to a world point: augmented =
    projected = a dense KKT solve (also off the constraint manifold, with Baumgarte terms);
    G_c = ∂𝔡/∂θ and Ġ_c θ̇ = d/dt (G_c θ̇) by automatic differentiation."""
    model, q0, closures = _weld_and_distance()
    assert closures.n_rows == 7 and len(closures) == 2 and model.nv == 9
    np.testing.assert_allclose(_residual(model, q0, closures), 0.0, atol=1e-12)
    rng = np.random.default_rng(4)
    for q in (q0, _integrate(model, q0, jnp.asarray(0.05 * rng.normal(size=model.nv)))):
        v, tau = jnp.asarray(rng.normal(size=model.nv)), jnp.asarray(rng.normal(size=model.nv))
        qdd, f = _cfd(model, q, v, tau, closures, stabilization=(3.0, 5.0))
        qdd_p, f_p = _cfd(model, q, v, tau, closures, method="projected", stabilization=(3.0, 5.0))
        rows = _rows(model, q, v, closures)
        target = -rows.bias - 3.0 * (rows.jacobian @ v) - 5.0 * rows.residual
        qdd_k, lam_k = _kkt(model, q, v, tau, np.asarray(rows.jacobian), np.asarray(target))
        for a, b in ((qdd, qdd_p), (qdd, qdd_k), (f.lambda_, lam_k), (f_p.lambda_, lam_k)):
            np.testing.assert_allclose(a, b, atol=1e-10, rtol=1e-10)
    # rows: all dofs are hinges/slides, so q̇ = v and ∂𝔡/∂q is G_c (exact at 𝔡 = 0 for the weld's rotation)
    jac_ad = jax.jit(jax.jacfwd(lambda x: constraint_residual(model, x, closures)))(q0)
    np.testing.assert_allclose(_jacobian(model, q0, closures), jac_ad, atol=1e-12)
    v = jnp.asarray(rng.normal(size=model.nv))
    _, gdot_v = jax.jit(lambda x: jax.jvp(lambda y: constraint_jacobian(model, y, closures) @ v, (x,), (v,)))(q0)
    np.testing.assert_allclose(_rows(model, q0, v, closures).bias, gdot_v, atol=1e-11)


def test_floating_base_closures_against_dense_oracles():
    """A floating-base random tree (helical, planar, revolute joints) closed by a point to the
    world, a weld and a distance: the closure rows are exact (``G_c`` and ``Ġ_c θ̇`` against
    automatic differentiation along ``q ⊕ ε``), and augmented = projected = a dense KKT solve off
    the constraint manifold, with ``f_ext``.  The recursions run about the floating base's origin,
    which moves with ``q``."""
    model = sd.models.random_tree(n_bodies=10, seed=4, floating_base=True)
    q0 = sd.random_configuration(model, jax.random.PRNGKey(1))
    b = model.body_names
    closures = (LoopClosures.point(model, b[2], "world", q=q0, anchor1=jnp.array([0.1, 0.0, 0.05]))
                + LoopClosures.weld(model, b[3], b[5], q=q0) + LoopClosures.distance(model, b[1], b[4], q=q0))
    rng = np.random.default_rng(0)
    v = jnp.asarray(rng.normal(size=model.nv))

    @jax.jit
    def rows_and_derivatives(q0, v):
        jac = jax.jacfwd(lambda e: constraint_residual(model, sd.integrate(model, q0, e), closures))(v * 0)
        _, gdot_v = jax.jvp(lambda t: constraint_jacobian(model, sd.integrate(model, q0, t * v), closures) @ v,
                            (jnp.zeros((), v.dtype),), (jnp.ones((), v.dtype),))
        return closure_rows(model, q0, v, closures), jac, gdot_v

    rows, jac_ad, gdot_v = rows_and_derivatives(q0, v)
    np.testing.assert_allclose(rows.residual, 0.0, atol=1e-12)
    np.testing.assert_allclose(rows.jacobian, jac_ad, atol=1e-12)
    np.testing.assert_allclose(rows.bias, gdot_v, atol=1e-11)

    q = _integrate(model, q0, jnp.asarray(0.05 * rng.normal(size=model.nv)))
    tau, f_ext = jnp.asarray(rng.normal(size=model.nv)), jnp.asarray(rng.normal(size=(model.n_bodies, 6)))
    qdd, f = _cfd(model, q, v, tau, closures, f_ext=f_ext)
    qdd_p, _ = _cfd(model, q, v, tau, closures, f_ext=f_ext, method="projected")
    rows = _rows(model, q, v, closures)
    alpha, beta = sd.algorithms.constrained.DEFAULT_STABILIZATION
    target = -rows.bias - alpha * (rows.jacobian @ v) - beta * rows.residual
    qdd_k, lam_k = _kkt(model, q, v, tau, np.asarray(rows.jacobian), np.asarray(target), f_ext=f_ext)
    scale = np.abs(qdd_k).max()
    np.testing.assert_allclose(qdd, qdd_p, atol=1e-11 * scale)
    np.testing.assert_allclose(qdd, qdd_k, atol=1e-11 * scale)
    np.testing.assert_allclose(f.lambda_, lam_k, atol=1e-11 * np.abs(lam_k).max())


@pytest.mark.fast
def test_unrolled_and_lapack_solves_agree(monkeypatch):
    """The proximal solve's unrolled Cholesky (up to ``SMALL_SOLVE`` rows) and LAPACK's give the
    same θ̈ and λ (weld + distance, 7 rows, off the constraint manifold)."""
    import sodyn.algorithms.constrained as constrained

    model, q0, closures = _weld_and_distance()
    rng = np.random.default_rng(9)
    q = _integrate(model, q0, jnp.asarray(0.05 * rng.normal(size=model.nv)))
    v, tau = jnp.asarray(rng.normal(size=model.nv)), jnp.asarray(rng.normal(size=model.nv))
    qdd, f = _cfd(model, q, v, tau, closures)
    monkeypatch.setattr(constrained, "SMALL_SOLVE", 0)
    qdd_l, f_l = jax.jit(lambda q, v, t: constrained_forward_dynamics(model, q, v, t, closures))(q, v, tau)
    np.testing.assert_allclose(qdd, qdd_l, atol=1e-10, rtol=0)
    np.testing.assert_allclose(f.lambda_, f_l.lambda_, atol=1e-10, rtol=1e-10)


@pytest.mark.fast
def test_added_inertia_against_dense_kkt():
    """``added_inertia`` (the implicit stepper's contact terms): (𝓜 + Σ J_k* B_k J_k) in a
    dense KKT solve with the right side τ − C − Σ J_k* B_k ᾱ(k)."""
    model, closures, _ = _setup("delta")
    q, v, tau = _consistent_state(model, closures, 7)
    rng = np.random.default_rng(8)
    b = rng.normal(size=(model.n_bodies, 6, 6))
    b = jnp.asarray(np.einsum("kij,klj->kil", b, b) * 0.1)
    qdd, f = _cfd(model, q, v, tau, closures, added_inertia=b)
    _, _, jacs, alpha = (np.asarray(x) for x in _dense(model, q, v))
    extra_m = np.einsum("kai,kab,kbj->ij", jacs, np.asarray(b), jacs)
    extra_rhs = -np.einsum("kai,kab,kb->i", jacs, np.asarray(b), alpha)
    rows = _rows(model, q, v, closures)
    target = -rows.bias - 20.0 * (rows.jacobian @ v) - 100.0 * rows.residual
    qdd_k, lam_k = _kkt(model, q, v, tau, np.asarray(rows.jacobian), np.asarray(target), extra_m, extra_rhs)
    np.testing.assert_allclose(qdd, qdd_k, atol=1e-9)
    np.testing.assert_allclose(f.lambda_, lam_k, atol=1e-9)


# ---------------------------------------------------------------------------
# transformations
# ---------------------------------------------------------------------------


def test_jit_vmap_grad_against_central_differences():
    """Directional derivatives of θ̈ and G_c*λ with respect to q, v, τ and a link mass: jit of
    vmap (over two states) of grad equals float64 central differences; the vmapped θ̈ equals
    unbatched calls."""
    model, closures, _ = _setup("delta")
    states = [_consistent_state(model, closures, s) for s in (11, 12)]
    qs, vs, ts = (jnp.stack(x) for x in zip(*states))
    rng = np.random.default_rng(12)
    w = jnp.asarray(rng.normal(size=model.nv))
    dq, dv, dtau = (jnp.asarray(rng.normal(size=model.nv)) for _ in range(3))

    def objective(eps, q, v, tau):  # eps = (along dq, dv, dτ, mass scale − 1)
        mm = _scaled_last_mass(model, 1.0 + eps[3])
        qdd, f = constrained_forward_dynamics(mm, sd.integrate(model, q, eps[0] * dq), v + eps[1] * dv,
                                              tau + eps[2] * dtau, closures)
        return jnp.dot(w, qdd) + 0.1 * jnp.dot(w, f.generalized), qdd

    zero = jnp.zeros(4)
    grads, qdd = jax.jit(jax.vmap(jax.grad(objective, has_aux=True), in_axes=(None, 0, 0, 0)))(zero, qs, vs, ts)
    value = jax.jit(jax.vmap(lambda e, q, v, t: objective(e, q, v, t)[0], in_axes=(None, 0, 0, 0)))
    h = 1e-6
    fd = jnp.stack([(value(zero.at[j].set(h), qs, vs, ts) - value(zero.at[j].set(-h), qs, vs, ts)) / (2 * h)
                    for j in range(4)], axis=1)
    assert np.all(np.isfinite(grads))
    np.testing.assert_allclose(grads, fd, rtol=1e-6, atol=1e-6 * float(jnp.max(jnp.abs(fd))))
    for i, (q, v, tau) in enumerate(states):
        np.testing.assert_allclose(qdd[i], _cfd(model, q, v, tau, closures)[0], atol=1e-10)


def _scaled_last_mass(model, scale):
    return eqx.tree_at(lambda m: m.mass, model, model.mass.at[-1].multiply(scale))


# ---------------------------------------------------------------------------
# simulation
# ---------------------------------------------------------------------------


def test_four_bar_drift_over_ten_seconds():
    """10 s of the four-bar falling under gravity (default implicit stepper, dt = 1 ms): the
    closure stays closed to 1e-6 m while the crank swings at up to ~17 rad/s; the recorded
    constraint force equals the one constrained_forward_dynamics gives at the first state."""
    model, closures, _ = _setup("fourbar")
    s0 = State.initial(model, model.q_neutral, jnp.zeros(model.nv))
    run = jax.jit(lambda s: rollout(model, s, None, 1e-3, 10_000, constraints=closures))
    out = run(s0)
    drift = jax.jit(jax.vmap(lambda q: constraint_residual(model, q, closures)))(out.states.q)
    assert np.abs(out.states.v).max() > 5.0  # it does move
    assert np.abs(drift).max() < 1e-6
    assert out.constraint_force.shape == (10_000, model.nv)
    _, forces = jax.jit(lambda s: step_and_forces(model, s, None, 1e-3, constraints=closures))(s0)
    np.testing.assert_allclose(forces.constraint, out.constraint_force[0], atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("integrator", ["semi_implicit", "rk4"])
def test_four_bar_drift_other_steppers(integrator):
    """2 s of the falling four-bar with the other steppers (dt = 1 ms) stays closed to 1e-6 m."""
    model, closures, _ = _setup("fourbar")
    s0 = State.initial(model, model.q_neutral, jnp.zeros(model.nv))
    run = jax.jit(lambda s: rollout(model, s, None, 1e-3, 2000, integrator=integrator, constraints=closures))
    q = run(s0).states.q
    assert np.abs(jax.jit(jax.vmap(lambda x: constraint_residual(model, x, closures)))(q)).max() < 1e-6


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


@pytest.mark.fast
def test_errors():
    model, q0, closures = _weld_and_distance()
    with pytest.raises(ValueError, match="and itself"):
        LoopClosures.point(model, "a3", "a3")
    with pytest.raises(ValueError, match="both on body 'a4'"):
        LoopClosures.weld(model, "a4", "tip")
    with pytest.raises(ValueError, match="between frame 'world' and itself"):
        LoopClosures.point(model, None, "world")
    with pytest.raises(ValueError, match="unknown frame 'nope'"):
        LoopClosures.point(model, "nope", "a1")
    with pytest.raises(ValueError, match="anchor1 must be a 3-vector"):
        LoopClosures.point(model, "a3", "b3", anchor1=jnp.zeros(2))
    with pytest.raises(ValueError, match="rotation must be a 3×3"):
        LoopClosures.weld(model, "a3", "b3", rotation=jnp.eye(4))
    with pytest.raises(ValueError, match="proper rotation"):
        LoopClosures.weld(model, "a3", "b3", rotation=2 * jnp.eye(3))
    with pytest.raises(ValueError, match="distance must be positive"):
        LoopClosures.distance(model, "a3", "b3", 0.0)
    with pytest.raises(ValueError, match="give the distance or a configuration"):
        LoopClosures.distance(model, "a3", "b3")
    v = jnp.zeros(model.nv)
    with pytest.raises(ValueError, match="method must be one of"):
        constrained_forward_dynamics(model, q0, v, v, closures, method="kkt")
    with pytest.raises(ValueError, match="acceleration_target must have shape"):
        constrained_forward_dynamics(model, q0, v, v, closures, acceleration_target=jnp.zeros(3))
    with pytest.raises(ValueError, match="stabilization must be a pair"):
        constrained_forward_dynamics(model, q0, v, v, closures, stabilization=1.0)
    with pytest.raises(ValueError, match="constraints must be sodyn.LoopClosures"):
        constrained_forward_dynamics(model, q0, v, v, "loop")
    with pytest.raises(ValueError, match="constraints must be sodyn.LoopClosures"):
        sd.step(model, State.initial(model), None, 1e-3, constraints=[1])
    with pytest.raises(ValueError, match="q must have shape"):
        constrained_forward_dynamics(model, q0[:-1], v, v, closures)
    with pytest.raises(ValueError, match="added_inertia is supported by method='augmented' only"):
        constrained_forward_dynamics(model, q0, v, v, closures, method="projected",
                                     added_inertia=jnp.zeros((model.n_bodies, 6, 6)))
    xml = FOURBAR.replace("</equality>", '<joint joint1="j1" joint2="j3"/></equality>')
    m, eq = sd.load_mjcf(xml, with_constraints=True)
    assert LoopClosures.from_equality(m, eq).kind == ("point", "joint")  # joint equalities convert by default
    with pytest.raises(NotImplementedError, match="joint coupling"):
        LoopClosures.from_equality(m, eq, joint="raise")
    with pytest.warns(UserWarning, match="left out"):
        assert len(LoopClosures.from_equality(m, eq, joint="skip")) == 1
    # a 3D point on the planar four-bar stays finite (redundant row) and pulls nothing out of plane
    model4, closures4, _ = _setup("fourbar")
    qdd, f = _cfd(model4, model4.q_neutral, jnp.ones(3), jnp.ones(3), closures4)
    assert np.all(np.isfinite(qdd)) and np.all(np.isfinite(f.lambda_))


@pytest.mark.fast
def test_float32_four_bar():
    """float32 throughout (the redundant 3D point on the planar four-bar): finite, and θ̈ within
    float32 round-off of float64."""
    model, closures, _ = _setup("fourbar")
    q, v, tau = _consistent_state(model, closures, 1)
    a64, _ = _cfd(model, q, v, tau, closures)
    f32 = lambda x: x.astype(jnp.float32)  # noqa: E731
    a32, f = _cfd(model.astype(jnp.float32), f32(q), f32(v), f32(tau), jax.tree_util.tree_map(f32, closures))
    assert a32.dtype == jnp.float32 and np.all(np.isfinite(f.lambda_))
    assert np.abs(np.asarray(a32) - np.asarray(a64)).max() < 1e-5 * np.abs(np.asarray(a64)).max()
