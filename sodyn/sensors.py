"""Sensor specification: which sensors a model carries, where they sit and how their readings are
corrupted, as MuJoCo's ``<sensor>`` elements (``sensor_type``, ``sensor_objid``, ``sensor_refid``,
``sensor_dim``/``sensor_adr``, ``sensor_noise``, ``sensor_cutoff``).

:data:`KINDS` maps each sensor kind to the dimension of its reading and the kind of object it sits
on; :class:`SensorSpec` (or :func:`sensor`) describes one sensor, and :meth:`Sensors.make` resolves
a list of them against a model into a :class:`Sensors` pytree (static indices, array leaves for
noise, bias, cutoff, offsets and the magnetic field) whose readings are laid out in one flat vector.
What each kind reads, as a function of ``(q, v, a)``, is defined and computed in
:mod:`sodyn.sensor_readings` (:func:`~sodyn.sensor_readings.sensor_readings`).
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import KERNEL_OF
from sodyn.model import Model

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


@dataclasses.dataclass(frozen=True)
class SensorSpec:
    """One sensor for :meth:`Sensors.make`.  ``target``: a frame (site, body or joint frame name or
    index) for frame kinds; a joint name or body index for joint kinds; an actuator name or index;
    a body name or index, or a frame name for the body carrying it, for subtree kinds (``None`` or
    ``"world"``: the whole model) and ``contact_force``; ``None`` for ``clock``.  ``offset = (R, p)``
    places the sensor in the target frame, ``reference_offset`` likewise in ``reference``.

    ``welded = (I_W, children)``, force/torque sensors only: the sensor reads the wrench on a rigid
    set ``W`` of links welded into the target frame's body ``b`` (a force/torque cell and what is
    bolted below it) instead of the wrench on all of ``b``: ``I_W`` is the ``(6, 6)`` spatial
    inertia of ``W`` in ``b``'s frame about its origin, ``children`` the moving bodies (names or
    indices) whose parent link is in ``W`` (:mod:`sodyn.sensor_readings`).  The :class:`~sodyn.Model`
    keeps no per-link inertia of merged links, so this is given by the caller;
    :func:`sodyn.io.mjcf_sensors.sensors_from_mujoco` sets it for MJCF sensors on jointless bodies."""

    kind: str
    target: str | int | None = None
    name: str | None = None
    reference: str | int | None = None
    noise: float = 0.0
    bias: float | tuple[float, ...] = 0.0
    cutoff: float = 0.0
    offset: tuple | None = None
    reference_offset: tuple | None = None
    welded: tuple | None = None


def sensor(kind: str, target: str | int | None = None, **kw) -> SensorSpec:
    """Shorthand for :class:`SensorSpec`."""
    return SensorSpec(kind, target, **kw)


class Sensors(eqx.Module):
    """``n`` sensors of a model, readings in one flat vector of ``total_dim`` values.

    - leaves: ``noise (n,)`` (standard deviation), ``bias (total_dim,)``, ``cutoff (n,)`` (0: none),
      ``offset_rotation (n, 3, 3)``, ``offset_translation (n, 3)`` (the sensor frame in frame
      ``frame``), ``reference_rotation``, ``reference_translation`` (likewise for ``reference``),
      ``magnetic (3,)`` (the field the magnetometer reads, world axes), ``welded_inertia (n, 6, 6)``
      (``I_W`` of :class:`SensorSpec`'s ``welded``, zero for the other sensors);
    - static: ``names``, ``kind`` (:data:`KINDS`), ``frame`` (index into ``model.frame_names``,
      ``-1`` world/unused), ``reference`` (likewise, ``-1`` world), ``index`` (``q`` index for
      ``jointpos``/``ballquat``, ``v`` index for the other joint kinds, actuator index, body index
      with ``-1`` the whole model), ``dim``, ``adr`` (offset of each sensor's values, as MuJoCo's
      ``sensor_dim``/``sensor_adr``), ``quat_sign`` (``±1`` per sensor, see :mod:`sodyn.sensor_readings`),
      ``welded_children`` (per sensor ``None``, or for a force/torque sensor on a welded set ``W`` the
      tuple of moving bodies whose parent link is in ``W``).
    """

    noise: jax.Array
    bias: jax.Array
    cutoff: jax.Array
    offset_rotation: jax.Array
    offset_translation: jax.Array
    reference_rotation: jax.Array
    reference_translation: jax.Array
    magnetic: jax.Array
    welded_inertia: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    kind: tuple[str, ...] = eqx.field(static=True)
    frame: tuple[int, ...] = eqx.field(static=True)
    reference: tuple[int, ...] = eqx.field(static=True)
    index: tuple[int, ...] = eqx.field(static=True)
    dim: tuple[int, ...] = eqx.field(static=True)
    adr: tuple[int, ...] = eqx.field(static=True)
    quat_sign: tuple[int, ...] = eqx.field(static=True)
    welded_children: tuple[tuple[int, ...] | None, ...] = eqx.field(static=True)

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
            magnetic=arr(magnetic, (3,)), welded_inertia=arr([r[5] for r in rows], (n, 6, 6)),
            names=names, kind=tuple(r[0].kind for r in rows),
            frame=tuple(r[1] for r in rows), reference=tuple(r[2] for r in rows), index=tuple(r[3] for r in rows),
            dim=dims, adr=adr, quat_sign=(1,) * n, welded_children=tuple(r[4] for r in rows))


def _pose(offset) -> tuple[np.ndarray, np.ndarray]:
    if offset is None:
        return np.eye(3), np.zeros(3)
    r, p = offset
    return np.asarray(r, float).reshape(3, 3), np.asarray(p, float).reshape(3)


def _resolve(model: Model | None, s: SensorSpec, name: str) -> tuple:
    """``(spec with its name, frame, reference, index, welded children or None, I_W or zeros)``, or
    a ``ValueError`` naming the sensor."""
    s = dataclasses.replace(s, name=name)
    if s.kind not in KINDS:
        raise ValueError(f"sensor {name!r}: unknown kind {s.kind!r}; expected one of {sorted(KINDS)}")
    target = KINDS[s.kind][1]
    if s.reference is not None and s.kind not in REFERENCED:
        raise ValueError(f"sensor {name!r}: a {s.kind} sensor takes no reference frame (only {REFERENCED})")
    if s.welded is not None and s.kind not in ("force", "torque"):
        raise ValueError(f"sensor {name!r}: only force and torque sensors take welded, not a {s.kind} sensor")
    if np.size(s.bias) not in (1, KINDS[s.kind][0]) or not np.all(np.isfinite(s.bias)):
        raise ValueError(f"sensor {name!r}: bias must be finite, one value or {KINDS[s.kind][0]}, got {s.bias!r}")
    if not (np.isfinite(s.noise) and s.noise >= 0 and s.cutoff >= 0):
        raise ValueError(f"sensor {name!r}: noise and cutoff must be finite and >= 0, got {s.noise!r}, {s.cutoff!r}")
    if target != "none" and model is None:
        raise ValueError(f"sensor {name!r}: a {s.kind} sensor needs a model")
    frame = reference = index = -1
    children, inertia = None, np.zeros((6, 6))
    try:
        if target == "frame":
            frame, reference = _frame_of(model, s.target), _frame_of(model, s.reference)
            if s.kind in ("force", "torque") and (frame < 0 or model.frame_body[frame] < 0):
                raise ValueError(f"a {s.kind} sensor needs a frame on a moving body, got {s.target!r}")
            if s.welded is not None:
                children, inertia = _welded(model, s, model.frame_body[frame])
        elif target == "joint":
            k = model.joint_index(s.target)
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
    return s, frame, reference, index, children, inertia


def _welded(model: Model, s: SensorSpec, b: int) -> tuple[tuple[int, ...], np.ndarray]:
    """``(children as body indices, I_W)`` of a spec's ``welded`` on body ``b``; ``ValueError`` if
    malformed or if a child is not a child of ``b``."""
    try:
        inertia, children = s.welded
        inertia = np.asarray(inertia, float)
    except (TypeError, ValueError):
        raise ValueError(f"welded must be (inertia (6, 6), children), got {s.welded!r}") from None
    if inertia.shape != (6, 6) or not np.all(np.isfinite(inertia)):
        raise ValueError(f"welded inertia must be a finite (6, 6) array, got shape {inertia.shape}")
    out = []
    for c in children:
        k = model.body_id(c) if isinstance(c, str) else int(c)
        if not 0 <= k < model.n_bodies:
            raise ValueError(f"welded child body {c!r} out of range [0, {model.n_bodies})")
        if int(model.topology.parent[k]) != b:
            raise ValueError(f"welded child body {c!r} is not a child of the sensor's body {b}")
        out.append(k)
    return tuple(out), inertia


def _frame_of(model: Model, frame) -> int:
    """Frame index of a name or index; ``None``, ``"world"`` and ``-1`` are the world (``-1``)."""
    world = frame is None or (isinstance(frame, str) and frame == "world") or (isinstance(frame, int) and frame == -1)
    return -1 if world else model.frame_id(frame)


def __getattr__(name: str):
    """``sodyn.sensors.sensor_readings``: re-exported lazily from :mod:`sodyn.sensor_readings`, which
    imports this module."""
    if name == "sensor_readings":
        from sodyn.sensor_readings import sensor_readings

        return sensor_readings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["KINDS", "REFERENCED", "SensorSpec", "Sensors", "sensor"]
