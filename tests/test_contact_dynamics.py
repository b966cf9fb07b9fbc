"""Ground contact in simulation (default stepper, float64 unless stated): a quadruped that
stands or collapses, a box that sticks or slides on a slope, a ball's restitution against the
documented formula, gradients through sustained sliding, and a long float32 run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import robot_path

import sodyn as sd
from sodyn.simulate import GroundContact, State, contact_terms, position_servos, restitution_coefficient, rollout

jax.config.update("jax_enable_x64", True)

LEGS = ("FL", "FR", "HL", "HR")
STAND = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])


@pytest.fixture(scope="module")
def solo():
    """Solo12 with contact points on its feet (spheres), knees and the eight base corners."""
    model = sd.load_urdf(robot_path("solo12"), floating_base=True)
    frames = [f"{leg}_FOOT" for leg in LEGS] + [f"{leg}_LOWER_LEG" for leg in LEGS] + ["base_link"] * 8
    corners = [[sx * 0.2, sy * 0.08, sz * 0.03] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    contact = GroundContact.at_frames(model, frames, positions=[[0.0, 0.0, 0.0]] * 8 + corners,
                                      radius=[0.0175] * 4 + [0.02] * 4 + [0.0] * 8)
    servo = position_servos(model, model.joint_names[1:], kp=5.0, kv=0.2)
    q0 = jnp.concatenate([jnp.array([0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0]), STAND])  # dropped from 0.3 m
    return model, contact, servo, q0


def _penetrations(model, contact, qs):
    return jax.vmap(lambda q: contact_terms(model, contact, q, jnp.zeros(model.nv)).penetration)(qs)


def test_quadruped_dropped_stands_with_a_posture_controller_and_collapses_without(solo):
    model, contact, servo, q0 = solo
    weight = float(np.sum(model.mass)) * 9.81
    steps = 2000

    @jax.jit
    def drop(controls):
        actuators = servo if controls is not None else None
        traj = rollout(model, State.initial(model, q0), controls, 1e-3, steps, contact=contact, actuators=actuators)
        return traj, _penetrations(model, contact, traj.states.q)

    standing, pen = drop(jnp.broadcast_to(jnp.asarray(STAND), (steps, 12)))
    assert np.all(np.isfinite(standing.states.q))
    normal = standing.contact_force[-1] @ np.array([0.0, 0.0, 1.0])
    assert float(np.sum(normal)) == pytest.approx(weight, rel=0.01)
    assert np.max(pen[-1]) <= 2e-3                       # resting penetration at the default stiffness
    assert np.all(pen[-1, 4:] < 0)                       # on its feet: knees and base in the air
    assert float(standing.states.q[-1, 2]) > 0.15
    assert np.max(np.abs(standing.states.v[-1])) < 1e-2  # at rest

    limp, pen = drop(None)
    assert np.all(np.isfinite(limp.states.q))
    assert float(limp.states.q[-1, 2]) > 0.0             # the base stays above the ground
    assert np.max(pen) < 5e-3                            # nothing sinks into it, impact included
    resting = pen[-1] > -1e-3
    assert np.any(resting[8:])                           # collapsed onto its base corners
    assert float(np.sum(limp.contact_force[-1] @ np.array([0.0, 0.0, 1.0]))) == pytest.approx(weight, rel=0.01)


def _box(friction: float, tilt: float, mass: float = 1.0):
    """A 0.2 × 0.2 × 0.1 m box on a free joint; the slope is the plane z = 0 under gravity
    tilted by ``tilt`` about y."""
    g = 9.81
    b = sd.ModelBuilder(name="box", gravity=(g * np.sin(tilt), 0.0, -g * np.cos(tilt)))
    b.add_body("box", None, sd.JointSpec.free(), mass=mass,
               inertia=mass / 12.0 * np.diag([0.05, 0.05, 0.08]), joint_name="root")
    b.add_geom("hull", "box", "box", (0.1, 0.1, 0.05))
    model = b.build()
    return model, GroundContact.from_model(model, friction=friction)


@pytest.mark.parametrize("ratio", [0.9, 1.1])
def test_box_on_a_slope_sticks_below_and_slides_above_the_friction_angle(ratio):
    """tan θ = 0.9 μ: creep below 1 mm/s; tan θ = 1.1 μ: it accelerates down at
    g (sin θ − μ cos θ) within 2 %."""
    mu = 0.5
    tilt = float(np.arctan(ratio * mu))
    model, contact = _box(mu, tilt)
    q0 = jnp.array([0.0, 0.0, 0.05, 1.0, 0.0, 0.0, 0.0])
    traj = jax.jit(lambda: rollout(model, State.initial(model, q0), None, 1e-3, 2000, contact=contact))()
    assert np.all(np.isfinite(traj.states.q))
    speed = np.asarray(traj.states.v[:, 3])  # body-frame x velocity: along the slope (no rotation)
    assert np.max(np.abs(traj.states.v[500:, :3])) < 1e-5  # settled flat after the first touch
    if ratio < 1:
        assert np.max(np.abs(speed[500:])) < 1e-3
    else:
        expected = 9.81 * (np.sin(tilt) - mu * np.cos(tilt))
        measured = (speed[1999] - speed[999]) / 1.0
        assert measured == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("damping_ratio", [0.2, 1.0])
def test_ball_restitution_matches_the_documented_formula(damping_ratio):
    """A ball (no gravity) hits the plane at 1 m/s: rebound / impact speed within 5 % of
    :func:`restitution_coefficient` (linear spring–dashpot, non-adhesive force)."""
    b = sd.ModelBuilder(name="ball", gravity=(0.0, 0.0, 0.0))
    b.add_body("ball", None, sd.JointSpec.free(), mass=0.5, inertia=0.4 * 0.5 * 0.05**2 * np.eye(3))
    b.add_geom("ball", "ball", "sphere", (0.05, 0.0, 0.0))
    model = b.build()
    contact = GroundContact.from_model(model, damping_ratio=damping_ratio)
    s0 = State.initial(model, jnp.array([0.0, 0.0, 0.06, 1.0, 0.0, 0.0, 0.0]), jnp.zeros(6).at[5].set(-1.0))
    traj = jax.jit(lambda: rollout(model, s0, None, 1e-4, 1500, contact=contact))()
    rebound = float(traj.states.v[-1, 5])
    assert float(np.min(traj.states.q[:, 2])) < 0.05 and rebound > 0  # it touched and left
    expected = float(restitution_coefficient(contact.stiffness, contact.damping, 0.5))
    assert rebound / 1.0 == pytest.approx(expected, rel=0.05)


def test_gradient_of_200_steps_of_sliding_matches_central_differences():
    """A box sliding down a slope (tan θ = 1.5 μ) with pushes: ``jax.grad`` of a 200-step loss
    with respect to the initial state, the controls, the mass and the friction coefficient
    against central differences along 3 random directions, to 1e-6 relative."""
    mu = 0.5
    model, contact = _box(mu, float(np.arctan(1.5 * mu)))
    steps = 200
    q0 = jnp.array([0.0, 0.0, 0.0499, 1.0, 0.0, 0.0, 0.0])
    v0 = jnp.array([0.0, 0.0, 0.0, 0.3, 0.05, 0.0])
    controls = 0.2 * jax.random.normal(jax.random.PRNGKey(0), (steps, 6)).at[:, 5].set(0.0)

    @jax.jit
    def loss(v0, controls, mass, friction):
        m = model.__class__(**{**model.__dict__, "mass": mass[None]})
        c = contact.__class__(**{**contact.__dict__, "friction": friction})
        traj = rollout(m, State.initial(m, q0, v0), controls, 1e-3, steps, contact=c)
        return traj.states.q[-1, 0] + traj.states.q[-1, 1] ** 2 + 0.3 * jnp.sum(traj.states.v[-1] ** 2)

    args = (v0, controls, model.mass[0], jnp.asarray(contact.friction))
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(*args)
    for i, (x, g) in enumerate(zip(args, grads)):
        assert np.all(np.isfinite(g))
        for j in range(3):
            d = jax.random.normal(jax.random.PRNGKey(10 * i + j + 1), jnp.shape(x))
            plus, minus = list(args), list(args)
            plus[i], minus[i] = x + 1e-6 * d, x - 1e-6 * d
            numeric = (loss(*plus) - loss(*minus)) / 2e-6
            assert float(jnp.sum(g * d)) == pytest.approx(float(numeric), rel=1e-6, abs=1e-9), (i, j)


def test_float32_quadruped_runs_10000_steps_and_first_contact_gradients_are_finite(solo):
    model, contact, servo, q0 = solo
    model32 = model.astype(jnp.float32)
    contact32 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32), contact)
    servo32 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32), servo)
    s0 = State.initial(model32, q0.astype(jnp.float32))
    controls = jnp.broadcast_to(jnp.asarray(STAND, jnp.float32), (10_000, 12))
    traj = jax.jit(lambda s: rollout(model32, s, controls, 1e-3, 10_000, contact=contact32, actuators=servo32,
                                     checkpoint=None))(s0)
    assert traj.states.q.dtype == jnp.float32 and np.all(np.isfinite(traj.states.q))
    assert float(traj.states.q[-1, 2]) > 0.15

    def height_after_touchdown(z):  # feet reach the ground around step 80 of the drop
        q = s0.q.at[2].set(z)
        out = rollout(model32, State.initial(model32, q), controls[:120], 1e-3, 120, contact=contact32,
                      actuators=servo32)
        return out.states.q[-1, 2]

    grad = jax.grad(height_after_touchdown)(jnp.float32(0.3))
    assert np.isfinite(grad)


def test_a_sphere_comes_to_rest_on_an_mjcf_floor():
    """The floor plane and the sphere of an MJCF file become the contact model."""
    xml = """
    <mujoco model="drop">
      <worldbody>
        <geom name="floor" type="plane" size="0 0 1" pos="0 0 -0.2"/>
        <body name="ball" pos="0 0 0.3">
          <freejoint name="root"/>
          <geom name="ball" type="sphere" size="0.1" mass="1"/>
        </body>
      </worldbody>
    </mujoco>"""
    model = sd.load_mjcf(xml)
    contact = GroundContact.from_model(model)
    traj = jax.jit(lambda: rollout(model, State.initial(model), None, 1e-3, 1500, contact=contact))()
    height = float(traj.states.q[-1, 2])
    assert height == pytest.approx(-0.2 + 0.1, abs=2e-3)  # resting on the plane, sunk ≤ 2 mm
    assert abs(float(traj.states.v[-1, 5])) < 1e-3


def test_the_recorded_contact_force_is_the_force_the_implicit_step_applied():
    """A 1 kg box falling flat onto the ground at 1 m/s, sliding sideways, frictionless (so it
    never turns): at every step, impact included, its momentum balance ``m (v⁺ − v)/dt = m g +
    Σ f`` holds with the slots' recorded forces ``f`` (the law linearized at the end of the step,
    not its value at the start), and once at rest the normal forces sum to ``m g``."""
    from sodyn.simulate import ContactModel, step_and_forces

    model = sd.load_mjcf("""
    <mujoco model="box drop">
      <worldbody>
        <geom name="floor" type="plane" size="0 0 1"/>
        <body name="box" pos="0 0 0.105">
          <freejoint name="root"/>
          <geom name="box" type="box" size="0.1 0.1 0.1" mass="1"/>
        </body>
      </worldbody>
    </mujoco>""")
    contact = ContactModel.from_model(model, friction=0.0)
    dt, gravity = 1e-3, np.asarray(model.gravity)

    def body(state, _):
        new, forces = step_and_forces(model, state, None, dt, contact=contact)
        return new, (state.q, state.v, new.v, forces.contact)

    v0 = jnp.array([0.0, 0.0, 0.0, 0.5, 0.0, -1.0])
    _, (q, v, v_next, f) = jax.jit(lambda s: jax.lax.scan(body, s, None, 600))(State.initial(model, None, v0))
    rotation = jax.vmap(lambda x: sd.simulate.contact.body_frames(model, x, jnp.zeros(6))[0][0])(q)
    assert float(jnp.max(jnp.abs(rotation - jnp.eye(3)))) < 1e-12
    world = lambda w: jnp.einsum("tij,tj->ti", rotation, w[:, 3:])          # the box's linear velocity
    balance = (world(v_next) - world(v)) / dt - gravity - jnp.sum(f, axis=1)
    assert float(jnp.max(jnp.abs(f[:, :, 2]))) > 50.0                           # the impact
    assert float(jnp.max(jnp.abs(balance))) < 1e-8
    assert float(jnp.sum(f[-1, :, 2])) == pytest.approx(9.81, rel=1e-6)
