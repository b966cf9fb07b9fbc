"""Random and neutral configurations."""

import jax
import numpy as np
import pytest

import sodyn as sd
from sodyn.models import random_tree

pytestmark = pytest.mark.fast


def test_random_configuration_respects_limits_and_manifolds():
    b = sd.ModelBuilder()
    b.add_body("base", None, sd.JointSpec.free())
    b.add_body("arm", "base", sd.JointSpec.revolute((0, 1, 0)), lower=-0.5, upper=0.25)
    b.add_body("slider", "arm", sd.JointSpec.prismatic((1, 0, 0)))
    b.add_body("ball", "slider", sd.JointSpec.spherical())
    model = b.build()
    qs = np.asarray(jax.jit(jax.vmap(lambda k: sd.random_configuration(model, k, scale=0.5)))(
        jax.random.split(jax.random.PRNGKey(0), 500)))
    arm = qs[:, model.joint_q_slice("arm")]
    assert arm.min() >= -0.5 and arm.max() <= 0.25 and arm.max() - arm.min() > 0.6
    slider = qs[:, model.joint_q_slice("slider")]
    assert np.abs(slider).max() <= 0.5
    base = qs[:, model.joint_q_slice("base")]
    assert np.abs(base[:, :3]).max() <= 0.5
    np.testing.assert_allclose(np.linalg.norm(base[:, 3:], axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(qs[:, model.joint_q_slice("ball")], axis=1), 1.0, atol=1e-12)


def test_neutral_configuration_is_identity_pose():
    model = random_tree(6, seed=4, floating_base=True)
    q = sd.neutral_configuration(model)
    np.testing.assert_allclose(sd.normalize_configuration(model, q), q)
    np.testing.assert_allclose(sd.difference(model, q, q), np.zeros(model.nv), atol=1e-15)
