"""Coupling passes of the linearly implicit step (:mod:`sodyn.simulate.coupling`): conjugate
gradients on the coupled system against the dense relative Jacobians, and two bodies pressed
together accelerating as one."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_body_contact import _dense_jacobians, stack_xml

import sodyn as sd
from sodyn.simulate import ContactModel, State, rollout, step
from sodyn.simulate.contact import contact_terms, point_forces

jax.config.update("jax_enable_x64", True)
pytest.importorskip("mujoco")

PUSH = """<mujoco><option timestep="0.001"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" friction="0.5 0 0"/>
    <body name="box" pos="0 0 0.05"><freejoint/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="1" friction="0.5 0 0"/></body>
    <body name="pusher" pos="-0.08 0 0.05"><joint name="push_x" type="slide" axis="1 0 0"/>
      <geom name="pusher" type="sphere" size="0.03" mass="0.5" contype="2" conaffinity="2"/></body>
  </worldbody>
  <contact><pair geom1="pusher" geom2="box" condim="1"/></contact>
  <actuator><motor name="push" joint="push_x"/></actuator>
</mujoco>"""


def _dense_pcg(big_a, big_n, b, passes):
    """Conjugate gradients on ``(A − N) x = b`` preconditioned by ``A``, from ``x₀ = A⁻¹ b``
    (textbook form: residuals and ``β = rₖ₊₁ᵀzₖ₊₁ / rₖᵀzₖ``)."""
    x = np.linalg.solve(big_a, b)
    r = big_n @ x
    z = np.linalg.solve(big_a, r)
    p = z.copy()
    for _ in range(passes):
        ap = (big_a - big_n) @ p
        alpha = (r @ z) / (p @ ap)
        x = x + alpha * p
        r_next = r - alpha * ap
        z_next = np.linalg.solve(big_a, r_next)
        p = z_next + (r_next @ z_next) / (r @ z) * p
        r, z = r_next, z_next
    return x


def test_coupling_passes_are_conjugate_gradients_on_the_dense_coupled_system():
    """Two boxes overlapping and moving: with the dense ``A = M + Σ_i (J₁ᵀ K_eff J₁ + J₂ᵀ K_eff
    J₂)ᵢ`` and ``N = Σ_i (J₁ᵀ K_eff J₂ + J₂ᵀ K_eff J₁)ᵢ``, the step's passes are the iterates of
    conjugate gradients on the coupled ``(A − N) a = A a₀`` preconditioned by ``A``, from the
    uncoupled ``a₀``; their ``A − N`` norm error falls with every pass, below block-Jacobi's
    (``a_{p+1} = a₀ + A⁻¹ N a_p``) at the same count, and enough passes give the coupled
    solution."""
    model = sd.load_mjcf(stack_xml(2))
    q = np.asarray(State.initial(model).q).copy()
    q[9] -= 0.004
    q[2] -= 0.002
    v = 0.1 * np.asarray(jax.random.normal(jax.random.PRNGKey(3), (model.nv,)))
    dt = 1e-3
    accel = {}
    for passes in (0, 1, 2, 3, 12):
        contact = ContactModel.from_model(model, coupling_passes=passes)
        new = jax.jit(lambda s, c=contact: step(model, s, None, dt, contact=c))(State.initial(model, q, v))
        accel[passes] = (np.asarray(new.v) - v) / dt
    j1, j2, c = _dense_jacobians(model, q, contact)
    u = np.einsum("pin,n->pi", j2 - j1, v)
    law = point_forces(contact.law(jnp.float64), c.normal, c.distance + dt * jnp.sum(c.normal * u, -1), jnp.asarray(u))
    n = np.asarray(c.normal)
    a = dt * np.asarray(law.normal_damping) + dt * dt * np.asarray(law.normal_stiffness)
    b = dt * np.asarray(law.tangential_damping)
    k_eff = b[:, None, None] * np.eye(3) + (a - b)[:, None, None] * n[:, :, None] * n[:, None, :]
    big_a = np.asarray(sd.mass_matrix(model, q)) + sum(np.einsum("pin,pij,pjm->nm", j, k_eff, j) for j in (j1, j2))
    big_n = np.einsum("pin,pij,pjm->nm", j1, k_eff, j2)
    big_n = big_n + big_n.T
    jacobi = np.linalg.solve(big_a, big_n)
    assert np.max(np.abs(jacobi @ accel[0])) > 1e-2 * np.max(np.abs(accel[0]))      # the boxes are coupled
    scale = np.max(np.abs(accel[0]))
    for p in (1, 2, 3):
        np.testing.assert_allclose(accel[p], _dense_pcg(big_a, big_n, big_a @ accel[0], p), atol=1e-8 * scale)
    coupled = np.linalg.solve(big_a - big_n, big_a @ accel[0])
    np.testing.assert_allclose(accel[12], coupled, atol=1e-8 * scale)

    def error(x):                                                             # ‖·‖ in the A − N norm
        return np.sqrt((x - coupled) @ (big_a - big_n) @ (x - coupled))

    block_jacobi = [accel[0]]
    for _ in range(3):
        block_jacobi.append(accel[0] + jacobi @ block_jacobi[-1])
    errors = [error(accel[p]) for p in (0, 1, 2, 3)]
    assert errors[0] > errors[1] > errors[2] > errors[3]
    assert all(error(accel[p]) <= error(block_jacobi[p]) * (1 + 1e-9) for p in (1, 2, 3))
    assert contact_terms(model, contact, q, v, dt).coupling is not None
    one = sd.load_mjcf(stack_xml(1))                                   # the box touches only the world
    assert contact_terms(one, ContactModel.from_model(one), State.initial(one).q, np.zeros(6), dt).coupling is None


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_a_box_pushed_by_a_driven_body_accelerates_with_it(dtype):
    """A 0.5 kg slider driven by 15 N pushes a 1 kg box (frictionless between them, μ = 0.5 on
    the floor) for 0.2 s from touching: both accelerate as one body,
    ``a = (F − μ m_box g) / (m_box + m_slider)``.  With the default passes the box's travel is
    within 1 % of ``a t²/2`` at dt = 0.25 ms, and at dt = 1 ms within 1 % of the converged
    passes' (what is left there, 3 %, is the first-order step's error on the contact's
    overdamped onset); without passes 1 ms leaves it 30 % short (each body carries the
    contact's ``K_eff``)."""
    model = sd.load_mjcf(PUSH).astype(dtype)
    force, seconds = 15.0, 0.2
    q = jnp.asarray(model.q_neutral, dtype).at[2].add(-5e-4)
    want = 0.5 * (force - 0.5 * 9.81) / 1.5 * seconds ** 2

    def travel(dt, **options):
        steps = int(round(seconds / dt))
        contact = ContactModel.from_model(model, **options)
        traj = jax.jit(lambda s: rollout(model, s, jnp.full((steps, 1), force, dtype), dt, steps,
                                         contact=contact))(State.initial(model, q))
        assert bool(jnp.all(jnp.isfinite(traj.states.q)))
        return float(traj.states.q[-1, 0])

    assert travel(2.5e-4) == pytest.approx(want, rel=1e-2)
    if dtype == jnp.float64:
        assert travel(1e-3) == pytest.approx(travel(1e-3, coupling_passes=20), rel=1e-2)
        assert travel(1e-3, coupling_passes=0) < 0.8 * want


def test_coupling_passes_are_checked():
    model = sd.load_mjcf(PUSH)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="coupling_passes"):
            ContactModel.from_model(model, coupling_passes=bad)
