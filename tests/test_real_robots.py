"""Oracle suite on real robots loaded with ``sodyn.load_urdf`` (example-robot-data URDFs).

Against Pinocchio (``pin.buildModelFromUrdf``, free flyer for floating bases): joint order,
forward kinematics of every frame, frame Jacobians (local, and world-aligned from them), M, RNEA, ABA
and M⁻¹ at a random state with gravity, float64, to 1e-9 relative.  Against MuJoCo (the same
URDF without meshes, compiled by ``mujoco``): M (``mj_fullM``) and forward dynamics
(``qacc`` with constraints disabled, joint damping on both sides).

example-robot-data ships no KUKA iiwa: the xArm7 (7-dof) and Kinova (6-dof, continuous
joints) arms stand in.  MuJoCo rejects three of the URDFs (see ``robots.MUJOCO_REJECTS``).
"""

import warnings
import zlib

import jax
import numpy as np
import pytest
from robots import MUJOCO_REJECTS, ROBOTS, random_q, robot_path, urdf_for_mujoco

import sodyn as sd
from sodyn.io import (
    a_to_mujoco,
    load_urdf,
    mass_matrix_from_mujoco,
    q_to_mujoco,
    q_to_pinocchio,
    tau_to_mujoco,
    v_to_mujoco,
    v_to_pinocchio,
)

jax.config.update("jax_enable_x64", True)
pin = pytest.importorskip("pinocchio")
TOL = 1e-9


def rel_err(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y)))


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def robot(request):
    name = request.param
    path = robot_path(name)
    floating = ROBOTS[name][1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # triangle-inequality warnings of some URDFs
        model = load_urdf(path, floating_base=floating)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    q = random_q(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    frames = [f.name for f in pm.frames if f.name != "universe"]
    fids = [model.frame_id(f) for f in frames]

    @jax.jit
    def run(q, v, a):
        tau = sd.inverse_dynamics(model, q, v, a)
        return dict(
            tau=tau, M=sd.mass_matrix(model, q), Minv=sd.inverse_mass_matrix(model, q),
            qdd=sd.forward_dynamics(model, q, v, tau),
            J_local=sd.frame_jacobians(model, q, fids, "local"),
            fk=sd.forward_kinematics(model, q),
        )

    out = jax.tree_util.tree_map(np.asarray, run(q, v, a))
    state = tuple(np.asarray(x) for x in (q, v, a))
    pin_state = (np.asarray(q_to_pinocchio(model, q)), np.asarray(v_to_pinocchio(model, v)),
                 np.asarray(v_to_pinocchio(model, a)))
    return dict(name=name, model=model, pm=pm, state=state, pin_state=pin_state, out=out,
                frames=frames, fids=fids, path=path)


def to_pin_matrix(model, M):
    """Reorder a (nv, nv) sodyn matrix into Pinocchio's velocity ordering."""
    P = np.asarray(v_to_pinocchio(model, np.eye(model.nv)))  # rows: pin index of each sodyn dof
    return P @ M @ P.T


def test_joint_order_matches_pinocchio(robot):
    model, pm = robot["model"], robot["pm"]
    assert list(model.joint_names) == list(pm.names)[1:]
    assert model.nv == pm.nv
    for f in pm.frames:  # every Pinocchio frame exists in sodyn
        if f.name != "universe":
            model.frame_id(f.name)


def test_frames_and_jacobians(robot):
    model, pm, out = robot["model"], robot["pm"], robot["out"]
    qp = robot["pin_state"][0]
    pd = pm.createData()
    pin.computeJointJacobians(pm, pd, qp)
    pin.updateFramePlacements(pm, pd)
    fk = out["fk"]
    for i, (name, k) in enumerate(zip(robot["frames"], robot["fids"], strict=True)):
        fid = pm.getFrameId(name)
        assert rel_err(fk.frame.translation[k], pd.oMf[fid].translation) < TOL, name
        assert rel_err(fk.frame.rotation[k], pd.oMf[fid].rotation) < TOL, name
        # world-aligned Jacobians are the local ones rotated (sodyn's own world_aligned path is
        # checked in test_pinocchio_oracle.py; computing it here would only add compile time)
        r = fk.frame.rotation[k]
        j_local = out["J_local"][i]
        j_world = np.concatenate([r @ j_local[:3], r @ j_local[3:]])
        for j, ref in ((j_local, pin.LOCAL), (j_world, pin.LOCAL_WORLD_ALIGNED)):
            jp = pin.getFrameJacobian(pm, pd, fid, ref)
            jp = np.concatenate([jp[3:], jp[:3]])  # Pinocchio rows are [v; ω]
            assert rel_err(to_pin_cols(model, j), jp) < TOL, (name, ref)


def to_pin_cols(model, J):
    return np.asarray(v_to_pinocchio(model, J))


def test_mass_matrix_and_inverse(robot):
    model, pm, out = robot["model"], robot["pm"], robot["out"]
    qp = robot["pin_state"][0]
    Mp = pin.crba(pm, pm.createData(), qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    assert rel_err(to_pin_matrix(model, out["M"]), Mp) < TOL
    Mi = pin.computeMinverse(pm, pm.createData(), qp)
    Mi = np.triu(Mi) + np.triu(Mi, 1).T
    assert rel_err(to_pin_matrix(model, out["Minv"]), Mi) < TOL * max(1.0, np.linalg.cond(Mp) * 1e-6)


def test_inverse_and_forward_dynamics(robot):
    model, pm, out = robot["model"], robot["pm"], robot["out"]
    qp, vp, ap = robot["pin_state"]
    # sodyn's inverse dynamics includes the URDF joint damping; pin.rnea does not.
    taup = pin.rnea(pm, pm.createData(), qp, vp, ap) + pm.damping * vp
    assert rel_err(v_to_pinocchio(model, out["tau"]), taup) < TOL
    tau_nd = taup - pm.damping * vp
    assert rel_err(v_to_pinocchio(model, out["qdd"]), pin.aba(pm, pm.createData(), qp, vp, tau_nd)) < TOL
    assert rel_err(out["qdd"], robot["state"][2]) < TOL


# ---------------------------------------------------------------------------
# MuJoCo
# ---------------------------------------------------------------------------


def mujoco_setup(robot):
    mujoco = pytest.importorskip("mujoco")
    if robot["name"] in MUJOCO_REJECTS:
        pytest.skip(f"MuJoCo rejects this URDF: {MUJOCO_REJECTS[robot['name']]}")
    spec = mujoco.MjSpec.from_string(urdf_for_mujoco(robot["path"]))
    if ROBOTS[robot["name"]][1]:
        spec.worldbody.first_body().add_freejoint(name="root_joint")
    m = spec.compile()
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    model = robot["model"]
    qidx, vidx = [], []
    for name in model.joint_names:
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
        assert j >= 0, name
        sq, sv = model.joint_q_slice(name), model.joint_v_slice(name)
        qidx += list(range(m.jnt_qposadr[j], m.jnt_qposadr[j] + sq.stop - sq.start))
        vidx += list(range(m.jnt_dofadr[j], m.jnt_dofadr[j] + sv.stop - sv.start))
    assert sorted(qidx) == list(range(m.nq)) and sorted(vidx) == list(range(m.nv))
    d = mujoco.MjData(m)
    q, v, _ = robot["state"]
    d.qpos[qidx] = np.asarray(q_to_mujoco(model, q))
    d.qvel[vidx] = np.asarray(v_to_mujoco(model, q, v))
    return mujoco, m, d, np.array(qidx), np.array(vidx)


def test_mujoco_mass_matrix(robot):
    mujoco, m, d, _, vidx = mujoco_setup(robot)
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    model, q = robot["model"], robot["state"][0]
    M_sd_order = M[np.ix_(vidx, vidx)]
    assert rel_err(mass_matrix_from_mujoco(model, q, M_sd_order), robot["out"]["M"]) < TOL


def test_mujoco_forward_dynamics(robot):
    mujoco, m, d, _, vidx = mujoco_setup(robot)
    model = robot["model"]
    q, v, a = robot["state"]
    np.testing.assert_allclose(m.dof_damping[vidx], np.asarray(model.damping), atol=0)
    d.qfrc_applied[vidx] = np.asarray(tau_to_mujoco(model, q, robot["out"]["tau"]))
    mujoco.mj_forward(m, d)  # passive forces include -damping * qvel, like sodyn
    assert rel_err(d.qacc[vidx], a_to_mujoco(model, q, v, a)) < TOL
