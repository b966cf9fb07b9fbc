"""Rigid frictional contact (float64): the Delassus matrix, contact Jacobian and contact impulses
against Pinocchio 4's constraint API (``PointContactConstraintModel`` with a Coulomb cone, its
Jacobian, ``computeMinverse`` for ``W = J M⁻¹ Jᵀ`` and ``ADMMConstraintSolver`` on the same
discrete problem) for a box resting and a box on a slope in stick and in slip, and Solo12 on
four feet; Alexiou's restitution law against :func:`sodyn.simultaneous_impulses`; 2 s
fall-and-rest simulations; gradients through the step against central differences; errors."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import robot_path

import sodyn as sd
from sodyn.io import from_pinocchio, q_to_pinocchio, v_from_pinocchio, v_to_pinocchio
from sodyn.simulate import GroundContact, State, position_servos, rollout, step
from sodyn.simulate.rigid_contact import (
    RigidContact,
    contact_frame,
    contact_jacobian,
    delassus_matrix,
    solve_rigid_contact,
)

jax.config.update("jax_enable_x64", True)
pin = pytest.importorskip("pinocchio")

DT = 1e-3
LEGS = ("FL", "FR", "HL", "HR")
STAND = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
ORACLE_ITERATIONS = 300  # enough sweeps to reach the oracle's tolerance on these problems
PIN_TOL = 1e-12          # the ADMM's absolute and relative feasibility/complementarity tolerances

#: Compiled once per model and number of points, shared by the tests (eager sodyn calls are slow).
solve_jit = eqx.filter_jit(solve_rigid_contact)
free_velocity = eqx.filter_jit(lambda model, q, v, tau: v + DT * sd.forward_dynamics(model, q, v, tau))
kinematics = eqx.filter_jit(sd.forward_kinematics)


@eqx.filter_jit
def jacobian_and_minv(model, ground, q):
    return contact_jacobian(model, ground, q), sd.inverse_mass_matrix(model, q)


# ---------------------------------------------------------------------------
# the oracle: Pinocchio's constraint Jacobian, J M⁻¹ Jᵀ and ADMM on the same problem
# ---------------------------------------------------------------------------


def pinocchio_contact(pm, q_pin, v_pin, v_free_pin, bodies, points_world, normal, height, mu, restitution,
                      baumgarte, margin, dt):
    """Pinocchio's answer to the discrete problem of the module docstring: the points (world;
    the sphere bottoms, moved to midway between the surfaces as sodyn's contacts are) fixed in
    the joints ``bodies`` with contact frames ``[t₁, t₂, n]`` (Pinocchio's cone axis
    last), ``g = (J v_free − [0, 0, b]) / dt``, ``G = J M⁻¹ Jᵀ``; only the points closer than
    ``margin`` enter.  Returns ``(active, J (3nc, nv) rows [n, t₁, t₂] in Pinocchio's velocity
    order, forces λ/dt (nc, 3) as [n, t₁, t₂], v⁺)``."""
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, q_pin, v_pin)
    pin.computeJointJacobians(pm, pd, q_pin)
    c = np.asarray(contact_frame(jnp.asarray(normal)))
    rot = np.stack([c[1], c[2], c[0]], axis=1)
    distance = points_world @ normal - height
    active = distance < margin
    points_world = points_world - 0.5 * distance[:, None] * normal   # midway between the surfaces (MuJoCo's)
    cms, cds = pin.StdVec_ConstraintModel(), pin.StdVec_ConstraintData()
    for j, p in zip(np.asarray(bodies)[active], points_world[active]):
        world = pin.SE3(rot, p)
        cm = pin.PointContactConstraintModel(pm, 0, world, int(j), pd.oMi[int(j)].actInv(world))
        cm.setFriction(float(mu))
        generic = pin.ConstraintModel(cm)
        cms.append(generic)
        cds.append(generic.createData())
    for cm, cd in zip(cms, cds):
        cm.calc(pm, pd, cd)
    jac = pin.getConstraintsJacobian(pm, pd, cms, cds)                        # rows [t₁, t₂, n]
    minv = pin.computeMinverse(pm, pd, q_pin)
    minv = np.triu(minv) + np.triu(minv, 1).T
    u0 = (jac @ v_pin).reshape(-1, 3)
    phi = distance[active]
    g = (jac @ v_free_pin).reshape(-1, 3)
    bounce = restitution * np.maximum(-u0[:, 2], 0.0)
    impact = (phi + dt * g[:, 2] < 0) & (bounce > 0)
    bias = np.where(phi <= 0, np.maximum(bounce, baumgarte * np.maximum(-phi, 0.0) / dt),
                    np.where(impact, bounce, -phi / dt))
    g[:, 2] -= bias
    settings = pin.ADMMSolverSettings()
    for name in ("absolute_feasibility_tol", "relative_feasibility_tol", "absolute_complementarity_tol",
                 "relative_complementarity_tol"):
        setattr(settings, name, PIN_TOL)
    settings.max_iterations = 100_000
    settings.mu_prox = 1e-12
    result = pin.ADMMSolverResult()
    solver = pin.ADMMConstraintSolver(jac.shape[0])
    assert solver.solve(pin.DelassusOperatorDense(jac @ minv @ jac.T), g.reshape(-1) / dt, cms, cds, settings, result)
    forces = np.zeros((len(points_world), 3))
    forces[active] = result.retrieveConstraintImpulses().reshape(-1, 3)[:, [2, 0, 1]]
    full_jac = np.zeros((3 * len(points_world), pm.nv))
    full_jac.reshape(-1, 3, pm.nv)[active] = jac.reshape(-1, 3, pm.nv)[:, [2, 0, 1]]
    v_plus = v_free_pin + dt * minv @ jac.T @ result.retrieveConstraintImpulses()
    return active, full_jac, forces, v_plus


def check_against_pinocchio(model, pm, rigid, q, v, v_free, bodies, points_world, solve):
    """Compare J, W, λ/dt (when ``unique``), Jᵀλ and v⁺ with Pinocchio; check the cone."""
    g = rigid.contact
    q_pin, v_pin, vf_pin = (np.asarray(f(model, x)) for f, x in
                            ((q_to_pinocchio, q), (v_to_pinocchio, v), (v_to_pinocchio, v_free)))
    active, jac_pin, forces_pin, v_plus_pin = pinocchio_contact(
        pm, q_pin, v_pin, vf_pin, bodies, points_world, np.asarray(g.normal), float(g.height),
        float(g.friction), float(rigid.restitution), float(rigid.baumgarte), float(rigid.margin), DT)
    sol = solve(q, v, v_free)
    jac_pin = np.stack([np.asarray(v_from_pinocchio(model, r)) for r in jac_pin])
    jac, minv = (np.asarray(x) for x in jacobian_and_minv(model, g, q))
    rows = np.repeat(active, 3)
    np.testing.assert_array_equal(np.asarray(sol.active), active)
    np.testing.assert_allclose(jac[rows], jac_pin[rows], atol=1e-13)
    w_pin = jac_pin[rows] @ minv @ jac_pin[rows].T
    np.testing.assert_allclose(np.asarray(sol.delassus)[np.ix_(rows, rows)], w_pin, atol=1e-12 * np.abs(w_pin).max())
    impulse = np.asarray(sol.impulse)
    scale = np.abs(forces_pin).max() * DT
    generalized = jac.T @ impulse.reshape(-1) / DT                               # Jᵀλ / dt
    np.testing.assert_allclose(generalized, jac_pin.T @ forces_pin.reshape(-1), atol=1e-8 * np.abs(generalized).max())
    np.testing.assert_allclose(np.asarray(sol.v_plus), np.asarray(v_from_pinocchio(model, v_plus_pin)),
                               atol=1e-8 * max(1.0, np.abs(v_plus_pin).max()))
    assert np.all(impulse[:, 0] >= 0)
    assert np.all(np.linalg.norm(impulse[:, 1:], axis=1) <= g.friction * impulse[:, 0] + 1e-12 * scale)
    assert np.all(impulse[~active] == 0)
    return sol, forces_pin


# ---------------------------------------------------------------------------
# a box: resting, and on a slope (plane tilted, gravity vertical)
# ---------------------------------------------------------------------------

HALF = np.array([0.1, 0.1, 0.05])
CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * HALF


@pytest.fixture(scope="module")
def box():
    pm = pin.Model()
    joint = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root")
    pm.appendBodyToJoint(joint, pin.Inertia(1.0, np.zeros(3), np.diag([0.05, 0.05, 0.08]) / 12), pin.SE3.Identity())
    return pm, from_pinocchio(pm)


def _box_setup(model, tilt, mu, corners=CORNERS, **options):
    normal = np.array([np.sin(tilt), 0.0, np.cos(tilt)])
    nc = len(corners)
    ground = GroundContact(corners, np.zeros(nc), normal, 0.0, 1.0, 1.0, mu, body=[0] * nc)
    rigid = RigidContact(ground, **options)
    c, s = np.cos(tilt / 2), np.sin(tilt / 2)
    q = jnp.concatenate([jnp.asarray(normal * HALF[2]), jnp.array([c, 0.0, s, 0.0])])  # lying flat on the slope
    return ground, rigid, q


@pytest.mark.fast
@pytest.mark.parametrize("case", ["resting", "slope_stick", "slope_slip", "edge_sliding_spinning"])
def test_box_against_pinocchio(box, case):
    pm, model = box
    mu = 0.5
    tilt, v = {"resting": (0.0, np.zeros(6)), "slope_stick": (np.arctan(0.6 * mu), np.zeros(6)),
               "slope_slip": (np.arctan(1.5 * mu), np.zeros(6)),
               "edge_sliding_spinning": (0.0, np.array([0.0, 0.0, 2.0, 0.3, -0.2, -0.05]))}[case]
    ground, rigid, q = _box_setup(model, tilt, mu, iterations=ORACLE_ITERATIONS)
    if case == "edge_sliding_spinning":  # on one edge (two corners): with four, sliding λ is not unique
        alpha = 0.3
        rot = np.array([[1, 0, 0], [0, np.cos(alpha), -np.sin(alpha)], [0, np.sin(alpha), np.cos(alpha)]])
        q = jnp.array([0.0, 0.0, -np.min(CORNERS @ rot.T, axis=0)[2], np.cos(alpha / 2), np.sin(alpha / 2), 0, 0])
    v = jnp.asarray(v)
    v_free = free_velocity(model, q, v, jnp.zeros(6))
    solve = lambda q, v, vf: solve_jit(model, rigid, q, v, vf, DT)  # noqa: E731
    fk = kinematics(model, q)
    points = np.asarray(fk.body.translation[0] + CORNERS @ np.asarray(fk.body.rotation[0]).T)
    sol, forces = check_against_pinocchio(model, pm, rigid, q, v, v_free, [1] * 8, points, solve)
    if case == "edge_sliding_spinning":
        assert np.sum(np.asarray(sol.active)) == 2
        np.testing.assert_allclose(np.asarray(sol.impulse) / DT, forces, atol=1e-7 * np.abs(forces).max())
    n = np.asarray(ground.normal)
    along = np.array([np.cos(tilt), 0.0, -np.sin(tilt)])  # down the slope
    total = np.asarray(sol.force).sum(0)
    if case == "resting" or case == "slope_stick":
        assert np.max(np.abs(np.asarray(sol.v_plus))) < 1e-9                  # held: v⁺ = 0
        np.testing.assert_allclose(total, [0.0, 0.0, 9.81], atol=1e-8)          # the weight, Coulomb inside
    if case == "slope_slip":                                                  # a = g (sin θ − μ cos θ) downhill
        world_v = np.asarray(fk.body.rotation[0]) @ np.asarray(sol.v_plus[3:])
        np.testing.assert_allclose(world_v, 9.81 * (np.sin(tilt) - mu * np.cos(tilt)) * DT * along, atol=1e-9)
        assert total @ n == pytest.approx(9.81 * np.cos(tilt), rel=1e-9)
        assert np.linalg.norm(total - (total @ n) * n) == pytest.approx(mu * total @ n, rel=1e-9)  # on the cone


# ---------------------------------------------------------------------------
# Solo12 on its four feet
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def solo():
    path = str(robot_path("solo12"))
    model = sd.load_urdf(path, floating_base=True)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    frames = [f"{leg}_FOOT" for leg in LEGS]
    q = jnp.concatenate([jnp.array([0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0]), STAND])
    foot_z = np.asarray(kinematics(model, q).frame.translation)[[model.frame_id(f) for f in frames], 2]
    q = q.at[2].add(0.0175 - float(np.mean(foot_z)))                    # standing on the feet's spheres
    return model, pm, frames, q


def _solo_points(model, pm, frames, q, radius):
    q_pin = np.asarray(q_to_pinocchio(model, q))
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, q_pin)
    ids = [pm.getFrameId(f) for f in frames]
    return [pm.frames[i].parentJoint for i in ids], np.stack([pd.oMf[i].translation - radius * np.array([0, 0, 1.0])
                                                             for i in ids])


@pytest.mark.fast
@pytest.mark.parametrize("case", ["standing", "pushed", "landing", "low_friction"])
def test_quadruped_against_pinocchio(solo, case):
    model, pm, frames, q = solo
    rng = np.random.default_rng(3)
    mu = 0.1 if case == "low_friction" else 0.8
    ground = GroundContact.at_frames(model, frames, radius=0.0175, friction=mu)
    rigid = RigidContact(ground, iterations=ORACLE_ITERATIONS, restitution=0.3 if case == "landing" else 0.0)
    v = jnp.zeros(model.nv)
    tau = jnp.zeros(model.nv)
    if case == "pushed":
        v = jnp.asarray(0.2 * rng.normal(size=model.nv))
        tau = tau.at[6:].set(jnp.asarray(rng.normal(size=12)))
    if case == "landing":
        v = v.at[5].set(-1.0).at[3].set(0.2)                            # falling at 1 m/s, drifting
        q = q.at[2].add(-2e-4)                                           # 0.2 mm into the ground
    if case == "low_friction":
        tau = tau.at[6:].set(jnp.asarray(np.tile([0.0, 1.0, -1.0], 4)))  # legs pushing out
    v_free = free_velocity(model, q, v, tau)
    solve = lambda q, v, vf: solve_jit(model, rigid, q, v, vf, DT)  # noqa: E731
    bodies, points = _solo_points(model, pm, frames, q, 0.0175)
    sol, forces = check_against_pinocchio(model, pm, rigid, q, v, v_free, bodies, points, solve)
    scale = np.abs(forces).max()
    np.testing.assert_allclose(np.asarray(sol.impulse) / DT, forces, atol=1e-7 * scale)  # 4 feet: λ unique
    slip = np.linalg.norm(np.asarray(sol.velocity)[:, 1:], axis=1)
    on_cone = np.linalg.norm(np.asarray(sol.impulse)[:, 1:], axis=1) >= mu * np.asarray(sol.impulse)[:, 0] * (1 - 1e-9)
    if case in ("standing", "landing"):
        assert np.all(sol.impulse[:, 0] > 0) and np.all(slip < 1e-9)          # all four feet hold
    if case == "landing":
        np.testing.assert_allclose(np.asarray(sol.velocity)[:, 0], 0.3, rtol=1e-9)  # v_n⁺ = −ε v_imp
    if case == "low_friction":
        assert np.any(slip > 1e-6) and np.all(on_cone[slip > 1e-6])          # slipping feet: friction on the cone


@pytest.mark.fast
def test_restitution_is_alexiou_impulse(solo):
    """Frictionless impact on four feet, no gravity, ``v_free = v``: ``v⁺`` is
    :func:`sodyn.simultaneous_impulses` with restitution ``ε`` (Alexiou eq. 22; its directions point
    into the ground, so its approach velocities are positive)."""
    model, _, frames, q = solo
    ground = GroundContact.at_frames(model, frames, friction=0.0)
    q = q.at[2].add(-0.0175)                                           # feet (points) on the plane
    rigid = RigidContact(ground, iterations=ORACLE_ITERATIONS, restitution=0.6, baumgarte=0.0)
    v = jnp.zeros(model.nv).at[5].set(-0.7).at[3].set(0.1).at[1].set(0.3)
    sol = solve_jit(model, rigid, q, v, v, DT)
    tasks = [sd.PointTask(f, "world_aligned") for f in frames]
    ref = jax.jit(lambda q, v: sd.simultaneous_impulses(model, q, v, tasks, [jnp.array([0.0, 0.0, -1.0])] * 4,
                                                        restitution=0.6))(q, v)
    assert np.all(np.asarray(ref.impulse) > 0)
    np.testing.assert_allclose(np.asarray(sol.v_plus), np.asarray(ref.v_plus), atol=1e-10)
    np.testing.assert_allclose(np.asarray(sol.impulse[:, 0]), np.asarray(ref.impulse), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(sol.velocity[:, 0]), 0.6 * np.asarray(ref.approach_velocity), atol=1e-10)


@pytest.fixture(scope="module")
def ball():
    b = sd.ModelBuilder(name="ball")
    b.add_body("ball", None, sd.JointSpec.free(), mass=1.0, inertia=0.4 * 0.05 ** 2 * np.eye(3))
    return b.build()


@pytest.mark.fast
def test_restitution_holds_wherever_the_impact_falls_in_the_step(ball):
    """A ball dropped from heights that put its first contact at different points within a
    step leaves at ``ε`` times its approach speed every time (a speculative target
    ``ε v_imp − φ/dt`` loses up to all of it), lands exactly on the plane for ``ε = 0``, and a
    ball that does not reach the plane within the step receives no impulse."""
    ground = GroundContact.at_frames(ball, ["ball"], radius=0.05, friction=0.0)
    steps = 360

    @jax.jit
    def drop(height, eps):
        q0 = jnp.array([0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0])
        rigid = RigidContact(ground, restitution=eps, baumgarte=0.0)
        return rollout(ball, State.initial(ball, q0), None, DT, steps, contact=rigid)

    for eps in (0.8, 0.3, 0.0):
        for height in (0.5, 0.5002, 0.5005, 0.5009, 0.5013):          # contact at varied phases of a step
            traj = drop(height, eps)
            z, vz = np.asarray(traj.states.q[:, 2]), np.asarray(traj.states.v[:, 5])
            k = int(np.argmax(np.asarray(traj.contact_force[:, 0, 2]) > 0))    # the impact step
            assert k > 0 and np.all(np.asarray(traj.contact_force[:k]) == 0)
            approach = -vz[k - 1]                                              # v_imp at the step's start
            assert approach > 2.9
            assert np.min(z) >= 0.05 - 1e-12                                   # never below the plane
            if eps == 0.0:                                                     # lands exactly on it, then rests
                assert z[k] == pytest.approx(0.05, abs=1e-12)
                assert vz[k + 1] == pytest.approx(0.0, abs=1e-12)
            else:
                np.testing.assert_allclose(vz[k], eps * approach, rtol=1e-12)
                assert z[k] - 0.05 <= (1 + eps) * approach * DT                # off by at most (1+ε) v_imp dt
    # approaching at 1 m/s from 1.5 mm: out of reach within the step, so no impulse yet
    rigid = RigidContact(ground, restitution=0.8, baumgarte=0.0)
    q = jnp.array([0.0, 0.0, 0.0515, 1.0, 0.0, 0.0, 0.0])
    v = jnp.zeros(6).at[5].set(-1.0)
    sol = solve_jit(ball, rigid, q, v, v, DT)
    assert bool(sol.active[0]) and float(sol.impulse[0, 0]) == 0.0
    np.testing.assert_array_equal(np.asarray(sol.v_plus), np.asarray(v))


@pytest.mark.fast
def test_delassus_is_j_minv_jt(solo):
    model, _, frames, q = solo
    ground = GroundContact.at_frames(model, frames, radius=0.0175)
    jac, minv = jacobian_and_minv(model, ground, q)
    w = eqx.filter_jit(delassus_matrix)(model, ground, q)
    np.testing.assert_allclose(w, jac @ minv @ jac.T, atol=1e-12)


# ---------------------------------------------------------------------------
# simulation: 2 s of falling and resting
# ---------------------------------------------------------------------------


def _penetration(model, ground, qs):
    def one(q):
        fk = sd.forward_kinematics(model, q)
        body = np.asarray(ground.body)
        p = fk.body.translation[body] + jnp.einsum("nij,nj->ni", fk.body.rotation[body], ground.position)
        return ground.radius - (p @ ground.normal - ground.height)
    return jax.jit(jax.vmap(one))(qs)


@pytest.mark.slow
def test_quadruped_falls_and_stands(solo):
    model, _, frames, q = solo
    ground = GroundContact.at_frames(model, frames, radius=0.0175, friction=0.8)
    rigid = RigidContact(ground)
    servo = position_servos(model, model.joint_names[1:], kp=5.0, kv=0.2)
    q0 = q.at[2].add(0.15)
    steps = 2000
    traj = jax.jit(lambda s: rollout(model, s, jnp.broadcast_to(jnp.asarray(STAND), (steps, 12)), DT, steps,
                                     contact=rigid, actuators=servo))(State.initial(model, q0))
    pen = np.asarray(_penetration(model, ground, traj.states.q))
    assert np.all(np.isfinite(traj.states.q))
    assert np.max(pen) < 1e-3                                            # below 1 mm, impact included
    weight = float(np.sum(model.mass)) * 9.81
    assert float(np.sum(traj.contact_force[-1, :, 2])) == pytest.approx(weight, rel=1e-3)
    assert np.max(np.abs(np.asarray(traj.states.v[-1]))) < 1e-3            # at rest
    assert float(traj.states.q[-1, 2]) > 0.15


@pytest.mark.slow
def test_box_falls_tumbling_and_rests(box):
    _, model = box
    ground, rigid, _ = _box_setup(model, 0.0, 0.5, restitution=0.2)
    axis = np.array([0.3, 1.0, 0.2]) / np.linalg.norm([0.3, 1.0, 0.2])
    q0 = jnp.concatenate([jnp.array([0.0, 0.0, 0.4]), jnp.asarray(np.r_[np.cos(0.4), np.sin(0.4) * axis])])
    v0 = jnp.array([1.0, -2.0, 0.5, 0.5, 0.0, 0.0])
    traj = jax.jit(lambda s: rollout(model, s, None, DT, 2000, contact=rigid))(State.initial(model, q0, v0))
    pen = np.asarray(_penetration(model, ground, traj.states.q))
    assert np.max(pen) < 1e-3
    assert np.max(np.abs(np.asarray(traj.states.v[-1]))) < 1e-6
    assert float(traj.states.q[-1, 2]) == pytest.approx(HALF.min(), abs=1e-3)   # flat on a face
    assert float(np.sum(traj.contact_force[-1, :, 2])) == pytest.approx(9.81, rel=1e-6)


# ---------------------------------------------------------------------------
# jit / vmap / grad
# ---------------------------------------------------------------------------


@eqx.filter_jit
def _loss_and_grad(model, rigid, q, x):
    """A loss of one rigid step and its gradient in ``x = [v₀ (6), μ]``."""

    def loss(x):
        r = eqx.tree_at(lambda c: c.contact.friction, rigid, x[6])
        s = step(model, State.initial(model, q, x[:6]), None, DT, contact=r, integrator="semi_implicit")
        return jnp.sum(s.v * jnp.arange(1.0, 7.0)) + 10.0 * jnp.sum(s.q[:3])

    return jax.value_and_grad(loss)(x)


@pytest.mark.fast
@pytest.mark.parametrize("case", ["sticking", "sliding"])
def test_gradients_through_the_step_match_central_differences(box, case):
    """Directional central differences of a loss of one step on a slope (the box on its four
    bottom corners) against ``jax.grad``, in the initial velocity and the friction coefficient."""
    _, model = box
    ground, rigid, q = _box_setup(model, 0.2, 0.5, iterations=60, corners=CORNERS[::2])
    speed = 0.0 if case == "sticking" else 1.0
    x0 = jnp.array([0.0, 0.0, 0.3 * speed, speed, 0.2 * speed, 0.0, 0.5])
    _, grad = _loss_and_grad(model, rigid, q, x0)
    assert np.all(np.isfinite(np.asarray(grad)))
    rng = np.random.default_rng(1)
    h = 1e-6
    for _ in range(3):
        d = jnp.asarray(rng.normal(size=7))
        fd = (_loss_and_grad(model, rigid, q, x0 + h * d)[0] - _loss_and_grad(model, rigid, q, x0 - h * d)[0]) / (2 * h)
        assert float(grad @ d) == pytest.approx(float(fd), rel=1e-6, abs=1e-8)
    if case == "sticking":
        assert abs(float(grad[6])) < 1e-9       # the friction coefficient does not matter while sticking
    else:
        assert abs(float(grad[6])) > 1e-3       # it does while sliding


def test_vmap_matches_single_solves(box):
    _, model = box
    _, rigid, q = _box_setup(model, 0.0, 0.5, iterations=ORACLE_ITERATIONS)
    qs = jnp.stack([q.at[2].add(dz) for dz in (-1e-3, 0.0, 0.02)])   # penetrating, touching, inactive
    vs = jnp.zeros((3, 6)).at[:, 5].set(-0.5).at[:, 0].set(0.3)
    batched = jax.jit(jax.vmap(lambda q, v: solve_rigid_contact(model, rigid, q, v, v, DT).v_plus))(qs, vs)
    for i in range(3):
        np.testing.assert_allclose(batched[i], solve_jit(model, rigid, qs[i], vs[i], vs[i], DT).v_plus, atol=1e-13)
    np.testing.assert_allclose(batched[2], vs[2])                         # 2 cm up: no contact
    assert float(batched[1, 5]) == pytest.approx(0.0, abs=1e-12)          # touching: stopped
    assert float(batched[0, 5]) == pytest.approx(0.2 * 1e-3 / DT, abs=1e-12)  # penetrating: β φ / dt out


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


@pytest.mark.fast
def test_bad_options_are_named(box):
    _, model = box
    ground, rigid, q = _box_setup(model, 0.0, 0.5)
    for kwargs, word in (({"iterations": 0}, "iterations"), ({"iterations": 2.5}, "iterations"),
                         ({"restitution": 1.5}, "restitution"), ({"baumgarte": -0.1}, "baumgarte"),
                         ({"margin": -1.0}, "margin"), ({"restitution": np.ones(3)}, "restitution")):
        with pytest.raises(ValueError, match=word):
            RigidContact(ground, **kwargs)
    with pytest.raises(ValueError, match="contact must be a GroundContact or a ContactModel"):
        RigidContact("floor")
    s = State.initial(model, q)
    with pytest.raises(ValueError, match="rk4"):
        step(model, s, None, DT, contact=rigid, integrator="rk4")
    with pytest.raises(ValueError, match="RigidContact"):
        solve_rigid_contact(model, ground, q, s.v, s.v, DT)
    with pytest.raises(ValueError, match="contact must be"):
        step(model, s, None, DT, contact="rigid")
    with pytest.raises(ValueError, match="v_free"):
        solve_rigid_contact(model, rigid, q, s.v, jnp.zeros(5), DT)
