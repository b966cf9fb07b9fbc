"""No energy from the step (the default linearly implicit Euler step with contact): drops onto
the ground at time steps from 1 to 10 ms, with the default contact parameters and with a
thousand times stiffer ones, never raise the total energy above its initial value."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import robot_path

import sodyn as sd
from sodyn.simulate import ContactModel, GroundContact, State, contact_terms, rollout

jax.config.update("jax_enable_x64", True)
pytest.importorskip("mujoco")

STEPS_DT = (1e-3, 2e-3, 5e-3, 1e-2)
STAND = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
BOX = ('<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1"/><body name="box" pos="0 0 0.5">'
       '<freejoint/><geom name="box" type="box" size="0.1 0.1 0.1" mass="1"/></body></worldbody></mujoco>')


def _energy_gain(model, contact, q0, dt, seconds, actuators=None, control=None):
    """``max_t E(t) / E(0) − 1`` (``E`` kinetic plus gravitational energy) over a rollout."""
    steps = int(round(seconds / dt))
    u = None if control is None else jnp.tile(control, (steps, 1))
    traj = jax.jit(lambda s: rollout(model, s, u, dt, steps, contact=contact, actuators=actuators))(
        State.initial(model, q0))
    assert bool(jnp.all(jnp.isfinite(traj.states.q)))
    energy = jax.jit(jax.vmap(lambda q, v: sd.kinetic_energy(model, q, v) + sd.potential_energy(model, q)))(
        traj.states.q, traj.states.v)
    e0 = float(sd.potential_energy(model, q0))
    return (float(jnp.max(energy)) - e0) / abs(e0)


@pytest.mark.parametrize("kind", ["geoms", "points"])
@pytest.mark.parametrize("height", [0.5, 10.0])
def test_a_dropped_box_gains_no_energy_at_any_step(kind, height):
    """A tilted box dropped from 0.5 m and 10 m onto the floor through its geoms
    (``ContactModel``) or its corner points (``GroundContact``), default parameters and
    stiffness × 1000: the energy never exceeds the initial by more than 0.1 %."""
    model = sd.load_mjcf(BOX)
    quat = np.array([0.95, 0.2, 0.1, 0.05])
    q0 = State.initial(model).q.at[2].set(0.2 + height).at[3:7].set(quat / np.linalg.norm(quat))
    make = ContactModel.from_model if kind == "geoms" else GroundContact.from_model
    k0 = float(make(model).stiffness)
    for scale in (1.0, 1000.0):
        contact = make(model, stiffness=k0 * scale)
        for dt in STEPS_DT:
            gain = _energy_gain(model, contact, q0, dt, np.sqrt(2 * height / 9.81) + 1.0)
            assert gain < 1e-3, (scale, dt, gain)


def test_solo12_dropped_from_30_cm_gains_no_energy_at_any_step():
    """Solo12, limp, its standing posture dropped from a base height of 0.3 m (every contact
    point above the ground) onto its feet and knees, at 1, 2 and 5 ms.  (At 10 ms its limp,
    undamped legs, of a few grams of inertia about their joints, whirl faster than the
    explicitly integrated velocity-product terms can follow, contact or not: not a contact
    matter.)"""
    model = sd.load_urdf(robot_path("solo12"), floating_base=True)
    legs = ("FL", "FR", "HL", "HR")
    contact = GroundContact.at_frames(model, [f"{leg}_FOOT" for leg in legs] + [f"{leg}_LOWER_LEG" for leg in legs],
                                      radius=[0.0175] * 4 + [0.02] * 4)
    q0 = jnp.concatenate([jnp.array([0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0]), STAND])
    assert float(jnp.min(contact_terms(model, contact, q0, jnp.zeros(model.nv)).penetration)) < -0.05
    for dt in STEPS_DT[:-1]:
        assert _energy_gain(model, contact, q0, dt, 1.0) < 1e-3, dt
