"""The rows of :class:`~sodyn.constraints.LoopClosures`: position error ``𝔡``, velocity ``G_c θ̇``,
bias ``Ġ_c θ̇`` and the columns of ``G_c*`` (Jain §11.1, §11.4), what
:mod:`sodyn.algorithms.constrained` solves with.

**Closures between frames** (``"weld"``, ``"point"``, ``"distance"``) are computed in world axes
about one point ``o`` fixed in space (the first body's origin at this instant), from one
kinematics scatter: the bodies' poses, velocities and accelerations at ``θ̈ = 0``.  A point row
along the world axis ``e`` is the force ``e`` at the anchor ``p_a``, the wrench ``[p_a × e; e]``
about ``o``; an angular row the moment ``[e; 0]``; a distance row the point rows along
``n = d/|d|``.  Against the joint axes at ``o`` on the ancestors of frame 1's body (frame 2's
negated) these wrenches are the columns of ``G_c*`` (Jain eq. 11.6).

**Joint couplings** (``"joint"``, MuJoCo's ``<equality><joint>``) are one row each on two
one-dof joints ``i₁``, ``i₂`` (``q̇ = v`` for both), with ``x = q[i₂] − q0₂`` and
``p(x) = Σₖ cₖ xᵏ`` (``k = 0..4``):

    𝔡 = q[i₁] − q0₁ − p(x),     G_c = e_{i₁}ᵀ − p′(x) e_{i₂}ᵀ,     Ġ_c θ̇ = −p″(x) v[i₂]²,

and without a second joint ``𝔡 = q[i₁] − q0₁ − c₀``, ``G_c = e_{i₁}ᵀ``, ``Ġ_c θ̇ = 0``.
**Tendon couplings** (``"tendon"``, MuJoCo's ``<equality><tendon>``) are the same rows with the
fixed tendons' lengths ``L = J q`` for ``q[i]`` and their moment rows ``J`` for ``e_i``
(``J`` constant, so ``Ġ_c θ̇ = −p″(x) (J₂ v)²``).  Their columns of ``G_c*`` are joint-space
forces already (no kinematics needed).

Rows come in the order of the closures; every index is static.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import gravity_acceleration, model_params, prepare
from sodyn.algorithms.kinematics import WorldKinematics, first_body_origin, slot_ancestors, world_motions_levels
from sodyn.constraints import COUPLINGS, ROWS, LoopClosures
from sodyn.contraction import contract
from sodyn.model import WORLD, Model
from sodyn.runtime.precision import full_precision
from sodyn.runtime.tuning import FORWARD_UNROLL
from sodyn.static_index import take
from sodyn.topology import dofs_from_levels, dofs_to_levels


class Motions(NamedTuple):
    """The bodies' kinematics in world axes about the first body's origin ``o`` (a point fixed
    in space at this instant; :func:`~sodyn.algorithms.kinematics.world_motions_levels`):
    poses, joint axes, velocities ``V_w`` and joint terms; ``acceleration`` ``α₀ + 𝔤`` at
    ``θ̈ = 0`` with the world accelerating by ``−g`` ``(1, W, 6)``; ``origin`` ``o`` in world
    coordinates ``(3,)``."""

    kin: WorldKinematics
    acceleration: jax.Array
    origin: jax.Array


class RowTerms(NamedTuple):
    """Per row of the closures (in their order): ``residual`` ``𝔡``, ``velocity`` ``G_c θ̇``,
    ``bias`` ``Ġ_c θ̇`` ``(n_c,)``, and ``columns``: ``G_c*`` per kernel ``(1, W_k, n_c, nv_k)``
    (the slot layout of :func:`~sodyn.topology.dofs_to_levels`)."""

    residual: jax.Array
    velocity: jax.Array
    bias: jax.Array
    columns: list[jax.Array]


class _Side(NamedTuple):
    """Frame 1 or frame 2 of each closure ``(n, ...)``, on its body ``b`` (the world: a body at
    rest), world axes, positions from ``o``: ``R_f`` the frame's rotation, ``p_a`` the anchor's
    position, ``ṗ_a`` its velocity, ``ω`` the body's angular velocity; at ``θ̈ = 0`` the
    anchor's acceleration ``a_o + ω̇ × p_a`` (``[ω̇; a_o]`` the body's spatial acceleration
    about ``o``, gravity's ``−g`` of the world taken back out), its classical part
    ``ω × ṗ_a`` and ``ω̇``.  ``body`` (static): the body, ``-1`` for the world."""

    body: np.ndarray
    frame_rotation: jax.Array
    point: jax.Array
    velocity: jax.Array
    omega: jax.Array
    acceleration: jax.Array
    classical: jax.Array
    angular_acceleration: jax.Array


def motions(model: Model, q, v) -> Motions:
    """The :class:`Motions` at ``(q, v)``, by one scatter."""
    topo = model.topology
    levels = prepare(model, q)
    root = gravity_acceleration(model_params(model, q.dtype), q.dtype)
    kin, acc = world_motions_levels(levels, topo, dofs_to_levels(topo, v, 0.0), root, FORWARD_UNROLL)
    return Motions(kin, acc, first_body_origin(levels, topo))


def jacobian_from_columns(model: Model, columns: list[jax.Array]) -> jax.Array:
    """``G_c`` ``(n_c, nv)`` from its columns in the slot layout (:class:`RowTerms`)."""
    return dofs_from_levels(model.topology, [jnp.swapaxes(c, -1, -2) for c in columns]).T


@full_precision
def row_terms(model: Model, closures: LoopClosures, q, v, mo: Motions | None = None) -> RowTerms:
    """The :class:`RowTerms` of ``closures`` at ``(q, v)`` (module docstring).  ``mo``: the
    :class:`Motions` at ``(q, v)`` if the caller has them (computed here only when a closure
    between frames needs them)."""
    frames = [i for i, k in enumerate(closures.kind) if k not in COUPLINGS]
    joints = [i for i, k in enumerate(closures.kind) if k in COUPLINGS]
    parts = []
    if frames:
        mo = motions(model, q, v) if mo is None else mo
        parts.append(_frame_rows(model, closures, mo, frames))
    if joints:
        parts.append(_joint_rows(model, closures, q, v, joints))
    if len(parts) == 1:
        return parts[0]
    # rows of the closures between frames, then of the couplings → the closures' order
    sizes = [ROWS[closures.kind[i]] for i in frames]
    start = dict(zip(frames, np.cumsum([0] + sizes)[:-1].tolist()))
    start.update({i: sum(sizes) + j for j, i in enumerate(joints)})
    order = np.concatenate([start[i] + np.arange(ROWS[k]) for i, k in enumerate(closures.kind)])
    residual, velocity, bias = (_reorder(jnp.concatenate([p[j] for p in parts]), order, 0) for j in range(3))
    columns = [_reorder(jnp.concatenate(c, axis=-2), order, -2) for c in zip(*(p.columns for p in parts))]
    return RowTerms(residual, velocity, bias, columns)


def _reorder(x: jax.Array, order, axis: int = 0) -> jax.Array:
    """``x`` with its entries along ``axis`` taken in the static ``order`` (``x`` itself when
    that is all of them in turn)."""
    order = np.asarray(order, np.int64)
    if order.size == x.shape[axis] and np.array_equal(order, np.arange(order.size)):
        return x
    return jnp.moveaxis(take(jnp.moveaxis(x, axis, 0), order), 0, axis)


# ---------------------------------------------------------------------------
# joint couplings
# ---------------------------------------------------------------------------


def _joint_rows(model: Model, closures: LoopClosures, q, v, index: list[int]) -> RowTerms:
    """The rows of the joint and tendon couplings ``index`` (static; module docstring), ``p``,
    ``p′``, ``p″`` by Horner's scheme."""
    topo = model.topology
    dtype = q.dtype
    (x1, w1, g1), (x2, w2, g2, second) = _coupled(model, closures, q, v, index, 1), _coupled(model, closures, q, v,
                                                                                             index, 2)
    has2 = jnp.asarray(second, dtype)
    c = _reorder(closures.polycoef, index).astype(dtype)  # (n_j, 5)
    ref = _reorder(closures.reference, index).astype(dtype)  # (n_j, 2)
    x = (x2 - ref[:, 1]) * has2
    c0, c1, c2, c3, c4 = (c[:, k] for k in range(5))
    p = c0 + x * (c1 + x * (c2 + x * (c3 + x * c4)))
    dp = (c1 + x * (2 * c2 + x * (3 * c3 + x * 4 * c4))) * has2
    ddp = 2 * c2 + x * (6 * c3 + x * 12 * c4)
    w2 = w2 * has2
    g = g1 - dp[:, None] * g2 * has2[:, None]
    columns = [jnp.swapaxes(b, -1, -2) for b in dofs_to_levels(topo, g.T, 0.0)]
    return RowTerms(x1 - ref[:, 0] - p, w1 - dp * w2, -ddp * w2 ** 2, columns)


def _coupled(model: Model, closures: LoopClosures, q, v, index: list[int], side: int):
    """Side ``side`` (1 or 2) of the couplings ``index``: its coordinate ``x`` (``q[i]`` or the
    tendon length ``L``), rate ``ẋ`` (``v[i]`` or ``J v``) and row ``∂ẋ/∂v`` ``(n_j, nv)``; side 2
    also returns the static mask of the couplings that have one (the others' values are
    placeholders)."""
    topo = model.topology
    dtype = q.dtype
    joint = np.array([getattr(closures, f"joint{side}")[i] for i in index], np.int64)
    tendon = np.array([getattr(closures, f"tendon{side}")[i] for i in index], np.int64)
    iq, iv = topo.q_start[np.maximum(joint, 0)], topo.v_start[np.maximum(joint, 0)]
    x, w = take(q, iq), take(v, iv)
    g = jnp.asarray(np.eye(model.nv)[iv] * (joint >= 0)[:, None], dtype)   # static rows e_i
    on = tendon >= 0
    if on.any():
        from sodyn.simulate.tendons import tendon_lengths

        if model.tendons is None:
            raise ValueError("tendon couplings need the model's tendons (Model.tendons is None)")
        coef = model.tendons.coef.astype(dtype)[np.maximum(tendon, 0)]
        mask = jnp.asarray(on)
        x = jnp.where(mask, tendon_lengths(model, q)[np.maximum(tendon, 0)], x)
        w = jnp.where(mask, coef @ v, w)
        g = jnp.where(mask[:, None], coef, g)
    return (x, w, g, (joint >= 0) | on) if side == 2 else (x, w, g)


# ---------------------------------------------------------------------------
# closures between frames
# ---------------------------------------------------------------------------


def _side(model: Model, mo: Motions, frames, anchors) -> _Side:
    """The :class:`_Side` of ``frames`` (static) with ``anchors`` ``(n, 3)`` in their axes."""
    topo = model.topology
    kin = mo.kin
    dtype = kin.translation.dtype
    fr = np.array([f if f != WORLD else 0 for f in frames], dtype=np.int64)
    body = np.array([int(model.frame_body[f]) if f != WORLD else -1 for f in frames], dtype=np.int64)
    moving = jnp.asarray(body >= 0)
    m = model_params(model, dtype)
    r_bf = jnp.where(moving[:, None, None], take(m.frame_rotation, fr), jnp.eye(3, dtype=dtype))
    p_bf = jnp.where(moving[:, None], take(m.frame_translation, fr), 0.0)
    slot = topo.body_flat[np.maximum(body, 0)]
    fixed = bool(np.any(body < 0))

    def at_bodies(x, world):  # the bodies' values; the world's for a side on the world
        y = take(x.reshape((topo.width,) + x.shape[2:]), slot)
        if not fixed:
            return y
        return jnp.where(moving.reshape((-1,) + (1,) * (y.ndim - 1)), y, jnp.asarray(world, dtype))

    rot = at_bodies(kin.rotation, np.eye(3))
    point = at_bodies(kin.translation, -mo.origin) + spatial.mv(rot, p_bf + spatial.mv(r_bf, anchors))
    vel = at_bodies(kin.velocity, np.zeros(6))
    a0 = at_bodies(mo.acceleration, np.zeros(6))
    w = vel[:, :3]
    velocity = vel[:, 3:] + spatial.cross(w, point)
    acc = a0[:, 3:] + spatial.cross(a0[:, :3], point) + jnp.where(moving[:, None], m.gravity, 0.0)
    return _Side(body, spatial.mm(rot, r_bf), point, velocity, w, acc, spatial.cross(w, velocity), a0[:, :3])


def _frame_rows(model: Model, closures: LoopClosures, mo: Motions, index: list[int]) -> RowTerms:
    """The rows of the closures ``index`` (static) between frames, from the bodies' poses and
    motions.  A point row along the world axis ``e`` is the force ``e`` at the anchor ``p_a``,
    the wrench ``[p_a × e; e]``; an angular row the moment ``[e; 0]`` (no classical part in
    ``ω̇``); a distance row the point rows along ``n = d/|d|``, with ``(|ḋ|² − (nᵀḋ)²)/|d|``
    in its bias.  ``G_c = w₁* J₁ − w₂* J₂`` with ``w₁``, ``w₂`` the rows' wrenches on the two
    sides' bodies and ``J`` the bodies' Jacobians at the world origin."""
    s1 = _side(model, mo, [closures.frame1[i] for i in index], _reorder(closures.anchor1, index))
    s2 = _side(model, mo, [closures.frame2[i] for i in index], _reorder(closures.anchor2, index))
    dtype = s1.point.dtype
    eye, zero = jnp.eye(3, dtype=dtype), jnp.zeros((3, 3), dtype)

    def point_wrenches(s):  # (n, 3, 6): rows [p × e_i; e_i]
        return jnp.concatenate([-spatial.skew(s.point), jnp.broadcast_to(eye, s.point.shape + (3,))], axis=-1)

    p1, p2 = point_wrenches(s1), point_wrenches(s2)
    moment = jnp.concatenate([eye, zero], axis=-1)
    d = s1.point - s2.point
    dv = s1.velocity - s2.velocity
    dd = s1.acceleration + s1.classical - s2.acceleration - s2.classical  # p̈_a − p̈_b at θ̈ = 0
    res, vel, bias, w1, w2, rows = [], [], [], [], [], []
    for i, c in enumerate(index):
        kind = closures.kind[c]
        if kind == "weld":
            err = spatial.mm(s1.frame_rotation[i], spatial.mm(spatial.transpose(closures.rotation[c]),
                                                               spatial.transpose(s2.frame_rotation[i])))
            res += [spatial.quat_log(spatial.rotation_to_quat(err)), d[i]]
            vel += [s1.omega[i] - s2.omega[i], dv[i]]
            bias += [s1.angular_acceleration[i] - s2.angular_acceleration[i], dd[i]]
            w1 += [moment, p1[i]]
            w2 += [moment, p2[i]]
            rows += [i] * 6
        elif kind == "point":
            res.append(d[i])
            vel.append(dv[i])
            bias.append(dd[i])
            w1.append(p1[i])
            w2.append(p2[i])
            rows += [i] * 3
        else:
            length = spatial.safe_norm(d[i])
            safe = jnp.where(length > 0, length, 1.0)
            n = d[i] / safe
            ndv = jnp.dot(n, dv[i])
            res.append((length - closures.length[c])[None])
            vel.append(ndv[None])
            bias.append((jnp.dot(n, dd[i]) + (jnp.dot(dv[i], dv[i]) - ndv ** 2) / safe)[None])
            w1.append(spatial.mtv(p1[i], n)[None])
            w2.append(spatial.mtv(p2[i], n)[None])
            rows.append(i)
    rows = np.asarray(rows, dtype=np.int64)
    cat = jnp.concatenate
    columns = _frame_columns(model, mo.kin.axes, cat(w1), cat(w2), s1.body[rows], s2.body[rows])
    return RowTerms(cat(res), cat(vel), cat(bias), columns)


def _ancestor_slots(topo, bodies: np.ndarray) -> np.ndarray:
    """``(W, len(bodies))``: 1 where a slot holds an ancestor-or-self of the body (static; a
    column of zeros for the world, ``-1``), from :func:`~sodyn.algorithms.kinematics.slot_ancestors`."""
    rows = slot_ancestors(topo)[topo.body_flat[np.maximum(bodies, 0)]]
    return np.where((bodies >= 0)[:, None], rows, 0.0).T


def _frame_columns(model: Model, axes: list[jax.Array], wrench1: jax.Array, wrench2: jax.Array,
                   body1: np.ndarray, body2: np.ndarray) -> list[jax.Array]:
    """``G_c*`` per kernel ``(1, W_k, n_c, nv_k)``: each joint axis at the world origin
    (``axes``, :func:`~sodyn.algorithms.kinematics.world_subspace_blocks`) against the rows'
    wrenches ``(n_c, 6)``, ``w₁`` where the joint supports body 1, ``−w₂`` where it supports
    body 2 (``body1``, ``body2`` static, ``-1`` for the world)."""
    topo = model.topology
    dtype = wrench1.dtype
    m1 = _ancestor_slots(topo, body1)
    m2 = _ancestor_slots(topo, body2)
    # per slot, the rows' wrench on the bodies the slot supports: w₁ (body 1), −w₂ (body 2)
    wrench = jnp.asarray(m1[:, :, None], dtype) * wrench1 - jnp.asarray(m2[:, :, None], dtype) * wrench2
    return [contract("...wdi,...wci->...wcd", h, wrench[None, s0:s1])
            for h, (_, s0, s1) in zip(axes, topo.kernel_slots)]


__all__ = ["Motions", "RowTerms", "jacobian_from_columns", "motions", "row_terms"]
