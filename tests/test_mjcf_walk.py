"""Every MJCF model shipped inside PyPI packages (gymnasium's MuJoCo environments, mujoco-mjx's
test models) loaded with ``sd.load_mjcf(..., with_constraints=True)`` and compared with MuJoCo.

Per file, against the compiled ``mujoco.MjModel`` and its ``MjData`` at a random state:

* the data sodyn keeps: gravity (after ``<flag gravity>``), joint ranges, damping, armature,
  friction loss, stiffness and spring reference, ``qpos0`` (sodyn's neutral configuration),
  keyframes, collision geoms (type, size, friction and world pose), actuators (the
  generalised force ``qfrc_actuator`` they produce and the activations' rate ``act_dot`` for
  random controls and activations), gravity compensation (``qfrc_gravcomp``), fluid forces
  (``qfrc_fluid``) and equality
  constraints (their residuals equal MuJoCo's ``efc_pos`` rows);
* every element sodyn does not model is named in the one ``UnsupportedElementWarning``;
* ``M`` (``mj_fullM``), inverse dynamics (``mj_rne``) and, where ``M`` is regular, the
  smooth dynamics (``qacc`` of ``mj_forward`` under sodyn's inverse-dynamics torque) with
  constraints, contacts, springs, dampers, actuation and the unmodelled forces off on both
  sides; again with dampers on; joint spring forces (``qfrc_spring``) from the stored
  stiffness.

1e-9 relative, float64.  The walk over every file is ``slow``; ``SUBSET`` runs by default.
"""

import copy
import importlib.util
import pathlib
import re
import warnings
import zlib

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import random_mujoco_state

import sodyn as sd
from sodyn.io import a_from_mujoco, mass_matrix_from_mujoco, tau_to_mujoco, v_from_mujoco
from sodyn.simulate.tendons import fixed_tendon_wraps, tendon_lengths

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")
TOL = 1e-9
KEPT_GEOMS = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}


def _package_dir(name: str) -> pathlib.Path | None:
    spec = importlib.util.find_spec(name)
    return None if spec is None or not spec.submodule_search_locations else pathlib.Path(
        list(spec.submodule_search_locations)[0])


def mjcf_files() -> dict[str, pathlib.Path]:
    """``{package/relative path: path}`` of the MJCF files in the installed packages."""
    out = {}
    gym, mj = _package_dir("gymnasium"), _package_dir("mujoco")
    if gym is not None:
        for p in sorted((gym / "envs" / "mujoco" / "assets").glob("*.xml")):
            out[f"gymnasium/{p.name}"] = p
    if mj is not None and (mj / "mjx" / "test_data").is_dir():
        root = mj / "mjx" / "test_data"
        for p in sorted(root.rglob("*.xml")):
            out[f"mjx/{p.relative_to(root)}"] = p
    return out


FILES = mjcf_files()
#: Walked in the default suite: springs and motors, position servos with a keyframe and a
#: height field, gravity and contacts switched off with tendons, fluid forces, equality
#: constraints, and a model without a movable joint.
SUBSET = {"gymnasium/half_cheetah.xml", "mjx/barkour_v0/assets/barkour_v0_mjx.xml", "mjx/tendon/fixed_site_wrap.xml",
          "gymnasium/swimmer.xml", "mjx/constraints.xml", "mjx/ray.xml"}
PARAMS = [pytest.param(k, id=k, marks=() if k in SUBSET else pytest.mark.slow) for k in FILES]


def rel_err(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return 0.0 if x.size == 0 else np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y)))


def disabled(mj, name):
    return bool(mj.opt.disableflags & int(getattr(mujoco.mjtDisableBit, f"mjDSBL_{name.upper()}")))


def without_unmodelled(mj):
    """A copy of the MuJoCo model without the forces sodyn does not model (each is named in
    the UnsupportedElementWarning that the test checks) and without gravity compensation
    (checked on its own, :func:`check_gravcomp`)."""
    m = copy.deepcopy(mj)
    m.body_gravcomp[:] = 0
    m.opt.density = m.opt.viscosity = 0.0
    m.tendon_armature[:] = 0
    m.tendon_stiffness[:] = 0
    m.tendon_damping[:] = 0
    return m


def collidable(mj, g):
    """MuJoCo may collide geom g: a non-zero bitmask, or named by an explicit <pair>."""
    return bool(mj.geom_contype[g] or mj.geom_conaffinity[g] or g in mj.pair_geom1 or g in mj.pair_geom2)


def expected_unsupported(mj, model):
    """Substrings the warning must contain, one per unmodelled element of the file."""
    names = []
    obj = mujoco.mjtObj
    name = lambda kind, i, fallback: mujoco.mj_id2name(mj, kind, int(i)) or f"{fallback}{i}"  # noqa: E731
    names += [f"<tendon name={name(obj.mjOBJ_TENDON, t, 'tendon')!r}>" for t in range(mj.ntendon)
              if fixed_tendon_wraps(mj, t) is None]   # spatial tendons; fixed ones are modelled
    names += [f"<joint name={name(obj.mjOBJ_JOINT, j, 'joint')!r} actuatorgravcomp"
              for j in np.flatnonzero(mj.jnt_actgravcomp)]
    if not disabled(mj, "contact") and not disabled(mj, "constraint"):
        for g in range(mj.ngeom):
            if collidable(mj, g) and int(mj.geom_type[g]) not in KEPT_GEOMS:
                names.append(f"<geom name={mujoco.mj_id2name(mj, obj.mjOBJ_GEOM, g) or f'geom{g}'!r} type=")
    if not disabled(mj, "actuation"):
        kept = set(model.actuators.names)
        names += [f"<actuator name={n!r}>" for i in range(mj.nu)
                  if (n := mujoco.mj_id2name(mj, obj.mjOBJ_ACTUATOR, i) or f"actuator{i}") not in kept]
    return names


@pytest.mark.parametrize("key", PARAMS)
def test_mjcf_against_mujoco(key):
    path = FILES[key]
    mj = mujoco.MjModel.from_xml_path(str(path))
    if mj.nv == 0:
        with pytest.raises(ValueError, match=re.escape(str(path)) + ": cannot build a model without bodies"):
            sd.load_mjcf(path)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, eq = sd.load_mjcf(path, with_constraints=True)
    unsupported = [w.message for w in caught if isinstance(w.message, sd.UnsupportedElementWarning)]
    assert len(unsupported) <= 1
    text = str(unsupported[0]) if unsupported else ""
    for name in expected_unsupported(mj, model):
        assert name in text, (name, text)
    assert (model.nq, model.nv) == (mj.nq, mj.nv)
    check_joint_data(model, mj)
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    qpos, qvel, qacc = random_mujoco_state(mj, rng)
    q = qpos
    v = np.asarray(v_from_mujoco(model, q, qvel))
    a = np.asarray(a_from_mujoco(model, q, v, qacc))
    undamped = eqx.tree_at(lambda m: m.damping, model, jnp.zeros_like(model.damping))
    out = jax.tree_util.tree_map(np.asarray, compiled(model, undamped)(q, v, a))
    check_dynamics(model, mj, out, (qpos, qvel, qacc), (q, v, a))
    check_geoms(model, mj, qpos, out)
    check_actuators(model, mj, qpos, qvel, rng)
    check_springs(model, mj, qpos)
    check_gravcomp(model, mj, qpos)
    check_fluid(model, mj, qpos, qvel)
    check_equality(model, eq, mj, qpos, out)


def compiled(model, undamped):
    @jax.jit
    def run(q, v, a):
        fk = sd.forward_kinematics(model, q)
        return dict(M=sd.mass_matrix(model, q), tau=sd.inverse_dynamics(undamped, q, v, a),
                    tau_damped=sd.inverse_dynamics(model, q, v, a), body=fk.body, frame=fk.frame)
    return run


def check_joint_data(model, mj):
    g = np.zeros(3) if disabled(mj, "gravity") else mj.opt.gravity
    np.testing.assert_array_equal(model.gravity, g)
    np.testing.assert_array_equal(model.q_neutral, mj.qpos0)
    np.testing.assert_array_equal(model.armature, mj.dof_armature)
    np.testing.assert_array_equal(model.damping, 0 if disabled(mj, "damper") else mj.dof_damping)
    friction_off = disabled(mj, "frictionloss") or disabled(mj, "constraint")
    np.testing.assert_array_equal(model.friction, 0 if friction_off else mj.dof_frictionloss)
    np.testing.assert_array_equal(model.spring_reference, mj.qpos_spring)
    limits_off = disabled(mj, "limit") or disabled(mj, "constraint")
    for j in range(mj.njnt):
        d, qa = mj.jnt_dofadr[j], mj.jnt_qposadr[j]
        nv = {0: 6, 1: 3}.get(int(mj.jnt_type[j]), 1)
        np.testing.assert_array_equal(model.stiffness[d: d + nv], 0 if disabled(mj, "spring") else mj.jnt_stiffness[j])
        if mj.jnt_type[j] in (2, 3):
            lim = mj.jnt_limited[j] and not limits_off
            np.testing.assert_array_equal([model.lower_limit[qa], model.upper_limit[qa]],
                                          mj.jnt_range[j] if lim else [-np.inf, np.inf])
    kf = model.keyframes
    assert len(kf) == mj.nkey
    for k in range(mj.nkey):
        np.testing.assert_array_equal(kf.q[k], mj.key_qpos[k])
        np.testing.assert_allclose(kf.v[k], v_from_mujoco(model, mj.key_qpos[k], mj.key_qvel[k]), atol=1e-15)


def check_dynamics(model, mj, out, mj_state, state):
    qpos, qvel, qacc = mj_state
    q, v, a = state
    m = without_unmodelled(mj)
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT | mujoco.mjtDisableBit.mjDSBL_SPRING
                              | mujoco.mjtDisableBit.mjDSBL_ACTUATION)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    assert rel_err(mass_matrix_from_mujoco(model, q, M), out["M"]) < TOL
    d.qacc[:] = qacc
    rne = np.zeros(m.nv)
    mujoco.mj_rne(m, d, 1, rne)  # M qacc + bias, without armature
    assert rel_err(tau_to_mujoco(model, q, out["tau"]), rne + m.dof_armature * qacc) < TOL
    if np.linalg.cond(M) > 1e12:  # dependent joint axes: MuJoCo reports M singular, qacc is not unique
        return
    for damper in (False, True):
        if damper and not np.any(np.asarray(model.damping)):
            continue
        flag = int(mujoco.mjtDisableBit.mjDSBL_DAMPER)
        m.opt.disableflags = (m.opt.disableflags & ~flag) if damper else (m.opt.disableflags | flag)
        d.qfrc_applied[:] = np.asarray(tau_to_mujoco(model, q, out["tau_damped" if damper else "tau"]))
        mujoco.mj_forward(m, d)
        assert rel_err(d.qacc, qacc) < TOL, damper


def geom_rows(mj):
    if disabled(mj, "contact") or disabled(mj, "constraint"):
        return []
    return [g for g in range(mj.ngeom) if collidable(mj, g) and int(mj.geom_type[g]) in KEPT_GEOMS]


def check_geoms(model, mj, qpos, out):
    rows = geom_rows(mj)
    geoms = model.geoms
    assert geoms.type == tuple(KEPT_GEOMS[int(mj.geom_type[g])] for g in rows)
    prim = [i for i, t in enumerate(geoms.type) if t not in ("mesh", "hfield")]  # a mesh's size is its hull's radius
    np.testing.assert_array_equal(np.asarray(geoms.size)[prim], mj.geom_size[rows].reshape(-1, 3)[prim])
    for i, g in enumerate(rows):  # a mesh geom is MuJoCo's collision hull (its convex graph's vertices)
        if geoms.type[i] == "mesh":
            m = int(mj.geom_dataid[g])
            a, ga = int(mj.mesh_vertadr[m]), int(mj.mesh_graphadr[m])
            hull = mj.mesh_vert[a + mj.mesh_graph[ga + 2 + mj.mesh_graph[ga]: ga + 2 + 2 * mj.mesh_graph[ga]]]
            v, f = np.asarray(geoms.vertices[i]), np.asarray(geoms.faces[i])
            assert {tuple(x) for x in v} <= {tuple(x) for x in hull.astype(v.dtype)}
            assert np.max(hull @ f[:, :3].T - f[:, 3]) <= 1e-9 * float(geoms.size[i, 0])
        if geoms.type[i] == "hfield":  # MuJoCo's compiled height field
            k, h = geoms.hfield_id[i], int(mj.geom_dataid[g])
            a, shape = int(mj.hfield_adr[h]), (int(mj.hfield_nrow[h]), int(mj.hfield_ncol[h]))
            data = mj.hfield_data[a: a + shape[0] * shape[1]].reshape(shape)
            np.testing.assert_array_equal(geoms.hfield.field(k), data)
            assert geoms.hfield.size[k] == tuple(mj.hfield_size[h])
    np.testing.assert_array_equal(geoms.friction, mj.geom_friction[rows].reshape(-1, 3))
    d = mujoco.MjData(mj)
    d.qpos[:] = qpos
    mujoco.mj_kinematics(mj, d)
    for i, g in enumerate(rows):
        b = geoms.body[i]
        rb, pb = (np.eye(3), np.zeros(3)) if b < 0 else (out["body"].rotation[b], out["body"].translation[b])
        assert rel_err(rb @ np.asarray(geoms.rotation[i]), d.geom_xmat[g].reshape(3, 3)) < TOL
        want = d.geom_xpos[g]
        if mj.geom_sameframe[g]:  # MuJoCo drops a geom offset below its compiler's tolerance from geom_xpos
            mb = int(mj.geom_bodyid[g])
            want = d.xpos[mb] + d.xmat[mb].reshape(3, 3) @ mj.geom_pos[g]
        assert rel_err(rb @ np.asarray(geoms.translation[i]) + pb, want) < TOL


def check_actuators(model, mj, qpos, qvel, rng):
    """qfrc_actuator of random (partly out-of-range) controls: ``sd.simulate.actuator_forces``."""
    m = without_unmodelled(mj)
    kept = set(model.actuators.names)
    for i in range(m.nu):  # silence the actuators named in the warning
        if (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, i) or f"actuator{i}") not in kept:
            m.actuator_gainprm[i] = 0
            m.actuator_biasprm[i] = 0
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    d.ctrl[:] = rng.uniform(-2, 2, m.nu)
    d.act[:] = rng.uniform(-2, 2, m.na)
    mujoco.mj_forward(m, d)
    index = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, i) or f"actuator{i}": i for i in range(m.nu)}
    ids = [index[name] for name in model.actuators.names]
    act = np.array([d.act[m.actuator_actadr[i]] for i in ids if m.actuator_dyntype[i]])
    terms = sd.simulate.actuator_forces(model, model.actuators, qpos, qvel, d.ctrl[ids], act, m.opt.timestep)
    assert rel_err(terms.force, d.qfrc_actuator) < TOL
    assert rel_err(terms.act_dot, [d.act_dot[m.actuator_actadr[i]] for i in ids if m.actuator_dyntype[i]]) < TOL


def check_springs(model, mj, qpos):
    """qfrc_spring on hinges and slides: ``sd.simulate.joint_forces`` with springs only."""
    m = without_unmodelled(mj)
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    springs_only = sd.simulate.JointForces(limits=False, friction=False, gravcomp=False)
    tau = sd.simulate.joint_forces(model, springs_only, qpos, np.zeros(model.nv)).force
    hinges = [m.jnt_dofadr[j] for j in range(m.njnt) if m.jnt_type[j] in (2, 3)]
    assert rel_err(np.asarray(tau)[hinges], d.qfrc_spring[hinges]) < TOL


def check_gravcomp(model, mj, qpos):
    """qfrc_gravcomp: ``sd.simulate.gravity_compensation`` (body ``gravcomp``)."""
    d = mujoco.MjData(mj)
    d.qpos[:] = qpos
    mujoco.mj_forward(mj, d)
    tau = sd.simulate.gravity_compensation(model, jnp.asarray(qpos))
    assert rel_err(tau_to_mujoco(model, qpos, tau), d.qfrc_gravcomp) < TOL


def check_fluid(model, mj, qpos, qvel):
    """qfrc_fluid: ``sd.simulate.fluid_forces`` of the model's own fluid (``Model.fluid``)."""
    if model.fluid is None:
        assert not (mj.opt.density > 0 or mj.opt.viscosity > 0) or disabled(mj, "spring") and disabled(mj, "damper")
        return
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(mj, d)
    v = v_from_mujoco(model, qpos, qvel)
    tau = sd.simulate.fluid_forces(model, model.fluid, jnp.asarray(qpos), v)
    assert rel_err(tau_to_mujoco(model, qpos, tau), d.qfrc_fluid) < TOL


def quat_of(r):
    """A unit quaternion [w, x, y, z] of a rotation matrix (Shepperd's method)."""
    t = np.trace(r)
    if t > 0:
        w = np.sqrt(1 + t) / 2
        v = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]]) / (4 * w)
        return np.concatenate([[w], v])
    i = int(np.argmax(np.diag(r)))
    j, k = (i + 1) % 3, (i + 2) % 3
    s = np.sqrt(1 + r[i, i] - r[j, j] - r[k, k]) * 2
    out = np.zeros(4)
    out[0] = (r[k, j] - r[j, k]) / s
    out[1 + i] = s / 4
    out[1 + j] = (r[j, i] + r[i, j]) / s
    out[1 + k] = (r[k, i] + r[i, k]) / s
    return out


def check_equality(model, eq, mj, qpos, out):
    """Residuals of the stored equality constraints equal MuJoCo's ``efc_pos`` rows."""
    if len(eq) == 0:
        return
    d = mujoco.MjData(mj)
    d.qpos[:] = qpos
    mujoco.mj_forward(mj, d)
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    fr, ft = out["frame"].rotation, out["frame"].translation
    pose = lambda f: (np.eye(3), np.zeros(3)) if f < 0 else (fr[f], ft[f])  # noqa: E731
    ids = [mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_EQUALITY, n) if not n.startswith("equality") else int(n[8:])
           for n in eq.names]
    for i, e in enumerate(ids):
        mine = d.efc_pos[rows & (d.efc_id == e)]
        if not eq.active[i]:
            assert mine.size == 0
            continue
        (r1, p1), (r2, p2) = pose(eq.frame1[i]), pose(eq.frame2[i])
        if eq.kind[i] == "joint":
            j1, j2, c = eq.joint1[i], eq.joint2[i], np.asarray(eq.polycoef[i])
            q0 = np.asarray(model.q_neutral)
            x = qpos[j2] - q0[j2] if j2 >= 0 else 0.0
            res = np.array([qpos[j1] - q0[j1] - sum(c[k] * x ** k for k in range(5))])
        elif eq.kind[i] == "tendon":
            t1, t2, c = eq.tendon1[i], eq.tendon2[i], np.asarray(eq.polycoef[i])
            length, length0 = (np.asarray(tendon_lengths(model, x)) for x in (qpos, model.q_neutral))
            x = length[t2] - length0[t2] if t2 >= 0 else 0.0
            res = np.array([length[t1] - length0[t1] - sum(c[k] * x ** k for k in range(5))])
        else:
            res = (r1 @ np.asarray(eq.anchor1[i]) + p1) - (r2 @ np.asarray(eq.anchor2[i]) + p2)
        assert rel_err(res, mine if eq.kind[i] in ("joint", "tendon") else mine[:3]) < TOL, eq.names[i]
        if eq.kind[i] == "weld":
            err = quat_of(r2.T @ r1 @ np.asarray(eq.relative_rotation[i]).T)[1:] * float(eq.torque_scale[i])
            assert min(rel_err(err, mine[3:]), rel_err(-err, mine[3:])) < TOL, eq.names[i]
