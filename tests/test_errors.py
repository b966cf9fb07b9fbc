"""Bad input raises one clear error that names the culprit."""

import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.models import pendulum_chain


def _builder():
    b = sd.ModelBuilder()
    b.add_body("base", None, sd.JointSpec.revolute((0, 0, 1)), mass=1.0)
    return b


@pytest.mark.parametrize("mass", [0.0, -1.0, float("nan"), float("inf")])
def test_non_positive_or_non_finite_mass(mass):
    with pytest.raises(ValueError, match="body 'arm'.*mass"):
        _builder().add_body("arm", "base", mass=mass)


def test_inertia_not_positive_definite():
    with pytest.raises(ValueError, match="body 'arm'.*positive semi-definite"):
        _builder().add_body("arm", "base", mass=1.0, inertia=np.diag([1.0, 1.0, -0.5]))


def test_inertia_not_symmetric():
    with pytest.raises(ValueError, match="body 'arm'.*not symmetric"):
        _builder().add_body("arm", "base", mass=1.0, inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]])


def test_inertia_triangle_inequality():
    with pytest.raises(ValueError, match="body 'arm'.*triangle inequality"):
        _builder().add_body("arm", "base", mass=1.0, inertia=np.diag([0.1, 0.1, 1.0]))


def test_zero_joint_axis():
    with pytest.raises(ValueError, match="body 'arm'.*joint axis must be non-zero"):
        _builder().add_body("arm", "base", sd.JointSpec.revolute((0, 0, 0)))


def test_nan_in_placement():
    with pytest.raises(ValueError, match="body 'arm'.*translation contains NaN"):
        _builder().add_body("arm", "base", translation=(0, float("nan"), 0))


def test_parent_out_of_range_or_missing():
    with pytest.raises(ValueError, match="body 'arm'.*parent index 5 out of range"):
        _builder().add_body("arm", 5)
    with pytest.raises(ValueError, match="body 'arm'.*parent body 'nowhere' does not exist"):
        _builder().add_body("arm", "nowhere")


def test_cycle_cannot_be_formed():
    # A body may only name an existing parent, so a child can never become its ancestor's parent.
    b = _builder()
    with pytest.raises(ValueError, match="body 'base2'.*parent body 'tip' does not exist"):
        b.add_body("base2", "tip")
    b.add_body("tip", "base")
    with pytest.raises(ValueError, match="body 'base'.*name already used"):
        b.add_body("base", "tip")


def test_unknown_joint_type():
    with pytest.raises(ValueError, match="body 'arm'.*unknown joint type 'ball'"):
        _builder().add_body("arm", "base", "ball")


def test_empty_and_all_fixed_models():
    with pytest.raises(ValueError, match="without bodies"):
        sd.ModelBuilder().build()
    b = sd.ModelBuilder()
    b.add_body("a", None, "fixed")
    with pytest.raises(ValueError, match="no movable joint"):
        b.build()


@pytest.fixture(scope="module")
def chain():
    return pendulum_chain(3)


def test_wrong_state_shapes(chain):
    q, v = jnp.zeros(3), jnp.zeros(3)
    with pytest.raises(ValueError, match=r"q must have shape \(3,\).*got \(4,\)"):
        sd.mass_matrix(chain, jnp.zeros(4))
    with pytest.raises(ValueError, match=r"v must have shape \(3,\)"):
        sd.forward_dynamics(chain, q, jnp.zeros(2), v)
    with pytest.raises(ValueError, match=r"tau must have shape \(3,\).*jax.vmap"):
        sd.forward_dynamics(chain, q, v, jnp.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"f_ext must have shape \(n_bodies, 6\)"):
        sd.inverse_dynamics(chain, q, v, v, f_ext=jnp.zeros((3, 3)))
    with pytest.raises(TypeError, match="q is required"):
        sd.mass_matrix(chain, None)


def test_unknown_frame_and_reference(chain):
    q = jnp.zeros(3)
    with pytest.raises(ValueError, match="unknown frame 'gripper'"):
        sd.frame_jacobian(chain, q, "gripper")
    with pytest.raises(ValueError, match="reference must be 'local' or 'world_aligned'"):
        sd.frame_jacobian(chain, q, "tip", reference="world")
    with pytest.raises(ValueError, match="frame index 99 out of range"):
        sd.frame_jacobian(chain, q, 99)


def test_massless_body_may_carry_rotational_inertia():
    b = _builder()
    b.add_body("rotor", "base", mass=0.0, inertia=np.diag([1e-3, 1e-3, 2e-3]), massless_ok=True)
    m = b.build()
    np.testing.assert_allclose(m.inertia[1], np.diag([1e-3, 1e-3, 2e-3]))
    with pytest.raises(ValueError, match="body 'bad'.*positive semi-definite"):
        _builder().add_body("bad", "base", mass=0.0, inertia=np.diag([1e-3, 1e-3, -1.0]), massless_ok=True)


def test_geom_actuator_and_keyframe_errors():
    b = _builder()
    with pytest.raises(ValueError, match="geom 'g': unknown geom type 'sdf'"):
        b.add_geom("g", "base", "sdf", (1, 1, 1))
    with pytest.raises(ValueError, match="geom 'g': a mesh geom takes vertices="):
        b.add_geom("g", "base", "mesh", (1, 1, 1))
    with pytest.raises(ValueError, match="geom 'g': size must be non-negative"):
        b.add_geom("g", "base", "box", (1, -1, 1))
    with pytest.raises(ValueError, match="actuator 'a': ctrl range lower bound 1.0 exceeds upper bound -1.0"):
        b.add_actuator("a", "base", ctrl_range=(1, -1))
    b.add_actuator("a", "nowhere")
    with pytest.raises(ValueError, match="actuator 'a': joint 'nowhere' does not exist or is fixed"):
        b.build()
    b = _builder()
    b.add_body("ball", "base", "spherical")
    b.add_actuator("a", "ball")
    with pytest.raises(ValueError, match="actuator 'a': joint 'ball' is not a one-dof joint"):
        b.build()
    b = _builder()
    b.add_keyframe("home", np.zeros(2), np.zeros(1))
    with pytest.raises(ValueError, match=r"keyframe 'home': q and v must have shapes \(1,\) and \(1,\)"):
        b.build()
    with pytest.raises(ValueError, match="body 'arm': stiffness must be non-negative"):
        _builder().add_body("arm", "base", stiffness=-1.0)
