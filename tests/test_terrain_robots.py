"""Robots of example-robot-data on height-field terrain made by :mod:`sodyn.terrain`: Go2, on
its own collision meshes (convex hulls), stands on a flight of stairs."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.collision.pairs import candidate_pairs
from sodyn.simulate import ContactModel, State, position_servos, rollout

pytest.importorskip("trimesh")
G = 9.81
DT, STEPS = 2e-3, 750            # 1.5 s
CELL = 0.02                      # the height field's cells, m (a riser is a slope one cell wide)
RISE, RUN = 0.08, 0.3           # the stairs: 8 cm rise, 30 cm run, rising along +x
FIRST_RISER = -0.3               # x of the first riser; the second is at 0.0, the third at 0.3
BASE_X = -0.04                   # the feet then 11 cm beyond the riser below them, 11 cm short of the next


def _stairs_robot():
    """Go2 (floating base, mesh hulls) beside three steps of ``sd.terrain.stairs`` (a height
    field, ``CELL`` cells), and the candidate pairs of its feet with the stairs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        robot = sd.example_robot("go2").load(floating_base=True, max_hull_vertices=None)
    half_x, half_y = 0.8, 0.32
    stairs = sd.terrain.stairs(nrow=int(round(2 * half_y / CELL)) + 1, ncol=int(round(2 * half_x / CELL)) + 1,
                               half_x=half_x, half_y=half_y, step_height=RISE, step_depth=RUN, steps=3,
                               start=FIRST_RISER)
    model = sd.with_height_field(robot, *stairs, name="stairs")
    feet = [n for n in model.geoms.names if n.endswith("_foot:0")]
    return model, candidate_pairs(model, geoms=feet + ["stairs"]), stairs


def _surface(stairs, x):
    """Height of the stairs' triangulated surface at ``x`` (it varies along ``x`` only, so the
    triangles interpolate linearly between the columns' samples)."""
    h = np.asarray(stairs.elevation[0]) * stairs.size[2]
    return np.interp(x, np.linspace(-stairs.size[0], stairs.size[0], h.size), h)


def _clearance(model, q, stairs, geoms) -> float:
    """The lowest height of the hull vertices of ``geoms`` above the stairs' surface."""
    fk = sd.forward_kinematics(model, q)
    g = model.geoms
    low = np.inf
    for i in (g.index(n) for n in geoms):
        r, p = np.asarray(fk.body.rotation[g.body[i]]), np.asarray(fk.body.translation[g.body[i]])
        v = (np.asarray(g.vertices[i]) @ np.asarray(g.rotation[i]).T + np.asarray(g.translation[i])) @ r.T + p
        low = min(low, float(np.min(v[:, 2] - _surface(stairs, v[:, 0]))))
    return low


@pytest.mark.slow
def test_a_quadruped_stands_on_stairs_made_from_a_height_field():
    """Go2 at its SRDF ``standing`` joint posture, hind feet on the first tread and front feet on
    the second (8 cm higher: the base pitched up by about 12°, its height and pitch from the
    feet's distances to the height field by ``sd.collide``, each foot 0.5 mm deep), PD servos
    (kp 150, kv 4) holding the posture for 1.5 s: the base stays within 2 cm of its start
    height and at rest, no foot goes more than 2 mm into the stairs, the other hulls stay clear
    of them, and the stairs carry the weight (total normal force = m g within 1 %).

    Only the feet are paired with the stairs, and the other hulls are checked to stay clear of
    them (the base hull's 0.36 m bounding radius reads a window of 2 × 32 × 37 prisms per step,
    a foot's 2 × 4 × 4)."""
    model, pairs, stairs = _stairs_robot()
    contact = ContactModel.from_model(model, pairs=pairs)
    stand = np.asarray(model.keyframes.q[model.keyframes.names.index("standing")])
    contacts = jax.jit(jax.vmap(lambda q: sd.collide(model, q, pairs)))

    def feet_distance(qs):                      # (n, 4): each foot's (FL, FR, RL, RR) deepest slot
        return np.asarray(contacts(jnp.asarray(qs)).distance).reshape(len(qs), 4, -1).min(-1)

    def pose(z, pitch):
        return np.concatenate([[BASE_X, 0.0, z, np.cos(pitch / 2), 0.0, np.sin(pitch / 2), 0.0], stand[7:]])

    # Newton on (z, pitch), every foot kept above the stairs until the last step (a foot deeper
    # than about half a cell into a height field's column has no contact at all: FAR)
    z, pitch, h = stand[2] + 2 * RISE + 1e-3, 0.0, 1e-4
    for target in (1e-3, 1e-3, 1e-3, -5e-4):
        d = feet_distance(np.stack([pose(z, pitch), pose(z, pitch + h)]))
        front, hind = d[:, :2].min(1), d[:, 2:].min(1)
        step = -(front[0] - hind[0]) / ((front[1] - front[0] - hind[1] + hind[0]) / h)
        pitch += step
        z -= front[0] + (front[1] - front[0]) / h * step - target
    q0 = pose(z, pitch)
    np.testing.assert_allclose(feet_distance(np.stack([q0, q0]))[0], -5e-4, atol=2e-5)

    servos = position_servos(model, model.joint_names[1:], kp=150.0, kv=4.0)
    target = jnp.tile(jnp.asarray(q0[7:]), (STEPS, 1))
    traj = jax.jit(lambda s: rollout(model, s, target, DT, STEPS, contact=contact, actuators=servos))(
        State.initial(model, jnp.asarray(q0)))
    q = traj.states.q
    assert abs(float(q[-1, 2] - q0[2])) < 0.02
    assert float(jnp.max(jnp.abs(traj.states.v[-1]))) < 0.01
    assert float(np.min(feet_distance(q[::25]))) > -2e-3
    normal = np.asarray(contacts(q[-2:]).normal[0])          # the last step's forces act at its start, q[-2]
    force_n = np.sum(np.asarray(traj.contact_force[-1]) * normal, axis=-1)
    weight = float(jnp.sum(model.mass)) * G
    assert float(np.sum(force_n)) == pytest.approx(weight, rel=1e-2)
    assert np.all(force_n.reshape(4, -1).sum(1) > 0.1 * weight)           # all four feet carry it
    others = [n for n in model.geoms.names[:-1] if not n.endswith("_foot:0")]
    assert _clearance(model, q[-1], stairs, others) > 0.01
