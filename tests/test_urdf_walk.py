"""Every URDF that example-robot-data ships, floating base, against Pinocchio.

For each file: Pinocchio (``buildModelFromUrdf`` with a free flyer) and ``sd.load_urdf`` must
both load it or both reject it.  Then, at a random state with gravity, float64: joint order,
the joint data of the file (position, velocity and effort limits, damping, friction), ``M``,
inverse dynamics and, when ``M`` is regular, ``M⁻¹``, forward dynamics and ``log det M``
(against Pinocchio's ``U D Uᵀ`` factorization), to 1e-9 relative; ``M⁻¹``, forward dynamics
and ``log det M`` to ``1e-9 · max(1, cond(M) · 1e-6)``, forward dynamics also to 1e-9 in
backward error (the torque Pinocchio's inverse dynamics gives for sodyn's acceleration).  Inertias sodyn repaired
(``InertiaWarning``) are compared against Pinocchio built from the same repaired inertias.
A model with massless subtrees must warn (``SingularModelWarning``) exactly when
Pinocchio's ``M`` is singular; its forward dynamics is compared after locking the joints
named in the warning (``pin.buildReducedModel``).

The walk over every file is marked ``slow``; ``SUBSET`` runs in the default suite.
"""

import re
import warnings
import xml.etree.ElementTree as ET
import zlib

import jax
import numpy as np
import pytest
from robots import all_urdfs, random_q, robots_dir

import sodyn as sd
from sodyn.io import load_urdf, q_to_pinocchio, v_to_pinocchio

jax.config.update("jax_enable_x64", True)
pin = pytest.importorskip("pinocchio")
TOL = 1e-9

#: Files whose inertias are clearly not positive semi-definite: sodyn rejects them (naming the
#: link and the line) unless ``invalid_inertia="keep"``, which loads them as Pinocchio does.
INVALID_INERTIA = {
    "romeo_description/urdf/romeo_laas_small.urdf": r"line 328, <inertial> of link 'body'.*clearly negative",
}

#: Walked in the default suite: a massless link with rotational inertia, round-off repairs, a
#: clearly invalid inertia, a singular model, and a file both libraries reject.
SUBSET = {
    "bolt_description/robots/bolt.urdf",
    "tiago_description/robots/tiago_no_hand.urdf",
    "romeo_description/urdf/romeo_laas_small.urdf",
    "double_pendulum_description/urdf/double_pendulum_simple.urdf",
    "ur_description/urdf/ur3.urdf",
}

PARAMS = [pytest.param(r, id=r.split("/")[-1], marks=() if r in SUBSET else pytest.mark.slow) for r in all_urdfs()]


def rel_err(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y)))


def with_inertias(path, repairs) -> str:
    """The URDF text with the repaired rotational inertias written in (link axes, full precision)."""
    root = ET.parse(path).getroot()
    links = {link.get("name"): link for link in root.findall("link")}
    for r in repairs:
        inertial = links[r.link].find("inertial")
        origin = inertial.find("origin")
        if origin is not None:
            origin.set("rpy", "0 0 0")
        el = inertial.find("inertia")
        for k, (i, j) in {"ixx": (0, 0), "iyy": (1, 1), "izz": (2, 2), "ixy": (0, 1), "ixz": (0, 2),
                          "iyz": (1, 2)}.items():
            el.set(k, repr(float(r.inertia[i, j])))
    return ET.tostring(root, encoding="unicode")


def symmetric(M):
    return np.triu(M) + np.triu(M, 1).T


def load_both(rel):
    """(sodyn model, Pinocchio model, warnings) or None when both reject the file."""
    path = robots_dir() / rel
    try:
        pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    except (RuntimeError, ValueError):
        with pytest.raises(ValueError, match=re.escape(str(path))):
            load_urdf(path, floating_base=True)
        return None
    kw = {}
    if rel in INVALID_INERTIA:
        with pytest.raises(ValueError, match=re.escape(str(path)) + ", " + INVALID_INERTIA[rel]):
            load_urdf(path, floating_base=True)
        kw = dict(invalid_inertia="keep")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_urdf(path, floating_base=True, **kw)
    caught = [w.message for w in caught if isinstance(w.message, sd.LoadWarning)]
    repairs = [r for w in caught if isinstance(w, sd.InertiaWarning) for r in w.repairs if r.repaired]
    if repairs:
        pm = pin.buildModelFromXML(with_inertias(path, repairs), pin.JointModelFreeFlyer())
    return model, pm, caught


def compiled(model):
    @jax.jit
    def run(q, v, a):
        tau = sd.inverse_dynamics(model, q, v, a)
        return dict(tau=tau, M=sd.mass_matrix(model, q), Minv=sd.inverse_mass_matrix(model, q),
                    qdd=sd.forward_dynamics(model, q, v, tau), logdet=sd.log_det_mass_matrix(model, q))
    return run


def pin_state(model, q, v, a):
    return (np.asarray(q_to_pinocchio(model, q)), np.asarray(v_to_pinocchio(model, v)),
            np.asarray(v_to_pinocchio(model, a)))


def same_bound(ours, theirs):
    """Equal, or both unbounded (Pinocchio writes an absent bound as ±DBL_MAX or ±inf)."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    big = np.finfo(np.float64).max
    return np.all((ours == theirs) | (np.isinf(ours) & (np.abs(theirs) >= big) & (np.sign(ours) == np.sign(theirs))))


def check_joint_data(model, pm):
    """Limits, damping and friction of every joint equal Pinocchio's fields."""
    for name, t in zip(model.joint_names, model.joint_types, strict=True):
        j = pm.joints[pm.getJointId(name)]
        vs, pv = model.joint_v_slice(name), slice(j.idx_v, j.idx_v + j.nv)
        for ours, theirs in ((model.damping, pm.damping), (model.friction, pm.friction),
                             (model.velocity_limit, pm.velocityLimit), (model.effort_limit, pm.effortLimit)):
            assert same_bound(np.asarray(ours)[vs], theirs[pv]), (name, np.asarray(ours)[vs], theirs[pv])
        if t in ("revolute", "prismatic"):  # one coordinate in both libraries
            qs, pq = model.joint_q_slice(name), slice(j.idx_q, j.idx_q + 1)
            for ours, theirs in ((model.lower_limit, pm.lowerPositionLimit),
                                 (model.upper_limit, pm.upperPositionLimit)):
                assert same_bound(np.asarray(ours)[qs], theirs[pq]), (name, np.asarray(ours)[qs], theirs[pq])


@pytest.mark.parametrize("rel", PARAMS)
def test_urdf_against_pinocchio(rel):
    loaded = load_both(rel)
    if loaded is None:
        return
    model, pm, caught = loaded
    assert list(model.joint_names) == list(pm.names)[1:]
    check_joint_data(model, pm)
    rng = np.random.default_rng(zlib.crc32(rel.encode()))
    q = random_q(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    out = jax.tree_util.tree_map(np.asarray, compiled(model)(q, v, a))
    qp, vp, ap = pin_state(model, q, v, a)
    P = np.asarray(v_to_pinocchio(model, np.eye(model.nv)))
    Mp = symmetric(pin.crba(pm, pm.createData(), qp))
    assert rel_err(P @ out["M"] @ P.T, Mp) < TOL
    taup = pin.rnea(pm, pm.createData(), qp, vp, ap) + pm.damping * vp
    assert rel_err(v_to_pinocchio(model, out["tau"]), taup) < TOL
    singular = [w for w in caught if isinstance(w, sd.SingularModelWarning)]
    lam = np.linalg.eigvalsh(Mp)
    assert bool(singular) == (lam[0] <= 1e-12 * lam[-1]), (lam[:3], singular)
    if singular:
        check_locked(model, pm, singular[0].joints, q, rng)
        return
    # M⁻¹, M⁻¹τ and log det M lose accuracy with the condition number of M (as cond · eps) in
    # both libraries; forward dynamics is also held to TOL by its backward error (Pinocchio's
    # inverse dynamics of sodyn's acceleration gives back the torque).
    tol_cond = TOL * max(1.0, np.linalg.cond(Mp) * 1e-6)
    Mi = symmetric(pin.computeMinverse(pm, pm.createData(), qp))
    assert rel_err(P @ out["Minv"] @ P.T, Mi) < tol_cond
    qdd = pin.aba(pm, pm.createData(), qp, vp, taup - pm.damping * vp)
    qdd_sd = np.asarray(v_to_pinocchio(model, out["qdd"]))
    assert rel_err(qdd_sd, qdd) < tol_cond
    assert rel_err(pin.rnea(pm, pm.createData(), qp, vp, qdd_sd) + pm.damping * vp, taup) < TOL
    pd = pm.createData()
    pin.crba(pm, pd, qp)
    pin.cholesky.decompose(pm, pd)  # M = U D Uᵀ
    logdet = np.sum(np.log(pd.D))
    assert abs(out["logdet"] - logdet) < tol_cond * max(1.0, abs(logdet))


def check_locked(model, pm, joints, q, rng):
    """Forward dynamics of the model with the massless joints locked, against Pinocchio's."""
    reduced = sd.lock_joints(model, joints, q)
    pr = pin.buildReducedModel(pm, [pm.getJointId(n) for n in joints], np.asarray(q_to_pinocchio(model, q)))
    assert list(reduced.joint_names) == list(pr.names)[1:]
    q = random_q(reduced, rng)
    v, tau = rng.normal(size=reduced.nv), rng.normal(size=reduced.nv)
    qdd = jax.jit(lambda q, v, tau: sd.forward_dynamics(reduced, q, v, tau))(q, v, tau)
    qp, vp, taup = pin_state(reduced, q, v, tau)
    assert rel_err(v_to_pinocchio(reduced, qdd), pin.aba(pr, pr.createData(), qp, vp, taup - pr.damping * vp)) < TOL
