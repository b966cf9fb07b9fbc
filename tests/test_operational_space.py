"""Operational-space compliance/inertia by the Ω recursions (Jain Ch. 10), J̄, the task-space
bias, the OSC helper and the closed-form gradient of log det 𝓜.

Oracles: J 𝓜⁻¹ Jᵀ built densely from ``sd.mass_matrix`` and ``sd.frame_jacobian``, and from
Pinocchio's ``computeMinverse`` and ``getFrameJacobian`` (LOCAL) on real robots.  Each model's
functions are jitted once (module-scoped fixtures)."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import sodyn as sd  # noqa: E402
from sodyn.models import pendulum_chain, random_tree  # noqa: E402


def rel_err(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.max(np.abs(x - y)) / max(1e-300, np.max(np.abs(y)))


def dense_jacobian(model, q, tasks):
    rows = []
    for t in tasks:
        j = sd.frame_jacobian(model, q, t.frame, t.reference)
        rows.append(j if t.dim == 6 else j[3:])
    return jnp.concatenate(rows)


def dense_jdot_v(model, q, v, tasks):
    rows = []
    for t in tasks:
        a = sd.frame_jacobian_dot_times_v(model, q, v, t.frame, t.reference,
                                          classical=t.reference == "world_aligned")
        rows.append(a if t.dim == 6 else a[3:])
    return jnp.concatenate(rows)


def run_all(model, tasks):
    """Everything the tree tests compare, in one jitted function (one compilation per model).

    ``tasks[:2]`` are independent (Λ exists); the third repeats the second task's point."""

    @jax.jit
    def run(q, v):
        return dict(
            osd=sd.operational_space_dynamics(model, q, v, tasks[:2]),
            comp=sd.operational_space_compliance(model, q, tasks),
            lam_reg=sd.operational_space_inertia(model, q, tasks, regularization=1e-3),
            M=sd.mass_matrix(model, q), C=sd.bias_forces(model, q, v),
            J=dense_jacobian(model, q, tasks), jdv=dense_jdot_v(model, q, v, tasks),
        )
    return run


# ---------------------------------------------------------------------------
# random trees with every joint type
# ---------------------------------------------------------------------------


def _tree_tasks(model):
    parent = model.parent
    leaves = [k for k in range(model.n_bodies) if k not in set(parent.tolist())]
    # two leaves (different branches where the tree branches), the root, a mid body, a repeat
    dofs = model.topology.support.sum(axis=1)

    def ancestors(k):
        out = set()
        while k >= 0:
            out.add(k)
            k = parent[k]
        return out

    ka = max(leaves, key=lambda k: dofs[k])
    kb = max((k for k in leaves if ka not in ancestors(k) and k not in ancestors(ka)), key=lambda k: dofs[k])
    a, b = model.body_names[ka], model.body_names[kb]
    # two leaves on different branches, the second one also as a 3D task in its own axes
    return [sd.FrameTask(a), sd.PointTask(b, "world_aligned"), sd.PointTask(b)]


@pytest.fixture(scope="module", params=[(0, False, 0.0), (1, True, 0.03)])
def tree_case(request):
    seed, fb, arm = request.param
    model = random_tree(11, seed=seed, floating_base=fb, armature=arm, damping=0.1, branching=0.7)
    tasks = _tree_tasks(model)
    q = sd.random_configuration(model, jax.random.PRNGKey(seed))
    v = jax.random.normal(jax.random.PRNGKey(seed + 10), (model.nv,))
    return model, tasks, q, v, run_all(model, tasks)(q, v)


def test_tree_has_unrelated_task_bodies(tree_case):
    model, tasks, *_ = tree_case
    bodies = [model.frame_body[model.frame_id(t.frame)] for t in tasks]
    parent = model.parent

    def ancestors(b):
        out = set()
        while b >= 0:
            out.add(b)
            b = parent[b]
        return out

    unrelated = [(i, j) for i in bodies for j in bodies if i not in ancestors(j) and j not in ancestors(i)]
    assert unrelated, "the test trees should exercise the nearest-common-ancestor branch"
    # the Ω sweeps run on the task bodies' ancestors only: the trees must have other bodies too
    on_paths = set().union(*(ancestors(b) for b in bodies))
    assert len(on_paths) < model.n_bodies
    from sodyn.topology import ancestor_subtree

    assert ancestor_subtree(model.topology, tuple(sorted(set(bodies)))).topo.n_bodies == len(on_paths)


def test_tree_compliance_and_inertia_match_dense(tree_case):
    model, tasks, q, v, out = tree_case
    J = np.asarray(out["J"])
    Minv = np.linalg.inv(np.asarray(out["M"]))
    comp = J @ Minv @ J.T
    assert rel_err(out["comp"], comp) < 1e-9
    # the repeated point makes the 12 × 12 Λ⁻¹ singular: the regularized Λ is (Λ⁻¹ + λI)⁻¹
    assert np.linalg.matrix_rank(comp) == 9
    assert rel_err(out["lam_reg"], np.linalg.inv(comp + 1e-3 * np.eye(12))) < 1e-9
    osd = out["osd"]
    sel = np.r_[0:9]
    J9 = J[sel]
    assert rel_err(osd.compliance, comp[np.ix_(sel, sel)]) < 1e-9
    assert rel_err(osd.jacobian, J9) < 1e-12
    assert rel_err(osd.minv_jt, Minv @ J9.T) < 1e-9
    lam = np.linalg.inv(comp[np.ix_(sel, sel)])
    assert rel_err(osd.inertia, lam) < 1e-9
    assert rel_err(osd.jbar, Minv @ J9.T @ lam) < 1e-9
    np.testing.assert_allclose(osd.task_velocity, J9 @ np.asarray(v), rtol=1e-10, atol=1e-12)


def test_tasks_on_one_body_skip_the_psi_gather(tree_case):
    """Tasks that share their body take the short path (``Υ`` at that body, no Ψ gather); it
    agrees with the dense ``J 𝓜⁻¹ J*`` and with the general path."""
    from sodyn.algorithms.operational_space_sweeps import compliance_from_sweeps, task_sweeps
    from sodyn.algorithms.tasks import resolve_tasks, tasks_share_their_body

    model, tasks, q, _, _ = tree_case
    same = [sd.FrameTask(tasks[0].frame), sd.PointTask(tasks[0].frame, "world_aligned")]
    resolved = resolve_tasks(model, same)
    assert tasks_share_their_body(model, resolved)
    assert not tasks_share_their_body(model, resolve_tasks(model, tasks))

    @jax.jit
    def run(q):
        general = compliance_from_sweeps(model, resolved, task_sweeps(model, q, resolved))
        short = sd.operational_space_compliance(model, q, same)
        return short, general, dense_jacobian(model, q, same), sd.mass_matrix(model, q)

    short, general, J, M = run(q)
    dense = np.asarray(J) @ np.linalg.inv(np.asarray(M)) @ np.asarray(J).T
    assert rel_err(short, dense) < 1e-9
    assert rel_err(general, dense) < 1e-9


def test_tree_bias_matches_dense(tree_case):
    model, tasks, q, v, out = tree_case
    osd = out["osd"]
    jdv = np.asarray(out["jdv"])[:9]
    np.testing.assert_allclose(osd.jdot_v, jdv, rtol=1e-9, atol=1e-9)
    C = np.asarray(out["C"])
    expected = np.asarray(osd.jbar).T @ C - np.asarray(osd.inertia) @ jdv
    assert rel_err(osd.bias, expected) < 1e-9
    # the book's definition C_os = −Λ{J 𝓜⁻¹(T − C) + J̇v} at T = 0 (eq. 10.8)
    J = np.asarray(out["J"])[:9]
    Minv = np.linalg.inv(np.asarray(out["M"]))
    c_os = -np.asarray(osd.inertia) @ (J @ Minv @ (-C) + jdv)
    assert rel_err(osd.bias, c_os) < 1e-9


# ---------------------------------------------------------------------------
# real robots vs Pinocchio
# ---------------------------------------------------------------------------

pin = pytest.importorskip("pinocchio")

REAL = {
    "panda": ([("panda_hand_tcp", 6)], False),
    "solo12": ([("FL_FOOT", 3), ("FR_FOOT", 3), ("HL_FOOT", 3), ("HR_FOOT", 3)], True),
    "talos_full": ([("left_sole_link", 6), ("right_sole_link", 6)], True),
}


@pytest.fixture(scope="module", params=sorted(REAL))
def robot(request):
    from robots import robot_path

    from sodyn.io import from_pinocchio, q_from_pinocchio

    frames, floating = REAL[request.param]
    path = str(robot_path(request.param))
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    model = from_pinocchio(pm)
    np.random.seed(0)
    qp = pin.randomConfiguration(pm)
    if floating:
        qp[:3] = np.random.default_rng(0).normal(size=3)
    q = q_from_pinocchio(model, qp)
    tasks = [sd.FrameTask(n) if d == 6 else sd.PointTask(n) for n, d in frames]
    wa = [sd.FrameTask(n, "world_aligned") if d == 6 else sd.PointTask(n, "world_aligned") for n, d in frames]

    @jax.jit
    def run(q):
        return (sd.operational_space_compliance(model, q, tasks), sd.operational_space_inertia(model, q, tasks),
                sd.operational_space_compliance(model, q, wa), sd.mass_matrix(model, q),
                dense_jacobian(model, q, tasks))

    return request.param, pm, model, qp, q, frames, tasks, wa, run(q)


def pinocchio_compliance(pm, qp, frames, reference):
    data = pm.createData()
    minv = pin.computeMinverse(pm, data, qp)
    minv = np.triu(minv) + np.triu(minv, 1).T
    pin.computeJointJacobians(pm, data, qp)
    pin.updateFramePlacements(pm, data)
    rows = []
    for name, d in frames:
        j = pin.getFrameJacobian(pm, data, pm.getFrameId(name), reference)  # [v; ω]
        rows.append(np.vstack([j[3:], j[:3]]) if d == 6 else j[:3])
    J = np.vstack(rows)
    return J @ minv @ J.T


def test_real_robot_compliance_vs_dense_and_pinocchio(robot):
    name, pm, model, qp, q, frames, tasks, wa, (comp, lam, comp_wa, M, J) = robot
    J = np.asarray(J)
    dense = J @ np.linalg.inv(np.asarray(M)) @ J.T
    assert rel_err(comp, dense) < 1e-9
    assert rel_err(lam, np.linalg.inv(dense)) < 1e-9
    # Pinocchio: J 𝓜⁻¹ Jᵀ from computeMinverse and getFrameJacobian (not computeDelassusMatrix)
    assert rel_err(comp, pinocchio_compliance(pm, qp, frames, pin.LOCAL)) < 1e-9
    assert rel_err(comp_wa, pinocchio_compliance(pm, qp, frames, pin.LOCAL_WORLD_ALIGNED)) < 1e-9
    assert comp.shape == (sum(d for _, d in frames),) * 2


# ---------------------------------------------------------------------------
# singular configurations and redundant tasks
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def planar_chain():
    return pendulum_chain(4)


def test_regularized_inertia_at_a_singularity(planar_chain):
    model = planar_chain
    q = jnp.zeros(model.nv)  # stretched chain; all axes parallel: the 3D point task has rank ≤ 2
    tip = model.frame_names[-1]
    tasks = [sd.PointTask(tip, "world_aligned")]
    twice = [sd.FrameTask(tip), sd.FrameTask(tip)]

    @jax.jit
    def run(q):
        lam_fn = lambda q: sd.operational_space_inertia(model, q, tasks, regularization=1e-3)  # noqa: E731
        return (sd.operational_space_compliance(model, q, tasks), lam_fn(q),
                jax.grad(lambda q: jnp.sum(lam_fn(q)))(q),
                sd.operational_space_inertia(model, q + 0.3, twice, regularization=1e-6))

    comp, lam, g, lam2 = (np.asarray(x) for x in run(q))
    assert np.linalg.matrix_rank(comp, tol=1e-9) < 3
    assert np.all(np.isfinite(lam))
    np.testing.assert_allclose(lam, np.linalg.inv(comp + 1e-3 * np.eye(3)), rtol=1e-9, atol=1e-9)
    assert np.max(np.linalg.eigvalsh(lam)) <= 1e3 * (1 + 1e-12)
    assert np.all(np.isfinite(g))  # differentiable at the singularity
    # redundant tasks (the same frame twice): Λ⁻¹ singular, the regularized Λ stays finite
    assert np.all(np.isfinite(lam2))


@pytest.mark.fast
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("robot, frame", [("ur5", "wrist_3_link-tool0_fixed_joint"),
                                          ("panda", "panda_hand_tcp_joint")])
def test_unregularized_inertia_at_a_singular_pose_is_nan_not_indefinite(robot, frame, dtype):
    """UR5 and Panda at ``q = 0`` are kinematic singularities of a 6D tool task: ``Λ⁻¹`` is
    singular to working precision and ``Λ`` is all NaN (it used to be finite, indefinite and
    ~1/ε); regularized it is finite and positive definite; off the singularity it is finite
    and matches the dense inverse."""
    from robots import ROBOTS, robots_dir

    if robots_dir() is None:
        pytest.skip("example-robot-data is not installed")
    model = sd.load_urdf(robots_dir() / ROBOTS[robot][0]).astype(dtype)
    tasks = [sd.FrameTask(frame)]

    @jax.jit
    def run(q):
        return (sd.operational_space_inertia(model, q, tasks),
                sd.operational_space_inertia(model, q, tasks, regularization=1e-3),
                sd.operational_space_compliance(model, q, tasks))

    lam, reg, _ = run(jnp.zeros(model.nq, dtype))
    assert lam.dtype == dtype and np.all(np.isnan(lam))
    assert np.all(np.isfinite(reg)) and np.min(np.linalg.eigvalsh(np.asarray(reg, np.float64))) > 0
    lam, _, comp = run(jnp.full(model.nq, 0.3, dtype).at[3].set(-1.0))
    assert np.all(np.isfinite(lam))
    tol = 1e-3 if dtype == jnp.float32 else 1e-9
    assert rel_err(lam, np.linalg.inv(np.asarray(comp, np.float64))) < tol


# ---------------------------------------------------------------------------
# jit / vmap / grad
# ---------------------------------------------------------------------------


def test_vmap_and_gradients_vs_finite_differences():
    model = random_tree(7, seed=4, floating_base=True)
    f = model.frame_names
    tasks = [sd.FrameTask(f[-1]), sd.PointTask(f[2], "world_aligned")]
    q0 = sd.random_configuration(model, jax.random.PRNGKey(0))
    v0 = jax.random.normal(jax.random.PRNGKey(1), (model.nv,))
    m0 = model.mass

    def scalar(e, v, mass):
        q = sd.integrate(model, q0, e)
        osd = sd.operational_space_dynamics(model_with_mass(model, mass), q, v, tasks, regularization=1e-4)
        return (jnp.sum(jnp.sin(osd.inertia)) + jnp.sum(osd.bias ** 2) * 1e-3
                + jnp.sum(osd.jbar) + jnp.linalg.slogdet(osd.compliance)[1])

    e0 = jnp.zeros(model.nv)
    _, (ge, gv, gm) = jax.jit(jax.value_and_grad(scalar, argnums=(0, 1, 2)))(e0, v0, m0)
    f_jit = jax.jit(scalar)
    eye = np.eye(model.nv)

    def richardson(along, h=1e-5):
        """Central difference with Richardson extrapolation, error O(h⁴): near a task
        singularity Λ is large and a plain O(h²) central difference is not accurate enough."""
        cd = lambda s: (along(s) - along(-s)) / (2 * s)  # noqa: E731
        return (4 * cd(h / 2) - cd(h)) / 3

    fd_e = [richardson(lambda t, i=i: f_jit(e0 + t * eye[i], v0, m0)) for i in range(model.nv)]
    fd_v = [richardson(lambda t, i=i: f_jit(e0, v0 + t * eye[i], m0)) for i in range(model.nv)]
    fd_m = richardson(lambda t: f_jit(e0, v0, m0.at[3].add(t)))
    np.testing.assert_allclose(ge, fd_e, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gv, fd_v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gm[3], fd_m, rtol=1e-5, atol=1e-6)

    # vmap over states and over model parameters at once
    qs = jax.vmap(lambda k: sd.random_configuration(model, k))(jax.random.split(jax.random.PRNGKey(2), 3))
    masses = m0[None] * jnp.array([[1.0], [1.5], [0.7]])
    single = jax.jit(lambda q, m: sd.operational_space_compliance(model_with_mass(model, m), q, tasks))
    batched = jax.jit(jax.vmap(single))(qs, masses)
    for i in range(3):
        np.testing.assert_allclose(batched[i], single(qs[i], masses[i]), rtol=1e-12, atol=1e-14)


def model_with_mass(model, mass):
    import equinox as eqx

    return eqx.tree_at(lambda m: m.mass, model, mass)


# ---------------------------------------------------------------------------
# the gradient of log det 𝓜 (Fixman)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["hinges", "all_joints_floating"])
def test_log_det_gradient_closed_form(case):
    if case == "hinges":
        model = random_tree(10, seed=5, joint_types=("revolute", "continuous", "prismatic", "helical"))
        q = sd.random_configuration(model, jax.random.PRNGKey(5))
        expected = jax.jit(jax.grad(lambda q: sd.log_det_mass_matrix(model, q)))(q)
    else:
        model = random_tree(10, seed=6, floating_base=True)
        q = sd.random_configuration(model, jax.random.PRNGKey(6))
        # tangent-space derivative (forward mode compiles faster than reverse here)
        expected = jax.jit(jax.jacfwd(lambda e: sd.log_det_mass_matrix(model, sd.integrate(model, q, e))))(
            jnp.zeros(model.nv))
    got = jax.jit(lambda q: sd.log_det_mass_matrix_gradient(model, q))(q)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11)


def test_log_det_gradient_slide_formula_world_frame():
    """SLD §2.7 as printed: 2 tr(P Υ blockdiag(h̃, h̃)) in world axes at 𝕆_i, revolute joints."""
    model = random_tree(6, seed=7, joint_types=("revolute",))
    q = sd.random_configuration(model, jax.random.PRNGKey(7))
    from sodyn.algorithms.articulated import riccati
    from sodyn.algorithms.common import prepare
    from sodyn.algorithms.conventions import body_frames
    from sodyn.algorithms.operational_space_sweeps import compliance_kernel
    from sodyn.topology import from_levels

    @jax.jit
    def run(q):
        levels = prepare(model, q)
        abi = riccati(model, body_frames(model, levels), with_inertias=True)
        ups, rw = compliance_kernel(model.topology, levels, abi)
        return ([from_levels(model.topology, x) for x in (abi.P, ups, rw, levels.axes[0].h)],
                jax.grad(lambda q: sd.log_det_mass_matrix(model, q))(q))

    (P, U, R, axes), expected = jax.tree_util.tree_map(np.asarray, run(q))
    axes = axes[:, :3]
    for k in range(model.n_bodies):
        rot = np.kron(np.eye(2), R[k])
        pw, uw = rot @ P[k] @ rot.T, rot @ U[k] @ rot.T
        h = R[k] @ axes[k]
        hx = np.array([[0, -h[2], h[1]], [h[2], 0, -h[0]], [-h[1], h[0], 0]])
        assert 2 * np.trace(pw @ uw @ np.kron(np.eye(2), hx)) == pytest.approx(expected[k], rel=1e-9, abs=1e-11)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------


def test_bad_input(planar_chain):
    model = planar_chain
    q = jnp.zeros(model.nv)
    with pytest.raises(ValueError, match="unknown frame"):
        sd.operational_space_inertia(model, q, [sd.FrameTask("no_such_frame")])
    with pytest.raises(ValueError, match="empty"):
        sd.operational_space_compliance(model, q, [])
    with pytest.raises(ValueError, match="'6d' or '3d'"):
        sd.operational_space_compliance(model, q, [(model.frame_names[-1], "7d")])
    with pytest.raises(ValueError, match="reference"):
        sd.operational_space_compliance(model, q, [sd.PointTask(model.frame_names[-1], "global")])
    b = sd.ModelBuilder()
    b.add_body("link", None, sd.JointSpec.revolute((0, 0, 1)), mass=1.0, inertia=np.eye(3) * 0.1)
    b.add_frame("on_world", None, translation=(1.0, 0, 0))
    m2 = b.build()
    with pytest.raises(ValueError, match="attached to the world"):
        sd.operational_space_inertia(m2, jnp.zeros(1), [sd.PointTask("on_world")])
    # simple specs
    c1 = sd.operational_space_compliance(model, q + 0.2, [(model.frame_names[-1], "3d"), model.frame_names[2]])
    tasks = [sd.PointTask(model.frame_names[-1]), sd.FrameTask(model.frame_names[2])]
    c2 = sd.operational_space_compliance(model, q + 0.2, tasks)
    np.testing.assert_array_equal(c1, c2)


# ---------------------------------------------------------------------------
# OSC: the Panda's end effector tracks a circle in closed-loop simulation
# ---------------------------------------------------------------------------


def test_osc_panda_tracks_circle():
    from robots import robot_path

    from sodyn.io import from_pinocchio

    pm = pin.buildModelFromUrdf(str(robot_path("panda")))
    model = from_pinocchio(pm)
    ee = "panda_hand_tcp"
    tasks = [sd.PointTask(ee, "world_aligned")]
    q0 = jnp.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8, 0.02, 0.02])
    x0 = sd.frame_pose(model, q0, ee).translation
    radius, omega, dt, steps = 0.08, 2 * np.pi / 1.0, 1e-3, 1500
    kp, kd = 400.0, 40.0

    def desired(t):
        s, c = jnp.sin(omega * t), jnp.cos(omega * t)
        x = x0 + radius * jnp.array([0.0, s, 1.0 - c])
        xd = radius * omega * jnp.array([0.0, c, s])
        xdd = radius * omega**2 * jnp.array([0.0, -s, c])
        return x, xd, xdd

    def step(state, t):
        q, v = state
        x = sd.frame_pose(model, q, ee).translation
        xdot = sd.frame_velocity(model, q, v, ee, "world_aligned")[3:]
        xd, xdd, xddd = desired(t)
        u = sd.task_pd_acceleration(xd - x, xdd - xdot, kp, kd, feedforward=xddd)
        tau0 = sd.posture_torque(model, q, v, q0, 20.0, 8.0) + sd.bias_forces(model, q, v)
        tau = sd.osc_torque(model, q, v, tasks, u, null_torque=tau0).tau
        a = sd.forward_dynamics(model, q, v, tau)
        v = v + dt * a
        q = sd.integrate(model, q, v, dt)
        return (q, v), jnp.linalg.norm(x - xd)

    ts = jnp.arange(steps) * dt
    _, err = jax.jit(lambda q, v: jax.lax.scan(step, (q, v), ts))(q0, jnp.zeros(model.nv))
    err = np.asarray(err)
    assert np.all(np.isfinite(err))
    # the start is off the desired velocity (ẋ_d(0) = r ω); afterwards the error stays small
    assert err.max() < 2e-2
    assert err[500:].max() < 5e-4
