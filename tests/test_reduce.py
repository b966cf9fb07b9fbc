"""``sd.lock_joints`` equals Pinocchio's ``buildReducedModel`` on real robots: Panda without its
fingers and Talos with both arms locked, at a non-neutral locking configuration.  Joint order,
frames, ``M``, inverse dynamics and forward dynamics at a random state with gravity, float64,
to 1e-9 relative."""

import warnings

import jax
import numpy as np
import pytest
from robots import random_q, robot_path

import sodyn as sd
from sodyn.io import load_urdf, q_to_pinocchio, v_to_pinocchio

jax.config.update("jax_enable_x64", True)
pin = pytest.importorskip("pinocchio")
TOL = 1e-9

CASES = {
    "panda_without_fingers": ("panda", lambda name: "finger" in name),
    "talos_arms_locked": ("talos_full", lambda name: name.startswith("arm_")),
}


def rel_err(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y)))


@pytest.mark.parametrize("case", sorted(CASES))
def test_lock_joints_equals_build_reduced_model(case):
    robot, locked = CASES[case]
    path = robot_path(robot)
    floating = robot == "talos_full"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = load_urdf(path, floating_base=floating)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
    names = [n for n in model.joint_names if locked(n)]
    assert names
    rng = np.random.default_rng(7)
    q_lock = random_q(model, rng)
    reduced = sd.lock_joints(model, names, q_lock)
    pr = pin.buildReducedModel(pm, [pm.getJointId(n) for n in names], np.asarray(q_to_pinocchio(model, q_lock)))
    assert list(reduced.joint_names) == list(pr.names)[1:]
    assert reduced.nv == model.nv - len(names)
    for f in pr.frames:
        if f.name != "universe":
            reduced.frame_id(f.name)
    q = random_q(reduced, rng)
    v, a = rng.normal(size=reduced.nv), rng.normal(size=reduced.nv)

    @jax.jit
    def run(q, v, a):
        tau = sd.inverse_dynamics(reduced, q, v, a)
        return sd.mass_matrix(reduced, q), tau, sd.forward_dynamics(reduced, q, v, tau)

    M, tau, qdd = (np.asarray(x) for x in run(q, v, a))
    qp = np.asarray(q_to_pinocchio(reduced, q))
    vp, ap = np.asarray(v_to_pinocchio(reduced, v)), np.asarray(v_to_pinocchio(reduced, a))
    P = np.asarray(v_to_pinocchio(reduced, np.eye(reduced.nv)))
    Mp = pin.crba(pr, pr.createData(), qp)
    assert rel_err(P @ M @ P.T, np.triu(Mp) + np.triu(Mp, 1).T) < TOL
    taup = pin.rnea(pr, pr.createData(), qp, vp, ap) + pr.damping * vp  # sodyn's includes damping
    assert rel_err(v_to_pinocchio(reduced, tau), taup) < TOL
    qddp = pin.aba(pr, pr.createData(), qp, vp, taup - pr.damping * vp)
    assert rel_err(v_to_pinocchio(reduced, qdd), qddp) < TOL
    assert rel_err(qdd, a) < TOL
