"""Conversion from a Pinocchio ``Model`` and between Pinocchio's and sodyn's q/v conventions.

Pinocchio orders joints depth-first like sodyn, so joint ``i`` of Pinocchio (``i ≥ 1``) is
body ``i − 1`` here.  Conventions that differ:

=============  ==========================================  ===============================
joint          Pinocchio                                   sodyn
=============  ==========================================  ===============================
free flyer     q ``[p, x, y, z, w]``, v ``[v; ω]`` (local)  q ``[p, w, x, y, z]``, v ``[ω; v]``
spherical      q ``[x, y, z, w]``                           q ``[w, x, y, z]``
continuous     q ``[cos θ, sin θ]`` (nq 2)                  q ``θ`` (nq 1)
planar         q ``[x, y, cos θ, sin θ]`` (nq 4)            q ``[x, y, θ]``
=============  ==========================================  ===============================

``pinocchio`` is imported lazily; only :func:`from_pinocchio` needs it.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from sodyn.joints import JointSpec
from sodyn.model import Model
from sodyn.model_builder import ModelBuilder

_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


def _joint_spec(joint) -> JointSpec:
    short = joint.shortname()
    joint = joint.extract() if hasattr(joint, "extract") else joint
    name = short.replace("JointModel", "")
    if name in ("RX", "RY", "RZ"):
        return JointSpec.revolute(_AXES[name[1]])
    if name == "RevoluteUnaligned":
        return JointSpec.revolute(tuple(np.asarray(joint.axis, float)))
    if name in ("RUBX", "RUBY", "RUBZ"):
        return JointSpec.continuous(_AXES[name[3]])
    if name == "RevoluteUnboundedUnaligned":
        return JointSpec.continuous(tuple(np.asarray(joint.axis, float)))
    if name in ("PX", "PY", "PZ"):
        return JointSpec.prismatic(_AXES[name[1]])
    if name == "PrismaticUnaligned":
        return JointSpec.prismatic(tuple(np.asarray(joint.axis, float)))
    if name in ("HX", "HY", "HZ"):
        return JointSpec.helical(_AXES[name[1]], float(joint.pitch))
    if name == "HelicalUnaligned":
        return JointSpec.helical(tuple(np.asarray(joint.axis, float)), float(joint.pitch))
    if name == "Spherical":
        return JointSpec.spherical()
    if name == "FreeFlyer":
        return JointSpec.free()
    if name == "Planar":
        return JointSpec.planar()
    raise ValueError(f"Pinocchio joint type {short} is not supported by sodyn")


def from_pinocchio(pin_model, name: str | None = None, gravity=None) -> Model:
    """Build a sodyn :class:`Model` from a ``pinocchio.Model`` (same joints, inertias, frames).

    Body ``i − 1`` is Pinocchio's joint ``i``; it is named after the link (BODY frame) that
    Pinocchio attaches to that joint, and its joint keeps Pinocchio's joint name.  All
    other Pinocchio frames become sodyn frames.  Damping and armature are copied.
    """
    import pinocchio as pin

    g = np.asarray(pin_model.gravity.linear) if gravity is None else np.asarray(gravity)
    b = ModelBuilder(gravity=g, name=name or pin_model.name)
    body_name = {}
    for f in pin_model.frames:
        if f.type == pin.FrameType.BODY and f.parentJoint > 0 and f.parentJoint not in body_name:
            if np.allclose(f.placement.homogeneous, np.eye(4)):
                body_name[f.parentJoint] = f.name
    used = set()
    for i in range(1, pin_model.njoints):
        jm = pin_model.joints[i]
        spec = _joint_spec(jm)
        inertia = pin_model.inertias[i]
        placement = pin_model.jointPlacements[i]
        parent = pin_model.parents[i] - 1
        nv = jm.nv
        vs = jm.idx_v
        bname = body_name.get(i, f"{pin_model.names[i]}_body")
        used.add(bname)
        b.add_body(
            bname, None if parent < 0 else parent, spec,
            rotation=np.asarray(placement.rotation), translation=np.asarray(placement.translation),
            mass=float(inertia.mass), com=np.asarray(inertia.lever), inertia=np.asarray(inertia.inertia),
            joint_name=pin_model.names[i],
            damping=np.asarray(pin_model.damping[vs: vs + nv]),
            armature=np.asarray(pin_model.armature[vs: vs + nv]),
            massless_ok=True,
        )
        used.add(pin_model.names[i])
    for f in pin_model.frames:
        if f.name in used or f.name == "universe":
            continue
        used.add(f.name)
        b.add_frame(
            f.name, None if f.parentJoint == 0 else f.parentJoint - 1,
            rotation=np.asarray(f.placement.rotation), translation=np.asarray(f.placement.translation),
        )
    return b.build(check_singular=False)


@functools.lru_cache(maxsize=64)
def _layout(model_key, joint_types: tuple[str, ...]):
    """Per-joint (type, sodyn q start, pin q start, sodyn v start) for conversions."""
    rows = []
    qs = ps = vs = 0
    for t in joint_types:
        nq = {"continuous": 1, "spherical": 4, "free": 7, "planar": 3}.get(t, 1)
        npq = {"continuous": 2, "spherical": 4, "free": 7, "planar": 4}.get(t, 1)
        nv = {"spherical": 3, "free": 6, "planar": 3}.get(t, 1)
        rows.append((t, qs, ps, vs))
        qs, ps, vs = qs + nq, ps + npq, vs + nv
    return tuple(rows), qs, ps, vs


def _rows(model: Model):
    return _layout(model.topology, model.joint_types)


def q_from_pinocchio(model: Model, q_pin) -> jnp.ndarray:
    """Pinocchio configuration → sodyn configuration."""
    rows, nq, npq, _ = _rows(model)
    q_pin = jnp.asarray(q_pin)
    if q_pin.shape[-1] != npq:
        raise ValueError(f"q_pin must have {npq} entries, got shape {q_pin.shape}")
    parts = []
    for t, _, p, _ in rows:
        if t == "free":
            parts += [q_pin[..., p: p + 3], q_pin[..., p + 6: p + 7], q_pin[..., p + 3: p + 6]]
        elif t == "spherical":
            parts += [q_pin[..., p + 3: p + 4], q_pin[..., p: p + 3]]
        elif t == "continuous":
            parts.append(jnp.arctan2(q_pin[..., p + 1], q_pin[..., p])[..., None])
        elif t == "planar":
            parts += [q_pin[..., p: p + 2], jnp.arctan2(q_pin[..., p + 3], q_pin[..., p + 2])[..., None]]
        else:
            parts.append(q_pin[..., p: p + 1])
    return jnp.concatenate(parts, axis=-1)


def q_to_pinocchio(model: Model, q) -> jnp.ndarray:
    """sodyn configuration → Pinocchio configuration."""
    rows, nq, _, _ = _rows(model)
    q = jnp.asarray(q)
    if q.shape[-1] != nq:
        raise ValueError(f"q must have {nq} entries, got shape {q.shape}")
    parts = []
    for t, s, _, _ in rows:
        if t == "free":
            parts += [q[..., s: s + 3], q[..., s + 4: s + 7], q[..., s + 3: s + 4]]
        elif t == "spherical":
            parts += [q[..., s + 1: s + 4], q[..., s: s + 1]]
        elif t == "continuous":
            parts.append(jnp.stack([jnp.cos(q[..., s]), jnp.sin(q[..., s])], axis=-1))
        elif t == "planar":
            parts += [q[..., s: s + 2], jnp.stack([jnp.cos(q[..., s + 2]), jnp.sin(q[..., s + 2])], axis=-1)]
        else:
            parts.append(q[..., s: s + 1])
    return jnp.concatenate(parts, axis=-1)


def _v_perm(model: Model, to_pin: bool) -> np.ndarray:
    rows, _, _, nv = _rows(model)
    perm = np.arange(nv)
    for t, _, _, v in rows:
        if t == "free":
            # pin [v; ω] ↔ sodyn [ω; v]: the same swap both ways.
            perm[v: v + 6] = v + np.array([3, 4, 5, 0, 1, 2])
    return perm


def v_from_pinocchio(model: Model, v_pin) -> jnp.ndarray:
    """Pinocchio velocity (or acceleration, or torque) → sodyn ordering."""
    v_pin = jnp.asarray(v_pin)
    if v_pin.shape[-1] != model.nv:
        raise ValueError(f"v_pin must have {model.nv} entries, got shape {v_pin.shape}")
    return v_pin[..., _v_perm(model, False)]


def v_to_pinocchio(model: Model, v) -> jnp.ndarray:
    """sodyn velocity (or acceleration, or torque) → Pinocchio ordering."""
    v = jnp.asarray(v)
    if v.shape[-1] != model.nv:
        raise ValueError(f"v must have {model.nv} entries, got shape {v.shape}")
    return v[..., _v_perm(model, True)]
