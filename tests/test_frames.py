"""Forward dynamics, 𝓜⁻¹ and 𝓜⁻¹ x in either convention (body frames, the default, or world
axes): the two agree, the choice is an explicit argument, and neither depends on where a
floating base stands."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.models import random_tree
from sodyn.runtime.tuning import MASKED_VELOCITY_SLOTS

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


def test_convention_is_an_explicit_argument():
    """Both dtypes take the documented default (body frames) unless told otherwise, and an unknown
    convention is an error naming the argument."""
    model = sd.models.double_pendulum()
    q, v, tau = np.array([0.3, -0.2]), np.array([0.1, 0.4]), np.array([0.5, -1.0])
    for dtype in (jnp.float64, jnp.float32):
        args = [jnp.asarray(x, dtype) for x in (q, v, tau)]
        default = sd.forward_dynamics(model, *args)
        np.testing.assert_array_equal(default, sd.forward_dynamics(model, *args, convention="local"))
        assert default.dtype == dtype
    for fn in (lambda c: sd.forward_dynamics(model, q, v, tau, convention=c),
               lambda c: sd.inverse_mass_matrix(model, q, convention=c),
               lambda c: sd.inverse_mass_matrix_times(model, q, tau, convention=c)):
        with pytest.raises(ValueError, match="convention must be one of"):
            fn("body")


def test_trees_take_both_velocity_paths():
    widths = [random_tree(**spec).topology.width for spec in TREES]
    assert min(widths) <= MASKED_VELOCITY_SLOTS < max(widths)


@pytest.mark.parametrize("spec", TREES, ids=["floating", "fixed", "wide"])
def test_world_and_body_frame_recursions_agree_in_float64(spec):
    model = random_tree(**spec)
    q, v, tau, f_ext = _state(model, spec["seed"])

    @jax.jit
    def both(q, v, tau, f_ext):
        return (sd.forward_dynamics(model, q, v, tau, f_ext, convention="world"),
                sd.forward_dynamics(model, q, v, tau, f_ext, convention="local"),
                sd.inverse_mass_matrix(model, q, convention="world"),
                sd.inverse_mass_matrix(model, q, convention="local"),
                sd.inverse_mass_matrix_times(model, q, tau, convention="local"))

    world_qdd, body_qdd, world_minv, body_minv, body_minv_tau = both(q, v, tau, f_ext)
    scale = float(jnp.max(jnp.abs(body_qdd)))
    np.testing.assert_allclose(world_qdd / scale, body_qdd / scale, atol=1e-12)
    np.testing.assert_allclose(world_minv, body_minv, rtol=1e-10, atol=1e-12 * float(jnp.max(jnp.abs(body_minv))))
    np.testing.assert_allclose(body_minv_tau, world_minv @ tau, rtol=1e-10, atol=1e-10)


def test_results_do_not_depend_on_where_the_floating_base_stands():
    model = random_tree(**TREES[0])
    q, v, tau, f_ext = _state(model, 5)
    far = q.at[:3].add(jnp.array([1e3, -2e3, 5e2]))  # free joint: q = [p_world, quat, ...]
    for convention in ("world", "local"):
        fd = jax.jit(lambda q, c=convention: (sd.forward_dynamics(model, q, v, tau, convention=c),
                                              sd.inverse_mass_matrix(model, q, convention=c)))
        (a, minv), (a_far, minv_far) = fd(q), fd(far)
        np.testing.assert_allclose(a_far, a, rtol=1e-12, atol=1e-12 * float(jnp.max(jnp.abs(a))))
        np.testing.assert_allclose(minv_far, minv, rtol=1e-12, atol=1e-12 * float(jnp.max(jnp.abs(minv))))
    # float32 far from the origin keeps float32's accuracy
    m32 = model.astype(jnp.float32)
    # jitted: run eagerly, every operation would compile on its own (6× the time)
    for convention in ("world", "local"):
        fd32 = jax.jit(lambda q, v, tau, c=convention: sd.forward_dynamics(m32, q, v, tau, convention=c))
        a32 = fd32(far.astype(jnp.float32), v.astype(jnp.float32), tau.astype(jnp.float32))
        np.testing.assert_allclose(np.asarray(a32, np.float64) / float(jnp.max(jnp.abs(a))),
                                   a / jnp.max(jnp.abs(a)), atol=2e-5)
