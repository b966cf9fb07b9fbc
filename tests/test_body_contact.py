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
from sodyn.simulate import ContactModel, RigidContact, State, rollout
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
    law = sd.simulate.contact.point_forces(contact.law(jnp.float64), c.normal, c.distance,
                                          jnp.asarray(np.einsum("pin,n->pi", j2 - j1, v)))
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
    import os

    import dm_control
    import mujoco.mjx

    suite = os.path.join(os.path.dirname(dm_control.__file__), "suite")
    return [os.path.join(os.path.dirname(mujoco.mjx.__file__), "test_data", "humanoid", "humanoid.xml")] + [
        os.path.join(suite, f) for f in ("humanoid.xml", "quadruped.xml", "cheetah.xml")]


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
