"""The book's identities on random trees with every joint type (float64).

Dense operators are built from the per-body quantities (Jain §9.2–9.4, Lemmas 7.1–7.5):
``E_φ``/``E_ψ`` with blocks ``φ(℘(k), k)``/``ψ(℘(k), k)``, ``φ = (I − E_φ)⁻¹``, ``ψ = (I − E_ψ)⁻¹``,
``H`` block-diagonal, ``𝒦 = E_φ 𝒢``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn import spatial
from sodyn.algorithms.common import prepare
from sodyn.models import random_tree
from sodyn.runtime.batching import jaxpr_primitives
from sodyn.topology import from_levels

TREES = [
    ("fixed_base_14", dict(n_bodies=14, seed=3)),
    ("floating_base_12", dict(n_bodies=12, seed=5, floating_base=True, armature=0.05)),
]
FAST_TREE = "floating_base_12"  # the ``fast`` subset's tree


@pytest.fixture(scope="module", ids=[t[0] for t in TREES],
                params=[pytest.param(t, marks=pytest.mark.fast) if t[0] == FAST_TREE else t for t in TREES])
def case(request):
    model = random_tree(**request.param[1])
    key = jax.random.PRNGKey(7)
    q = sd.random_configuration(model, key)
    v = jax.random.normal(jax.random.PRNGKey(8), (model.nv,))
    a = jax.random.normal(jax.random.PRNGKey(9), (model.nv,))

    @jax.jit
    def everything(q, v, a):
        return dict(
            M=sd.mass_matrix(model, q),
            Minv=sd.inverse_mass_matrix(model, q),
            logdet=sd.log_det_mass_matrix(model, q),
            tau=sd.inverse_dynamics(model, q, v, a),
            bias=sd.bias_forces(model, q, v),
            hess=jax.hessian(lambda vv: sd.kinetic_energy(model, q, vv))(v),
            minv_a=sd.inverse_mass_matrix_times(model, q, a),
            abi=sd.articulated_body_inertias(model, q),
            composite=sd.composite_inertias(model, q),
            body_jac=sd.frame_jacobians(model, q, list(model.body_names)),
        )

    out = everything(q, v, a)
    out["qdd"] = jax.jit(lambda q, v, t: sd.forward_dynamics(model, q, v, t))(q, v, out["tau"])
    return model, q, v, a, out


def test_mass_matrix_symmetric_positive_definite(case):
    _, _, _, _, out = case
    M = np.asarray(out["M"])
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    assert np.linalg.eigvalsh(M).min() > 0


def test_inverse_mass_matrix(case):
    model, _, _, a, out = case
    np.testing.assert_allclose(out["M"] @ out["Minv"], np.eye(model.nv), atol=1e-10)
    np.testing.assert_allclose(out["minv_a"], np.linalg.solve(out["M"], a), atol=1e-10)


def test_forward_dynamics_inverts_inverse_dynamics(case):
    _, _, _, a, out = case
    np.testing.assert_allclose(out["qdd"], a, atol=1e-10)


def test_forward_dynamics_with_added_inertia_solves_the_augmented_system(case):
    """``(𝓜 + Σ J_k* B_k J_k) θ̈ = τ − C − Σ J_k* B_k ᾱ(k)`` (the implicit stepper's system), and
    its implicit-function gradients against central differences (symmetric directions in B)."""
    model, q, v, _, out = case
    n = model.n_bodies
    keys = jax.random.split(jax.random.PRNGKey(11), 4)
    tau = jax.random.normal(keys[0], (model.nv,))
    f = jax.random.normal(keys[1], (n, 6))
    root = jax.random.normal(keys[2], (n, 6, 6))
    b = 0.3 * jnp.einsum("kij,klj->kil", root, root)
    jac = out["body_jac"]
    fd = jax.jit(lambda v, tau, f, b: sd.forward_dynamics(model, q, v, tau, f, added_inertia=b))

    @jax.jit
    def dense(v, tau, f, b):
        lhs = out["M"] + jnp.einsum("kiv,kij,kjw->vw", jac, b, jac)
        abar = sd.body_accelerations(model, q, v, jnp.zeros(model.nv), gravity=True)
        rhs = tau - sd.bias_forces(model, q, v, f) - jnp.einsum("kiv,kij,kj->v", jac, b, abar)
        return jnp.linalg.solve(lhs, rhs)

    np.testing.assert_allclose(fd(v, tau, f, b), dense(v, tau, f, b), atol=1e-10)

    def loss(*args):
        return jnp.sum(jnp.sin(fd(*args)))

    args = (v, tau, f, b)
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(*args)
    for i, (x, g) in enumerate(zip(args, grads)):
        d = jax.random.normal(jax.random.fold_in(keys[3], i), x.shape)
        d = d + jnp.swapaxes(d, -1, -2) if i == 3 else d
        shifted = [list(args), list(args)]
        shifted[0][i], shifted[1][i] = x + 1e-6 * d, x - 1e-6 * d
        numeric = (loss(*shifted[0]) - loss(*shifted[1])) / 2e-6
        assert float(jnp.sum(g * d)) == pytest.approx(float(numeric), rel=1e-6, abs=1e-8)


def test_equation_of_motion_split(case):
    _, _, _, a, out = case
    np.testing.assert_allclose(out["M"] @ a + out["bias"], out["tau"], atol=1e-10)


def test_kinetic_energy_hessian_is_mass_matrix(case):
    _, _, _, _, out = case
    np.testing.assert_allclose(out["hess"], out["M"], atol=1e-12)


def test_log_det(case):
    _, _, _, _, out = case
    sign, logdet = np.linalg.slogdet(np.asarray(out["M"]))
    assert sign > 0
    assert out["logdet"] == pytest.approx(logdet, abs=1e-10)


@jax.jit
def _link_operators(model, q):
    """Per body: ``φ(℘(k), k)`` (the parent-to-child motion transform, transposed) and the
    spatial inertia, in one compiled program (evaluated eagerly, each operation would compile on its own)."""
    levels = prepare(model, q)
    rel_r = from_levels(model.topology, levels.rel_r)
    rel_p = from_levels(model.topology, levels.rel_p)
    phi_k = jnp.swapaxes(spatial.motion_transform_matrix(rel_r, rel_p), -1, -2)
    return phi_k, spatial.spatial_inertia(model.mass, model.com, model.inertia)


def _dense_operators(model, q, out):
    n, nv = model.n_bodies, model.nv
    phi_k, spatial_inertia = (np.asarray(x) for x in _link_operators(model, q))
    abi = out["abi"]
    e_phi = np.zeros((6 * n, 6 * n))
    e_psi = np.zeros((6 * n, 6 * n))
    for k, p in enumerate(model.parent):
        if p >= 0:
            e_phi[6 * p: 6 * p + 6, 6 * k: 6 * k + 6] = phi_k[k]
            e_psi[6 * p: 6 * p + 6, 6 * k: 6 * k + 6] = np.asarray(abi.psi[k])
    phi = np.linalg.inv(np.eye(6 * n) - e_phi)
    psi = np.linalg.inv(np.eye(6 * n) - e_psi)
    h = np.zeros((nv, 6 * n))
    g = np.zeros((6 * n, nv))
    inertia = np.zeros((6 * n, 6 * n))
    body_jac = np.asarray(out["body_jac"])
    for j in range(nv):
        k = model.topology.dof_body[j]
        h[j, 6 * k: 6 * k + 6] = body_jac[k][:, j]  # H*(k) columns: the body's own joint axes
        g[6 * k: 6 * k + 6, j] = np.asarray(abi.G[j])
    for k in range(n):
        inertia[6 * k: 6 * k + 6, 6 * k: 6 * k + 6] = spatial_inertia[k]
    return dict(e_phi=e_phi, phi=phi, psi=psi, h=h, g=g, inertia=inertia, K=e_phi @ g)


def test_newton_euler_factorization(case):
    """𝓜 = H φ M φ* H* (Jain eq. 4.13 / CDI eq. 14), without armature."""
    model, q, _, _, out = case
    ops = _dense_operators(model, q, out)
    dense = ops["h"] @ ops["phi"] @ ops["inertia"] @ ops["phi"].T @ ops["h"].T
    np.testing.assert_allclose(dense + np.diag(model.armature), out["M"], atol=1e-10)


def test_innovations_factorization_and_inverse(case):
    """𝓜 = [I + HφK] D [I + HφK]*, [I + HφK]⁻¹ = I − HψK, 𝓜⁻¹ = [I − HψK]* D⁻¹ [I − HψK]."""
    model, q, _, _, out = case
    ops = _dense_operators(model, q, out)
    nv = model.nv
    d = np.asarray(out["abi"].D)
    upper = np.eye(nv) + ops["h"] @ ops["phi"] @ ops["K"]
    lower_inv = np.eye(nv) - ops["h"] @ ops["psi"] @ ops["K"]
    np.testing.assert_allclose(upper @ d @ upper.T, out["M"], atol=1e-10)
    np.testing.assert_allclose(upper @ lower_inv, np.eye(nv), atol=1e-10)
    np.testing.assert_allclose(lower_inv.T @ np.linalg.inv(d) @ lower_inv, out["Minv"], atol=1e-9)
    assert np.prod(np.linalg.eigvalsh(d)) == pytest.approx(np.linalg.det(out["M"]), rel=1e-9)


def test_riccati_identities(case):
    """P⁺ = τ̄P = Pτ̄* = τ̄Pτ̄* and R − P ⪰ 0 (Jain Lemma 7.2, Table 7.1; SLD §2.6).

    With armature, ``D = HPH* + armature`` and ``τ̄Pτ̄* = P⁺`` no longer holds; the other two do.
    """
    model, _, _, _, out = case
    abi = out["abi"]
    p, p_plus, tb = np.asarray(abi.P), np.asarray(abi.P_plus), np.asarray(abi.tau_bar)
    np.testing.assert_allclose(tb @ p, p_plus, atol=1e-10)
    np.testing.assert_allclose(p @ np.swapaxes(tb, -1, -2), p_plus, atol=1e-10)
    if not np.any(np.asarray(model.armature)):
        np.testing.assert_allclose(tb @ p @ np.swapaxes(tb, -1, -2), p_plus, atol=1e-10)
    diff = np.asarray(out["composite"]) - p
    assert np.min(np.linalg.eigvalsh(0.5 * (diff + np.swapaxes(diff, -1, -2)))) > -1e-10


def test_composite_inertias_give_the_mass_matrix_diagonal_blocks(case):
    """𝓜(k, k) = H(k) R(k) H*(k) + armature (Jain Lemma 4.1 at i = k), with ``H*(k)`` the body's own
    Jacobian columns in its frame; the base's composite holds the whole mass."""
    model, _, _, _, out = case
    topo = model.topology
    comp, jac, m = (np.asarray(out[k]) for k in ("composite", "body_jac", "M"))
    arm = np.asarray(model.armature)
    for k in range(model.n_bodies):
        dofs = np.flatnonzero(topo.dof_body == k)
        if dofs.size:
            h = jac[k][:, dofs]  # (6, nv_k): H*(k) in body k's frame
            np.testing.assert_allclose(h.T @ comp[k] @ h + np.diag(arm[dofs]), m[np.ix_(dofs, dofs)],
                                       rtol=1e-10, atol=1e-10)
    roots = np.flatnonzero(topo.parent < 0)
    assert sum(comp[r][3, 3] for r in roots) == pytest.approx(float(np.sum(model.mass)), rel=1e-12)


def test_gather_and_scatter_match_dense_resolvent(case):
    """φ x and φ* x by the recursions equal the dense (I − E_φ)⁻¹ (CDI §1.2, T5)."""
    model, q, _, _, out = case
    ops = _dense_operators(model, q, out)
    n = model.n_bodies
    x = np.random.default_rng(0).normal(size=(n, 6))
    # φ* x: body velocities from per-body joint motions x (scatter).
    from sodyn.algorithms.inverse_dynamics import body_forces_levels
    from sodyn.sweeps import in_slots, scatter
    from sodyn.topology import to_levels

    def step(parent, level):
        r, p, xk = level.x
        y = spatial.motion_to_child(r, p, parent) + xk
        return y, tuple(level.per_kernel(y))

    @jax.jit
    def both_sweeps(q, x):
        levels = prepare(model, q)
        xl = to_levels(model.topology, x, jnp.zeros(6))
        ys = in_slots(scatter(model.topology, step, jnp.zeros(6), (levels.rel_r, levels.rel_p, xl)))
        fs = body_forces_levels(levels, model.topology, xl)
        return from_levels(model.topology, ys), from_levels(model.topology, fs)

    ys, fs = both_sweeps(q, jnp.asarray(x))
    np.testing.assert_allclose(ys.reshape(-1), ops["phi"].T @ x.reshape(-1), atol=1e-12)
    np.testing.assert_allclose(fs.reshape(-1), ops["phi"] @ x.reshape(-1), atol=1e-12)
    # Nilpotency: E_φ^depth = 0 and E_φ^(depth−1) ≠ 0.
    depth = model.topology.n_levels
    assert np.allclose(np.linalg.matrix_power(ops["e_phi"], depth), 0)
    assert not np.allclose(np.linalg.matrix_power(ops["e_phi"], depth - 1), 0)


def test_integrate_and_difference_are_inverse(case):
    model, q, v, _, _ = case
    q1 = sd.integrate(model, q, v, 0.3)
    np.testing.assert_allclose(sd.difference(model, q, q1), 0.3 * v, atol=1e-10)


@pytest.mark.fast
def test_structured_congruences_match_dense_transforms():
    """``inertia_to_parent`` (φ I φ*) and ``compliance_to_child`` (φ* Y φ) on 3×3 blocks equal
    the dense products with ``φ*`` from ``motion_transform_matrix`` (Jain eqs. 1.31, 6.12, 10.19)."""
    rng = np.random.default_rng(4)
    r = np.stack([np.linalg.qr(rng.normal(size=(3, 3)))[0] for _ in range(5)])
    p = rng.normal(size=(5, 3))
    a = rng.normal(size=(5, 6, 6))
    sym = a + np.swapaxes(a, -1, -2)
    phi_star = np.asarray(spatial.motion_transform_matrix(r, p))
    phi = np.swapaxes(phi_star, -1, -2)
    np.testing.assert_allclose(spatial.inertia_to_parent(r, p, sym), phi @ sym @ phi_star, atol=1e-12)
    np.testing.assert_allclose(spatial.compliance_to_child(r, p, sym), phi_star @ sym @ phi, atol=1e-12)


@pytest.mark.fast
def test_inertia_parameters_add_and_apply_like_spatial_inertias():
    """Spatial inertias about one point add by their parameters ``(m, m c, J_O)`` (Jain eqs.
    2.5–2.8): :func:`inertia_from_parameters` of the summed parameters is the sum of the 6×6 matrices, and
    :func:`apply_inertia` applies it to a motion."""
    from sodyn.algorithms.mass_matrix import apply_inertia, world_inertia, world_inertia_parameters

    rng = np.random.default_rng(6)
    r = np.stack([np.linalg.qr(rng.normal(size=(3, 3)))[0] for _ in range(4)])
    p = rng.normal(size=(4, 3))
    mass = rng.uniform(0.5, 2.0, size=4)
    com = rng.normal(size=(4, 3))
    a = rng.normal(size=(4, 3, 3))
    rot_inertia = a @ np.swapaxes(a, -1, -2) + 0.1 * np.eye(3)
    motion = rng.normal(size=(6,))
    total = sum(world_inertia(mass, com, rot_inertia, r, p))
    params = [x.sum(axis=0) for x in world_inertia_parameters(mass, com, rot_inertia, r, p)]
    np.testing.assert_allclose(apply_inertia(*params, motion), total @ motion, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(spatial.inertia_from_parameters(*params), total, rtol=1e-12, atol=1e-12)


@pytest.mark.fast
@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_spd_inverse_closed_forms(n):
    """The closed-form small SPD inverses used for ``D⁻¹`` match ``numpy.linalg.inv``, also for
    blocks of mixed scale (angular vs linear inertia of a free base)."""
    rng = np.random.default_rng(n)
    a = rng.normal(size=(4, n, n))
    scale = np.diag([10.0 ** (i % 3 - 1) for i in range(n)])
    d = scale @ (a @ np.swapaxes(a, -1, -2) + 0.1 * np.eye(n)) @ scale
    np.testing.assert_allclose(spatial.spd_inverse(jnp.asarray(d)), np.linalg.inv(d), rtol=1e-9, atol=1e-12)


@pytest.mark.fast
def test_reverse_mode_of_sweeps_has_no_padded_slices():
    """Components are taken with ``split`` (transpose: one ``concatenate``), not slices (transpose:
    one zero-padded full-size array per component): the VJPs of inverse and forward dynamics
    (spatial products, level sweeps, per-kernel slots) contain no ``pad``, and are right."""
    model = random_tree(6, seed=5, floating_base=True)
    q = sd.random_configuration(model, jax.random.PRNGKey(0))
    v = jnp.linspace(-1.0, 1.0, model.nv)

    def loss(q, v):
        return jnp.sum(jnp.sin(sd.inverse_dynamics(model, q, v, v)))

    def loss_fd(q, v):
        return jnp.sum(jnp.sin(sd.forward_dynamics(model, q, v, v)))

    for f in (loss, loss_fd):
        jaxpr = jax.make_jaxpr(jax.grad(f, argnums=(0, 1)))(q, v).jaxpr
        assert "pad" not in jaxpr_primitives(jaxpr)
    g = jax.jit(jax.grad(loss, argnums=1))(q, v)
    e = jnp.eye(model.nv)[0]
    loss_at = jax.jit(loss)
    fd = (loss_at(q, v + 1e-6 * e) - loss_at(q, v - 1e-6 * e)) / 2e-6
    np.testing.assert_allclose(g[0], fd, rtol=1e-6, atol=1e-8)
