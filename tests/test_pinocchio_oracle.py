"""Core algorithms against Pinocchio on real robots (models built from Pinocchio's model data,
float64, random states with gravity): M, RNEA, ABA, M⁻¹, frame Jacobians and poses.

example-robot-data ships no KUKA iiwa; the xArm7 (another 7-dof arm) stands in for it."""

import pathlib
import sys

import jax
import numpy as np
import pytest

import sodyn as sd
from sodyn.io import from_pinocchio, q_from_pinocchio, v_from_pinocchio

pytestmark = pytest.mark.fast

pin = pytest.importorskip("pinocchio")


def robots_dir() -> pathlib.Path:
    for p in sys.path:
        d = pathlib.Path(p) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if d.is_dir():
            return d
    pytest.skip("example-robot-data is not installed")


ROBOTS = {
    "panda": "panda_description/urdf/panda.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "xarm7": "xarm_description/urdf/xarm7.urdf",
    "solo12_fixed": "solo_description/robots/solo12.urdf",
}


def rel_err(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y)))


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def robot(request):
    pm = pin.buildModelFromUrdf(str(robots_dir() / ROBOTS[request.param]))
    model = from_pinocchio(pm)
    rng = np.random.default_rng(0)
    qp = pin.randomConfiguration(pm)
    vp, ap = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    q, v, a = q_from_pinocchio(model, qp), v_from_pinocchio(model, vp), v_from_pinocchio(model, ap)
    frames = [f.name for f in pm.frames if f.name in model.frame_names]

    @jax.jit
    def run(q, v, a):
        tau = sd.inverse_dynamics(model, q, v, a)
        return dict(
            M=sd.mass_matrix(model, q), tau=tau, qdd=sd.forward_dynamics(model, q, v, tau),
            Minv=sd.inverse_mass_matrix(model, q),
            J_local=sd.frame_jacobians(model, q, frames, "local"),
            J_world=sd.frame_jacobians(model, q, frames, "world_aligned"),
            fk=sd.forward_kinematics(model, q),
            jdv_local=sd.frame_jacobian_dot_times_v(model, q, v, frames[-1]),
            jdv_classical=sd.frame_jacobian_dot_times_v(model, q, v, frames[-1], "world_aligned", classical=True),
            acc_local=sd.frame_acceleration(model, q, v, a, frames[-1]),
        )

    return pm, model, (qp, vp, ap), run(q, v, a), frames


def test_mass_matrix(robot):
    pm, model, (qp, _, _), out, _ = robot
    Mp = pin.crba(pm, pm.createData(), qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    assert rel_err(out["M"], Mp) < 1e-9


def test_inverse_dynamics(robot):
    pm, model, (qp, vp, ap), out, _ = robot
    taup = pin.rnea(pm, pm.createData(), qp, vp, ap) + pm.damping * vp  # sodyn includes joint damping
    assert rel_err(out["tau"], taup) < 1e-9


def test_forward_dynamics(robot):
    pm, model, (qp, vp, ap), out, _ = robot
    tau = np.asarray(out["tau"]) - pm.damping * vp
    assert rel_err(out["qdd"], pin.aba(pm, pm.createData(), qp, vp, tau)) < 1e-9
    assert rel_err(out["qdd"], ap) < 1e-9


def test_inverse_mass_matrix(robot):
    pm, model, (qp, _, _), out, _ = robot
    Mi = pin.computeMinverse(pm, pm.createData(), qp)
    Mi = np.triu(Mi) + np.triu(Mi, 1).T
    assert rel_err(out["Minv"], Mi) < 1e-9


def test_frame_poses_and_jacobians(robot):
    pm, model, (qp, _, _), out, frames = robot
    pd = pm.createData()
    pin.computeJointJacobians(pm, pd, qp)
    pin.updateFramePlacements(pm, pd)
    fk = out["fk"]
    for i, name in enumerate(frames):
        fid, k = pm.getFrameId(name), model.frame_id(name)
        assert rel_err(fk.frame.translation[k], pd.oMf[fid].translation) < 1e-9, name
        assert rel_err(fk.frame.rotation[k], pd.oMf[fid].rotation) < 1e-9, name
        for key, ref in (("J_local", pin.LOCAL), ("J_world", pin.LOCAL_WORLD_ALIGNED)):
            jp = pin.getFrameJacobian(pm, pd, fid, ref)
            jp = np.concatenate([jp[3:], jp[:3]])  # Pinocchio is [v; ω]
            assert rel_err(out[key][i], jp) < 1e-9, (name, key)


def test_frame_accelerations_and_jdot_v(robot):
    """J̇v (a = 0) and J a + J̇v against Pinocchio's frame accelerations (spatial, local; classical,
    world-aligned)."""
    pm, model, (qp, vp, ap), out, frames = robot
    pd = pm.createData()
    fid = pm.getFrameId(frames[-1])
    swap = lambda m: np.concatenate([m.angular, m.linear])  # noqa: E731
    pin.forwardKinematics(pm, pd, qp, vp, np.zeros(pm.nv))
    assert rel_err(out["jdv_local"], swap(pin.getFrameAcceleration(pm, pd, fid, pin.LOCAL))) < 1e-9
    classical = pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)
    assert rel_err(out["jdv_classical"], swap(classical)) < 1e-9
    pin.forwardKinematics(pm, pd, qp, vp, ap)
    assert rel_err(out["acc_local"], swap(pin.getFrameAcceleration(pm, pd, fid, pin.LOCAL))) < 1e-9
