r"""Sensor readings: what an IMU, a force/torque cell, an encoder or a motion-capture marker reads, with
MuJoCo's definitions (``mjSENS_*`` in MuJoCo's ``engine_sensor.c``), from ``(q, v, a)``;
the sensors themselves are specified in :mod:`sodyn.sensors`.

A sensor sits on a frame ``s`` (a site), rigidly attached to body ``b`` at ``(R_bs, p_bs)``;
``V_b = [ω; v]`` and ``α_b`` are the body-frame velocity and spatial acceleration of ``b``
(:mod:`sodyn.algorithms.kinematics`), computed with the world accelerating by ``−g`` as MuJoCo's
``cacc`` does, and ``f_b`` is the interaction wrench the parent exerts on ``b`` (the Newton–Euler
body force of :func:`sodyn.inverse_dynamics`, Jain eq. 5.23, MuJoCo's ``cfrc_int``), which
subtracts the external wrenches ``f_ext`` (MuJoCo's ``cfrc_ext``).  With
``[ω_s; v_s] = φ*(b, s) V_b`` and ``[ω̇_s; v̇_s] = φ*(b, s) α_b``:

* ``gyro = ω_s``, ``velocimeter = v_s`` (site axes);
* ``accelerometer = v̇_s + ω_s × v_s``: the classical acceleration of the site point minus
  gravity, in site axes (``+g`` upward at rest, ``0`` in free fall);
* ``force``, ``torque``: ``φ(s, b)⁻¹ f_b``, the wrench in site axes, torque about the site point;
  for a sensor on a rigid set ``W`` of links welded into ``b`` (``Sensors.welded_children``: a
  force/torque cell on a jointless MJCF body, MuJoCo's ``cfrc_int`` of that body), ``f_b`` is
  replaced by the wrench the rest of ``b`` exerts on ``W``,
  ``f_W = I_W α_b + V_b ×* (I_W V_b) + Σ_{c ∈ C} φ(b, c) f_c``, with ``I_W`` the constant
  spatial inertia of ``W`` in ``b``'s frame (``Sensors.welded_inertia``), ``C`` the moving bodies
  whose parent link is in ``W`` and ``f_c`` their body forces (which include their subtrees and
  subtract their external wrenches).  ``f_ext[b]`` cannot be split between ``W`` and the rest of
  ``b``, so it is taken as not acting on ``W``: external wrenches (contacts, ``xfrc_applied``) on
  the links of ``W`` are not seen by such a sensor;
* ``magnetometer = R_sᵀ B`` (``Sensors.magnetic``, MuJoCo's ``opt.magnetic``);
* ``framepos = R_rᵀ (p_s − p_r)``, ``frame[xyz]axis = R_rᵀ R_s e_i``, ``framequat = q̄_r ⊗ q_s``
  relative to a reference frame ``r`` (the world unless ``reference`` is given: MuJoCo's
  ``reftype``/``refname``); ``frameangvel = R_rᵀ (ω_s − ω_r)``, ``framelinvel =
  R_rᵀ (ṗ_s − ṗ_r − ω_r × (p_s − p_r))`` (world-axes ``ω``, ``ṗ``: the velocity of ``s`` seen from
  the moving frame ``r``); ``framelinacc``/``frameangacc``: the accelerometer's vector and ``ω̇_s``
  in world axes (MuJoCo has no reference frame for these).  As in MuJoCo, a frame fixed to the
  world reads zero velocity and acceleration (no gravity term);
* ``jointpos``, ``jointvel`` (1-dof joints), ``ballquat`` (the raw ``q`` of a spherical joint),
  ``ballangvel``; ``actuatorpos = gear · q``, ``actuatorvel = gear · v``, ``actuatorfrc``
  (``actuator_force``), ``jointactuatorfrc`` (``joint_actuator_force``, MuJoCo's ``qfrc_actuator``);
* ``subtreecom``, ``subtreelinvel``: centre of mass of a body's subtree and its velocity (world);
  ``subtreeangmom = Σ_k R_k J_k ω_k + m_k (c_k − c) × (ċ_k − ċ)``, angular momentum about the
  subtree's centre of mass ``c`` (the whole model for the world body);
* ``tendonpos``, ``tendonvel``: a fixed tendon's ``L``, ``L̇`` (``model.tendons``,
  :mod:`sodyn.simulate.tendons`); ``tendonactuatorfrc``: the sum of ``actuator_force`` over the
  actuators on the tendon (an actuator's ``actuatorpos``/``actuatorvel`` on a tendon are
  ``gear · L``, ``gear · L̇``);
* ``contact_force`` (sodyn's own): ``contact_wrench[body]``, the net contact wrench ``[n; f]``
  on a body given by the caller (body axes, about its origin); ``clock``: ``t``.

Quaternions are ``[w, x, y, z]``; as MuJoCo's ``xquat`` they are products of the joint and
placement quaternions along the path from the root (not a canonical sign), so they are
continuous in ``q``; :func:`sodyn.io.mjcf_sensors.sensors_from_mujoco` sets ``quat_sign`` so
they equal MuJoCo's.  Readings are clipped to ``±cutoff`` (``cutoff > 0``, real-valued sensors
only) after ``bias`` and noise are added.  MuJoCo (3.17) adds no noise to ``sensordata``
(``sensor_noise`` is data for the user); here ``key`` adds ``noise · N(0, 1)`` to every value
(quaternion and axis readings then lose their unit norm).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import check_f_ext, check_vector, gravity_acceleration, model_params, prepare
from sodyn.algorithms.inverse_dynamics import body_forces_levels
from sodyn.algorithms.kinematics import velocities_and_accelerations_levels, world_poses_levels
from sodyn.joints import KERNEL_OF
from sodyn.model import Model, hinge_coefficients
from sodyn.sensors import KINDS, Sensors
from sodyn.static_index import spread_sum
from sodyn.topology import dofs_to_levels, from_levels, to_levels

_NOT_REAL = ("framequat", "ballquat", "framexaxis", "frameyaxis", "framezaxis")  # no cutoff (MuJoCo's datatypes)
_VEL = ("velocimeter", "gyro", "framelinvel", "frameangvel", "jointvel", "ballangvel", "actuatorvel",
        "subtreelinvel", "subtreeangmom", "tendonvel")
_ACC = ("accelerometer", "force", "torque", "framelinacc", "frameangacc")


def _frame_placements(model: Model, m: Model, frames: np.ndarray, rot: jax.Array, trans: jax.Array):
    """Body (``n`` = world) and placement in it of each frame ``frames[i]`` composed with the offset."""
    body = np.where(frames >= 0, np.asarray(model.frame_body, np.int64)[np.maximum(frames, 0)], -1)
    body = np.where(body >= 0, body, model.n_bodies)
    dtype = trans.dtype
    fr = jnp.concatenate([m.frame_rotation.astype(dtype), jnp.eye(3, dtype=dtype)[None]])[frames]
    fp = jnp.concatenate([m.frame_translation.astype(dtype), jnp.zeros((1, 3), dtype)])[frames]
    return body, spatial.mm(fr, rot), fp + spatial.mv(fr, trans)


def quat_of(r, xp=jnp):
    """Quaternion ``[w, x, y, z]`` (``w ≥ 0``) of rotation matrices ``(..., 3, 3)`` by Shepperd's
    method, the same arithmetic in NumPy (``xp=np``) and JAX, so both pick the same sign."""
    m = [[r[..., i, j] for j in range(3)] for i in range(3)]
    tr = m[0][0] + m[1][1] + m[2][2]
    d21, d02, d10 = m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1]
    s01, s02, s12 = m[0][1] + m[1][0], m[0][2] + m[2][0], m[1][2] + m[2][1]
    cands = xp.stack([xp.stack(c, -1) for c in (
        [1 + tr, d21, d02, d10], [d21, 1 + m[0][0] - m[1][1] - m[2][2], s01, s02],
        [d02, s01, 1 - m[0][0] + m[1][1] - m[2][2], s12], [d10, s02, s12, 1 - m[0][0] - m[1][1] + m[2][2]])], -2)
    best = xp.argmax(xp.stack([tr, m[0][0], m[1][1], m[2][2]], -1), axis=-1)
    q = xp.take_along_axis(cands, best[..., None, None], axis=-2)[..., 0, :]
    q = q / xp.sqrt(xp.sum(q * q, -1, keepdims=True))
    return xp.where(q[..., :1] < 0, -q, q)


def quat_mul(a, b, xp=jnp):
    """Hamilton product ``a ⊗ b`` in NumPy (``xp=np``) or JAX."""
    aw, av, bw, bv = a[..., :1], a[..., 1:], b[..., :1], b[..., 1:]
    return xp.concatenate([aw * bw - xp.sum(av * bv, -1, keepdims=True), aw * bv + bw * av + xp.cross(av, bv)], -1)


def joint_quat(kernel: str, qk, axis=None, rho=1.0, xp=jnp):
    """The rotation of a joint as a quaternion, as MuJoCo forms it: ``[cos ρθ/2, sin ρθ/2 a]`` for
    hinges, the normalised ``q`` of spherical and free joints, a turn about ``z`` for planar ones;
    ``qk (..., nq)``."""
    if kernel in ("hinge", "planar"):
        half = 0.5 * (qk[..., 0] * rho if kernel == "hinge" else qk[..., 2])
        axis = axis if kernel == "hinge" else xp.asarray([0.0, 0.0, 1.0])
        return xp.concatenate([xp.cos(half)[..., None], xp.sin(half)[..., None] * axis], -1)
    u = qk[..., 3:7] if kernel == "free" else qk
    return u / xp.sqrt(xp.sum(u * u, -1, keepdims=True))


def _local_quats(model: Model, m: Model, q: jax.Array, bodies: np.ndarray) -> jax.Array:
    """``quat_of(R_tree(k)) ⊗ joint_quat(k)`` for each body in ``bodies``."""
    topo, dtype = model.topology, q.dtype
    rho = hinge_coefficients(m, dtype)[0]
    kern = np.array([KERNEL_OF[topo.joint_type[k]] for k in bodies])
    qs = np.asarray(topo.q_start)[bodies]
    parts, order = [], []
    for kernel, nq in (("hinge", 1), ("planar", 3), ("spherical", 4), ("free", 7)):
        sel = np.nonzero(kern == kernel)[0]
        if sel.size:
            k = bodies[sel]
            parts.append(joint_quat(kernel, q[qs[sel][:, None] + np.arange(nq)], m.axis.astype(dtype)[k], rho[k]))
            order.append(sel)
    joint = jnp.concatenate(parts)[np.argsort(np.concatenate(order))]
    return quat_mul(quat_of(m.tree_rotation.astype(dtype)[bodies]), joint)


def _world_quats(model: Model, m: Model, q: jax.Array, bodies: np.ndarray) -> jax.Array:
    """World quaternion of each body in ``bodies`` (``n`` = world): the product of the local
    quaternions root to body (MuJoCo's ``xquat``), one ``lax.scan`` over the depth."""
    parent = np.asarray(model.topology.parent)
    paths = []
    for b in bodies:
        path = []
        while 0 <= b < model.n_bodies:
            path.append(int(b))
            b = parent[b]
        paths.append(path[::-1])
    ident = jnp.zeros((len(bodies), 4), q.dtype).at[:, 0].set(1.0)
    depth = max((len(p) for p in paths), default=0)
    if depth == 0:
        return ident
    used = np.unique(np.concatenate([np.asarray(p, np.int64) for p in paths if p]))
    local = jnp.concatenate([_local_quats(model, m, q, used), ident[:1]])
    table = np.full((len(bodies), depth), len(used))
    for i, p in enumerate(paths):
        table[i, : len(p)] = np.searchsorted(used, p)
    out, _ = jax.lax.scan(lambda acc, x: (quat_mul(acc, x), None), ident, jnp.swapaxes(local[table], 0, 1))
    return out


def _welded_wrenches(sensors: Sensors, sn: Sensors, idx: np.ndarray, b: np.ndarray, vel, acc, force, body_r,
                     body_p) -> jax.Array:
    """``f_W = I_W α_b + V_b ×* (I_W V_b) + Σ_c φ(b, c) f_c`` (module docstring) for the sensors
    ``idx`` on bodies ``b``, in ``b``'s frame about its origin; ``φ(b, c)`` from the world poses."""
    iw = sn.welded_inertia[idx]
    f = spatial.mv(iw, acc[b]) + spatial.force_cross(vel[b], spatial.mv(iw, vel[b]))
    pairs = np.array([(row, c) for row, i in enumerate(idx) for c in sensors.welded_children[i]], np.int64)
    if pairs.size:
        row, c = pairs[:, 0], pairs[:, 1]
        r_bc = spatial.mtm(body_r[b[row]], body_r[c])
        p_bc = spatial.mtv(body_r[b[row]], body_p[c] - body_p[b[row]])
        f = f + spread_sum(spatial.force_to_parent(r_bc, p_bc, force[c]), row, len(idx))
    return f


def sensor_readings(model: Model, sensors: Sensors, q, v=None, a=None, *, actuator_force=None,
                    joint_actuator_force=None, f_ext=None, contact_wrench=None, t=None, key=None) -> jax.Array:
    """Readings ``(sensors.total_dim,)`` of ``sensors`` at ``(q, v, a)`` (module docstring).

    ``v`` is needed by velocity and acceleration sensors, ``a`` (``v̇``, sodyn's convention) by
    ``accelerometer``, ``force``, ``torque``, ``framelinacc``, ``frameangacc``; ``actuator_force
    (na,)``, ``joint_actuator_force (nv,)``, ``contact_wrench (n_bodies, 6)`` and ``t`` by the sensors
    that read them.  ``f_ext (n_bodies, 6)``: external wrenches on the bodies (body axes, about
    their origins, moment first), e.g. contacts, for the force/torque sensors.  ``key``: add
    ``noise · N(0, 1)``.  Pure JAX: ``jit``, ``vmap`` and ``grad`` go through.
    """
    kinds = set(sensors.kind)
    q = check_vector(model, q, model.nq, "q")
    dtype = q.dtype
    m = model_params(model, dtype)
    sn = jax.tree_util.tree_map(lambda x: x.astype(dtype), sensors)

    for arg, value, which in (("v", v, _VEL + _ACC), ("a", a, _ACC),
                              ("actuator_force", actuator_force, ("actuatorfrc", "tendonactuatorfrc")),
                              ("joint_actuator_force", joint_actuator_force, ("jointactuatorfrc",)),
                              ("contact_wrench", contact_wrench, ("contact_force",)), ("t", t, ("clock",))):
        if value is None and kinds & set(which):
            first = next(n for n, k in zip(sensors.names, sensors.kind) if k in which)
            raise ValueError(f"sensor_readings: {arg} is required by sensor {first!r}")
    v = None if v is None else check_vector(model, v, model.nv, "v", dtype)
    if not len(sensors):
        return jnp.zeros((0,), dtype)
    n = model.n_bodies
    topo = model.topology
    vel = acc = force = None
    if any(KINDS[k][1] == "frame" or k.startswith("subtree") for k in kinds):
        levels = prepare(model, q)
        wr, wp = world_poses_levels(levels, topo)
        body_r = jnp.concatenate([from_levels(topo, wr), jnp.eye(3, dtype=dtype)[None]])  # index n: the world
        body_p = jnp.concatenate([from_levels(topo, wp), jnp.zeros((1, 3), dtype)])
    if v is not None and kinds & set(_VEL + _ACC) - {"jointvel", "ballangvel", "actuatorvel", "tendonvel"}:
        a = None if a is None else check_vector(model, a, model.nv, "a", dtype)
        g = gravity_acceleration(m, dtype)
        vl, al, _ = velocities_and_accelerations_levels(
            levels, topo, dofs_to_levels(topo, v, 0.0), None if a is None else dofs_to_levels(topo, a, 0.0), g)
        vel = jnp.concatenate([from_levels(topo, vl), jnp.zeros((1, 6), dtype)])
        acc = jnp.concatenate([from_levels(topo, al), jnp.zeros((1, 6), dtype)])  # the world: 0, as MuJoCo
        if kinds & {"force", "torque"}:
            inertia = levels.inertia
            local = spatial.mv(inertia, al) + spatial.force_cross(vl, spatial.mv(inertia, vl))
            f_ext = check_f_ext(model, f_ext, dtype)
            if f_ext is not None:
                local = local - to_levels(topo, f_ext, jnp.zeros(6, dtype))
            force = from_levels(topo, body_forces_levels(levels, topo, local))

    rows: dict[int, jax.Array] = {}  # sensor → its values
    fi = np.array([i for i, k in enumerate(sensors.kind) if KINDS[k][1] == "frame"], np.int64)
    if fi.size:
        ob, orr, opp = _frame_placements(model, m, np.asarray(sensors.frame)[fi], sn.offset_rotation[fi],
                                         sn.offset_translation[fi])
        rb, rr, rp = _frame_placements(model, m, np.asarray(sensors.reference)[fi], sn.reference_rotation[fi],
                                       sn.reference_translation[fi])
        o_rw, o_pw = spatial.compose(body_r[ob], body_p[ob], orr, opp)
        r_rw, r_pw = spatial.compose(body_r[rb], body_p[rb], rr, rp)
        out = {"framepos": spatial.mtv(r_rw, o_pw - r_pw), "magnetometer": spatial.mtv(o_rw, sn.magnetic)}
        for ax, kind in enumerate(("framexaxis", "frameyaxis", "framezaxis")):
            out[kind] = spatial.mtv(r_rw, o_rw[..., ax])
        if vel is not None:
            vs, vr = spatial.motion_to_child(orr, opp, vel[ob]), spatial.motion_to_child(rr, rp, vel[rb])
            w_o, v_o = spatial.mv(o_rw, vs[:, :3]), spatial.mv(o_rw, vs[:, 3:])
            w_r, v_r = spatial.mv(r_rw, vr[:, :3]), spatial.mv(r_rw, vr[:, 3:])
            out["gyro"], out["velocimeter"] = vs[:, :3], vs[:, 3:]
            out["frameangvel"] = spatial.mtv(r_rw, w_o - w_r)
            out["framelinvel"] = spatial.mtv(r_rw, v_o - v_r - spatial.cross(w_r, o_pw - r_pw))
            if a is not None:
                acs = spatial.motion_to_child(orr, opp, acc[ob])
                out["accelerometer"] = acs[:, 3:] + spatial.cross(vs[:, :3], vs[:, 3:])
                out["framelinacc"] = spatial.mv(o_rw, out["accelerometer"])
                out["frameangacc"] = spatial.mv(o_rw, acs[:, :3])
        if force is not None:
            fb = force[np.minimum(ob, n - 1)]
            welded = [row for row, i in enumerate(fi) if sensors.welded_children[i] is not None]
            if welded:
                fb = fb.at[np.asarray(welded)].set(_welded_wrenches(
                    sensors, sn, fi[welded], ob[welded], vel, acc, force, body_r, body_p))
            fs = spatial.force_to_child(orr, opp, fb)
            out["torque"], out["force"] = fs[:, :3], fs[:, 3:]
        if "framequat" in kinds:
            fq = jnp.concatenate([quat_of(m.frame_rotation.astype(dtype)), jnp.eye(4, dtype=dtype)[:1]])
            frames = np.concatenate([np.asarray(sensors.frame)[fi], np.asarray(sensors.reference)[fi]])
            rot = jnp.concatenate([sn.offset_rotation[fi], sn.reference_rotation[fi]])
            wq = quat_mul(quat_mul(_world_quats(model, m, q, np.concatenate([ob, rb])), fq[frames]), quat_of(rot))
            qo, qr = wq[: fi.size], wq[fi.size:]
            sign = jnp.asarray(np.asarray(sensors.quat_sign)[fi], dtype)[:, None]
            out["framequat"] = sign * quat_mul(qr * jnp.asarray([1.0, -1.0, -1.0, -1.0], dtype), qo)
        for row, i in enumerate(fi):
            rows[int(i)] = out[sensors.kind[i]][row]

    sub = [i for i, k in enumerate(sensors.kind) if k.startswith("subtree")]
    if sub:
        # (S, n): body k is in the subtree of b when b's first dof moves it (fixed joints are merged)
        member = np.stack([np.ones(n, bool) if sensors.index[i] < 0 else topo.support[:, topo.v_start[sensors.index[i]]]
                           for i in sub])
        member = jnp.asarray(member, dtype)
        mass = m.mass
        c = body_p[:n] + spatial.mv(body_r[:n], m.com)
        msub = member @ mass
        com = (member @ (mass[:, None] * c)) / msub[:, None]
        if vel is not None:
            w_b, v_b = vel[:n, :3], vel[:n, 3:]
            cdot = spatial.mv(body_r[:n], v_b + spatial.cross(w_b, m.com))
            lin = (member @ (mass[:, None] * cdot)) / msub[:, None]
            spin = spatial.mv(body_r[:n], spatial.mv(m.inertia, w_b))
            orbit = spatial.cross(c[None] - com[:, None], (cdot[None] - lin[:, None]) * mass[None, :, None])
            ang = jnp.einsum("sk,skj->sj", member, spin[None] + orbit)
        for row, i in enumerate(sub):
            rows[i] = {"subtreecom": com, "subtreelinvel": lin if vel is not None else None,
                       "subtreeangmom": ang if vel is not None else None}[sensors.kind[i]][row]

    for i, (kind, k) in enumerate(zip(sensors.kind, sensors.index)):
        if kind in ("jointpos", "jointvel", "ballquat", "ballangvel", "jointactuatorfrc"):
            src = {"jointpos": q, "ballquat": q, "jointactuatorfrc": joint_actuator_force}.get(kind, v)
            rows[i] = jnp.asarray(src, dtype)[k: k + KINDS[kind][0]]
        elif KINDS[kind][1] == "tendon" or (kind in ("actuatorpos", "actuatorvel") and model.actuators.tendon[k] >= 0):
            from sodyn.simulate.tendons import tendon_sensor_values  # sodyn.simulate imports this module

            force = None if actuator_force is None else jnp.asarray(actuator_force, dtype).reshape(-1)
            on = model.actuators.tendon[k] if kind.startswith("actuator") else k
            value = tendon_sensor_values(m, kind.replace("actuator", "tendon"), [on], q, v, force)
            rows[i] = m.actuators.gear[k] * value if kind.startswith("actuator") else value
        elif kind in ("actuatorpos", "actuatorvel"):
            dof = model.actuators.dof[k]
            rows[i] = (m.actuators.gear[k] * (q[topo.q_start[topo.dof_body[dof]]] if kind == "actuatorpos"
                                              else v[dof]))[None]
        elif kind == "actuatorfrc":
            rows[i] = jnp.asarray(actuator_force, dtype).reshape(-1)[k: k + 1]
        elif kind == "contact_force":
            cw = jnp.asarray(contact_wrench, dtype)
            if cw.shape != (n, 6):
                raise ValueError(f"contact_wrench must have shape (n_bodies, 6) = ({n}, 6), got {cw.shape}")
            rows[i] = cw[k]
        elif kind == "clock":
            rows[i] = jnp.asarray(t, dtype).reshape(1)

    values = jnp.concatenate([rows[i].reshape(-1) for i in range(len(sensors))]) + sn.bias
    if key is not None:
        values = values + jnp.repeat(sn.noise, np.asarray(sensors.dim), total_repeat_length=sensors.total_dim) * \
            jax.random.normal(key, values.shape, dtype)
    real = np.repeat([k not in _NOT_REAL for k in sensors.kind], sensors.dim)
    cut = jnp.repeat(sn.cutoff, np.asarray(sensors.dim), total_repeat_length=sensors.total_dim)
    clipped = jnp.clip(values, -cut, cut)
    return jnp.where(jnp.asarray(real) & (cut > 0), clipped, values)


__all__ = ["joint_quat", "quat_mul", "quat_of", "sensor_readings"]
