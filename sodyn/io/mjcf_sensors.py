"""MuJoCo ``<sensor>`` → :class:`sodyn.sensors.Sensors`, for the model :func:`sodyn.load_mjcf` built
from the same MJCF.

Objects map by name: a site to the frame named after it (or, for an unnamed site or one whose
name is taken, to its MuJoCo body's frame and the site's placement in it), a body (``xbody``: its
frame; ``body``: its inertial frame ``body_ipos``/``body_iquat``), a geom or a camera to its
body's frame and its placement; joints, actuators, fixed tendons and bodies by name.  Every
frame is checked against MuJoCo's pose at ``qpos0``, and ``quat_sign`` is set there so that
``framequat`` equals MuJoCo's ``xquat``-based quaternion.  ``sensor_noise`` → ``noise``, ``sensor_cutoff`` →
``cutoff``, ``opt.magnetic`` → ``magnetic``.

Not modelled, listed for the loader's warning: sensor types sodyn does not compute (touch,
rangefinder, camprojection, limit, contact, distance, energy, plugin and user sensors), tendon
sensors on tendons sodyn does not model (spatial ones), subtree sensors on a body without joints
(sodyn merges it into its parent, so its mass and subtree are not kept apart), force/torque
sensors on a body welded to the world, subtree sensors of the world body when bodies welded to
the world have mass, actuator sensors of actuators sodyn did not import, and a sensor's
``delay``/``interval`` (the sensor is kept, read without them).

A force/torque sensor on a body ``w`` without joints (merged into the moving body ``b``) reads
the wrench on the rigid set ``W`` of ``w`` and its jointless descendants (``SensorSpec.welded``,
:mod:`sodyn.sensor_readings`): ``I_W`` is summed from ``body_mass``, ``body_ipos``/``body_iquat``
(via ``xipos``/``ximat``) and ``body_inertia`` at ``qpos0`` in ``b``'s frame (constant, ``W``
being rigid), the children are the sodyn bodies of the jointed bodies whose parent is in ``W``.
External wrenches on ``W`` are not seen by such a sensor; when ``W`` has geoms that can collide
(``contype`` or ``conaffinity`` nonzero) a line says so (the sensor is kept).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sodyn import spatial
from sodyn.joints import KERNEL_OF, nq_of
from sodyn.model import Model
from sodyn.rotations import quat_to_matrix
from sodyn.sensor_readings import joint_quat, quat_mul, quat_of
from sodyn.sensors import KINDS, Sensors, SensorSpec

_XML_NAMES = {"jointactfrc": "jointactuatorfrc", "tendonactfrc": "tendonactuatorfrc"}


def _xml_type(mujoco, t: int) -> str:
    name = mujoco.mjtSensor(t).name.removeprefix("mjSENS_").lower()
    return _XML_NAMES.get(name, name)


def sensors_from_mujoco(mj, model: Model) -> tuple[Sensors, list[str]]:
    """The sensors of a compiled ``mujoco.MjModel`` as :class:`Sensors` of ``model`` (module
    docstring), and one human-readable line per sensor not modelled (or modelled in part).
    Raises ``ValueError`` naming the sensor when its site, body, joint or frame is not in
    ``model`` or is not where MuJoCo puts it at ``qpos0``."""
    import mujoco

    obj = mujoco.mjtObj

    def nm(kind, i, fallback):
        return mujoco.mj_id2name(mj, kind, i) or fallback

    body_names = [nm(obj.mjOBJ_BODY, i, f"body{i}") for i in range(mj.nbody)]
    welded_to_world = np.zeros(mj.nbody, bool)
    welded_to_world[0] = True
    for b in range(1, mj.nbody):
        welded_to_world[b] = welded_to_world[mj.body_parentid[b]] and mj.body_jntnum[b] == 0
    static_mass = float(np.sum(np.asarray(mj.body_mass)[welded_to_world]))

    def body_frame(b, label):
        if b == 0:
            return -1
        try:
            return model.frame_id(body_names[b])
        except ValueError as e:
            raise ValueError(f"{label}: the frame of MuJoCo body {body_names[b]!r} is not in the model: {e}") from None

    def placed(objtype, objid, label):
        """``(frame, (quat, pos) in it or None)`` of a MuJoCo object."""
        if objtype == obj.mjOBJ_SITE:
            sname, b = mujoco.mj_id2name(mj, obj.mjOBJ_SITE, objid), int(mj.site_bodyid[objid])
            if sname and model.frame_names.count(sname) == 1 and sname not in body_names:
                return model.frame_id(sname), None
            return body_frame(b, label), (mj.site_quat[objid], mj.site_pos[objid])
        if objtype in (obj.mjOBJ_BODY, obj.mjOBJ_XBODY):
            inertial = objtype == obj.mjOBJ_BODY
            return body_frame(objid, label), ((mj.body_iquat[objid], mj.body_ipos[objid]) if inertial else None)
        if objtype == obj.mjOBJ_GEOM:
            return body_frame(int(mj.geom_bodyid[objid]), label), (mj.geom_quat[objid], mj.geom_pos[objid])
        if objtype == obj.mjOBJ_CAMERA:
            return body_frame(int(mj.cam_bodyid[objid]), label), (mj.cam_quat[objid], mj.cam_pos[objid])
        raise ValueError(f"{label}: MuJoCo object type {mujoco.mjtObj(objtype).name} is not a frame")

    d0 = []  # mjData at qpos0 after mj_kinematics, made on first use

    def welded(w, label):
        """``(SensorSpec.welded, a note or None)`` of a force/torque sensor on jointless body ``w``."""
        if not d0:
            d0.append(mujoco.MjData(mj))
            d0[0].qpos[:] = mj.qpos0
            mujoco.mj_kinematics(mj, d0[0])
        d = d0[0]
        in_w = np.zeros(mj.nbody, bool)
        in_w[w] = True
        for k in range(w + 1, mj.nbody):  # parents come before their children
            in_w[k] = in_w[mj.body_parentid[k]] and mj.body_jntnum[k] == 0
        f = body_frame(w, label)
        r = np.reshape(d.xmat[w], (3, 3)) @ np.asarray(model.frame_rotation[f], float).T  # b's pose at qpos0
        p = d.xpos[w] - r @ np.asarray(model.frame_translation[f], float)
        links = np.nonzero(in_w)[0]
        rk = r.T @ np.reshape(d.ximat[links], (-1, 3, 3))     # the links' principal axes in b's frame
        inertia = np.sum(np.asarray(spatial.spatial_inertia(
            np.asarray(mj.body_mass[links], float), (d.xipos[links] - p) @ r,
            rk @ (np.asarray(mj.body_inertia[links])[:, :, None] * np.swapaxes(rk, -1, -2)))), axis=0)
        children = []
        for k in np.nonzero(~in_w & (mj.body_jntnum > 0) & in_w[mj.body_parentid])[0]:
            jname = nm(obj.mjOBJ_JOINT, int(mj.body_jntadr[k]), f"joint{int(mj.body_jntadr[k])}")
            try:
                children.append(model.joint_index(jname))
            except ValueError as e:
                raise ValueError(f"{label}: {e}") from None
        geoms = [nm(obj.mjOBJ_GEOM, g, f"geom{g}") for g in range(mj.ngeom)
                 if in_w[mj.geom_bodyid[g]] and (mj.geom_contype[g] or mj.geom_conaffinity[g])]
        note = None if not geoms else (
            f"{label} (contacts on geoms {geoms} of the bodies welded to its body {body_names[w]!r} are not seen by "
            "the sensor; it is kept)")
        return (inertia, tuple(children)), note

    def offset(quat_pos):
        return None if quat_pos is None else (quat_to_matrix(quat_pos[0]), np.asarray(quat_pos[1], float))

    specs, ids, unsupported, frames_used = [], [], [], {}
    taken = {mujoco.mj_id2name(mj, obj.mjOBJ_SENSOR, i) for i in range(mj.nsensor)} - {None, ""}
    for i in range(mj.nsensor):
        t, name = int(mj.sensor_type[i]), nm(obj.mjOBJ_SENSOR, i, f"sensor{i}")
        while name in taken and not mujoco.mj_id2name(mj, obj.mjOBJ_SENSOR, i):
            name += "_"
        taken.add(name)
        xml = _xml_type(mujoco, t)
        label = f"<sensor name={name!r} type={xml!r}>"
        kind = xml if xml in KINDS else None
        objtype, objid = int(mj.sensor_objtype[i]), int(mj.sensor_objid[i])
        if kind is None:
            unsupported.append(label)
            continue
        target, off, ref, ref_off, why, frames, weld = None, None, None, None, None, [], None
        if KINDS[kind][1] == "frame":
            target, off = placed(objtype, objid, label)
            frames.append(((objtype, objid), (target, off, label)))
            b = int(mj.site_bodyid[objid]) if objtype == obj.mjOBJ_SITE else -1
            if kind in ("force", "torque") and welded_to_world[b]:
                why = f"its site is on body {body_names[b]!r}, which is welded to the world"
            elif kind in ("force", "torque") and mj.body_jntnum[b] == 0:
                weld, note = welded(b, label)
                if note is not None:
                    unsupported.append(note)
            if int(mj.sensor_refid[i]) >= 0:
                rt, rid = int(mj.sensor_reftype[i]), int(mj.sensor_refid[i])
                ref, ref_off = placed(rt, rid, label)
                frames.append(((rt, rid), (ref, ref_off, label)))
        elif KINDS[kind][1] == "joint":
            target = nm(obj.mjOBJ_JOINT, objid, f"joint{objid}")
        elif KINDS[kind][1] == "actuator":
            target = nm(obj.mjOBJ_ACTUATOR, objid, f"actuator{objid}")
            if target not in model.actuators.names:
                why = f"actuator {target!r} is not in the sodyn model"
        elif KINDS[kind][1] == "tendon":
            target = nm(obj.mjOBJ_TENDON, objid, f"tendon{objid}")
            if model.tendons is None or target not in model.tendons.names:
                why = f"tendon {target!r} is not in the sodyn model (only fixed tendons are modelled)"
        elif KINDS[kind][1] == "body":
            if objid == 0:
                target = "world"
                if static_mass > 0:
                    why = "bodies welded to the world have mass, which the sodyn model does not keep"
            elif mj.body_jntnum[objid] == 0:
                why = f"body {body_names[objid]!r} has no joint and is merged into its parent"
            else:
                jname = nm(obj.mjOBJ_JOINT, int(mj.body_jntadr[objid]), f"joint{int(mj.body_jntadr[objid])}")
                try:
                    target = model.joint_index(jname)
                except ValueError as e:
                    raise ValueError(f"{label}: {e}") from None
        if why is not None:
            unsupported.append(f"{label} ({why})")
            continue
        if np.any(mj.sensor_delay[i]) or np.any(mj.sensor_interval[i]):
            unsupported.append(f"{label} (its delay/interval is not modelled; it is read without them)")
        for key, value in frames:
            frames_used.setdefault(key, value)
        ids.append(i)
        specs.append(SensorSpec(kind, target, name=name, reference=ref, noise=float(mj.sensor_noise[i]),
                                cutoff=float(mj.sensor_cutoff[i]), offset=offset(off),
                                reference_offset=offset(ref_off), welded=weld))
    dtype = model.mass.dtype
    sensors = Sensors.make(model, specs, magnetic=np.asarray(mj.opt.magnetic, float), dtype=dtype)
    signs = _check_frames(mj, model, frames_used, offset) if frames_used else {}

    def sign(k):
        ref = signs[(int(mj.sensor_reftype[k]), int(mj.sensor_refid[k]))] if mj.sensor_refid[k] >= 0 else 1
        return signs[(int(mj.sensor_objtype[k]), int(mj.sensor_objid[k]))] * ref

    quat_sign = tuple(sign(k) if kind == "framequat" else 1 for kind, k in zip(sensors.kind, ids))
    return dataclasses.replace(sensors, quat_sign=quat_sign), unsupported


def _poses_at(model: Model, q: np.ndarray):
    """World rotation, position and chain quaternion (:func:`sodyn.sensor_readings.joint_quat`) of every
    body at ``q``, in NumPy (the loader runs no JAX program)."""
    topo, n = model.topology, model.n_bodies
    tr, tp = np.asarray(model.tree_rotation, float), np.asarray(model.tree_translation, float)
    axis, pitch = np.asarray(model.axis, float), np.asarray(model.pitch, float)
    tq = quat_of(tr, np)
    rw, pw, qw = np.zeros((n + 1, 3, 3)), np.zeros((n + 1, 3)), np.zeros((n + 1, 4))
    rw[n], qw[n, 0] = np.eye(3), 1.0  # index n (and -1): the world
    for k in range(n):
        t, s = topo.joint_type[k], int(topo.q_start[k])
        kernel = KERNEL_OF[t]
        qk = np.asarray(q[s: s + nq_of(t)], float)
        rho = 1.0 if t in ("revolute", "continuous", "helical") else 0.0
        qj = joint_quat(kernel, qk, axis[k], rho, xp=np)
        if kernel == "hinge":
            pj = ((t == "prismatic") + (t == "helical") * pitch[k]) * qk[0] * axis[k]
        else:
            pj = qk[:3] if kernel == "free" else np.array([qk[0], qk[1], 0.0]) if kernel == "planar" else np.zeros(3)
        p = int(topo.parent[k])
        rw[k] = rw[p] @ tr[k] @ quat_to_matrix(qj)
        pw[k] = pw[p] + rw[p] @ (tp[k] + tr[k] @ pj)
        qw[k] = quat_mul(qw[p], quat_mul(tq[k], qj, np), np)
    return rw, pw, qw


#: per MuJoCo object type: (its world pose in mjData, (its body, its quaternion in the body) in mjModel)
_WHERE = {
    6: (("site_xpos", "site_xmat"), ("site_bodyid", "site_quat")),   # mjOBJ_SITE
    2: (("xpos", "xmat"), (None, None)),                            # mjOBJ_XBODY
    1: (("xipos", "ximat"), (None, "body_iquat")),                  # mjOBJ_BODY
    5: (("geom_xpos", "geom_xmat"), ("geom_bodyid", "geom_quat")),  # mjOBJ_GEOM
    7: (("cam_xpos", "cam_xmat"), ("cam_bodyid", "cam_quat")),      # mjOBJ_CAMERA
}


def _check_frames(mj, model: Model, frames_used: dict, offset) -> dict:
    """Compare each object frame with MuJoCo's pose at ``qpos0``; return the sign relating
    sodyn's chain quaternion of each to MuJoCo's."""
    import mujoco

    obj = mujoco.mjtObj
    d = mujoco.MjData(mj)
    d.qpos[:] = mj.qpos0
    mujoco.mj_kinematics(mj, d)
    mujoco.mj_comPos(mj, d)
    mujoco.mj_camlight(mj, d)  # camera poses
    rw, pw, qw = _poses_at(model, np.asarray(mj.qpos0))
    fr, fp = np.asarray(model.frame_rotation, float), np.asarray(model.frame_translation, float)
    fb = np.asarray(model.frame_body, np.int64)
    signs = {}
    for (objtype, objid), (frame, off, label) in frames_used.items():
        r_off, p_off = offset(off) or (np.eye(3), np.zeros(3))
        b = fb[frame] if frame >= 0 else -1
        r_f, p_f = (fr[frame], fp[frame]) if frame >= 0 else (np.eye(3), np.zeros(3))
        rot = rw[b] @ r_f @ r_off
        pos = pw[b] + rw[b] @ (p_f + r_f @ p_off)
        quat = quat_mul(quat_mul(qw[b], quat_of(r_f, np), np), quat_of(r_off, np), np)
        data, model_local = _WHERE[objtype]
        want_p, want_r = (getattr(d, f)[objid] for f in data)
        mb = objid if objtype in (obj.mjOBJ_BODY, obj.mjOBJ_XBODY) else getattr(mj, model_local[0])[objid]
        local = np.array([1.0, 0, 0, 0]) if objtype == obj.mjOBJ_XBODY else getattr(mj, model_local[1])[objid]
        want_q = quat_mul(np.asarray(d.xquat[mb], float), np.asarray(local, float), np)
        tol = 1e-5 * (1.0 + np.max(np.abs(want_p)))
        dot = float(quat @ want_q)
        if not (np.allclose(pos, want_p, atol=tol) and np.allclose(rot, np.reshape(want_r, (3, 3)), atol=1e-5)
                and abs(abs(dot) - 1.0) < 1e-5):
            raise ValueError(f"{label}: its frame in the sodyn model is not where MuJoCo puts it at qpos0; was the "
                             "model loaded from the same MJCF?")
        signs[(objtype, objid)] = 1 if dot > 0 else -1
    return signs


__all__ = ["sensors_from_mujoco"]
