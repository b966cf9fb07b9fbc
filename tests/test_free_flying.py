"""Free-flying systems (Jain Ch. 17) and centroidal momentum.

Oracles: the articulated-body algorithm (``sd.forward_dynamics``, ``sd.body_accelerations``) for
Lemma 17.1 / Alg. 17.3; ``sd.operational_space_inertia`` (a 6D local frame task per body) for
``P + S`` (Lemma 17.5, Alg. 17.5); the identities of Ex. 17.2 and Lemma 17.5; Pinocchio's
``ccrba``, ``computeCentroidalMomentum`` and ``Ig`` on real robots and random Pinocchio trees;
and base invariance: the same tree re-rooted at another body (built with ``ModelBuilder``)
moves the same way.  Each model's functions are jitted once (module-scoped fixtures).
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import sodyn as sd  # noqa: E402
from sodyn import spatial  # noqa: E402
from sodyn.algorithms.centroidal import (  # noqa: E402
    centroidal_inertia,
    centroidal_momentum,
    centroidal_momentum_matrix,
)
from sodyn.algorithms.free_flying import (  # noqa: E402
    base_invariant_forward_dynamics,
    body_operational_space_inertias,
    free_flying_inertias,
)
from sodyn.models import random_tree  # noqa: E402
from sodyn.models.random_tree import random_inertia  # noqa: E402

pin = pytest.importorskip("pinocchio")

SWAP = np.r_[3, 4, 5, 0, 1, 2]  # Pinocchio's linear-first rows ↔ sodyn's angular-first


def rel_err(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.max(np.abs(x - y)) / max(1e-300, np.max(np.abs(y)))


def motion_matrix(r, p):
    """``φ*``: motion in a frame → motion in the frame at pose ``(r, p)`` in it."""
    return np.asarray(spatial.motion_transform_matrix(jnp.asarray(r), jnp.asarray(p)))


# ---------------------------------------------------------------------------
# random free-floating trees: Lemma 17.1, Alg. 17.1 / 17.5
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree_case():
    seed = 0
    model = random_tree(10, seed=seed, floating_base=True, damping=0.1, armature=0.05, branching=0.6)
    keys = jax.random.split(jax.random.PRNGKey(seed), 5)
    q = sd.random_configuration(model, keys[0])
    v = jax.random.normal(keys[1], (model.nv,))
    tau = jax.random.normal(keys[2], (model.nv,))
    f_ext = jax.random.normal(keys[3], (model.n_bodies, 6))
    osc_bodies = np.array([model.n_bodies - 1])  # Λ also asked of sd.operational_space_inertia (a leaf)

    @jax.jit
    def run(q, v, tau, f_ext):
        qdd = sd.forward_dynamics(model, q, v, tau, f_ext)
        return dict(
            qdd=qdd, alpha=sd.body_accelerations(model, q, v, qdd, gravity=True),
            bi=base_invariant_forward_dynamics(model, q, v, tau, f_ext),
            ff=free_flying_inertias(model, q),
            # Λ of a 6D local task at a leaf ...
            osc=jnp.stack([sd.operational_space_inertia(model, q, sd.FrameTask(model.body_names[k]))
                           for k in osc_bodies]),
            # ... and the compliance of a task at every body: its diagonal blocks are the Υ(k)
            comp=sd.operational_space_compliance(model, q, [sd.FrameTask(b) for b in model.body_names]),
            fk=sd.forward_kinematics(model, q), jac=sd.frame_jacobians(model, q, list(model.body_names)),
        )

    return model, osc_bodies, run(q, v, tau, f_ext)


@pytest.mark.fast
def test_lemma_17_1_accelerations_equal_the_articulated_body_algorithm(tree_case):
    model, _, out = tree_case
    # Lemma 17.1's α(k) per body: the ABA's accelerations with the world at −g (Jain's 𝔤)
    assert rel_err(out["bi"].alpha, out["alpha"]) < 1e-11
    # (17.12) per body: the ABA's joint accelerations
    assert rel_err(out["bi"].qdd, out["qdd"]) < 1e-11


@pytest.mark.fast
def test_p_plus_s_is_the_operational_space_inertia_of_each_body(tree_case):
    model, osc_bodies, out = tree_case
    ff = out["ff"]
    osc = np.asarray(out["osc"])
    assert rel_err((ff.P + ff.S)[osc_bodies], osc) < 1e-10          # Lemma 17.5: Υ(k)⁻¹ = P(k) + S(k)
    assert rel_err(ff.Lambda[osc_bodies], osc) < 1e-10
    comp = np.asarray(out["comp"])
    upsilon = np.stack([comp[6 * k:6 * k + 6, 6 * k:6 * k + 6] for k in range(model.n_bodies)])
    assert rel_err(ff.P + ff.S, np.linalg.inv(upsilon)) < 1e-10


@pytest.mark.fast
def test_dual_inertia_identities(tree_case):
    """Ex. 17.2: S(k) H*(k) = 0 (S sits behind hinge k), here with armature I_a in D_dl:
    S H* = S⁺ H* D_dl⁻¹ I_a; Lemma 17.5: [Υ⁺(k)]⁻¹ = P⁺(k) + S⁺(k)
    with Υ⁺(k) = φ*(℘(k), k) Υ(℘(k)) φ(℘(k), k); at a free root S is the joint's armature (zero
    for a plain free joint, whose P⁺ = 0, eq. 17.1)."""
    model, _, out = tree_case
    ff = {k: np.asarray(x) for k, x in out["ff"]._asdict().items()}
    rot, trans = (np.asarray(x) for x in out["fk"].body)
    scale = np.max(np.abs(ff["P"]))
    for k in range(model.n_bodies):
        h = np.asarray(out["jac"][k])[:, model.joint_v_slice(k)]  # H*(k): the body's own Jacobian columns
        p = model.parent[k]
        if p < 0:
            assert np.array_equal(ff["S"][k], np.diag(np.asarray(model.armature)[model.joint_v_slice(k)]))
            continue
        arm = np.diag(np.asarray(model.armature)[model.joint_v_slice(k)])
        s_plus_h = ff["S_plus"][k] @ h
        assert np.max(np.abs(ff["S"][k] @ h - s_plus_h @ np.linalg.solve(h.T @ s_plus_h + arm, arm))) < 1e-12 * scale
        # pose of k in its parent from the world poses
        r_rel = rot[p].T @ rot[k]
        p_rel = rot[p].T @ (trans[k] - trans[p])
        x = motion_matrix(r_rel, p_rel)
        upsilon_plus = x @ np.linalg.inv(ff["Lambda"][p]) @ x.T
        assert rel_err(ff["P_plus"][k] + ff["S_plus"][k], np.linalg.inv(upsilon_plus)) < 1e-10


# ---------------------------------------------------------------------------
# base invariance: the tree re-rooted at another body
# ---------------------------------------------------------------------------


def _rot(rng):
    qt = rng.normal(size=4)
    return np.asarray(spatial.quat_to_rotation(jnp.asarray(qt / np.linalg.norm(qt))))


def hinge_tree_spec(n, seed):
    """A random free-floating tree of hinge joints (revolute, prismatic, helical)."""
    rng = np.random.default_rng(seed)
    spec = []
    for i in range(n):
        jt = "free" if i == 0 else str(rng.choice(["revolute", "prismatic", "helical"]))
        axis = rng.normal(size=3)
        mass = float(rng.uniform(0.5, 3.0))
        spec.append(dict(
            name=f"b{i}", parent=-1 if i == 0 else (i - 1 if rng.uniform() > 0.5 else int(rng.integers(0, i))),
            joint=jt, axis=axis / np.linalg.norm(axis), pitch=float(rng.uniform(-0.2, 0.2)), joint_name=f"j{i}",
            r=np.eye(3) if i == 0 else _rot(rng), p=np.zeros(3) if i == 0 else rng.uniform(-0.5, 0.5, 3),
            mass=mass, com=rng.uniform(-0.2, 0.2, 3), inertia=random_inertia(rng, mass),
        ))
    return spec


def build(spec):
    b = sd.ModelBuilder(name="tree")
    names = {s["name"]: s for s in spec}
    children = {s["name"]: [] for s in spec}
    for s in spec:
        if s["parent"] is not None:
            children[s["parent"]].append(s["name"])
    stack = [s["name"] for s in spec if s["parent"] is None]
    while stack:  # parents before children
        s = names[stack.pop()]
        b.add_body(s["name"], s["parent"], sd.JointSpec(s["joint"], tuple(s["axis"]), s["pitch"]),
                   rotation=s["r"], translation=s["p"], mass=s["mass"], com=s["com"], inertia=s["inertia"],
                   joint_name=s["joint_name"])
        stack.extend(children[s["name"]])
    return b.build()


def with_names(spec):
    out = [dict(s) for s in spec]
    for s in out:
        s["parent"] = None if s["parent"] == -1 else spec[s["parent"]]["name"]
    return out


def reroot(spec, new_root):
    """The same tree rooted at body ``new_root`` by a free joint (Jain §17.3: the path from the
    new base to the old one reversed).  Each body ``b_i`` on the path (``b_0`` the new root)
    gets the frame ``F(b_i) = B(b_i) C_i`` of the hinge it now hangs from (``C_i`` the old
    placement of ``b_{i−1}``'s joint, ``C_0 = I``); a reversed hinge keeps its coordinate with
    its axis negated.  Returns the spec and each body's ``C``."""
    by_name = {s["name"]: dict(s) for s in spec}
    path = [new_root]
    while by_name[path[-1]]["parent"] is not None:
        path.append(by_name[path[-1]]["parent"])
    c = {s["name"]: (np.eye(3), np.zeros(3)) for s in spec}
    for i in range(1, len(path)):
        prev = by_name[path[i - 1]]
        c[path[i]] = (prev["r"], prev["p"])
    new = {}
    for name, s in by_name.items():
        s = dict(s)
        if name == new_root:
            s.update(parent=None, joint="free", joint_name="free_new", r=np.eye(3), p=np.zeros(3))
        elif name in path:
            prev = by_name[path[path.index(name) - 1]]
            rc, pc = c[prev["name"]]
            s.update(parent=prev["name"], joint=prev["joint"], axis=-prev["axis"], pitch=prev["pitch"],
                     joint_name=prev["joint_name"], r=rc.T, p=-rc.T @ pc)
        else:
            rc, pc = c[s["parent"]]
            s.update(r=rc.T @ s["r"], p=rc.T @ (s["p"] - pc))
        rc, pc = c[name]
        s.update(com=rc.T @ (s["com"] - pc), inertia=rc.T @ s["inertia"] @ rc)
        new[name] = s
    return [new[s["name"]] for s in spec], c


def test_forward_dynamics_is_invariant_to_the_base_body():
    spec = with_names(hinge_tree_spec(9, seed=3))
    old = build(spec)
    # the new base: the deepest body
    depth = {s["name"]: 0 for s in spec}
    for s in spec:
        if s["parent"] is not None:
            depth[s["name"]] = depth[s["parent"]] + 1
    new_root = max(depth, key=depth.get)
    new_spec, c = reroot(spec, new_root)
    new = build(new_spec)
    assert new.joint_types[0] == "free" and new.body_names[0] == new_root

    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    q_old = sd.random_configuration(old, keys[0])
    v_old = jax.random.normal(keys[1], (old.nv,))
    tau_old = jax.random.normal(keys[2], (old.nv,)).at[old.joint_v_slice("j0")].set(0.0)  # no force on the free base
    r = old.body_id(new_root)

    @jax.jit
    def run_old(q, v, tau):
        qdd = sd.forward_dynamics(old, q, v, tau)
        return dict(fk=sd.forward_kinematics(old, q), vel=sd.body_velocities(old, q, v),
                    ke=sd.kinetic_energy(old, q, v), qdd=qdd, acc=sd.body_accelerations(old, q, v, qdd),
                    lam=body_operational_space_inertias(old, q))

    @jax.jit
    def run_new(q, v, tau):
        qdds = (sd.forward_dynamics(new, q, v, tau), base_invariant_forward_dynamics(new, q, v, tau).qdd)
        return dict(fk=sd.forward_kinematics(new, q), ke=sd.kinetic_energy(new, q, v), qdds=qdds,
                    accs=[sd.body_accelerations(new, q, v, x) for x in qdds],
                    lam=body_operational_space_inertias(new, q))

    o = run_old(q_old, v_old, tau_old)
    fk, qdd_old, a_old = o["fk"], o["qdd"], o["acc"]
    # q/v/τ of the re-rooted model: hinges by joint name, the new free joint from the old motion of new_root
    q_new, v_new, tau_new = np.zeros(new.nq), np.zeros(new.nv), np.zeros(new.nv)
    for j in new.joint_names:
        if j == "free_new":
            quat = spatial.rotation_to_quat(fk.body.rotation[r])
            q_new[new.joint_q_slice(j)] = np.concatenate([fk.body.translation[r], quat])
            v_new[new.joint_v_slice(j)] = o["vel"][r]
        else:
            q_new[new.joint_q_slice(j)] = q_old[old.joint_q_slice(j)]
            v_new[new.joint_v_slice(j)] = v_old[old.joint_v_slice(j)]
            tau_new[new.joint_v_slice(j)] = tau_old[old.joint_v_slice(j)]
    n = run_new(q_new, v_new, tau_new)
    # the same world poses: F(k) = B(k) C_k, and the same kinetic energy (17.46)
    for k, name in enumerate(new.body_names):
        ko = old.body_id(name)
        rc, pc = c[name]
        assert np.allclose(n["fk"].body.rotation[k], fk.body.rotation[ko] @ rc, atol=1e-12)
        assert np.allclose(n["fk"].body.translation[k], fk.body.translation[ko] + fk.body.rotation[ko] @ pc,
                           atol=1e-12)
    assert abs(n["ke"] - o["ke"]) < 1e-12 * o["ke"]
    qdds_new, accs_new, lam_old, lam_new = n["qdds"], n["accs"], o["lam"], n["lam"]
    for qdd_new, a_new in zip(qdds_new, accs_new):
        for j in new.joint_names:
            want = a_old[r] if j == "free_new" else qdd_old[old.joint_v_slice(j)]
            assert rel_err(qdd_new[new.joint_v_slice(j)], want) < 1e-10, j
        for k, name in enumerate(new.body_names):  # every body's acceleration, in its new frame
            x = motion_matrix(*c[name])
            assert rel_err(a_new[k], x @ np.asarray(a_old[old.body_id(name)])) < 1e-10, name
    # Lemma 17.4: Υ(k) and so Λ(k) = P(k) + S(k) do not depend on the base
    for k, name in enumerate(new.body_names):
        xi = np.linalg.inv(motion_matrix(*c[name]))
        assert rel_err(lam_new[k], xi.T @ np.asarray(lam_old[old.body_id(name)]) @ xi) < 1e-10, name


# ---------------------------------------------------------------------------
# centroidal momentum against Pinocchio
# ---------------------------------------------------------------------------


def random_pin_tree(n, seed, floating=True):
    """A random Pinocchio tree (joints in depth-first order, as ``from_pinocchio`` expects)."""
    rng = np.random.default_rng(seed)

    def unit(x):
        return x / np.linalg.norm(x)

    kinds = [lambda: pin.JointModelRX(), lambda: pin.JointModelPY(), lambda: pin.JointModelSpherical(),
             lambda: pin.JointModelRevoluteUnaligned(*unit(rng.normal(size=3))), lambda: pin.JointModelRUBZ(),
             lambda: pin.JointModelHelicalUnaligned(*unit(rng.normal(size=3)), 0.1)]
    pm = pin.Model()
    parents = [0]
    for i in range(n):
        if i == 0:
            parent = 0
        else:  # the last joint or one of its ancestors: depth-first order
            path = [i]
            while parents[path[-1]] > 0:
                path.append(parents[path[-1]])
            parent = path[int(rng.integers(len(path)))]
        parents.append(parent)
        jm = (pin.JointModelFreeFlyer() if floating else pin.JointModelRY()) if i == 0 else \
            kinds[int(rng.integers(len(kinds)))]()
        placement = pin.SE3(pin.Quaternion(*unit(rng.normal(size=4))).matrix(), rng.uniform(-0.5, 0.5, 3))
        j = pm.addJoint(parent, jm, placement, f"j{i}")
        m = float(rng.uniform(0.5, 3))
        pm.appendBodyToJoint(j, pin.Inertia(m, rng.uniform(-0.2, 0.2, 3), random_inertia(rng, m)), pin.SE3.Identity())
        pm.addBodyFrame(f"b{i}", j, pin.SE3.Identity(), 0)
    pm.lowerPositionLimit = -1.5 * np.ones(pm.nq)
    pm.upperPositionLimit = 1.5 * np.ones(pm.nq)
    return pm


def _robot(name):
    from robots import robot_path

    return pin.buildModelFromUrdf(str(robot_path(name)), pin.JointModelFreeFlyer())


CENTROIDAL_CASES = {
    "solo12": lambda: _robot("solo12"),
    "talos_full": lambda: _robot("talos_full"),
    "random_free_0": lambda: random_pin_tree(12, 0),
    "random_free_1": lambda: random_pin_tree(15, 1),
    "random_fixed": lambda: random_pin_tree(8, 2, floating=False),
}


@pytest.mark.fast
@pytest.mark.parametrize("case", sorted(CENTROIDAL_CASES))
def test_centroidal_momentum_matches_pinocchio(case):
    from sodyn.io import from_pinocchio, q_from_pinocchio, v_to_pinocchio

    pm = CENTROIDAL_CASES[case]()
    model = from_pinocchio(pm)
    np.random.seed(0)
    qp = pin.randomConfiguration(pm)
    if pm.joints[1].shortname() == "JointModelFreeFlyer":
        qp[:3] = np.random.default_rng(0).normal(size=3)
    q = q_from_pinocchio(model, qp)
    v = np.random.default_rng(1).normal(size=model.nv)
    vp = np.asarray(v_to_pinocchio(model, v))

    @jax.jit
    def run(q, v):
        return centroidal_momentum_matrix(model, q), centroidal_momentum(model, q, v), centroidal_inertia(model, q)

    a, h, ig = run(q, v)
    data = pm.createData()
    ag = pin.ccrba(pm, data, qp, vp)
    # columns: sodyn's v → Pinocchio's v is a permutation (the free flyer's [ω; v] ↔ [v; ω])
    to_pin = np.stack([np.asarray(v_to_pinocchio(model, e)) for e in np.eye(model.nv)], axis=1)
    assert rel_err(a, ag[SWAP] @ to_pin) < 1e-10
    assert rel_err(h, np.asarray(data.hg)[SWAP]) < 1e-10
    assert rel_err(ig, np.asarray(data.Ig)[SWAP][:, SWAP]) < 1e-10
    data2 = pm.createData()
    pin.computeCentroidalMomentum(pm, data2, qp, vp)
    assert rel_err(h, np.asarray(data2.hg)[SWAP]) < 1e-10
    assert rel_err(a @ v, h) < 1e-12


# ---------------------------------------------------------------------------
# jit / vmap / grad against central differences
# ---------------------------------------------------------------------------


def test_derivatives_match_central_differences_and_vmap():
    model = random_tree(5, seed=4, joint_types=("revolute", "prismatic", "spherical"), floating_base=True, damping=0.1)
    keys = jax.random.split(jax.random.PRNGKey(4), 6)
    q0 = sd.random_configuration(model, keys[0])
    v0, tau, dq, dv = (jax.random.normal(k, (model.nv,)) for k in keys[1:5])
    w = jax.random.normal(keys[5], (model.nv,))

    def quantities(q, v):
        bi = base_invariant_forward_dynamics(model, q, v, tau)
        return dict(h=centroidal_momentum(model, q, v), a_w=centroidal_momentum_matrix(model, q) @ w,
                    ig=centroidal_inertia(model, q), lam=body_operational_space_inertias(model, q),
                    qdd=bi.qdd, alpha=bi.alpha)

    def along(eps):
        return quantities(sd.integrate(model, q0, eps * dq), v0 + eps * dv)

    h = 1e-5
    primal, tangent = jax.jit(lambda e: jax.jvp(along, (e,), (1.0,)))(0.0)
    # the central differences by one vmapped call, which also holds the primal again
    batched = jax.jit(jax.vmap(along))(jnp.array([0.0, h, -h]))
    for key in tangent:
        fd = (batched[key][1] - batched[key][2]) / (2 * h)
        assert rel_err(tangent[key], fd) < 1e-6, key
        assert rel_err(batched[key][0], primal[key]) < 1e-12, key  # vmap = one call at a time

    # reverse mode through the dual scatter: ∂/∂ε of a scalar equals the forward-mode tangent
    weights = {"h": 1.0, "lam": 1e-2, "alpha": 1e-3}

    def scalar(out):
        return sum(w * jnp.sum(out[k] ** 2) for k, w in weights.items())

    g = jax.jit(jax.grad(lambda e: scalar(along(e))))(0.0)
    want = sum(w * 2 * jnp.sum(primal[k] * tangent[k]) for k, w in weights.items())
    assert np.isfinite(g) and abs(g - want) < 1e-9 * max(1.0, abs(want))


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


@pytest.mark.fast
def test_fixed_base_model_is_rejected_with_a_clear_error():
    model = random_tree(4, seed=0, floating_base=False)
    q = sd.neutral_configuration(model)
    v = jnp.zeros(model.nv)
    for call in (lambda: free_flying_inertias(model, q), lambda: body_operational_space_inertias(model, q),
                 lambda: base_invariant_forward_dynamics(model, q, v, v)):
        with pytest.raises(ValueError, match="free-flying model.*link0"):
            call()
