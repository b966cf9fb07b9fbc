"""Forward dynamics and 𝓜⁻¹ run in world axes for float64 and in body frames below it: both
paths agree, and neither depends on where a floating base stands."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.algorithms.articulated import body_frame_forward, body_frame_inverse_mass_matrix
from sodyn.algorithms.kinematics import MASKED_VELOCITY_SLOTS
from sodyn.algorithms.world_articulated import in_world_axes
from sodyn.models import random_tree

jax.config.update("jax_enable_x64", True)

TREES = [dict(n_bodies=11, seed=21, floating_base=True, armature=0.01, damping=0.2),
         dict(n_bodies=13, seed=22, floating_base=False),
         dict(n_bodies=26, seed=23, floating_base=True)]


def _state(model, seed):
    q = sd.random_configuration(model, jax.random.PRNGKey(seed))
    v = jax.random.normal(jax.random.PRNGKey(seed + 1), (model.nv,))
    tau = jax.random.normal(jax.random.PRNGKey(seed + 2), (model.nv,))
    f_ext = jax.random.normal(jax.random.PRNGKey(seed + 3), (model.n_bodies, 6))
    return q, v, tau, f_ext


def test_world_axes_serve_float64_only():
    assert in_world_axes(jnp.float64)
    assert not in_world_axes(jnp.float32) and not in_world_axes(jnp.bfloat16)


def test_trees_take_both_velocity_paths():
    widths = [random_tree(**spec).topology.width for spec in TREES]
    assert min(widths) <= MASKED_VELOCITY_SLOTS < max(widths)


@pytest.mark.parametrize("spec", TREES, ids=["floating", "fixed", "wide"])
def test_world_and_body_frame_recursions_agree_in_float64(spec):
    model = random_tree(**spec)
    q, v, tau, f_ext = _state(model, spec["seed"])

    @jax.jit
    def both(q, v, tau, f_ext):
        body_qdd, body_minv_times = body_frame_forward(model, q, v, tau, f_ext)
        return (sd.forward_dynamics(model, q, v, tau, f_ext), body_qdd,
                sd.inverse_mass_matrix(model, q), body_frame_inverse_mass_matrix(model, q), body_minv_times(tau))

    world_qdd, body_qdd, world_minv, body_minv, body_minv_tau = both(q, v, tau, f_ext)
    scale = float(jnp.max(jnp.abs(body_qdd)))
    np.testing.assert_allclose(world_qdd / scale, body_qdd / scale, atol=1e-12)
    np.testing.assert_allclose(world_minv, body_minv, rtol=1e-10, atol=1e-12 * float(jnp.max(jnp.abs(body_minv))))
    np.testing.assert_allclose(body_minv_tau, world_minv @ tau, rtol=1e-10, atol=1e-10)


def test_results_do_not_depend_on_where_the_floating_base_stands():
    model = random_tree(**TREES[0])
    q, v, tau, f_ext = _state(model, 5)
    far = q.at[:3].add(jnp.array([1e3, -2e3, 5e2]))  # free joint: q = [p_world, quat, ...]
    fd = jax.jit(lambda q: (sd.forward_dynamics(model, q, v, tau), sd.inverse_mass_matrix(model, q)))
    (a, minv), (a_far, minv_far) = fd(q), fd(far)
    np.testing.assert_allclose(a_far, a, rtol=1e-12, atol=1e-12 * float(jnp.max(jnp.abs(a))))
    np.testing.assert_allclose(minv_far, minv, rtol=1e-12, atol=1e-12 * float(jnp.max(jnp.abs(minv))))
    # float32 far from the origin keeps float32's accuracy
    m32 = model.astype(jnp.float32)
    # jitted: run eagerly, every operation would compile on its own (6× the time)
    fd32 = jax.jit(lambda q, v, tau: sd.forward_dynamics(m32, q, v, tau))
    a32 = fd32(far.astype(jnp.float32), v.astype(jnp.float32), tau.astype(jnp.float32))
    np.testing.assert_allclose(np.asarray(a32, np.float64) / float(jnp.max(jnp.abs(a))), a / jnp.max(jnp.abs(a)),
                               atol=2e-5)
