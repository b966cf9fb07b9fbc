"""Robots of example-robot-data simulated on their own collision meshes (convex hulls) against a
ground plane: dropped limp from 0.3 m they come to rest on it; held by PD servos at their SRDF
standing pose they stand, the ground carrying their weight."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.collision.types import FAR
from sodyn.simulate import ContactModel, State, position_servos, rollout

pytest.importorskip("trimesh")
DT = 1e-3


def _robot(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = sd.example_robot(name).load(floating_base=True)
    assert "mesh" in model.geoms.type
    model = sd.with_ground_plane(model)
    return model, ContactModel.from_model(model)


def _lowest(model, q) -> float:
    d = jax.jit(sd.collide)(model, q).distance
    return float(jnp.min(jnp.where(d < FAR, d, FAR)))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["go2"])
def test_a_robot_dropped_on_its_meshes_comes_to_rest_on_the_ground(name):
    """Zero torque, the neutral pose with its lowest hull 0.3 m above the ground, 1.5 s: finite,
    no hull more than 2 mm into the ground at the end or 5 mm at any time, the base above the
    ground, and at rest."""
    model, contact = _robot(name)
    q0 = State.initial(model).q
    q0 = q0.at[2].add(0.3 - _lowest(model, q0))
    traj = jax.jit(lambda s: rollout(model, s, None, DT, 1500, contact=contact))(State.initial(model, q0))
    q = traj.states.q
    assert bool(jnp.all(jnp.isfinite(q)))
    d = np.asarray(jax.jit(jax.vmap(lambda x: sd.collide(model, x).distance))(q[::10]))
    assert d.min() > -5e-3
    assert _lowest(model, q[-1]) > -2e-3
    assert float(jnp.min(q[:, 2])) > 0.0
    assert float(jnp.max(jnp.abs(traj.states.v[-1]))) < 0.05


def test_a_quadruped_held_at_its_standing_pose_stands_on_its_feet():
    """Go2 at its SRDF ``standing`` pose, feet on the ground, PD servos on every leg joint holding
    it, 2 s: the base stays within 2 cm of its start height and the ground's normal force equals
    the weight within 1 %."""
    model, contact = _robot("go2")
    stand = np.asarray(model.keyframes.q[model.keyframes.names.index("standing")])
    q0 = jnp.asarray(stand).at[2].add(-_lowest(model, jnp.asarray(stand)) - 5e-4)
    servos = position_servos(model, model.joint_names[1:], kp=150.0, kv=4.0)
    target = jnp.tile(q0[7:], (2000, 1))
    traj = jax.jit(lambda s: rollout(model, s, target, DT, 2000, contact=contact, actuators=servos))(
        State.initial(model, q0))
    assert abs(float(traj.states.q[-1, 2] - q0[2])) < 0.02
    weight = float(jnp.sum(model.mass)) * 9.81
    assert float(jnp.sum(traj.contact_force[-1, :, 2])) == pytest.approx(weight, rel=1e-2)
