"""Robots of example-robot-data simulated on their own collision meshes (convex hulls at the
loader's default vertex cap) against a ground plane: dropped limp from 0.3 m they come to rest
on it; held by PD servos at their SRDF standing pose they stand, the ground carrying their
weight.  Talos is example-robot-data's ``talos`` (the ``talos_reduced`` URDF)."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.collision.types import FAR
from sodyn.simulate import ContactModel, State, position_servos, rollout

pytest.importorskip("trimesh")
DT = 1e-3


def _robot(name: str, damping: float | None = None):
    """The robot with a floating base on a ground plane and its contact model; ``damping``
    (N·m·s/rad, N·s/m) replaces the URDF's joint damping where it is smaller."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = sd.example_robot(name).load(floating_base=True)
    assert "mesh" in model.geoms.type
    if damping is not None:
        joints = np.arange(model.nv) >= 6
        model = eqx.tree_at(lambda m: m.damping, model,
                            jnp.where(joints, jnp.maximum(model.damping, damping), model.damping))
    model = sd.with_ground_plane(model)
    return model, ContactModel.from_model(model)


def _lowest(model, q) -> float:
    d = jax.jit(sd.collide)(model, q).distance
    return float(jnp.min(jnp.where(d < FAR, d, FAR)))


def _base_com_height(model, q) -> jax.Array:
    """World height of the base body's centre of mass at each configuration ``q (T, nq)``."""
    body = jax.vmap(lambda x: sd.forward_kinematics(model, x).body)(q)
    return body.translation[:, 0, 2] + jnp.einsum("tj,j->t", body.rotation[:, 0, 2, :], model.com[0])


# (robot, seconds, joint damping).  A limp robot's collapse is chaotic (its settling time
# changes by a second or more with the last bits of a contact), so each runs over one and a half
# times the longest settling time seen.  The URDFs' joint damping (0 for Go2 and Solo12, 0 to 1
# N·m·s/rad for the humanoid, 0.003 for the Panda) leaves a limb that hangs free or lies on a
# rounded hull (a calf, a foot on the ankle roll, the hand on joint 7) a pendulum whose energy
# decays over tens of seconds or not at all: at 4 s a Go2 calf still swings at 0.1 rad/s, the
# Panda's hand with constant energy.  Each robot gets a passive joint damping of its size (about
# a back-driven gearbox's; 1 N·m·s/rad is MuJoCo Menagerie's Panda) where its URDF's is smaller.
DROPS = [("go2", 5.0, 0.5), ("solo12", 5.0, 0.05), ("talos_reduced", 5.0, 1.0), ("panda", 6.0, 1.0)]


@pytest.mark.slow
@pytest.mark.parametrize("name, seconds, damping", DROPS, ids=[d[0] for d in DROPS])
def test_a_robot_dropped_on_its_meshes_comes_to_rest_on_the_ground(name, seconds, damping):
    """Zero torque (joint damping only), the neutral pose with its lowest hull 0.3 m above the
    ground: finite, no hull more than 2 mm into the ground at the end or 5 mm at any time, the
    base's centre of mass above the ground throughout, and at rest (no velocity component
    above 0.05 over the last 50 ms)."""
    model, contact = _robot(name, damping)
    steps = int(round(seconds / DT))
    q0 = State.initial(model).q
    q0 = q0.at[2].add(0.3 - _lowest(model, q0))
    traj = jax.jit(lambda s: rollout(model, s, None, DT, steps, contact=contact))(State.initial(model, q0))
    q = traj.states.q
    assert bool(jnp.all(jnp.isfinite(q))) and bool(jnp.all(jnp.isfinite(traj.states.v)))
    d = np.asarray(jax.jit(jax.vmap(lambda x: sd.collide(model, x).distance))(q[::10]))
    assert d.min() > -5e-3
    assert _lowest(model, q[-1]) > -2e-3
    assert float(jnp.min(_base_com_height(model, q[::10]))) > 0.0
    assert float(jnp.max(jnp.abs(traj.states.v[-50:]))) < 0.05


def _stand(name: str, pose: str, kp: float, kv: float, seconds: float):
    """The robot at its SRDF ``pose``, lowest hull 0.5 mm into the ground, PD servos on every
    joint holding the pose: the model, the contact model, the start and the rollout."""
    model, contact = _robot(name)
    stand = jnp.asarray(model.keyframes.q[model.keyframes.names.index(pose)])
    q0 = stand.at[2].add(-_lowest(model, stand) - 5e-4)
    servos = position_servos(model, model.joint_names[1:], kp=kp, kv=kv)
    steps = int(round(seconds / DT))
    target = jnp.tile(q0[7:], (steps, 1))
    traj = jax.jit(lambda s: rollout(model, s, target, DT, steps, contact=contact, actuators=servos))(
        State.initial(model, q0))
    return model, contact, q0, traj


def _check_stands(model, q0, traj) -> None:
    """The base within 2 cm of its start height, at rest (no velocity component above 0.05 over
    the last 50 ms), and the ground's normal force (the force the last step applied) the weight
    within 1 %."""
    assert bool(jnp.all(jnp.isfinite(traj.states.q)))
    assert abs(float(traj.states.q[-1, 2] - q0[2])) < 0.02
    assert float(jnp.max(jnp.abs(traj.states.v[-50:]))) < 0.05
    weight = float(jnp.sum(model.mass)) * 9.81
    assert float(jnp.sum(traj.contact_force[-1, :, 2])) == pytest.approx(weight, rel=1e-2)


def _share_on(model, contact, traj, bodies) -> float:
    """The share of the final normal force that the geoms of ``bodies`` carry."""
    body = np.asarray(model.geoms.body)[np.asarray(contact.slots.geom2)]
    on = np.isin(body, [model.body_names.index(b) for b in bodies])
    fz = np.asarray(traj.contact_force[-1, :, 2])
    return float(fz[on].sum() / fz.sum())


def test_a_quadruped_held_at_its_standing_pose_stands_on_its_feet():
    """Go2 at its SRDF ``standing`` pose, feet on the ground, PD servos on every leg joint holding
    it, 2 s: the base stays within 2 cm of its start height and comes to rest, and the ground's
    normal force equals the weight within 1 %."""
    model, _, q0, traj = _stand("go2", "standing", kp=150.0, kv=4.0, seconds=2.0)
    _check_stands(model, q0, traj)


@pytest.mark.slow
def test_solo12_held_at_its_standing_pose_stands_on_its_feet():
    """Solo12 (2.5 kg) at its SRDF ``standing`` pose, PD servos kp = 20 N·m/rad, kv = 0.5: as the
    Go2 test, 2 s."""
    model, contact, q0, traj = _stand("solo12", "standing", kp=20.0, kv=0.5, seconds=2.0)
    _check_stands(model, q0, traj)
    assert _share_on(model, contact, traj, [f"{leg}_LOWER_LEG" for leg in ("FL", "FR", "HL", "HR")]) > 0.99


@pytest.mark.slow
def test_talos_held_at_half_sitting_stands_on_its_feet():
    """Talos (90 kg) at its SRDF ``half_sitting`` pose, soles on the ground, PD servos kp =
    5000 N·m/rad, kv = 50 on every joint, 2 s: as the Go2 test, and the soles carry the weight.
    (With kp = 1000 the legs' compliance in series is below the inverted pendulum's ``m g h ≈
    780 N·m/rad`` and the robot falls over backwards.)"""
    model, contact, q0, traj = _stand("talos_reduced", "half_sitting", kp=5000.0, kv=50.0, seconds=2.0)
    _check_stands(model, q0, traj)
    assert _share_on(model, contact, traj, ["leg_left_6_link", "leg_right_6_link"]) > 0.99


@pytest.mark.slow
def test_a_floating_arm_held_at_its_pose_rests_on_its_base():
    """Panda with a floating base at its SRDF ``default`` pose (its centre of mass about 5 cm
    inside the front edge of the base's footprint), the base's hull on the ground, PD servos kp =
    500, kv = 10 on every joint, 3 s (the arm's transient lasts about 2 s): as the Go2 test, and
    the base carries the weight."""
    model, contact, q0, traj = _stand("panda", "default", kp=500.0, kv=10.0, seconds=3.0)
    _check_stands(model, q0, traj)
    assert _share_on(model, contact, traj, ["panda_link0"]) > 0.99
