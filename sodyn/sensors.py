r"""Sensors: what an IMU, a force/torque cell, an encoder or a motion-capture marker reads, with
MuJoCo's definitions (``mjSENS_*`` in MuJoCo's ``engine_sensor.c``), from ``(q, v, a)``.

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

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import check_f_ext, check_vector, gravity_acceleration, model_params, prepare
from sodyn.algorithms.inverse_dynamics import body_forces_levels
from sodyn.algorithms.kinematics import velocities_and_accelerations_levels, world_poses_levels
from sodyn.joints import KERNEL_OF
from sodyn.model import Model, hinge_coefficients
from sodyn.topology import dofs_to_levels, from_levels, to_levels

#: kind → (dimension, target: "frame" | "joint" | "actuator" | "body" | "tendon" | "none")
KINDS: dict[str, tuple[int, str]] = {
    "accelerometer": (3, "frame"), "velocimeter": (3, "frame"), "gyro": (3, "frame"), "force": (3, "frame"),
    "torque": (3, "frame"), "magnetometer": (3, "frame"), "framepos": (3, "frame"), "framequat": (4, "frame"),
    "framexaxis": (3, "frame"), "frameyaxis": (3, "frame"), "framezaxis": (3, "frame"),
    "framelinvel": (3, "frame"), "frameangvel": (3, "frame"), "framelinacc": (3, "frame"),
    "frameangacc": (3, "frame"), "jointpos": (1, "joint"), "jointvel": (1, "joint"), "ballquat": (4, "joint"),
    "ballangvel": (3, "joint"), "jointactuatorfrc": (1, "joint"), "actuatorpos": (1, "actuator"),
    "actuatorvel": (1, "actuator"), "actuatorfrc": (1, "actuator"), "subtreecom": (3, "body"),
    "subtreelinvel": (3, "body"), "subtreeangmom": (3, "body"), "contact_force": (6, "body"), "clock": (1, "none"),
    "tendonpos": (1, "tendon"), "tendonvel": (1, "tendon"), "tendonactuatorfrc": (1, "tendon"),
}
#: kinds that accept a reference frame (MuJoCo's ``reftype``/``refname``)
REFERENCED = ("framepos", "framequat", "framexaxis", "frameyaxis", "framezaxis", "framelinvel", "frameangvel")
_NOT_REAL = ("framequat", "ballquat", "framexaxis", "frameyaxis", "framezaxis")  # no cutoff (MuJoCo's datatypes)
_VEL = ("velocimeter", "gyro", "framelinvel", "frameangvel", "jointvel", "ballangvel", "actuatorvel",
        "subtreelinvel", "subtreeangmom", "tendonvel")
_ACC = ("accelerometer", "force", "torque", "framelinacc", "frameangacc")


@dataclasses.dataclass(frozen=True)
class SensorSpec:
    """One sensor for :meth:`Sensors.make`.  ``target``: a frame (site, body or joint frame name or
    index) for frame kinds; a joint name or body index for joint kinds; an actuator name or index;
    a body name or index, or a frame name for the body carrying it, for subtree kinds (``None`` or
    ``"world"``: the whole model) and ``contact_force``; ``None`` for ``clock``.  ``offset = (R, p)``
    places the sensor in the target frame, ``reference_offset`` likewise in ``reference``."""

    kind: str
    target: str | int | None = None
    name: str | None = None
    reference: str | int | None = None
    noise: float = 0.0
    bias: float | tuple[float, ...] = 0.0
    cutoff: float = 0.0
    offset: tuple | None = None
    reference_offset: tuple | None = None


def sensor(kind: str, target: str | int | None = None, **kw) -> SensorSpec:
    """Shorthand for :class:`SensorSpec`."""
    return SensorSpec(kind, target, **kw)


class Sensors(eqx.Module):
    """``n`` sensors of a model, readings in one flat vector of ``total_dim`` values.

    - leaves: ``noise (n,)`` (standard deviation), ``bias (total_dim,)``, ``cutoff (n,)`` (0: none),
      ``offset_rotation (n, 3, 3)``, ``offset_translation (n, 3)`` (the sensor frame in frame
      ``frame``), ``reference_rotation``, ``reference_translation`` (likewise for ``reference``),
      ``magnetic (3,)`` (the field the magnetometer reads, world axes);
    - static: ``names``, ``kind`` (:data:`KINDS`), ``frame`` (index into ``model.frame_names``,
      ``-1`` world/unused), ``reference`` (likewise, ``-1`` world), ``index`` (``q`` index for
      ``jointpos``/``ballquat``, ``v`` index for the other joint kinds, actuator index, body index
      with ``-1`` the whole model), ``dim``, ``adr`` (offset of each sensor's values, as MuJoCo's
      ``sensor_dim``/``sensor_adr``), ``quat_sign`` (``±1`` per sensor, see the module docstring).
    """

    noise: jax.Array
    bias: jax.Array
    cutoff: jax.Array
    offset_rotation: jax.Array
    offset_translation: jax.Array
    reference_rotation: jax.Array
    reference_translation: jax.Array
    magnetic: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    kind: tuple[str, ...] = eqx.field(static=True)
    frame: tuple[int, ...] = eqx.field(static=True)
    reference: tuple[int, ...] = eqx.field(static=True)
    index: tuple[int, ...] = eqx.field(static=True)
    dim: tuple[int, ...] = eqx.field(static=True)
    adr: tuple[int, ...] = eqx.field(static=True)
    quat_sign: tuple[int, ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_dim(self) -> int:
        return int(sum(self.dim))

    def slice(self, name: str) -> slice:
        """Where sensor ``name``'s values lie in the readings."""
        if name not in self.names:
            raise ValueError(f"unknown sensor {name!r}; sensors are {list(self.names)}")
        i = self.names.index(name)
        return slice(self.adr[i], self.adr[i] + self.dim[i])

    @classmethod
    def empty(cls, dtype=None) -> Sensors:
        """No sensors."""
        return cls.make(None, [], dtype=dtype)

    @classmethod
    def make(cls, model: Model | None, specs, *, magnetic=(0.0, -0.5, 0.0), dtype=None) -> Sensors:
        """Sensors from :class:`SensorSpec` s or tuples ``(kind, target[, reference])``; errors name
        the sensor and the unknown frame, joint, actuator or body."""
        rows = []
        for i, s in enumerate(specs):
            s = s if isinstance(s, SensorSpec) else SensorSpec(s[0], *(s[1:2]), reference=(s[2:3] or [None])[0])
            rows.append(_resolve(model, s, s.name or f"{s.kind}{i}"))
        n = len(rows)
        names = tuple(r[0].name for r in rows)
        if len(set(names)) != n:
            raise ValueError(f"Sensors: names must be unique, got {names}")
        dims = tuple(KINDS[r[0].kind][0] for r in rows)
        adr = tuple(int(x) for x in np.concatenate([[0], np.cumsum(dims)])[:n])
        bias = [np.broadcast_to(np.asarray(r[0].bias, float), (d,)) for r, d in zip(rows, dims)]
        arr = lambda x, shape: jnp.asarray(np.asarray(x, float).reshape(shape), dtype)  # noqa: E731
        return cls(
            noise=arr([r[0].noise for r in rows], (n,)), bias=arr(np.concatenate(bias) if n else [], (-1,)),
            cutoff=arr([r[0].cutoff for r in rows], (n,)),
            offset_rotation=arr([_pose(r[0].offset)[0] for r in rows], (n, 3, 3)),
            offset_translation=arr([_pose(r[0].offset)[1] for r in rows], (n, 3)),
            reference_rotation=arr([_pose(r[0].reference_offset)[0] for r in rows], (n, 3, 3)),
            reference_translation=arr([_pose(r[0].reference_offset)[1] for r in rows], (n, 3)),
            magnetic=arr(magnetic, (3,)), names=names, kind=tuple(r[0].kind for r in rows),
            frame=tuple(r[1] for r in rows), reference=tuple(r[2] for r in rows), index=tuple(r[3] for r in rows),
            dim=dims, adr=adr, quat_sign=(1,) * n)


def _pose(offset) -> tuple[np.ndarray, np.ndarray]:
    if offset is None:
        return np.eye(3), np.zeros(3)
    r, p = offset
    return np.asarray(r, float).reshape(3, 3), np.asarray(p, float).reshape(3)


def _resolve(model: Model | None, s: SensorSpec, name: str) -> tuple[SensorSpec, int, int, int]:
    """``(spec with its name, frame, reference, index)``, or a ``ValueError`` naming the sensor."""
    s = dataclasses.replace(s, name=name)
    if s.kind not in KINDS:
        raise ValueError(f"sensor {name!r}: unknown kind {s.kind!r}; expected one of {sorted(KINDS)}")
    target = KINDS[s.kind][1]
    if s.reference is not None and s.kind not in REFERENCED:
        raise ValueError(f"sensor {name!r}: a {s.kind} sensor takes no reference frame (only {REFERENCED})")
    if np.size(s.bias) not in (1, KINDS[s.kind][0]) or not np.all(np.isfinite(s.bias)):
        raise ValueError(f"sensor {name!r}: bias must be finite, one value or {KINDS[s.kind][0]}, got {s.bias!r}")
    if not (np.isfinite(s.noise) and s.noise >= 0 and s.cutoff >= 0):
        raise ValueError(f"sensor {name!r}: noise and cutoff must be finite and >= 0, got {s.noise!r}, {s.cutoff!r}")
    if target != "none" and model is None:
        raise ValueError(f"sensor {name!r}: a {s.kind} sensor needs a model")
    frame = reference = index = -1
    try:
        if target == "frame":
            frame, reference = _frame_of(model, s.target), _frame_of(model, s.reference)
            if s.kind in ("force", "torque") and (frame < 0 or model.frame_body[frame] < 0):
                raise ValueError(f"a {s.kind} sensor needs a frame on a moving body, got {s.target!r}")
        elif target == "joint":
            k = model._joint_index(s.target)
            kernel = KERNEL_OF.get(model.joint_types[k], "fixed")
            want = "spherical" if s.kind in ("ballquat", "ballangvel") else "hinge"
            if kernel != want:
                raise ValueError(f"a {s.kind} sensor needs a {want} joint, {s.target!r} is {model.joint_types[k]}")
            index = int(model.topology.q_start[k] if s.kind in ("jointpos", "ballquat") else model.topology.v_start[k])
        elif target == "actuator":
            names = model.actuators.names
            if isinstance(s.target, str) and s.target not in names:
                raise ValueError(f"unknown actuator {s.target!r}; actuators are {list(names)}")
            index = names.index(s.target) if isinstance(s.target, str) else int(s.target)
            if not 0 <= index < len(model.actuators):
                raise ValueError(f"actuator index {s.target} out of range [0, {len(model.actuators)})")
        elif target == "tendon":
            if model.tendons is None:
                raise ValueError("the model has no tendons")
            index = model.tendons.index(s.target) if isinstance(s.target, str) else int(s.target)
            if not 0 <= index < len(model.tendons):
                raise ValueError(f"tendon index {s.target} out of range [0, {len(model.tendons)})")
        elif target == "body":
            world = s.target in (None, "world") and s.kind != "contact_force"
            frame = s.target in model.frame_names and s.target not in model.body_names
            index = -1 if world else model.frame_body[model.frame_id(s.target)] if frame else model.body_id(s.target)
            if index < 0 and not world:
                raise ValueError(f"frame {s.target!r} is on the world, not on a body")
    except (ValueError, TypeError) as e:
        raise ValueError(f"sensor {name!r} ({s.kind}): {e}") from None
    return s, frame, reference, index


def _frame_of(model: Model, frame) -> int:
    """Frame index of a name or index; ``None``, ``"world"`` and ``-1`` are the world (``-1``)."""
    world = frame is None or (isinstance(frame, str) and frame == "world") or (isinstance(frame, int) and frame == -1)
    return -1 if world else model.frame_id(frame)


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
            fs = spatial.force_to_child(orr, opp, force[np.minimum(ob, n - 1)])
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


__all__ = ["KINDS", "REFERENCED", "SensorSpec", "Sensors", "sensor", "sensor_readings"]
