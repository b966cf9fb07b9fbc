"""Every public function under jit, vmap (over states and over model parameters), grad
(against central finite differences, float64), NaN-free gradients at singular points, and a
float32 run.  Everything is computed by a few jitted functions shared across tests (compile
time dominates the cost of this module).  The ``fast`` subset (newest JAX, GPU) takes the
dynamics (FD, ID, M, M⁻¹, log det M), the frame Jacobian, integrate and difference; the main
run takes every function."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.models import random_tree

MODEL = random_tree(7, seed=11, floating_base=True, armature=0.02, damping=0.1)
TIP = MODEL.frame_names[-1]

FUNCTIONS = {
    "forward_dynamics": lambda m, q, v, u, f: sd.forward_dynamics(m, q, v, u, f),
    "inverse_dynamics": lambda m, q, v, u, f: sd.inverse_dynamics(m, q, v, u, f),
    "mass_matrix": lambda m, q, v, u, f: sd.mass_matrix(m, q),
    "inverse_mass_matrix": lambda m, q, v, u, f: sd.inverse_mass_matrix(m, q),
    "inverse_mass_matrix_times": lambda m, q, v, u, f: sd.inverse_mass_matrix_times(m, q, u),
    "log_det_mass_matrix": lambda m, q, v, u, f: sd.log_det_mass_matrix(m, q),
    "frame_jacobian": lambda m, q, v, u, f: sd.frame_jacobian(m, q, TIP, "world_aligned"),
    "frame_pose": lambda m, q, v, u, f: sd.frame_pose(m, q, TIP).translation,
    "jdot_v": lambda m, q, v, u, f: sd.frame_jacobian_dot_times_v(m, q, v, TIP),
    "kinetic_energy": lambda m, q, v, u, f: sd.kinetic_energy(m, q, v),
    "integrate": lambda m, q, v, u, f: sd.integrate(m, q, v, 0.1),
    "difference": lambda m, q, v, u, f: sd.difference(m, q, sd.integrate(m, q, v, 0.1)),
    "normalize_configuration": lambda m, q, v, u, f: sd.normalize_configuration(m, 1.1 * q),
    "body_velocities": lambda m, q, v, u, f: sd.body_velocities(m, q, v),
    "body_accelerations": lambda m, q, v, u, f: sd.body_accelerations(m, q, v, u, gravity=True),
    "frame_velocity": lambda m, q, v, u, f: sd.frame_velocity(m, q, v, TIP, "world_aligned"),
    "frame_acceleration": lambda m, q, v, u, f: sd.frame_acceleration(m, q, v, u, TIP, classical=True),
    "center_of_mass": lambda m, q, v, u, f: sd.center_of_mass(m, q),
    "potential_energy": lambda m, q, v, u, f: sd.potential_energy(m, q),
    "bias_forces": lambda m, q, v, u, f: sd.bias_forces(m, q, v, f),
    "gravity_forces": lambda m, q, v, u, f: sd.gravity_forces(m, q),
    "composite_inertias": lambda m, q, v, u, f: sd.composite_inertias(m, q),
    "articulated_body_inertias": lambda m, q, v, u, f: sd.articulated_body_inertias(m, q).psi,
}
GRAD_FUNCTIONS = ["forward_dynamics", "inverse_dynamics", "mass_matrix", "inverse_mass_matrix",
                  "log_det_mass_matrix", "frame_pose", "jdot_v", "kinetic_energy", "frame_acceleration",
                  "center_of_mass", "articulated_body_inertias"]
# the ``fast`` subset's functions, and those of them whose gradients it checks
FAST = {"forward_dynamics", "inverse_dynamics", "mass_matrix", "inverse_mass_matrix", "log_det_mass_matrix",
        "frame_jacobian", "integrate", "difference"}
FAST_GRADIENTS = {"forward_dynamics", "inverse_dynamics", "log_det_mass_matrix"}


def _names(names, fast=FAST):
    """``names`` as test parameters, those in ``fast`` marked ``fast``."""
    return [pytest.param(n, marks=pytest.mark.fast) if n in fast else n for n in names]


class _ByGroup:
    """``self(name)`` is ``evaluate(names)[name]``, ``names`` the functions of ``name``'s group
    (in ``fast`` or not), evaluated once per group: one program per group, so that the fast
    subset compiles only its own."""

    def __init__(self, evaluate, fast):
        self.evaluate, self.fast, self.done = evaluate, fast, {}

    def __call__(self, name):
        group = name in self.fast
        if group not in self.done:
            self.done[group] = self.evaluate([n for n in FUNCTIONS if (n in self.fast) == group])
        return self.done[group][name]


@pytest.fixture(scope="module")
def states():
    q = sd.random_configuration(MODEL, jax.random.PRNGKey(0))
    v = jax.random.normal(jax.random.PRNGKey(1), (MODEL.nv,))
    u = jax.random.normal(jax.random.PRNGKey(2), (MODEL.nv,))
    f = 0.3 * jax.random.normal(jax.random.PRNGKey(3), (MODEL.n_bodies, 6))
    q2 = sd.integrate(MODEL, q, -v, 0.2)
    return (q, v, u, f), (jnp.stack([q, q2]), jnp.stack([v, 2 * v]), jnp.stack([u, -u]), jnp.stack([f, 0 * f]))


@pytest.fixture(scope="module")
def results(states):
    """``results(name)``: (float64 single, batched, second single), float32 single of ``name``."""
    single, batch = states

    def evaluate(names):
        functions = {name: FUNCTIONS[name] for name in names}
        run = jax.jit(lambda m, s: {name: fn(m, *s) for name, fn in functions.items()})
        run_batch = jax.jit(jax.vmap(lambda *s: run(MODEL, s)))
        first, batched, second = run(MODEL, single), run_batch(*batch), run(MODEL, tuple(x[1] for x in batch))
        out32 = run(MODEL.astype(jnp.float32), tuple(x.astype(jnp.float32) for x in single))
        return {name: ((first[name], batched[name], second[name]), out32[name]) for name in functions}

    return _ByGroup(evaluate, FAST)


@pytest.mark.parametrize("name", _names(sorted(FUNCTIONS)))
def test_jit_vmap_states_and_float32(results, name):
    (single, batched, second), out32 = results(name)
    assert np.all(np.isfinite(single))
    np.testing.assert_allclose(batched[0], single, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(batched[1], second, rtol=1e-10, atol=1e-12)
    assert out32.dtype == jnp.float32
    scale = max(1.0, float(np.max(np.abs(single))))
    np.testing.assert_allclose(np.asarray(out32, np.float64) / scale, np.asarray(single) / scale, atol=2e-3)


def _with_params(mass, inertia, gravity):
    return eqx.tree_at(lambda m: (m.mass, m.inertia, m.gravity), MODEL, (mass, inertia, gravity))


@pytest.mark.parametrize("name", _names(["forward_dynamics", "mass_matrix", "inverse_mass_matrix",
                                          "log_det_mass_matrix"]))
def test_vmap_over_model_parameters(states, name):
    fn = FUNCTIONS[name]
    single, _ = states
    scales = jnp.array([0.5, 1.0, 2.0])
    masses = MODEL.mass[None] * scales[:, None]
    inertias = MODEL.inertia[None] * scales[:, None, None, None]
    gravities = jnp.array([[0.0, 0.0, -9.81], [0.0, 0.0, 0.0], [1.0, 0.0, -3.0]])
    call = jax.jit(lambda m_, i_, g_: fn(_with_params(m_, i_, g_), *single))
    batched = jax.jit(jax.vmap(lambda m_, i_, g_: fn(_with_params(m_, i_, g_), *single)))(masses, inertias, gravities)
    for i in range(3):
        np.testing.assert_allclose(batched[i], call(masses[i], inertias[i], gravities[i]), rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def directional_derivatives(states):
    """For each function: (reverse-mode derivative, central difference) along one random
    direction that moves every input at once (q on its manifold, v, u, f_ext and the masses)."""
    (q, v, u, f), _ = states
    rng = np.random.default_rng(0)
    dirs = dict(
        q=jnp.asarray(rng.normal(size=MODEL.nv)), v=jnp.asarray(rng.normal(size=MODEL.nv)),
        u=jnp.asarray(rng.normal(size=MODEL.nv)), f=jnp.asarray(rng.normal(size=f.shape)),
        mass=jnp.asarray(rng.normal(size=MODEL.mass.shape)),
    )

    def along(fn, t):
        m = eqx.tree_at(lambda mm: mm.mass, MODEL, MODEL.mass + t * dirs["mass"])
        qq = sd.integrate(MODEL, q, dirs["q"], t)
        out = fn(m, qq, v + t * dirs["v"], u + t * dirs["u"], f + t * dirs["f"])
        return jnp.sum(jnp.sin(jnp.asarray(out)))

    def evaluate(names):
        @jax.jit
        def run():
            eps = 1e-6
            out = {}
            for name in [n for n in GRAD_FUNCTIONS if n in names]:
                s = lambda t, fn=FUNCTIONS[name]: along(fn, t)  # noqa: E731
                up, down = jax.vmap(s)(jnp.array([eps, -eps]))  # both sides in one (batched) program
                out[name] = (jax.grad(s)(0.0), (up - down) / (2 * eps))
            return out

        return run()

    return _ByGroup(evaluate, FAST_GRADIENTS)


@pytest.mark.parametrize("name", _names(GRAD_FUNCTIONS, FAST_GRADIENTS))
def test_grad_matches_finite_differences(directional_derivatives, name):
    analytic, numeric = directional_derivatives(name)
    assert abs(float(analytic)) > 1e-3  # the direction does reach the output
    assert float(analytic) == pytest.approx(float(numeric), rel=1e-6, abs=1e-7)


@pytest.mark.fast
def test_gradients_finite_at_identity_quaternion_and_zero_velocity():
    model = random_tree(5, seed=2, floating_base=True, joint_types=("spherical", "revolute"))
    q = sd.neutral_configuration(model)
    z = jnp.zeros(model.nv)
    fns = (
        lambda q, v: jnp.sum(sd.forward_dynamics(model, q, v, z)),
        lambda q, v: jnp.sum(sd.inverse_dynamics(model, q, v, z)),
        lambda q, v: sd.kinetic_energy(model, q, v) + sd.log_det_mass_matrix(model, q),
        lambda q, v: jnp.sum(sd.integrate(model, q, v, 1.0)),
        lambda q, v: jnp.sum(sd.difference(model, q, sd.integrate(model, q, v, 1.0))),
    )
    grads = jax.jit(lambda q, v: [jax.grad(fn, argnums=(0, 1))(q, v) for fn in fns])(q, z)
    for gq, gv in grads:
        assert np.all(np.isfinite(gq)) and np.all(np.isfinite(gv))
