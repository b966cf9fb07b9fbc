"""Ground contact (``sodyn.simulate.contact``): contact points against MuJoCo's geom poses, the force law
against its closed forms, the body wrenches and added inertias against dense point Jacobians
(``Σ_k J_kᵀ f_k = Σ_p J_pᵀ f_p``, ``Σ_k J_kᵀ B_k J_k = Σ_p J_pᵀ K_eff J_p``), the restitution
coefficient against a 1-D integration, gradients against central differences, and errors."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import random_mujoco_state

import sodyn as sd
from sodyn.io import load_mjcf, q_from_mujoco
from sodyn.simulate.contact import (
    DAMPING_RATIO,
    ONSET,
    SLIP_VELOCITY,
    contact_terms,
    point_forces,
    restitution_coefficient,
)
from sodyn.simulate.ground import GroundContact

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")

# A floating torso (box) with a hinged leg (capsule, and a sphere foot on a static child body
# that sodyn merges into the leg), a ball-jointed arm (sphere; a visual-only sphere), and a
# tilted, raised world plane.
XML = """
<mujoco model="contact">
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" pos="0.1 0.2 -0.1" quat="0.99 0.1 0.05 0" friction="0.8 0 0"/>
    <body name="torso" pos="0 0 0.5" quat="0.9 0.1 0.2 0.3">
      <freejoint name="root"/>
      <geom name="hull" type="box" size="0.2 0.1 0.05" pos="0.01 0.02 0.03" quat="0.9 0 0.3 0.1" mass="2"/>
      <body name="leg" pos="0.1 0 -0.05">
        <joint name="hip" type="hinge" axis="0 1 0.3"/>
        <geom name="shin" type="capsule" fromto="0 0 0 0.05 0 -0.2" size="0.02" mass="0.3"/>
        <body name="foot_mount" pos="0 0 -0.2" euler="0.2 0.1 0">
          <geom name="foot" type="sphere" pos="0.01 0 -0.01" size="0.03" mass="0.1" friction="1.2 0 0"/>
          <site name="toe" pos="0.02 0 -0.04"/>
        </body>
      </body>
      <body name="arm" pos="-0.1 0 0">
        <joint name="shoulder" type="ball"/>
        <geom name="hand" type="sphere" pos="0 0 -0.15" size="0.04" mass="0.2"/>
        <geom name="ghost" type="sphere" size="0.1" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""
TOL = 1e-10


def rel_err(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y)))


@pytest.fixture(scope="module")
def setup():
    mj = mujoco.MjModel.from_xml_string(XML)
    model = load_mjcf(XML)
    qpos, qvel, _ = random_mujoco_state(mj, np.random.default_rng(7))
    q = np.asarray(q_from_mujoco(model, qpos))
    v = np.random.default_rng(8).normal(size=model.nv)
    return dict(mj=mj, model=model, qpos=qpos, q=q, v=v, contact=GroundContact.from_model(model))


_forward_kinematics = jax.jit(sd.forward_kinematics)


def contact_points_world(model, contact, q):
    """World centres ``p`` and contact points ``p_c = p − r n`` by sodyn's forward kinematics."""
    fk = _forward_kinematics(model, q)
    body = np.asarray(contact.body)
    r, o = np.asarray(fk.body.rotation)[body], np.asarray(fk.body.translation)[body]
    p = np.einsum("pij,pj->pi", r, np.asarray(contact.position)) + o
    return p, p - np.asarray(contact.radius)[:, None] * np.asarray(contact.normal)


@pytest.mark.fast
def test_points_from_geoms_match_mujoco(setup):
    mj, model, contact = setup["mj"], setup["model"], setup["contact"]
    d = mujoco.MjData(mj)
    d.qpos[:] = setup["qpos"]
    mujoco.mj_kinematics(mj, d)
    gid = lambda name: mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, name)  # noqa: E731
    expected, radius, mu = [], [], []
    for name, t, r in (("hull", "box", 0.0), ("shin", "capsule", 0.02), ("foot", "sphere", 0.03),
                       ("hand", "sphere", 0.04)):
        g = gid(name)
        xr, xp, size = d.geom_xmat[g].reshape(3, 3), d.geom_xpos[g], mj.geom_size[g]
        if t == "sphere":
            pts = [xp]
        elif t == "capsule":
            pts = [xp - size[1] * xr[:, 2], xp + size[1] * xr[:, 2]]
        else:
            pts = [xp + xr @ (np.array([sx, sy, sz]) * size) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
        expected += pts
        radius += [r] * len(pts)
        mu += [max(mj.geom_friction[g, 0], 0.8)] * len(pts)
    assert contact.names[:8] == tuple(f"hull:{i}" for i in range(8)) and contact.names[8:] == (
        "shin:0", "shin:1", "foot", "hand")  # the visual-only "ghost" is not a collision geom
    p, _ = contact_points_world(model, contact, setup["q"])
    assert rel_err(p, np.array(expected)) < TOL
    np.testing.assert_allclose(contact.radius, radius, atol=1e-15)
    np.testing.assert_allclose(contact.friction, mu, atol=1e-15)
    floor = gid("floor")
    n = d.geom_xmat[floor].reshape(3, 3)[:, 2]
    np.testing.assert_allclose(contact.normal, n, atol=1e-14)
    assert float(contact.height) == pytest.approx(n @ d.geom_xpos[floor], abs=1e-14)
    terms = jax.jit(lambda q, v: contact_terms(model, contact, q, v))(setup["q"], setup["v"])
    np.testing.assert_allclose(terms.penetration, np.array(radius) - (np.array(expected) @ n - n @ d.geom_xpos[floor]),
                               atol=1e-12)
    # defaults: one point carrying the whole robot sinks 1 mm; damping ratio DAMPING_RATIO for that mass
    total = float(np.sum(model.mass))
    assert float(contact.stiffness) == pytest.approx(total * 9.81 / 1e-3)
    assert float(contact.damping) == pytest.approx(2 * DAMPING_RATIO * np.sqrt(float(contact.stiffness) * total))
    assert float(contact.slip_velocity) == SLIP_VELOCITY and float(contact.onset) == ONSET


@pytest.mark.fast
def test_points_at_frames(setup):
    model, q = setup["model"], setup["q"]
    offsets = np.array([[0.0, 0.0, -0.01], [0.1, 0.2, 0.3]])
    contact = GroundContact.at_frames(model, ["toe", "torso"], offsets, radius=[0.01, 0.0], plane=([0, 0, 1], 0.2))
    assert contact.names == ("toe", "torso") and contact.body == (1, 0)
    p, _ = contact_points_world(model, contact, q)
    fk = _forward_kinematics(model, q)
    for i, f in enumerate(["toe", "torso"]):
        k = model.frame_id(f)
        want = np.asarray(fk.frame.rotation[k]) @ offsets[i] + np.asarray(fk.frame.translation[k])
        assert rel_err(p[i], want) < TOL
    assert float(contact.friction) == 1.0 and float(contact.height) == 0.2


@pytest.mark.fast
def test_force_law_closed_form():
    model = load_mjcf(XML)
    k, c, mu, eps, w = 2e4, 300.0, 0.7, 1e-3, 2e-4
    contact = GroundContact.at_frames(model, ["toe"] * 5, stiffness=k, damping=c, friction=mu, slip_velocity=eps,
                                      onset=w)
    n = np.array([0.0, 0.6, 0.8])
    delta = np.array([3e-3, 0.0, -1.0, 1e-3, 2e-3])
    vel = np.array([[0.3, -0.4, 0.2], [0.0, 0.0, 0.0], [1.0, 2.0, -3.0], [0.0, 0.0, 1.0], [1e-4, 0.0, -0.05]])
    law = point_forces(contact, jnp.asarray(n), jnp.asarray(-delta), jnp.asarray(vel))
    x = delta / w
    sig = 0.5 * (1 + np.tanh(x / 2))
    rate = -vel @ n
    f_n = np.maximum(0.0, k * w * np.logaddexp(x, 0.0) + c * sig * rate)
    v_t = vel - np.outer(vel @ n, n)
    s = np.sqrt(np.sum(v_t**2, -1) + eps**2)
    f = f_n[:, None] * n - (mu * f_n / s)[:, None] * v_t
    np.testing.assert_allclose(law.force, f, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(law.penetration, delta)
    assert f_n[3] == 0.0 and float(law.normal_force[3]) == 0.0  # separating fast: no adhesion
    assert float(law.normal_force[2]) < 1e-300  # far above the plane
    # friction bounded by μ f_n, and nearly μ f_n when sliding well above ε
    ratio = np.linalg.norm(law.force - law.normal_force[:, None] * n, axis=-1) / np.maximum(f_n, 1e-300)
    assert np.all(ratio <= mu + 1e-12) and ratio[0] == pytest.approx(mu, rel=1e-5)
    # k' = ∂f_n/∂δ, c' = ∂f_n/∂δ̇, μ f_n / s of the implicit terms
    fn = lambda d, r: jnp.maximum(0.0, k * w * jax.nn.softplus(d / w) + c * jax.nn.sigmoid(d / w) * r)  # noqa: E731
    active = f_n > 0
    np.testing.assert_allclose(law.normal_stiffness, np.where(active, np.maximum(jax.vmap(jax.grad(fn))(delta, rate),
                                                                                   0.0), 0.0), rtol=1e-12)
    np.testing.assert_allclose(law.normal_damping, np.where(active, jax.vmap(jax.grad(fn, 1))(delta, rate), 0.0),
                               rtol=1e-12)
    np.testing.assert_allclose(law.tangential_damping, mu * f_n / s, rtol=1e-12)


@pytest.fixture(scope="module", params=["all geoms", "torso and leg only"])
def dense(setup, request):
    """At a random state with a plane through the points (some inside by up to tens of cm,
    moving in and out): sodyn's terms, and the dense oracle from point Jacobians.  The second
    case leaves a body (the arm) without points."""
    model, q, v = setup["model"], setup["q"], setup["v"]
    contact = setup["contact"] if request.param == "all geoms" else GroundContact.from_model(
        model, geoms=["hull", "foot"])
    _, pc = contact_points_world(model, contact, q)
    d = pc @ np.asarray(contact.normal)
    contact = eqx.tree_at(lambda c: c.height, contact, jnp.asarray(np.median(d) + 2e-3))
    dt = 2e-3
    names = list(model.body_names)
    jac_w, jac_l, origin = (np.asarray(x) for x in jax.jit(lambda q: (
        sd.frame_jacobians(model, q, names, "world_aligned"),  # (nb, 6, nv) at body origins
        sd.frame_jacobians(model, q, names, "local"), sd.forward_kinematics(model, q).body.translation))(q))
    body = np.asarray(contact.body)
    n = np.asarray(contact.normal)
    distance = pc @ n - float(contact.height)
    pc = pc - 0.5 * distance[:, None] * n     # the contact point: midway between the surfaces (MuJoCo's)
    arm = pc - origin[body]
    skew = np.asarray(sd.spatial.skew(jnp.asarray(arm)))
    jp = jac_w[body, 3:] - np.einsum("pij,pjk->pik", skew, jac_w[body, :3])  # (nc, 3, nv)
    pdot = jp @ v
    law, law_dt = (jax.tree_util.tree_map(np.asarray, point_forces(contact, jnp.asarray(n), jnp.asarray(d),
                                                                    jnp.asarray(pdot)))
                   for d in (distance, distance + dt * (pdot @ n)))   # now, and at the end of the step predicted
    explicit, implicit = jax.jit(lambda q, v, c: (contact_terms(model, c, q, v), contact_terms(model, c, q, v, dt)))(
        q, v, contact)
    if request.param != "all geoms":
        assert not np.any(explicit.f_ext[2]) and not np.any(implicit.added_inertia[2])
    return dict(model=model, contact=contact, dt=dt, jac_l=jac_l, jp=jp, pdot=pdot, law=law, law_dt=law_dt, n=n,
                explicit=explicit, implicit=implicit)


@pytest.mark.fast
def test_wrenches_equal_point_jacobian_transpose(dense):
    law, jp, jac_l, t = dense["law"], dense["jp"], dense["jac_l"], dense["explicit"]
    assert 3 <= np.sum(law.normal_force > 0) < len(law.normal_force)  # some points press, some do not
    assert t.added_inertia is None
    np.testing.assert_allclose(t.force, law.force, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(t.penetration, law.penetration, atol=1e-12)
    tau = np.einsum("kin,ki->n", jac_l, np.asarray(t.f_ext))
    want = np.einsum("pin,pi->n", jp, law.force)
    assert rel_err(tau, want) < TOL


@pytest.mark.fast
def test_implicit_terms_equal_dense_assembly(dense):
    """``Σ J_kᵀ B_k J_k = Σ J_pᵀ K_eff J_p`` and ``Σ J_kᵀ f_k = Σ J_pᵀ (f − K_eff g)``, the law's
    force and slopes at the predicted end-of-step distance ``d + dt n·ṗ``."""
    law, jp, jac_l, t, dt, n = dense["law_dt"], dense["jp"], dense["jac_l"], dense["implicit"], dense["dt"], dense["n"]
    nn = np.outer(n, n)
    tangent = np.eye(3) - nn
    a = dt * law.normal_damping + dt**2 * law.normal_stiffness
    b = dt * law.tangential_damping
    k_eff = a[:, None, None] * nn + b[:, None, None] * tangent
    assert np.all(law.normal_stiffness >= 0) and np.max(a) > 0 and np.max(b) > 0
    lhs = np.einsum("kin,kij,kjm->nm", jac_l, np.asarray(t.added_inertia), jac_l)
    rhs = np.einsum("pin,pij,pjm->nm", jp, k_eff, jp)
    assert rel_err(lhs, rhs) < TOL
    b_k = np.asarray(t.added_inertia)
    np.testing.assert_allclose(b_k, np.swapaxes(b_k, -1, -2), atol=1e-9)
    assert np.min(np.linalg.eigvalsh(b_k)) > -1e-8 * np.max(np.abs(b_k))
    g = np.asarray(dense["model"].gravity)
    tau = np.einsum("kin,ki->n", jac_l, np.asarray(t.f_ext))
    want = np.einsum("pin,pi->n", jp, law.force - k_eff @ g)
    assert rel_err(tau, want) < TOL


@pytest.mark.fast
def test_restitution_coefficient_against_integration():
    from scipy.integrate import solve_ivp

    def bounce(k, c, m):  # m δ̈ = −max(0, k δ + c δ̇) from δ = 0, δ̇ = 1, until the force vanishes
        def force_zero(t, y):
            return k * y[0] + c * y[1] if t > 0 else 1.0
        force_zero.terminal, force_zero.direction = True, -1
        period = np.sqrt(m / k)
        sol = solve_ivp(lambda t, y: [y[1], -max(0.0, k * y[0] + c * y[1]) / m], [0, 50 * period], [0.0, 1.0],
                        events=force_zero, rtol=1e-11, atol=1e-13, max_step=period / 100)
        return -sol.y_events[0][0][1]

    cases = [(1e4, 10.0, 1.0), (1e4, 120.0, 1.0), (1e4, 160.0, 1.0), (1e4, 200.0, 1.0), (2.0, 6.0, 0.5)]
    got = restitution_coefficient(*(jnp.array(x) for x in zip(*cases)))
    want = [bounce(*x) for x in cases]
    np.testing.assert_allclose(got, want, rtol=1e-7)  # under-, under- (β > ω₀/√2), critical, over-damped
    grad = jax.grad(lambda c: restitution_coefficient(1e4, c, 1.0))
    assert all(np.isfinite(float(grad(c))) for c in (10.0, 150.0, 250.0))


def ball(dtype=jnp.float64):
    b = sd.ModelBuilder()
    b.add_body("ball", None, "free", mass=2.0)
    b.add_geom("sphere", "ball", "sphere", (0.05, 0, 0))
    b.add_body("arm", "ball", sd.JointSpec.revolute((0, 1, 0)), translation=(0.1, 0, 0), mass=0.5)
    b.add_geom("tip", "arm", "sphere", (0.02, 0, 0), translation=(0.2, 0, 0))
    return b.build(dtype)


@pytest.mark.fast
def test_gradients_finite_and_match_central_differences():
    model = ball()
    contact = GroundContact.from_model(model, plane=([0.0, 0.6, 0.8], 0.0), stiffness=3e3, friction=0.8,
                                       slip_velocity=1e-2, onset=1e-3)
    rng = np.random.default_rng(0)
    w_f, w_b = rng.normal(size=(2, 6)), rng.normal(size=(2, 6, 6))

    def scalar(q, v, k, mu):
        c = eqx.tree_at(lambda c: (c.stiffness, c.friction), contact, (k, mu))
        t = contact_terms(model, c, q, v, 1e-3)
        return jnp.sum(t.f_ext * w_f) + jnp.sum(t.added_inertia * w_b) + jnp.sum(t.force)

    grad = jax.jit(jax.grad(scalar, argnums=(0, 1, 2, 3)))
    f = jax.jit(scalar)
    n = np.array([0.0, 0.6, 0.8])
    quat = np.array([1.0, 0.0, 0.0, 0.0])
    k, mu = jnp.asarray(3e3), jnp.asarray(0.8)
    # on the plane (δ = 0), at rest; far above; pressed in and sliding
    states = [(np.concatenate([0.05 * n, quat, [0.0]]), np.zeros(7)),
              (np.concatenate([10.0 * n, quat, [0.3]]), rng.normal(size=7)),
              (np.concatenate([0.047 * n, quat, [0.0]]), np.zeros(7))]
    for q, v in states:
        assert all(np.all(np.isfinite(g)) for g in grad(q, v, k, mu))
    q = np.concatenate([0.046 * n + [0.01, 0.0, 0.0], [0.98, 0.1, 0.1, 0.1], [0.2]])
    v = np.array([0.1, -0.2, 0.3, 0.2, 0.1, -0.05, 0.4])
    assert float(jax.jit(lambda q, v: contact_terms(model, contact, q, v).penetration[0])(q, v)) > 2e-3
    g = grad(q, v, k, mu)
    for i, x in enumerate((q, v, k, mu)):
        x = np.asarray(x, np.float64)
        num = np.zeros(x.shape)
        for j in np.ndindex(x.shape):
            h = 1e-6 * max(1.0, abs(x[j]))
            e = np.zeros(x.shape)
            e[j] = h
            args = [q, v, k, mu]
            args[i] = x + e
            up = float(f(*args))
            args[i] = x - e
            num[j] = (up - float(f(*args))) / (2 * h)
        np.testing.assert_allclose(g[i], num, rtol=1e-6, atol=1e-6 * max(1.0, np.max(np.abs(num))))


def test_float32_batched_and_randomized():
    model = ball(jnp.float32)
    contact = GroundContact.from_model(model)
    assert contact.stiffness.dtype == jnp.float32
    q = jnp.asarray([[0, 0, 0.04, 1, 0, 0, 0, 0.1], [0, 0, 1.0, 1, 0, 0, 0, 0.0]], jnp.float32)
    v = jnp.zeros((2, 7), jnp.float32)
    mus = jnp.asarray([0.5, 1.5], jnp.float32)

    def run(q, v, mu):
        return contact_terms(model, eqx.tree_at(lambda c: c.friction, contact, mu), q, v, 1e-3)

    t = jax.jit(jax.vmap(run))(q, v, mus)
    assert t.f_ext.dtype == jnp.float32 and t.added_inertia.shape == (2, 2, 6, 6)
    assert np.all(np.isfinite(t.f_ext)) and float(t.force[0, 0, 2]) > 0 and float(jnp.abs(t.force[1]).max()) == 0

    def scalar(q, v):
        t = contact_terms(model, contact, q, v, 1e-3)
        return jnp.sum(t.f_ext) + jnp.sum(t.added_inertia) + jnp.sum(t.force)

    grad = jax.jit(jax.vmap(jax.grad(scalar, argnums=(0, 1))))
    zs = jnp.asarray([0.05, 0.049, 100.0], jnp.float32)  # on the plane, pressed in, far above; at rest
    qs = jnp.zeros((3, 8), jnp.float32).at[:, 2].set(zs).at[:, 3].set(1.0)
    assert all(np.all(np.isfinite(g)) for g in grad(qs, jnp.zeros((3, 7), jnp.float32)))


def test_errors():
    model = load_mjcf(XML)
    good = GroundContact.at_frames(model, ["toe"])
    kw = dict(position=np.zeros((1, 3)), radius=np.zeros(1), normal=[0, 0, 1], height=0.0, stiffness=1.0,
              damping=1.0, friction=1.0, body=[1])
    GroundContact(**kw)
    for change, match in [
        (dict(position=np.zeros((2, 3))), r"position must have shape \(1, 3\)"),
        (dict(radius=np.zeros(2)), r"radius must have shape \(1,\)"),
        (dict(stiffness=np.ones(3)), r"stiffness must be a scalar or have shape \(1,\)"),
        (dict(normal=[0, 0, 2]), "normal must be a unit vector"),
        (dict(normal=[0, 0, 0]), "normal must be a unit vector"),
        (dict(stiffness=-1.0), "stiffness must be finite and non-negative"),
        (dict(friction=-0.1), "friction must be finite and non-negative"),
        (dict(slip_velocity=0.0), "slip_velocity must be finite and positive"),
        (dict(body=[]), "no contact points"),
        (dict(body=[-1]), "body indices must be non-negative"),
    ]:
        with pytest.raises(ValueError, match=match):
            GroundContact(**{**kw, **change})
    with pytest.raises(ValueError, match="unknown frame 'heel'"):
        GroundContact.at_frames(model, ["toe", "heel"])
    with pytest.raises(ValueError, match=r"positions must have shape \(1, 3\)"):
        GroundContact.at_frames(model, ["toe"], np.zeros(3))
    with pytest.raises(ValueError, match="unknown geom 'paw'"):
        GroundContact.from_model(model, geoms=["paw"])
    with pytest.raises(ValueError, match="geom 'floor' in geoms is a plane"):
        GroundContact.from_model(model, geoms=["floor"])
    with pytest.raises(ValueError, match="plane: the normal must be a finite unit"):
        GroundContact.from_model(model, plane=([0, 0, 0], 0.0))
    with pytest.raises(ValueError, match="plane 'hull' is not a world plane geom"):
        GroundContact.from_model(model, plane="hull")
    with pytest.raises(ValueError, match="stiffness must be finite and non-negative"):
        GroundContact.from_model(model, stiffness=-5.0)
    b = sd.ModelBuilder()
    b.add_body("link", None, "revolute")
    with pytest.raises(ValueError, match="has no sphere, capsule or box geom on a body"):
        GroundContact.from_model(b.build())
    with pytest.raises(ValueError, match=r"body index 1 out of range"):
        contact_terms(b.build(), good, jnp.zeros(1), jnp.zeros(1))
    with pytest.raises(ValueError, match=r"q must have shape \(12,\)"):
        contact_terms(model, good, jnp.zeros(3), jnp.zeros(12))


@pytest.mark.fast
def test_added_inertia_in_forward_dynamics(setup, dense):
    """With the engine's ``added_inertia`` (once it has one): the articulated recursion with ``B_k``
    and the corrected ``f_k`` solves ``(M + Σ J_kᵀ B_k J_k) a = τ − C + Σ J_kᵀ (f_k + B_k ([0; R_kᵀ g]
    − α⁰_k))``, i.e. the correction cancels the fictitious ``−g`` exactly; ``α⁰_k`` (the body
    accelerations at ``a = 0``, ``J̇ v``) is what ``B_k`` multiplies beyond ``J_k a``."""
    import inspect

    if "added_inertia" not in inspect.signature(sd.forward_dynamics).parameters:
        pytest.skip("sodyn.forward_dynamics has no added_inertia argument yet")
    model, q, t, jac_l = dense["model"], setup["q"], dense["implicit"], dense["jac_l"]
    tau = np.random.default_rng(3).normal(size=model.nv)
    b_k, f_k = np.asarray(t.added_inertia), np.asarray(t.f_ext)
    zero = jnp.zeros(model.nv)

    @jax.jit
    def engine_and_terms(v):
        return (sd.forward_dynamics(model, q, v, tau, f_k, added_inertia=b_k), sd.mass_matrix(model, q),
                sd.forward_kinematics(model, q).body.rotation, sd.body_accelerations(model, q, v, zero),
                sd.inverse_dynamics(model, q, v, zero))

    for v in (np.zeros(model.nv), setup["v"]):
        a, m, rot, alpha0, bias = (np.asarray(x) for x in engine_and_terms(jnp.asarray(v)))
        g_body = np.concatenate([np.zeros((model.n_bodies, 3)), np.einsum("kji,j->ki", rot, model.gravity)], -1)
        lhs = m + np.einsum("kin,kij,kjm->nm", jac_l, b_k, jac_l)
        wrench = f_k + np.einsum("kij,kj->ki", b_k, g_body - alpha0)
        rhs = tau - bias + np.einsum("kin,ki->n", jac_l, wrench)
        assert rel_err(a, np.linalg.solve(lhs, rhs)) < 1e-8


def test_spread_sum_matches_add_at():
    """Per-point values summed into their bodies (repeated, missing and unordered targets)."""
    from sodyn.static_index import spread_sum

    target = np.array([3, 0, 3, 5, 3])
    x = np.random.default_rng(0).standard_normal((5, 6, 6))
    expected = np.zeros((7, 6, 6))
    np.add.at(expected, target, x)
    np.testing.assert_allclose(spread_sum(jnp.asarray(x), target, 7), expected, rtol=0, atol=1e-15)
    assert spread_sum(jnp.zeros((0, 3)), np.zeros(0, int), 4).shape == (4, 3)
    with pytest.raises(ValueError, match="targets must lie"):
        spread_sum(jnp.asarray(x), np.array([0, 1, 2, 3, 7]), 7)
