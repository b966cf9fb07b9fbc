"""Impact impulses through the operational-space compliance (Alexiou 2023, ALX §3 of
short_seed_documents.md; Jain §11.5): the worked two-link example exactly, the restitution law
and energy conservation on random chains and trees, simultaneous impulses, jit/vmap/grad."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import sodyn as sd  # noqa: E402
from sodyn.models import alexiou_chain as alexiou_chain_model  # noqa: E402
from sodyn.models import random_tree  # noqa: E402


@pytest.fixture(scope="module")
def alexiou_chain():
    """Alexiou's planar two-link chain (m = L = 1), see :func:`sodyn.models.alexiou_chain`."""
    return alexiou_chain_model()


def test_alexiou_two_link_example(alexiou_chain):
    """ALX §3.4: n = +y unit force at the tip, θ̇ = (1, 0.5), ε = 0.5."""
    model = alexiou_chain
    q, qd, eps = jnp.zeros(2), jnp.array([1.0, 0.5]), 0.5
    res = jax.jit(lambda q, v: sd.contact_impulse(model, q, v, sd.PointTask("tip", "world_aligned"),
                                                  jnp.array([0.0, 1.0, 0.0]), eps))(q, qd)
    assert res.compliance[0, 0] == pytest.approx(24 / 7, abs=1e-13)  # nᵀ Λ₂⁻¹ n = 24/(7m)
    v_imp = float(2 * qd[0] + qd[1])  # L(2θ̇₁ + θ̇₂)
    assert res.approach_velocity[0] == pytest.approx(v_imp, abs=1e-14)
    assert res.impulse[0] == pytest.approx((1 + eps) * 7 / 24 * v_imp, abs=1e-13)
    assert res.impulse[0] == pytest.approx(1.09375, abs=1e-13)
    np.testing.assert_allclose(res.delta_v, [(1 + eps) / 4 * v_imp, (1 + eps) * (-1.5) * v_imp], atol=1e-13)
    np.testing.assert_allclose(res.delta_v, [0.9375, -5.625], atol=1e-13)
    assert res.rebound_velocity[0] == pytest.approx(-eps * v_imp, abs=1e-13)
    assert res.rebound_velocity[0] == pytest.approx(-1.25, abs=1e-13)


def test_alexiou_compliance_at_the_world_origin(alexiou_chain):
    """ALX (35): Λ₂⁻¹ in (v_x, v_y, ω_z) at the world origin = (1/7)[[0,0,0],[0,96,−66],[0,−66,48]];
    the impact wrench n = [F; τ_O] = [0, 1, 2L] gives the same impulse as the point task."""
    model = alexiou_chain
    q, qd, eps = jnp.zeros(2), jnp.array([1.0, 0.5]), 0.5
    task = sd.FrameTask("origin_on_link2", "world_aligned")
    n6 = jnp.array([0.0, 0.0, 2.0, 0.0, 1.0, 0.0])  # [moment; force] about the origin
    comp, res = jax.jit(lambda q, v: (sd.operational_space_compliance(model, q, [task]),
                                      sd.contact_impulse(model, q, v, task, n6, eps)))(q, qd)
    comp = np.asarray(comp)
    sub = comp[np.ix_([3, 4, 2], [3, 4, 2])]  # rows (v_x, v_y, ω_z) of [ω; v]
    np.testing.assert_allclose(sub, np.array([[0, 0, 0], [0, 96, -66], [0, -66, 48]]) / 7, atol=1e-12)
    assert res.impulse[0] == pytest.approx(1.09375, abs=1e-12)
    np.testing.assert_allclose(res.delta_v, [0.9375, -5.625], atol=1e-12)


@pytest.fixture(scope="module")
def chain_and_tree():
    chain = random_tree(8, seed=11, joint_types=("revolute", "prismatic", "spherical", "helical"), branching=0.0)
    tree = random_tree(9, seed=12, floating_base=True, branching=0.7)
    return chain, tree


def _leaves(model):
    parent = set(model.parent.tolist())
    return [model.body_names[k] for k in range(model.n_bodies) if k not in parent]


def test_restitution_and_energy_on_random_chains(chain_and_tree):
    chain, _ = chain_and_tree
    tip = _leaves(chain)[-1]
    contact = sd.PointTask(tip)  # local axes

    @jax.jit
    def run(q, v, n, eps):
        res = sd.contact_impulse(chain, q, v, contact, n, eps)
        jac = sd.frame_jacobian(chain, q, tip)[3:]
        minv = sd.inverse_mass_matrix(chain, q)
        return res, jac, minv, sd.kinetic_energy(chain, q, v), sd.kinetic_energy(chain, q, res.v_plus)

    for i, eps in enumerate([0.0, 0.4, 1.0]):
        q = sd.random_configuration(chain, jax.random.PRNGKey(i))
        v = jax.random.normal(jax.random.PRNGKey(10 + i), (chain.nv,))
        n = jax.random.normal(jax.random.PRNGKey(20 + i), (3,))
        res, jac, minv, e0, e1 = run(q, v, n, eps)
        e0, e1 = float(e0), float(e1)
        n, jac, minv = np.asarray(n), np.asarray(jac), np.asarray(minv)
        v_imp = float(n @ jac @ np.asarray(v))
        assert res.approach_velocity[0] == pytest.approx(v_imp, rel=1e-10)
        assert n @ jac @ np.asarray(res.v_plus) == pytest.approx(-eps * v_imp, rel=1e-9, abs=1e-12)
        # dense oracle: ι = (1+ε) v_imp / (nᵀ J 𝓜⁻¹ Jᵀ n), Δv = −𝓜⁻¹ Jᵀ n ι
        iota = float((1 + eps) * v_imp / (n @ jac @ minv @ jac.T @ n))
        assert res.impulse[0] == pytest.approx(iota, rel=1e-9)
        np.testing.assert_allclose(res.delta_v, -minv @ jac.T @ n * iota, rtol=1e-9, atol=1e-12)
        if eps == 1.0:
            assert e1 == pytest.approx(e0, rel=1e-10)
        else:
            assert e1 <= e0 * (1 + 1e-12)


def test_simultaneous_impulses_on_two_branches(chain_and_tree):
    _, tree = chain_and_tree
    a, b = _leaves(tree)[0], _leaves(tree)[-1]
    contacts = [sd.PointTask(a, "world_aligned"), sd.FrameTask(b)]
    eps = jnp.array([0.3, 1.0])

    @jax.jit
    def run(q, v, n1, n2):
        res = sd.simultaneous_impulses(tree, q, v, contacts, [n1, n2], eps)
        ja = sd.frame_jacobian(tree, q, a, "world_aligned")[3:]
        jb = sd.frame_jacobian(tree, q, b)
        return res, ja, jb, sd.inverse_mass_matrix(tree, q)

    q = sd.random_configuration(tree, jax.random.PRNGKey(3))
    v = jax.random.normal(jax.random.PRNGKey(4), (tree.nv,))
    n1 = jnp.array([0.0, 0.0, -1.0])
    n2 = jax.random.normal(jax.random.PRNGKey(5), (6,))
    res, ja, jb, minv = (jax.tree_util.tree_map(np.asarray, x) for x in run(q, v, n1, n2))
    big_n = np.zeros((9, 2))
    big_n[:3, 0], big_n[3:, 1] = n1, n2
    J = np.vstack([ja, jb])
    A = big_n.T @ J @ minv @ J.T @ big_n
    np.testing.assert_allclose(res.compliance, A, rtol=1e-9, atol=1e-12)
    v_imp = big_n.T @ J @ np.asarray(v)
    iota = np.linalg.solve(A, (1 + np.asarray(eps)) * v_imp)
    np.testing.assert_allclose(res.impulse, iota, rtol=1e-9)
    np.testing.assert_allclose(res.delta_v, -minv @ J.T @ big_n @ iota, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.rebound_velocity, -np.asarray(eps) * v_imp, rtol=1e-8, atol=1e-10)


def test_impulse_jit_vmap_grad(alexiou_chain):
    model = alexiou_chain
    task = sd.PointTask("tip", "world_aligned")
    n = jnp.array([0.0, 1.0, 0.0])

    def post_speed(q, v, eps):
        return sd.contact_impulse(model, q, v, task, n, eps)

    qs = jnp.array([[0.1, 0.3], [0.5, -0.2], [-0.4, 1.0]])
    vs = jnp.array([[1.0, 0.5], [0.2, -0.3], [0.7, 0.1]])
    batched = jax.jit(jax.vmap(post_speed, in_axes=(0, 0, None)))(qs, vs, 0.5)
    np.testing.assert_allclose(batched.rebound_velocity[:, 0], -0.5 * batched.approach_velocity[:, 0], rtol=1e-10)

    def scalar(q, v, eps):
        res = post_speed(q, v, eps)
        return res.impulse[0] + jnp.sum(res.delta_v ** 2)

    q0, v0 = qs[0], vs[0]
    g = jax.jit(jax.grad(scalar, argnums=(0, 1, 2)))(q0, v0, 0.5)
    f = jax.jit(scalar)
    h = 1e-6
    for k in range(2):
        e = jnp.zeros(2).at[k].set(h)
        assert g[0][k] == pytest.approx(float(f(q0 + e, v0, 0.5) - f(q0 - e, v0, 0.5)) / (2 * h), rel=1e-6, abs=1e-8)
        assert g[1][k] == pytest.approx(float(f(q0, v0 + e, 0.5) - f(q0, v0 - e, 0.5)) / (2 * h), rel=1e-6, abs=1e-8)
    assert g[2] == pytest.approx(float(f(q0, v0, 0.5 + h) - f(q0, v0, 0.5 - h)) / (2 * h), rel=1e-6)


def test_impulse_bad_input(alexiou_chain):
    model = alexiou_chain
    with pytest.raises(ValueError, match="shape \\(3,\\)"):
        sd.contact_impulse(model, jnp.zeros(2), jnp.ones(2), sd.PointTask("tip"), jnp.ones(6))
    with pytest.raises(ValueError, match="unknown frame"):
        sd.contact_impulse(model, jnp.zeros(2), jnp.ones(2), sd.PointTask("nope"), jnp.ones(3))
    with pytest.raises(ValueError, match="directions"):
        sd.simultaneous_impulses(model, jnp.zeros(2), jnp.ones(2), [sd.PointTask("tip")] * 2, [jnp.ones(3)])
