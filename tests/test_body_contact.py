"""Contact between bodies through the model's geoms (``sd.ContactModel``, ``sd.collide``): resting
stacks, sliding and sticking on a slope, the body–body terms against dense Jacobians
(equal and opposite forces, ``Σ J_kᵀ B_k J_k``), rigid impulses between two bodies, gradients
against central differences, and ``jit``/``vmap`` over contact parameters."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.collision.collide import collide
from sodyn.simulate import ContactModel, RigidContact, State, position_servos, rollout
from sodyn.simulate.contact import contact_terms

jax.config.update("jax_enable_x64", True)
pytest.importorskip("mujoco")

G = 9.81


def stack_xml(n: int, half=0.05, mass: float = 1.0, tilt_deg: float = 0.0, friction: float = 1.0) -> str:
    """``n`` free boxes stacked on a floor (tilted about ``y`` by ``tilt_deg``); ``half``: the
    boxes' half-size, one for all or one per box (bottom first)."""
    halves = np.broadcast_to(np.asarray(half, float), (n,))
    tops = 2 * np.cumsum(halves) - halves
    bodies = "".join(
        f'<body name="box{i}" pos="0 0 {tops[i]:.6f}"><freejoint/>'
        f'<geom name="g{i}" type="box" size="{h} {h} {h}" mass="{mass}" friction="{friction} 0 0"/></body>'
        for i, h in enumerate(halves))
    c, s = np.cos(np.radians(tilt_deg) / 2), np.sin(np.radians(tilt_deg) / 2)
    return (f'<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1" quat="{c} 0 {s} 0" '
            f'friction="{friction} 0 0"/>{bodies}</worldbody></mujoco>')


@pytest.fixture(scope="module")
def two_boxes():
    return sd.load_mjcf(stack_xml(2))


def _tilt_deg(q_quat):
    """Angle between the body's z axis and the world's, degrees."""
    r = np.asarray(jax.vmap(sd.spatial.quat_to_rotation)(jnp.asarray(q_quat)))
    return np.degrees(np.arccos(np.clip(r[..., 2, 2], -1.0, 1.0)))


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_a_box_rests_on_a_box_without_rocking(two_boxes, dtype):
    model = two_boxes.astype(dtype)
    contact = ContactModel.from_model(model)
    start = State.initial(model)
    traj = jax.jit(lambda s: rollout(model, s, None, 1e-3, 2000, contact=contact))(start)
    q = np.asarray(traj.states.q, np.float64)
    for body in range(2):
        quat = q[:, 7 * body + 3: 7 * body + 7]
        assert np.max(_tilt_deg(quat)) < 0.1
    c = jax.jit(collide)(model, traj.states.q[-1])
    assert float(jnp.min(c.distance)) > -1e-3                       # penetration ≤ 1 mm
    floor = model.geoms.names.index("floor")
    on_floor = np.asarray(c.geom1) == floor
    force = np.asarray(traj.contact_force[-1], np.float64)
    mass = float(np.sum(np.asarray(model.mass, np.float64)))
    assert np.sum(force[on_floor, 2]) == pytest.approx(mass * G, rel=1e-2)   # the ground carries both
    assert np.sum(force[~on_floor, 2]) == pytest.approx(0.5 * mass * G, rel=1e-2)  # the lower box the upper


@pytest.mark.slow
def test_a_stack_of_five_boxes_stands_for_five_seconds():
    model = sd.load_mjcf(stack_xml(5))
    contact = ContactModel.from_model(model)
    start = State.initial(model)
    traj = jax.jit(lambda s: rollout(model, s, None, 1e-3, 5000, contact=contact))(start)
    q = np.asarray(traj.states.q)
    for body in range(5):
        p = q[:, 7 * body: 7 * body + 3]
        assert np.max(np.linalg.norm(p - p[0], axis=-1)) < 1e-3


@pytest.mark.parametrize("ratio", [0.8, 1.25])
def test_a_capsule_along_the_fall_line_slides_or_sticks(ratio):
    """A capsule lying along the fall line of a slope (it slides, it cannot roll): the
    acceleration down the slope is g (sin θ − μ cos θ) when tan θ ≥ 1.1 μ, and the creep below
    1 mm/s when tan θ ≤ 0.9 μ."""
    mu = 0.4
    theta = np.arctan(ratio * mu)
    c, s = np.cos(theta / 2), np.sin(theta / 2)
    xml = f"""<mujoco><worldbody>
      <geom name="slope" type="plane" size="0 0 1" quat="{c} 0 {s} 0" friction="{mu} 0 0"/>
      <body name="log" pos="0 0 0.05" quat="{np.cos(np.pi / 4 + theta / 2)} 0 {np.sin(np.pi / 4 + theta / 2)} 0">
        <freejoint/><geom name="capsule" type="capsule" size="0.05 0.2" mass="2" friction="{mu} 0 0"/></body>
    </worldbody></mujoco>"""
    model = sd.load_mjcf(xml)
    contact = ContactModel.from_model(model)
    traj = jax.jit(lambda s: rollout(model, s, None, 1e-3, 1500, contact=contact))(State.initial(model))
    p = np.asarray(traj.states.q[:, :3])
    down = np.array([np.cos(theta), 0.0, -np.sin(theta)])     # the fall line
    x = p @ down
    if ratio > 1:
        t = np.arange(1, 1501) * 1e-3
        late = t > 0.5
        acc = np.polyfit(t[late], x[late], 2)[0] * 2
        assert acc == pytest.approx(G * (np.sin(theta) - mu * np.cos(theta)), rel=2e-2)
    else:
        creep = (x[-1] - x[-501]) / 0.5
        assert abs(creep) < 1e-3


def _dense_jacobians(model, q, contact):
    """Per slot the world Jacobians of body 2's and body 1's material points at the contact
    position, ``(nc, 3, nv)`` each, from sodyn's world-aligned body Jacobians."""
    names = list(model.body_names)
    jac_w = np.asarray(sd.frame_jacobians(model, q, names, "world_aligned"))
    origin = np.asarray(sd.forward_kinematics(model, q).body.translation)
    rot, org, _ = (np.asarray(x) for x in sd.simulate.contact.body_frames(model, q, jnp.zeros(model.nv)))
    c = contact.contacts(model, jnp.asarray(rot), jnp.asarray(org))
    pos = np.asarray(c.position)
    b1, b2 = contact.slot_bodies(model)
    out = []
    for body in (b1, b2):
        jp = np.zeros((len(body), 3, model.nv))
        on = body >= 0
        arm = pos[on] - origin[body[on]]
        skew = np.asarray(sd.spatial.skew(jnp.asarray(arm)))
        jp[on] = jac_w[body[on], 3:] - np.einsum("pij,pjk->pik", skew, jac_w[body[on], :3])
        out.append(jp)
    return out[0], out[1], c


def test_body_body_terms_equal_the_dense_relative_jacobian(two_boxes):
    """``Σ_k J_kᵀ f_k = Σ_i (J₂ − J₁)ᵢᵀ f_i`` (equal and opposite forces) at a state where the
    boxes overlap and move, and ``Σ_k J_kᵀ B_k J_k = Σ_i (J₁ᵀ K_eff J₁ + J₂ᵀ K_eff J₂)ᵢ``."""
    model = two_boxes
    contact = ContactModel.from_model(model)
    key = jax.random.PRNGKey(3)
    q = np.asarray(State.initial(model).q).copy()
    q[9] -= 0.004                                        # the upper box 4 mm into the lower one
    q[2] -= 0.002                                        # the lower 2 mm into the floor
    v = 0.1 * np.asarray(jax.random.normal(key, (model.nv,)))
    j1, j2, c = _dense_jacobians(model, q, contact)
    terms = contact_terms(model, contact, q, v)
    jac_l = np.asarray(sd.frame_jacobians(model, q, list(model.body_names), "local"))
    tau = np.einsum("kin,ki->n", jac_l, np.asarray(terms.f_ext))
    force = np.asarray(terms.force)
    assert np.sum(np.linalg.norm(force, axis=-1) > 1.0) >= 8           # faces in contact on both interfaces
    want = np.einsum("pin,pi->n", j2 - j1, force)
    np.testing.assert_allclose(tau, want, rtol=1e-10, atol=1e-8)
    dt = 1e-3
    implicit = contact_terms(model, contact, q, v, dt)
    jac_b = np.einsum("kin,kij,kjm->nm", jac_l, np.asarray(implicit.added_inertia), jac_l)
    u = np.einsum("pin,n->pi", j2 - j1, v)
    law = sd.simulate.contact.point_forces(contact.law(jnp.float64), c.normal,       # at the predicted distance
                                          c.distance + dt * jnp.sum(c.normal * u, -1), jnp.asarray(u))
    n = np.asarray(c.normal)
    a = dt * np.asarray(law.normal_damping) + dt * dt * np.asarray(law.normal_stiffness)
    b = dt * np.asarray(law.tangential_damping)
    k_eff = b[:, None, None] * np.eye(3) + (a - b)[:, None, None] * n[:, :, None] * n[:, None, :]
    want_b = sum(np.einsum("pin,pij,pjm->nm", j, k_eff, j) for j in (j1, j2))
    np.testing.assert_allclose(jac_b, want_b, rtol=1e-9, atol=1e-6 * np.max(np.abs(want_b)))


def test_rigid_contact_holds_a_box_on_a_box(two_boxes):
    model = two_boxes
    rigid = RigidContact(ContactModel.from_model(model))
    traj = jax.jit(lambda s: rollout(model, s, None, 2e-3, 500, contact=rigid))(State.initial(model))
    c = jax.jit(collide)(model, traj.states.q[-1])
    assert float(jnp.min(c.distance)) > -1e-3
    assert np.max(_tilt_deg(np.asarray(traj.states.q[:, 10:14]))) < 0.5
    v = np.asarray(traj.states.v[-1])
    assert np.max(np.abs(v)) < 1e-2


def test_gradient_through_box_on_box_sliding_matches_central_differences():
    """A small box pushed sideways slides on a larger one (its face stays inside the larger
    one's, so the contact's active set does not change): d(final position)/d(push, friction,
    initial velocity) against central differences (float64), along the axes and three random
    directions."""
    model = sd.load_mjcf(stack_xml(2, half=(0.08, 0.03)))
    contact = ContactModel.from_model(model)
    base = State.initial(model)
    steps = 150

    def final_x(params):
        push, mu, v0 = params
        c = eqx.tree_at(lambda c: c.friction, contact, mu * jnp.ones_like(contact.friction))
        v = base.v.at[9].set(v0)
        f = jnp.zeros((steps, model.n_bodies, 6)).at[:, 1, 3].set(push)
        traj = rollout(model, State.initial(model, base.q, v), None, 1e-3, steps, contact=c, f_ext=f)
        return traj.states.q[-1, 7] + 0.3 * traj.states.q[-1, 8]

    x0 = jnp.array([8.0, 0.5, 0.2])
    grad = jax.jit(jax.grad(final_x))(x0)
    f = jax.jit(final_x)
    rng = np.random.default_rng(1)
    for direction in list(np.eye(3)) + list(rng.normal(size=(3, 3))):
        direction = direction / np.linalg.norm(direction)
        h = 1e-6
        fd = (f(x0 + h * direction) - f(x0 - h * direction)) / (2 * h)
        assert float(grad @ direction) == pytest.approx(float(fd), rel=1e-5, abs=1e-9)


def test_contact_parameters_vmap_and_jit(two_boxes):
    model = two_boxes
    contact = ContactModel.from_model(model)
    start = State.initial(model)

    def height(k):
        c = eqx.tree_at(lambda c: c.stiffness, contact, k)
        return rollout(model, start, None, 1e-3, 300, contact=c).states.q[-1, 9]

    ks = jnp.array([0.5, 1.0, 2.0]) * contact.stiffness
    h = jax.jit(jax.vmap(height))(ks)
    assert np.all(np.diff(np.asarray(h)) > 0)           # stiffer: less sinking


def test_bad_contact_parameters_are_named(two_boxes):
    contact = ContactModel.from_model(two_boxes)
    with pytest.raises(ValueError, match="friction"):
        ContactModel.from_model(two_boxes, friction=-1.0)
    with pytest.raises(ValueError, match=r"stiffness must be a scalar or have shape \(3,\)"):
        eqx.tree_at(lambda c: c.stiffness, contact, jnp.ones(5)).__check_init__()


def _model_files():
    """MJX's test humanoid and dm_control's humanoid, quadruped and cheetah (found without
    importing the packages, so that collection does not need them)."""
    import importlib.util
    import os

    def folder(module):
        spec = importlib.util.find_spec(module)
        return None if spec is None else os.path.dirname(spec.origin)

    mjx, suite = folder("mujoco.mjx"), folder("dm_control")
    files = [] if mjx is None else [os.path.join(mjx, "test_data", "humanoid", "humanoid.xml")]
    return files + ([] if suite is None else [os.path.join(suite, "suite", f)
                                              for f in ("humanoid.xml", "quadruped.xml", "cheetah.xml")])


@pytest.mark.parametrize("path", _model_files(), ids=lambda p: p.split("/")[-2] + "/" + p.split("/")[-1])
def test_active_pairs_match_mujoco_at_random_configurations(path):
    """At random configurations (joints in [−1, 1], the base at random heights over the floor),
    the geom pairs sodyn finds within their margin are MuJoCo's (``d.contact``), pairs within
    1e-6 m of the margin left out."""
    import mujoco

    pytest.importorskip("dm_control")
    mj = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(mj)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)      # meshes and the like, named elsewhere
        model = sd.load_mjcf(path)
    names = model.geoms.names
    name_of = lambda g: mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"  # noqa: E731
    run = jax.jit(collide)
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(8):
        qpos = np.array(mj.qpos0)
        free = mj.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
        for j in range(1 if free else 0, mj.njnt):
            a = mj.jnt_qposadr[j]
            lo, hi = (mj.jnt_range[j] if mj.jnt_limited[j] else (-1.0, 1.0))
            qpos[a] = rng.uniform(lo, hi)
        if free:
            qpos[2] = rng.uniform(0.0, 1.3)
        d.qpos[:] = qpos
        mujoco.mj_kinematics(mj, d)
        mujoco.mj_collision(mj, d)
        theirs = {}
        for c in d.contact[: d.ncon]:
            key = frozenset((name_of(c.geom1), name_of(c.geom2)))
            theirs[key] = min(theirs.get(key, np.inf), c.dist - c.includemargin)
        ours = run(model, jnp.asarray(qpos))
        dist = np.asarray(ours.distance)
        deepest = {}
        for key, x in zip([frozenset((names[a], names[b])) for a, b in zip(ours.geom1, ours.geom2)], dist):
            deepest[key] = min(deepest.get(key, np.inf), x)
        keys = [frozenset((names[a], names[b])) for a, b in zip(ours.geom1, ours.geom2)]
        ours_active = {k for k, on in zip(keys, np.asarray(ours.active)) if on}
        supported = {k for k in theirs if all(n in names for n in k)}
        ambiguous = {k for k, v in deepest.items() if abs(v - _margin(mj, k, name_of)) < 1e-6}
        assert (ours_active - ambiguous) == (supported - ambiguous)
        checked += len(supported)
    assert checked > 0


def _margin(mj, key, name_of):
    """MuJoCo's margin of a dynamic pair: the larger geom margin."""
    ids = [g for g in range(mj.ngeom) if name_of(g) in key]
    return max(float(mj.geom_margin[g]) for g in ids)



def _dm_control_path(name: str) -> str:
    import os

    dm_control = pytest.importorskip("dm_control")
    return os.path.join(os.path.dirname(dm_control.__file__), "suite", name)


def test_a_humanoid_falls_and_comes_to_rest_on_its_geoms():
    """dm_control's humanoid (every geom collides: 161 candidate pairs) dropped standing with
    zero control: no two colliding geoms closer than −5 mm over 3 s, every body above the floor
    and at rest at the end.  (The MJX test humanoid collides only its feet with the floor, by its
    ``<pair>``\\ s: in MuJoCo as here it falls through.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = sd.load_mjcf(_dm_control_path("humanoid.xml"))
    contact = ContactModel.from_model(model)
    assert contact.n_pairs == 161
    dt, steps = 1e-3, 3000
    traj = jax.jit(lambda s: rollout(model, s, None, dt, steps, contact=contact))(State.initial(model))
    q = traj.states.q
    distance = jax.jit(jax.vmap(lambda q: collide(model, q).distance))(q[::5])
    assert float(jnp.min(distance)) > -5e-3
    fk = sd.forward_kinematics(model, q[-1])
    assert float(jnp.min(fk.body.translation[:, 2])) > 0.0
    assert float(jnp.max(jnp.abs(traj.states.v[-1]))) < 0.05


def test_a_ball_rolls_off_a_box_onto_the_ground_and_a_dropped_ball_stays_in_a_box_of_five_walls():
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1"/>
      <geom name="table" type="box" size="0.2 0.2 0.1" pos="0 0 0.1"/>
      <body name="ball" pos="0.1 0 0.25"><freejoint/><geom name="ball" type="sphere" size="0.05" mass="0.5"/></body>
      <geom name="bottom" type="box" size="0.2 0.2 0.01" pos="1 0 0.01"/>
      <geom name="wall1" type="box" size="0.01 0.2 0.1" pos="1.19 0 0.1"/>
      <geom name="wall2" type="box" size="0.01 0.2 0.1" pos="0.81 0 0.1"/>
      <geom name="wall3" type="box" size="0.2 0.01 0.1" pos="1 0.19 0.1"/>
      <geom name="wall4" type="box" size="0.2 0.01 0.1" pos="1 -0.19 0.1"/>
      <body name="drop" pos="1.05 0.03 0.5"><freejoint/><geom name="drop" type="sphere" size="0.04" mass="0.3"/></body>
    </worldbody></mujoco>"""
    model = sd.load_mjcf(xml)
    contact = ContactModel.from_model(model)
    q0 = State.initial(model).q
    v0 = jnp.zeros(model.nv).at[3].set(1.0)          # the ball rolls towards +x (world velocity, body axes)
    traj = jax.jit(lambda s: rollout(model, s, None, 1e-3, 1500, contact=contact))(State.initial(model, q0, v0))
    q = np.asarray(traj.states.q)
    c = jax.jit(collide)(model, traj.states.q[-1])
    assert float(jnp.min(c.distance)) > -2e-3                        # both at rest, within 2 mm
    ball = q[:, :3]
    assert ball[-1, 0] > 0.25 and abs(ball[-1, 2] - 0.05) < 2e-3      # off the table's edge, on the ground
    assert np.max(ball[:, 2]) < 0.26                                 # it rolled, it did not jump
    drop = q[:, 7:10]
    assert np.all(np.abs(drop[:, 0] - 1.0) < 0.18) and np.all(np.abs(drop[:, 1]) < 0.18)   # inside the walls
    assert abs(drop[-1, 2] - 0.06) < 3e-3                            # resting on the bottom


PUSHER_XML = """<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1" friction="0.5 0 0"/>
  <body name="pusher" pos="-0.2 0 0.05">
    <joint name="px" type="slide" axis="1 0 0" damping="5"/><joint name="py" type="slide" axis="0 1 0" damping="5"/>
    <geom name="tip" type="sphere" size="0.04" mass="1" contype="2" conaffinity="2"/></body>
  <body name="box" pos="0 0 0.05"><freejoint/>
    <geom name="box" type="box" size="0.05 0.05 0.05" mass="0.5" friction="0.5 0 0" contype="3" conaffinity="3"/>
  </body></worldbody>
  <actuator><motor name="fx" joint="px"/><motor name="fy" joint="py"/></actuator></mujoco>"""


@pytest.fixture(scope="module")
def pusher():
    model = sd.load_mjcf(PUSHER_XML)
    return model, ContactModel.from_model(model)


def test_the_pusher_pushes_the_box_without_passing_through(pusher):
    """A sphere on two sliders (the floor does not touch it: bitmasks) pushes a free box: the
    box moves, and no two colliding geoms go deeper than −2 mm."""
    model, contact = pusher
    assert {(model.geoms.names[a], model.geoms.names[b]) for a, b in zip(contact.geom1, contact.geom2)} == {
        ("floor", "box"), ("tip", "box")}
    u = jnp.tile(jnp.array([6.0, 0.0]), (400, 1))
    traj = jax.jit(lambda s, u: rollout(model, s, u, 1e-3, 400, contact=contact))(State.initial(model), u)
    distance = jax.jit(jax.vmap(lambda q: collide(model, q).distance))(traj.states.q)
    assert float(jnp.min(distance)) > -2e-3
    assert float(traj.states.q[-1, 2]) > 0.05                      # the box slid at least 5 cm


def _check_gradient(f, x0, directions, h, rel):
    grad = jax.jit(jax.grad(f))(x0)
    f = jax.jit(f)
    for d in directions:
        d = d / np.linalg.norm(d)
        fd = (f(x0 + h * d) - f(x0 - h * d)) / (2 * h)
        assert float(jnp.vdot(grad, d)) == pytest.approx(float(fd), rel=rel, abs=1e-9)
    return grad


def test_gradient_of_a_200_step_pushing_rollout_matches_central_differences(pusher):
    """d(box's final x)/d(controls) along three random directions of the (200, 2) controls and
    along a harder push at every step (the pusher meets the box after about 120 steps)."""
    model, contact = pusher
    start = State.initial(model)

    def final_x(u):
        return rollout(model, start, u, 1e-3, 200, contact=contact).states.q[-1, 2]

    u0 = jnp.tile(jnp.array([10.0, 0.0]), (200, 1))
    rng = np.random.default_rng(2)
    harder = np.zeros((200, 2))
    harder[:, 0] = 1.0
    _check_gradient(final_x, u0, list(rng.normal(size=(3, 200, 2))) + [harder], 1e-4, 1e-5)


def test_gradient_through_sphere_capsule_first_contact_matches_central_differences():
    """A ball dropped on a fixed capsule touches it within the rollout: d(final height)/d(drop
    height, lateral offset, stiffness) against central differences; finite in float32."""
    xml = """<mujoco><worldbody><geom name="bar" type="capsule" size="0.03 0.2" quat="0.7071068 0 0.7071068 0"/>
      <body name="ball" pos="0.05 0.01 0.12"><freejoint/><geom name="ball" type="sphere" size="0.04" mass="0.2"/>
      </body></worldbody></mujoco>"""
    model = sd.load_mjcf(xml)
    contact = ContactModel.from_model(model)

    def final(x, model=model, contact=contact):
        height, offset, scale = x
        q = State.initial(model).q.at[2].set(height).at[1].set(offset)
        c = eqx.tree_at(lambda c: c.stiffness, contact, scale * contact.stiffness)
        traj = rollout(model, State.initial(model, q), None, 1e-3, 120, contact=c)
        return traj.states.q[-1, 2] + 0.5 * traj.states.q[-1, 0]

    x0 = jnp.array([0.1, 0.01, 1.0])
    traj = rollout(model, State.initial(model, State.initial(model).q.at[2].set(0.1)), None, 1e-3, 120,
                   contact=contact)
    first = int(np.argmax(np.asarray(jax.vmap(lambda q: collide(model, q).distance[0])(traj.states.q)) < 0))
    assert 20 < first < 110                                        # the first contact falls inside the rollout
    _check_gradient(final, x0, list(np.eye(3)), 1e-7, 1e-5)   # stiff: the differences err as h² f"'/6
    m32 = model.astype(jnp.float32)
    c32 = ContactModel.from_model(m32)
    g32 = jax.jit(jax.grad(lambda x: final(x, m32, c32)))(x0.astype(jnp.float32))
    assert g32.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(g32)))


@pytest.mark.slow
def test_rigid_contact_stacks_and_pushes_inside_the_friction_cone(pusher):
    """``RigidContact`` on the same scenes: a stack of three boxes and the pusher.  No pair
    deeper than 1 mm, every slot's force inside its friction cone, and the gradient of the
    pushed box's position finite and equal to central differences while the active set holds."""
    model = sd.load_mjcf(stack_xml(3))
    rigid = RigidContact(ContactModel.from_model(model))
    traj = jax.jit(lambda s: rollout(model, s, None, 2e-3, 400, contact=rigid))(State.initial(model))
    c = jax.jit(jax.vmap(lambda q: collide(model, q)))(traj.states.q[-50:])
    assert float(jnp.min(c.distance)) > -1e-3
    _check_cone(traj.contact_force[-50:], c.normal, rigid.contact.per_slot("friction", jnp.float64))
    mass = float(np.sum(np.asarray(model.mass)))
    on_floor = np.asarray(c.geom1) == model.geoms.names.index("floor")
    assert float(jnp.sum(traj.contact_force[-1][on_floor, 2])) == pytest.approx(mass * G, rel=1e-3)

    model, contact = pusher
    rigid = RigidContact(contact)
    start = State.initial(model)

    def final_x(u):
        return rollout(model, start, u, 2e-3, 150, contact=rigid).states.q[-1, 2]

    u0 = jnp.tile(jnp.array([6.0, 0.0]), (150, 1))
    traj = jax.jit(lambda u: rollout(model, start, u, 2e-3, 150, contact=rigid))(u0)
    c = jax.jit(jax.vmap(lambda q: collide(model, q)))(traj.states.q)
    assert float(jnp.min(c.distance)) > -1e-3 and float(traj.states.q[-1, 2]) > 0.01
    _check_cone(traj.contact_force, c.normal, rigid.contact.per_slot("friction", jnp.float64))
    grad = jax.jit(jax.grad(final_x))(u0)
    assert bool(jnp.all(jnp.isfinite(grad)))
    d = np.zeros((150, 2))
    d[100:, 0] = 1.0                                               # late pushes: the box already moves
    d /= np.linalg.norm(d)
    fd = (jax.jit(final_x)(u0 + 1e-5 * d) - jax.jit(final_x)(u0 - 1e-5 * d)) / 2e-5
    assert float(jnp.vdot(grad, d)) == pytest.approx(float(fd), rel=1e-4)


def _check_cone(force, normal, friction):
    """``|f_t| ≤ μ f_n`` and ``f_n ≥ 0`` at every slot (``force`` at the start-of-step normals)."""
    f_n = jnp.sum(force * normal, axis=-1)
    f_t = jnp.linalg.norm(force - f_n[..., None] * normal, axis=-1)
    assert float(jnp.min(f_n)) >= -1e-9
    assert bool(jnp.all(f_t <= jnp.broadcast_to(friction, f_n.shape) * f_n * (1 + 1e-6) + 1e-9))


def test_an_arm_driven_into_itself_stops_at_its_own_links():
    """A planar four-link arm of capsules (built with ``ModelBuilder``: self-collision on, the
    parent–child filter on), its three outer joints servoed to a folded posture that the links
    cannot reach: the tip link meets the first and the arm stops there, no pair deeper than 2 mm."""
    b = sd.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    along_x = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])   # capsule z along the link's x
    parent = None
    for i in range(4):
        b.add_body(f"link{i}", parent, sd.JointSpec.revolute((0.0, 0.0, 1.0)), translation=(0.3 if i else 0.0, 0, 0),
                   mass=1.0, com=(0.15, 0.0, 0.0), inertia=np.diag([1e-3, 1e-2, 1e-2]), damping=0.5)
        b.add_geom(f"capsule{i}", f"link{i}", "capsule", (0.03, 0.12, 0.0), rotation=along_x,
                   translation=(0.15, 0.0, 0.0))
        parent = f"link{i}"
    model = b.build()
    contact = ContactModel.from_model(model)
    names = {frozenset((model.geoms.names[a], model.geoms.names[c])) for a, c in zip(contact.geom1, contact.geom2)}
    assert names == {frozenset(("capsule0", "capsule2")), frozenset(("capsule0", "capsule3")),
                     frozenset(("capsule1", "capsule3"))}
    servos = position_servos(model, kp=5.0, kv=1.0)
    u = jnp.tile(jnp.array([0.0, 2.2, 2.2, 2.2]), (3000, 1))
    traj = jax.jit(lambda s, u: rollout(model, s, u, 1e-3, 3000, contact=contact, actuators=servos))(
        State.initial(model), u)
    distance = jax.jit(jax.vmap(lambda q: collide(model, q).distance))(traj.states.q)
    assert float(jnp.min(distance)) > -2e-3
    assert float(jnp.min(distance[-1])) < 0.0                      # the links touch
    assert float(jnp.max(jnp.abs(traj.states.q[-1, 1:] - 2.2))) > 0.3   # short of the servos' targets
    assert float(jnp.max(jnp.abs(traj.states.v[-1]))) < 0.1        # and held there


def test_condim_one_is_frictionless():
    """A box on a 20° slope, both geoms ``condim="1"`` (MuJoCo takes the larger of the two),
    slides down at g sin θ, as with no friction."""
    theta = np.radians(20.0)
    xml = stack_xml(1, tilt_deg=20.0).replace("friction=", 'condim="1" friction=')
    model = sd.load_mjcf(xml)
    contact = ContactModel.from_model(model)
    assert float(jnp.max(contact.friction)) == 0.0
    q0 = State.initial(model).q
    r = np.array([[np.cos(theta), 0, np.sin(theta)], [0, 1, 0], [-np.sin(theta), 0, np.cos(theta)]])
    q0 = q0.at[:3].set(r @ np.array([0.0, 0.0, 0.05])).at[3:7].set([np.cos(theta / 2), 0, np.sin(theta / 2), 0])
    traj = jax.jit(lambda s: rollout(model, s, None, 1e-3, 600, contact=contact))(State.initial(model, q0))
    x = np.asarray(traj.states.q[:, :3]) @ np.array([np.cos(theta), 0.0, -np.sin(theta)])
    t = np.arange(1, 601) * 1e-3
    acc = 2 * np.polyfit(t[200:], x[200:], 2)[0]
    assert acc == pytest.approx(G * np.sin(theta), rel=1e-2)


ALL_TYPES_XML = """<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1"/>
  <body name="b0"><freejoint/><geom name="sphere" type="sphere" size="0.06"/></body>
  <body name="b1"><freejoint/><geom name="capsule" type="capsule" size="0.04 0.06"/></body>
  <body name="b2"><freejoint/><geom name="ellipsoid" type="ellipsoid" size="0.05 0.07 0.04"/></body>
  <body name="b3"><freejoint/><geom name="cylinder" type="cylinder" size="0.05 0.05"/></body>
  <body name="b4"><freejoint/><geom name="box" type="box" size="0.05 0.04 0.06"/></body>
  <body name="b5"><freejoint/><geom name="sphere2" type="sphere" size="0.05"/></body>
  <body name="b6"><freejoint/><geom name="capsule2" type="capsule" size="0.03 0.05"/></body>
  <body name="b7"><freejoint/><geom name="ellipsoid2" type="ellipsoid" size="0.04 0.05 0.06"/></body>
  <body name="b8"><freejoint/><geom name="cylinder2" type="cylinder" size="0.04 0.06"/></body>
  <body name="b9"><freejoint/><geom name="box2" type="box" size="0.04 0.05 0.05"/></body>
</worldbody></mujoco>"""


@pytest.mark.slow
def test_collide_distances_are_differentiable_in_q_for_every_pair_type():
    """For every pair type, at random configurations where the pair is within 3 cm or
    penetrating: ``jax.grad`` of the pair's deepest slot distance along random velocity-space
    directions (``q ⊕ ε δv``) against central differences (float64, 1e-6 relative)."""
    model = sd.load_mjcf(ALL_TYPES_XML)
    slots = jax.jit(collide)(model, State.initial(model).q)
    types = model.geoms.type
    rng = np.random.default_rng(5)
    distance = jax.jit(lambda q, dv: collide(model, sd.integrate(model, q, dv)).distance)
    jac = jax.jit(jax.jacrev(lambda q, dv, i: collide(model, sd.integrate(model, q, dv)).distance[i], argnums=1))
    checked = set()
    for _ in range(6):
        q = np.zeros(model.nq)
        for k in range(10):
            quat = rng.normal(size=4)
            q[7 * k: 7 * k + 7] = np.concatenate([rng.uniform(-0.07, 0.07, 2).tolist() + [rng.uniform(0.0, 0.12)],
                                                  quat / np.linalg.norm(quat)])
        q = jnp.asarray(q)
        zero = jnp.zeros(model.nv)
        d = np.asarray(distance(q, zero))
        for i in np.flatnonzero(d < 0.03):
            key = (types[slots.geom1[i]], types[slots.geom2[i]])
            same_pair = np.flatnonzero(np.asarray(slots.pair) == slots.pair[i])
            if key in checked or i != same_pair[np.argmin(d[same_pair])] or abs(d[i]) < 1e-4:
                continue
            g = jac(q, zero, int(i))
            assert bool(jnp.all(jnp.isfinite(g)))
            for direction in rng.normal(size=(2, model.nv)):
                direction /= np.linalg.norm(direction)
                h = 1e-6
                fd = (distance(q, h * direction)[i] - distance(q, -h * direction)[i]) / (2 * h)
                assert float(g @ direction) == pytest.approx(float(fd), rel=1e-6, abs=1e-8), key
            checked.add(key)
    from sodyn.collision.collide import pair_functions

    # the mesh and height-field pairs' gradients: tests/test_collision_hulls.py, tests/test_heightfield.py
    assert checked == {k for k in pair_functions()[1] if "mesh" not in k and "hfield" not in k} - {("plane", "plane")}


PANDA_SCENE = """
  <link name="table">
    <collision><origin xyz="0.55 0 0.1"/><geometry><box size="0.4 0.6 0.2"/></geometry></collision>
  </link>
  <joint name="table_mount" type="fixed"><parent link="panda_link0"/><child link="table"/></joint>
  <link name="cube">
    <inertial><mass value="0.2"/><inertia ixx="1.3e-4" iyy="1.3e-4" izz="1.3e-4" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.05 0.05 0.05"/></geometry></collision>
  </link>
  <joint name="cube_free" type="floating">
    <parent link="panda_link0"/><child link="cube"/><origin xyz="0.55 0 0.225"/>
  </joint>
</robot>"""


@pytest.mark.slow
def test_panda_pushes_a_free_cube_across_a_table():
    """example-robot-data's ``panda_collision.urdf`` (cylinders and spheres, self-collision on
    with its SRDF) beside a free cube on a table (a world box), both added to the URDF: position
    servos with gravity compensation sweep the first joint, the hand pushes the cube along the
    table (the hand meets it above its centre, so it tips over onto a side face, a roll of about
    one edge length), and no two colliding geoms go deeper than 2 mm."""
    from robots import robot_path

    path = robot_path("panda").parent / "panda_collision.urdf"
    srdf = robot_path("panda").parent.parent / "srdf" / "panda.srdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = sd.load_urdf(path.read_text().replace("</robot>", PANDA_SCENE), self_collision=True, srdf=str(srdf))
    contact = ContactModel.from_model(model)
    names = {frozenset((model.geoms.names[a], model.geoms.names[b]))
                             for a, b in zip(contact.geom1, contact.geom2)}
    assert frozenset(("table:0", "cube:0")) in names and frozenset(("panda_hand:1", "cube:0")) in names
    arm = [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1", "panda_finger_joint2"]
    kp = np.array([400.0] * 7 + [50.0] * 2)
    servos = position_servos(model, arm, kp=kp, kv=np.array([40.0] * 7 + [2.0] * 2))
    posture = jnp.array([-0.2609, 0.1737, 0.0379, -2.1419, 0.0005, 2.3336, 0.8])   # the hand 5 cm beside the cube
    q0 = jnp.asarray(model.q_neutral).at[7:14].set(posture).at[14:16].set(0.0)    # the cube's joint frame is its start
    dofs = np.array([model.joint_v_slice(j).start for j in arm])

    def policy(_, t, s):   # the first joint sweeps 0.4 rad in 0.8 s; targets offset by gravity / kp
        ref = jnp.concatenate([posture.at[0].add(0.5 * jnp.minimum(t, 0.8)), jnp.zeros(2)])
        return ref + sd.gravity_forces(model, s.q)[dofs] / kp

    traj = jax.jit(lambda s: rollout(model, s, policy, 1e-3, 1000, contact=contact, actuators=servos))(
        State.initial(model, q0))
    distance = jax.jit(jax.vmap(lambda q: collide(model, q).distance))(traj.states.q[::5])
    assert float(jnp.min(distance)) > -2e-3
    cube = np.asarray(traj.states.q[-1, :3])
    assert cube[1] > 0.025        # pushed along the table by more than half its width (it tips onto a side face)
    assert -2e-3 < cube[2] < 0.03 and abs(cube[0]) < 0.15 and cube[1] < 0.25   # and still on it
