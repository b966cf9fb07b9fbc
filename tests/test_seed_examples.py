"""Closed-form regression cases from the seed documents (CDI examples 1–4, Alexiou's two-link
chain); the numbers come from ``short_seed_documents.md`` §1.4 and §3.4."""

import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.models import alexiou_chain as alexiou_chain_model
from sodyn.models import cdi_satellite, double_pendulum

pytestmark = pytest.mark.fast


def test_cdi_example1_pendulum_on_moving_base():
    m1, m2, length, izz, theta = 2.0, 1.0, 0.5, 0.1, np.pi / 6
    b = sd.ModelBuilder()
    b.add_body("cart", None, sd.JointSpec.prismatic((1, 0, 0)), mass=m1, inertia=np.diag([0.3, 0.2, 0.1]))
    b.add_body("pendulum", "cart", sd.JointSpec.revolute((0, 0, 1)), mass=m2, com=(0, -length, 0),
               inertia=np.diag([0.05, 0.05, izz]))
    model = b.build()
    M = sd.mass_matrix(model, jnp.array([0.7, theta]))
    expected = np.array([[m1 + m2, m2 * length * np.cos(theta)], [m2 * length * np.cos(theta), izz + m2 * length**2]])
    np.testing.assert_allclose(M, expected, atol=1e-14)
    np.testing.assert_allclose(M, [[3, 0.4330127], [0.4330127, 0.35]], atol=1e-7)


def test_cdi_example2_double_pendulum():
    model = double_pendulum()
    M = sd.mass_matrix(model, jnp.array([0.3, 0.7]))
    np.testing.assert_allclose(M, [[2.431509, 0.715754], [0.715754, 0.333333]], atol=1e-6)
    # planar closed form at another configuration
    t2 = 1.3
    M = sd.mass_matrix(model, jnp.array([-0.4, t2]))
    ix, c, l1 = 1 / 12, 0.5, 1.0
    m11 = 2 * ix + c**2 + (l1**2 + c**2 + 2 * l1 * c * np.cos(t2))
    m12 = ix + c**2 + l1 * c * np.cos(t2)
    np.testing.assert_allclose(M, [[m11, m12], [m12, ix + c**2]], atol=1e-14)


def test_cdi_example3_satellite_with_two_arrays():
    model = cdi_satellite()
    M = sd.mass_matrix(model, sd.neutral_configuration(model))
    expected = np.array([
        [74.9, 0, 0, 0, -2, 0, 19.75, 19.75],
        [0, 20.8, 0, 2, 0, 0, 0, 0],
        [0, 0, 94.9, 0, 0, 0, 0, 0],
        [0, 2, 0, 110, 0, 0, 0, 0],
        [-2, 0, 0, 0, 110, 0, 0, 0],
        [0, 0, 0, 0, 0, 110, 7.5, -7.5],
        [19.75, 0, 0, 0, 0, 7.5, 12.25, 0],
        [19.75, 0, 0, 0, 0, -7.5, 0, 12.25],
    ])
    np.testing.assert_allclose(M, expected, atol=1e-12)


def _three_link_arm():
    b = sd.ModelBuilder()
    i1 = np.array([[0.02, 0.001, 0], [0.001, 0.02, 0], [0, 0, 0.01]])
    i2 = np.array([[0.1, 0, 0.01], [0, 0.01, 0], [0.01, 0, 0.1]])
    i3 = np.array([[0.05, 0, 0], [0, 0.005, 0.002], [0, 0.002, 0.05]])
    b.add_body("b1", None, sd.JointSpec.revolute((0, 0, 1)), mass=1.0, com=(0, 0, 0.25), inertia=i1)
    # The CDI fixture's I2 (principal moments 0.01, 0.09, 0.11) is not a physical body.
    b.add_body("b2", "b1", sd.JointSpec.revolute((1, 0, 0)), translation=(0, 0, 0.5), mass=2.0,
               com=(0.05, 0.3, 0.2), inertia=i2, check_triangle_inequality=False)
    b.add_body("b3", "b2", sd.JointSpec.revolute((1, 0, 0)), translation=(0.1, 0.6, 0.4), mass=1.5,
               com=(0, 0.2, -0.1), inertia=i3)
    return b.build()


def test_cdi_example4_three_link_arm_fixture():
    model = _three_link_arm()
    M = sd.mass_matrix(model, jnp.zeros(3))
    np.testing.assert_allclose(M, [[1.32, -0.055, 0.015], [-0.055, 1.505, 0.245], [0.015, 0.245, 0.125]], atol=1e-12)


def test_cdi_general_serial_formula_at_random_configuration():
    """𝓜_ij = g_iᵀ [Σ_{k ≥ max(i,j)} (I_k − m_k (r̃_k − η̃_i)(r̃_k − η̃_j))] g_j, world vectors."""
    model = _three_link_arm()
    q = jnp.array([0.4, -1.1, 0.8])
    fk = sd.forward_kinematics(model, q)
    rot, pos = np.asarray(fk.body.rotation), np.asarray(fk.body.translation)
    axes = [rot[0] @ [0, 0, 1], rot[1] @ [1, 0, 0], rot[2] @ [1, 0, 0]]
    mass, com, inertia = np.asarray(model.mass), np.asarray(model.com), np.asarray(model.inertia)
    r = [pos[k] + rot[k] @ com[k] for k in range(3)]
    ic = [rot[k] @ inertia[k] @ rot[k].T for k in range(3)]
    sk = lambda x: np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])  # noqa: E731
    expected = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            s = sum(ic[k] - mass[k] * sk(r[k] - pos[i]) @ sk(r[k] - pos[j]) for k in range(max(i, j), 3))
            expected[i, j] = axes[i] @ s @ axes[j]
    np.testing.assert_allclose(sd.mass_matrix(model, q), expected, atol=1e-13)


@pytest.fixture(scope="module")
def alexiou_chain():
    """Alexiou's planar two-link chain (m = L = 1), see :func:`sodyn.models.alexiou_chain`."""
    return alexiou_chain_model()


def test_alexiou_two_link_mass_matrix_and_articulated_inertias(alexiou_chain):
    q = jnp.zeros(2)
    M = sd.mass_matrix(alexiou_chain, q)
    np.testing.assert_allclose(M, [[8 / 3, 5 / 6], [5 / 6, 1 / 3]], atol=1e-14)
    np.testing.assert_allclose(sd.log_det_mass_matrix(alexiou_chain, q), np.log(7 / 36), atol=1e-14)
    abi = sd.articulated_body_inertias(alexiou_chain, q)
    np.testing.assert_allclose(np.diag(abi.D), [7 / 12, 1 / 3], atol=1e-14)  # D(base), D(tip)


def test_alexiou_two_link_velocity_jump(alexiou_chain):
    """Δθ̇ = 𝓜⁻¹ Jᵀ(−n J): the fixture m = L = 1, θ̇ = (1, 0.5), ε = 0.5 of ALX §3.4."""
    q, qd, eps = jnp.zeros(2), jnp.array([1.0, 0.5]), 0.5
    jac = sd.frame_jacobian(alexiou_chain, q, "tip", reference="world_aligned")
    n_jt = np.asarray(jac[4])  # +y force at the tip: generalised force direction [2L, L]
    np.testing.assert_allclose(n_jt, [2.0, 1.0], atol=1e-14)
    v_imp = n_jt @ qd
    assert v_imp == pytest.approx(2.5)
    minv = sd.inverse_mass_matrix(alexiou_chain, q)
    impulse = (1 + eps) * v_imp / (n_jt @ minv @ n_jt)
    assert impulse == pytest.approx(1.09375, abs=1e-13)
    dqd = sd.inverse_mass_matrix_times(alexiou_chain, q, -impulse * n_jt)
    np.testing.assert_allclose(dqd, [0.9375, -5.625], atol=1e-13)
    assert n_jt @ (qd + dqd) == pytest.approx(-1.25, abs=1e-13)
