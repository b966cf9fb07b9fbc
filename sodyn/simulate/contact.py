r"""Compliant ground contact with regularized Coulomb friction: :class:`GroundContact` and
:func:`contact_terms`.

Contact points are spheres of radius ``r`` (``r = 0``: a point) fixed in bodies, pressed
against one plane ``{x : n·x = h}`` (unit normal ``n`` in world axes).  For a point whose centre
is at ``p`` (world), the penetration, its smooth onset and its rate are

    δ = r − (n·p − h),     δ_s = w · softplus(δ / w),     δ̇ = −n·ṗ,

with ``w`` the onset width (``δ_s`` is C∞, ``≈ δ`` once ``δ ≫ w`` and negligible once
``−δ ≫ w``).  The forces on the robot, in world axes, act at the contact point
``p_c = p − r n`` (the bottom of the sphere, moving with its body):

    f_n = max(0, k δ_s + c σ(δ/w) δ̇)                (σ the logistic; the max: no adhesion)
    f_t = −μ f_n v_t / sqrt(|v_t|² + ε²),  v_t = (I − n nᵀ) ṗ_c     (regularized Coulomb)
    f   = f_n n + f_t

with stiffness ``k``, damping ``c``, friction coefficient ``μ`` and slip velocity ``ε``.  A
point held on a slope of angle ``θ`` creeps at ``|v_t| = ε tanθ / sqrt(μ² − tan²θ)`` (``≈ 2.06 ε``
at ``tanθ = 0.9 μ``).

**Restitution.**  On the ideal law (``w → 0``), a point of mass ``m`` hitting the plane bounces
with the coefficient of restitution of the non-adhesive linear spring–dashpot (Schwager &
Pöschel, Granular Matter 9, 2007): with ``ω₀ = sqrt(k/m)``, ``β = c/(2m)``, ``ω = sqrt(ω₀² − β²)``,

    e = exp(−β/ω · (π − arctan(2βω / (ω² − β²))))      for β < ω₀/√2,
    e = exp(−β/ω · arctan(2βω / (β² − ω²)))            for ω₀/√2 < β < ω₀,

``e = exp(−2)`` at critical damping and ``e = exp(−β/Ω · ln((β + Ω)/(β − Ω)))``,
``Ω = sqrt(β² − ω₀²)``, above it (:func:`restitution_coefficient`).  The force reaches zero,
and the point leaves, before the penetration returns to zero.

**Defaults** (``M`` the model's total mass, ``g = |gravity|``, or 9.81 without gravity):
stiffness ``k = M g / 1 mm`` (one point carrying the whole robot sinks 1 mm), damping
``c = 2 ζ sqrt(k M)`` with ``ζ = damping_ratio = 1``, friction ``μ = 1`` (or the geoms'
sliding friction), slip velocity ``ε = 2·10⁻⁴ m/s`` (creep below 0.5 mm/s at ``tanθ ≤ 0.9 μ``),
onset ``w = 10⁻⁴ m``, plane ``z = 0`` (or the model's world plane geom).  Sticking friction is
a damper of rate about ``μ g / ε`` (≈ 5·10⁴ s⁻¹ at the defaults; a few times more for the
rotations of a body standing on several points): the linearly implicit step takes it in its
stride, explicit integrators are stable only for ``dt`` of order ``ε / (μ g)`` (≈ 2·10⁻⁵ s), or
with a larger ``ε``.

**Implicit terms** (``dt`` given, for the linearly implicit Euler step of
:mod:`sodyn.simulate.stepping`): with ``K = k' n nᵀ``, ``C = c' n nᵀ + (μ f_n / s)(I − n nᵀ)``,
``k' = ∂f_n/∂δ`` (clipped at 0), ``c' = ∂f_n/∂δ̇``, ``s = sqrt(|v_t|² + ε²)``,

    f_expl = f − dt K ṗ,     K_eff = dt C + dt² K,
    B_k = Σ_{points on k} Sᵀ (R_kᵀ K_eff R_k) S,
    f_k = Σ_{points on k} Sᵀ R_kᵀ f_expl − B_k [0; R_kᵀ g],

``S = [−r̃, I₃]`` for the contact point ``r`` in body ``k``'s frame (``Sᵀ f = [r × f; f]``) and
``R_k`` the body's world rotation; ``B_k`` enters the articulated inertia, and the last term
removes what ``B_k`` would otherwise pick up from the recursion's fictitious acceleration ``−g``.

**Not modelled:** body–body and self collision, meshes and other geom types, rolling and
torsional friction, edge and face contact between the points (a box touches by its corners
only), a finite plane (the plane is infinite), and friction anisotropy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import check_vector, model_params, prepare
from sodyn.algorithms.kinematics import poses_and_motions_levels
from sodyn.model import Model
from sodyn.runtime.tuning import FORWARD_UNROLL
from sodyn.static_index import spread_sum, take
from sodyn.topology import dofs_to_levels

#: Default slip velocity ``ε`` of the regularized Coulomb law, m/s.
SLIP_VELOCITY = 2e-4
#: Default onset width ``w`` of the normal force, m.
ONSET = 1e-4
#: Default sinking of one point carrying the whole robot, m (sets the default stiffness).
SINK = 1e-3
#: ``|g|`` used for the default stiffness of a model without gravity, m/s².
STANDARD_GRAVITY = 9.81

_PER_POINT = ("stiffness", "damping", "friction", "slip_velocity", "onset")


def concrete_array(x) -> np.ndarray | None:
    """``x`` as a NumPy array when its value is known at trace time, else ``None``."""
    if isinstance(x, jax.core.Tracer):
        return None
    return np.asarray(x)


def _float_array(x, name: str) -> jax.Array:
    try:
        a = jnp.asarray(x)
    except TypeError as e:
        raise ValueError(f"GroundContact: {name} must be an array of numbers, got {type(x).__name__}") from e
    if not jnp.issubdtype(a.dtype, jnp.floating):
        a = a.astype(jnp.zeros(()).dtype)
    return a


class GroundContact(eqx.Module):
    r"""Contact points on bodies against a plane (the force law is in the module docstring).

    **Arrays** (leaves: ``vmap`` randomizes them, ``grad`` differentiates them):

    - ``position (nc, 3)``: each point's centre in its body's frame;
    - ``radius (nc,)``: each point's radius (``0``: a point);
    - ``normal (3,)``: the plane's unit normal (world), ``height ()``: the plane is
      ``{x : normal·x = height}``;
    - ``stiffness``, ``damping``, ``friction`` (Coulomb ``μ``), ``slip_velocity`` (``ε``, m/s),
      ``onset`` (``w``, m): each ``()`` or ``(nc,)``.

    **Static:** ``body`` (each point's body index), ``names``.

    Build one with :meth:`from_model` (the model's collision geoms) or :meth:`at_frames`
    (named frames, e.g. URDF feet), or directly.

    **Raises** ``ValueError`` naming the argument for wrong shapes, a non-unit normal, negative
    stiffness, damping, friction or radius, or a non-positive slip velocity or onset (values
    are checked when known at construction, i.e. not under ``jit``/``vmap``).
    """

    position: jax.Array
    radius: jax.Array
    normal: jax.Array
    height: jax.Array
    stiffness: jax.Array
    damping: jax.Array
    friction: jax.Array
    slip_velocity: jax.Array
    onset: jax.Array
    body: tuple[int, ...] = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, position, radius, normal, height, stiffness, damping, friction,
                 slip_velocity=SLIP_VELOCITY, onset=ONSET, *, body: Sequence[int], names: Sequence[str] | None = None):
        self.body = tuple(int(b) for b in body)
        nc = len(self.body)
        self.names = tuple(names) if names is not None else tuple(f"point{i}" for i in range(nc))
        if len(self.names) != nc:
            raise ValueError(f"GroundContact: names has {len(self.names)} entries for {nc} points (body)")
        if nc == 0:
            raise ValueError("GroundContact: no contact points (body is empty)")
        if any(b < 0 for b in self.body):
            raise ValueError(f"GroundContact: body indices must be non-negative (a point on the world cannot "
                             f"touch the ground), got {self.body}")
        self.position = _float_array(position, "position")
        self.radius = _float_array(radius, "radius")
        self.normal = _float_array(normal, "normal")
        self.height = _float_array(height, "height")
        self.stiffness = _float_array(stiffness, "stiffness")
        self.damping = _float_array(damping, "damping")
        self.friction = _float_array(friction, "friction")
        self.slip_velocity = _float_array(slip_velocity, "slip_velocity")
        self.onset = _float_array(onset, "onset")

    def __check_init__(self):
        nc = len(self.body)
        expected = {"position": (nc, 3), "radius": (nc,), "normal": (3,), "height": ()}
        for name, shape in expected.items():
            got = getattr(self, name).shape
            if got != shape:
                raise ValueError(f"GroundContact: {name} must have shape {shape}, got {got}")
        for name in _PER_POINT:
            got = getattr(self, name).shape
            if got not in ((), (nc,)):
                raise ValueError(f"GroundContact: {name} must be a scalar or have shape ({nc},), got {got}")
        n = concrete_array(self.normal)
        if n is not None:
            norm = float(np.linalg.norm(n))
            if not np.isfinite(norm) or abs(norm - 1.0) > 1e-6:
                raise ValueError(f"GroundContact: normal must be a unit vector, got {n.tolist()} (norm {norm:g})")
        for name, strict in (("radius", False), ("stiffness", False), ("damping", False), ("friction", False),
                             ("slip_velocity", True), ("onset", True)):
            x = concrete_array(getattr(self, name))
            if x is not None and (np.any(~np.isfinite(x)) or np.any(x <= 0 if strict else x < 0)):
                bound = "positive" if strict else "non-negative"
                raise ValueError(f"GroundContact: {name} must be finite and {bound}, got {x.tolist()}")
        for name in ("position", "height"):
            x = concrete_array(getattr(self, name))
            if x is not None and not np.all(np.isfinite(x)):
                raise ValueError(f"GroundContact: {name} must be finite, got {x.tolist()}")

    def __len__(self) -> int:
        return len(self.body)

    # -- constructors -------------------------------------------------------------
    @classmethod
    def from_model(cls, model: Model, *, geoms: Sequence[str] | None = None, plane=None, stiffness=None,
                   damping=None, damping_ratio=1.0, friction=None, slip_velocity=SLIP_VELOCITY,
                   onset=ONSET) -> "GroundContact":
        """Contact points from the model's collision geoms (:class:`sodyn.Geoms`).

        A sphere gives its centre with its radius, a capsule its two end centres with its
        radius, a box its 8 corners with radius 0.  ``geoms``: the names to use (default: every
        sphere, capsule and box on a body; world geoms are skipped).  ``plane``: ``(normal,
        height)``, or the name of a world plane geom; default the model's world plane geom
        (there must be at most one), else ``z = 0``.  ``friction`` defaults to each geom's
        sliding friction, combined with the plane geom's by the maximum (as MuJoCo does).
        ``stiffness``, ``damping`` (or ``damping_ratio``) default as in the module docstring.
        Points are named ``geom`` (sphere) or ``geom:i``.
        """
        g = model.geoms
        usable = ("sphere", "capsule", "box")
        if geoms is None:
            chosen = [i for i in range(len(g)) if g.type[i] in usable and g.body[i] >= 0]
            if not chosen:
                raise ValueError(f"GroundContact.from_model: model {model.name!r} has no sphere, capsule or box "
                                 f"geom on a body (geoms: {list(g.names)}); use GroundContact.at_frames")
        else:
            if isinstance(geoms, str):
                geoms = [geoms]
            chosen = []
            for name in geoms:
                if name not in g.names:
                    raise ValueError(f"GroundContact.from_model: unknown geom {name!r} in geoms; geoms are "
                                     f"{list(g.names)}")
                i = g.names.index(name)
                if g.type[i] not in usable:
                    raise ValueError(f"GroundContact.from_model: geom {name!r} in geoms is a {g.type[i]}; only "
                                     f"{usable} give contact points")
                if g.body[i] < 0:
                    raise ValueError(f"GroundContact.from_model: geom {name!r} in geoms is attached to the world")
                chosen.append(i)
            if not chosen:
                raise ValueError("GroundContact.from_model: geoms is empty")
        normal, height, plane_mu = _plane(model, plane)
        rot, trans, size = (np.asarray(x, np.float64) for x in (g.rotation, g.translation, g.size))
        mu_geom = np.asarray(g.friction, np.float64)[:, 0]
        pos, rad, body, names, mu = [], [], [], [], []
        for i in chosen:
            t, r, s = g.type[i], rot[i], size[i]
            if t == "sphere":
                pts, radius, labels = [trans[i]], s[0], [g.names[i]]
            elif t == "capsule":
                pts = [trans[i] - s[1] * r[:, 2], trans[i] + s[1] * r[:, 2]]
                radius, labels = s[0], [f"{g.names[i]}:{j}" for j in range(2)]
            else:
                signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
                pts = list(trans[i] + (signs * s) @ r.T)
                radius, labels = 0.0, [f"{g.names[i]}:{j}" for j in range(8)]
            pos += pts
            rad += [radius] * len(pts)
            body += [g.body[i]] * len(pts)
            names += labels
            mu += [max(mu_geom[i], plane_mu)] * len(pts)
        if friction is None:
            friction = np.asarray(mu)
        return cls._with_defaults(model, np.asarray(pos), np.asarray(rad), normal, height, body, names,
                                  stiffness, damping, damping_ratio, friction, slip_velocity, onset)

    @classmethod
    def at_frames(cls, model: Model, frames: Sequence[str | int], positions=None, radius=0.0, *, plane=None,
                  stiffness=None, damping=None, damping_ratio=1.0, friction=1.0, slip_velocity=SLIP_VELOCITY,
                  onset=ONSET) -> "GroundContact":
        """Contact points at named frames or bodies (``model.frame_id`` names: frames, bodies,
        joints), e.g. the feet of a URDF robot.

        ``positions (nc, 3)``: offsets of the points in their frames (default: the frame
        origins); ``radius``: a scalar or ``(nc,)``.  ``plane`` and the force parameters as in
        :meth:`from_model` (``friction`` defaults to 1).  Points are named after the frames.
        """
        if isinstance(frames, (str, int, np.integer)):
            frames = [frames]
        frames = list(frames)
        if not frames:
            raise ValueError("GroundContact.at_frames: frames is empty")
        ids = [model.frame_id(f) for f in frames]
        nc = len(ids)
        offsets = np.zeros((nc, 3)) if positions is None else np.asarray(positions, np.float64)
        if offsets.shape != (nc, 3):
            raise ValueError(f"GroundContact.at_frames: positions must have shape ({nc}, 3), got {offsets.shape}")
        body = [model.frame_body[i] for i in ids]
        for f, b in zip(frames, body):
            if b < 0:
                raise ValueError(f"GroundContact.at_frames: frame {f!r} is attached to the world")
        fr, fp = np.asarray(model.frame_rotation, np.float64), np.asarray(model.frame_translation, np.float64)
        pos = np.stack([fp[i] + fr[i] @ o for i, o in zip(ids, offsets)])
        rad = np.asarray(radius, np.float64)
        if rad.shape not in ((), (nc,)):
            raise ValueError(f"GroundContact.at_frames: radius must be a scalar or have shape ({nc},), got {rad.shape}")
        names = [model.frame_names[i] for i in ids]
        normal, height, _ = _plane(model, plane)
        return cls._with_defaults(model, pos, np.broadcast_to(rad, (nc,)), normal, height, body, names, stiffness,
                                  damping, damping_ratio, friction, slip_velocity, onset)

    @classmethod
    def _with_defaults(cls, model, pos, rad, normal, height, body, names, stiffness, damping, damping_ratio,
                       friction, slip_velocity, onset) -> "GroundContact":
        total = float(np.sum(np.asarray(model.mass, np.float64)))
        if stiffness is None:
            g = float(np.linalg.norm(np.asarray(model.gravity, np.float64))) or STANDARD_GRAVITY
            stiffness = total * g / SINK
        if damping is None:
            ratio = concrete_array(damping_ratio)
            if ratio is not None and (np.any(ratio < 0) or np.any(~np.isfinite(ratio))):
                raise ValueError(f"GroundContact: damping_ratio must be finite and non-negative, got {ratio}")
            k = concrete_array(stiffness)
            if k is not None and np.any(k < 0):
                raise ValueError(f"GroundContact: stiffness must be finite and non-negative, got {k.tolist()}")
            damping = 2.0 * jnp.asarray(damping_ratio) * jnp.sqrt(jnp.asarray(stiffness) * total)
        dtype = model.mass.dtype
        arr = lambda x: jnp.asarray(x, dtype) if concrete_array(x) is not None else x  # noqa: E731
        return cls(arr(pos), arr(rad), arr(normal), arr(height), arr(stiffness), arr(damping), arr(friction),
                   arr(slip_velocity), arr(onset), body=body, names=names)


def _plane(model: Model, plane) -> tuple[np.ndarray, float, float]:
    """``(normal, height, friction of the plane geom or 0)`` of the ``plane`` argument."""
    g = model.geoms
    world_planes = [i for i in range(len(g)) if g.type[i] == "plane" and g.body[i] < 0]
    if plane is None:
        if len(world_planes) > 1:
            raise ValueError(f"the model has several world plane geoms {[g.names[i] for i in world_planes]}; "
                             "choose one with plane=")
        if not world_planes:
            return np.array([0.0, 0.0, 1.0]), 0.0, 0.0
        plane = g.names[world_planes[0]]
    if isinstance(plane, str):
        if plane not in g.names or g.names.index(plane) not in world_planes:
            raise ValueError(f"plane {plane!r} is not a world plane geom; world planes are "
                             f"{[g.names[i] for i in world_planes]}")
        i = g.names.index(plane)
        n = np.asarray(g.rotation[i], np.float64)[:, 2]
        return n, float(n @ np.asarray(g.translation[i], np.float64)), float(g.friction[i, 0])
    try:
        normal, height = plane
    except (TypeError, ValueError):
        raise ValueError(f"plane must be (normal, height) or a plane geom's name, got {plane!r}") from None
    n = np.asarray(normal, np.float64)
    if n.shape != (3,) or not np.all(np.isfinite(n)) or abs(np.linalg.norm(n) - 1.0) > 1e-6:
        raise ValueError(f"plane: the normal must be a finite unit 3-vector, got {normal!r}")
    h = np.asarray(height, np.float64)
    if h.shape != () or not np.isfinite(h):
        raise ValueError(f"plane: the height must be a finite scalar, got {height!r}")
    return n, float(h), 0.0


# ---------------------------------------------------------------------------
# the force law
# ---------------------------------------------------------------------------


class PointForces(NamedTuple):
    """The force law at the points: ``force (nc, 3)``, ``penetration (nc,)``, ``normal_force
    (nc,)``, and the derivatives the implicit terms use: ``normal_stiffness`` ``k'`` (clipped at
    0), ``normal_damping`` ``c'``, ``tangential_damping`` ``μ f_n / s``, all ``(nc,)``."""

    force: jax.Array
    penetration: jax.Array
    normal_force: jax.Array
    normal_stiffness: jax.Array
    normal_damping: jax.Array
    tangential_damping: jax.Array


def point_forces(contact: GroundContact, normal: jax.Array, distance: jax.Array, velocity: jax.Array) -> PointForces:
    """The force law (module docstring) at points whose contact point ``p_c`` is at ``distance
    = n·p_c − h`` ``(nc,)`` from the plane and moves with ``velocity = ṗ_c`` ``(nc, 3)``;
    ``normal`` ``(3,)`` or ``(nc, 3)`` is ``n`` in the axes of ``velocity`` (the force comes out
    in those axes)."""
    dtype = velocity.dtype
    k, c, mu, eps, w = (jnp.asarray(getattr(contact, f), dtype) for f in _PER_POINT)
    delta = -distance
    x = delta / w
    sig = jax.nn.sigmoid(x)
    rate = -spatial.dot(normal, velocity)
    raw = k * w * jax.nn.softplus(x) + c * sig * rate
    active = raw > 0
    f_n = jnp.where(active, raw, 0.0)
    v_t = velocity - spatial.scale(spatial.dot(normal, velocity), jnp.broadcast_to(normal, velocity.shape))
    s = jnp.sqrt(spatial.dot(v_t, v_t) + eps * eps)
    damp_t = mu * f_n / s
    force = spatial.scale(f_n, jnp.broadcast_to(normal, velocity.shape)) - spatial.scale(damp_t, v_t)
    k_prime = jnp.where(active, jnp.maximum(k * sig + c * sig * (1.0 - sig) * rate / w, 0.0), 0.0)
    c_prime = jnp.where(active, c * sig, 0.0)
    return PointForces(force, delta, f_n, k_prime, c_prime, damp_t)


# ---------------------------------------------------------------------------
# contact terms
# ---------------------------------------------------------------------------


class ContactTerms(NamedTuple):
    """What :func:`contact_terms` returns.

    ``f_ext (n_bodies, 6)``: body-frame wrenches ``[n; f]`` about each body origin;
    ``added_inertia (n_bodies, 6, 6)`` or ``None``: the ``B_k`` of the implicit step;
    ``force (nc, 3)``: the world-frame force on the robot at each point, ``f(p, ṗ)`` at the
    given state; ``penetration (nc,)``: ``δ`` (negative above the plane)."""

    f_ext: jax.Array
    added_inertia: jax.Array | None
    force: jax.Array
    penetration: jax.Array


def body_states(model: Model, q: jax.Array, v: jax.Array):
    """World rotations and positions and body-frame velocities ``[ω; v]`` of all bodies in the
    compact slot layout, by the one kinematics scatter
    (:func:`~sodyn.algorithms.kinematics.poses_and_motions_levels`, without accelerations)."""
    topo = model.topology
    pm = poses_and_motions_levels(prepare(model, q), topo, dofs_to_levels(topo, v, 0.0), None, FORWARD_UNROLL)
    return pm.rotation, pm.translation, pm.velocity


def check_bodies(model: Model, contact: GroundContact) -> np.ndarray:
    """``contact.body`` as a static integer array, checked against ``model``'s bodies
    (ValueError naming the first index out of range)."""
    body = np.asarray(contact.body, np.int64)
    bad = body[(body < 0) | (body >= model.n_bodies)]
    if bad.size:
        raise ValueError(f"contact: body index {int(bad[0])} out of range for model {model.name!r} "
                         f"({model.n_bodies} bodies)")
    return body


def contact_terms(model: Model, contact: GroundContact, q, v, dt=None) -> ContactTerms:
    r"""Ground contact forces as body wrenches, and with ``dt`` the terms of the linearly
    implicit step (module docstring), in one kinematics sweep and O(nc) work.

    ``dt=None``: ``f_ext = Σ Sᵀ R_kᵀ f`` per body (body frame) and ``added_inertia=None``
    (for explicit integrators).  ``dt``: ``f_ext = Σ Sᵀ R_kᵀ f_expl − B_k [0; R_kᵀ g]`` and
    ``added_inertia = B``, for ``forward_dynamics(..., f_ext, added_inertia=B)``: the recursion
    adds ``B_k`` to the articulated inertias, where it multiplies the body accelerations
    ``α_k = J_k a + α⁰_k − [0; R_kᵀ g]`` (``α⁰_k = J̇_k v``; ``−g`` the world's fictitious
    acceleration, which the correction in ``f_ext`` cancels), so it solves
    ``(M + Σ J_kᵀ B_k J_k) a = τ − C + Σ J_kᵀ (Σ Sᵀ R_kᵀ f_expl − B_k α⁰_k)``.

    **Arguments:** ``q (nq,)``, ``v (nv,)`` (their dtype is used); ``dt`` a scalar or ``None``.

    **Returns** :class:`ContactTerms`.  **Raises** ``ValueError`` for wrong shapes or a point on
    a body the model does not have.
    """
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    body = check_bodies(model, contact)
    topo = model.topology
    dtype = q.dtype
    m = model_params(model, dtype)
    wr, wp, vel = body_states(model, q, v)
    slots = np.asarray(topo.body_flat)[body]
    rot, origin, twist = (take(x.reshape((topo.width,) + x.shape[2:]), slots) for x in (wr, wp, vel))  # per point

    position, radius = contact.position.astype(dtype), contact.radius.astype(dtype)
    n, h = contact.normal.astype(dtype), contact.height.astype(dtype)
    n_b = spatial.mtv(rot, jnp.broadcast_to(n, origin.shape))          # normal in body axes
    r_c = position - spatial.scale(radius, n_b)                          # contact point, body frame
    distance = spatial.dot(n_b, r_c) + spatial.dot(jnp.broadcast_to(n, origin.shape), origin) - h
    omega, lin = spatial.halves(twist)
    velocity = lin + spatial.cross(omega, r_c)                           # ṗ_c in body axes
    law = point_forces(contact, n_b, distance, velocity)
    force_b = law.force
    world_force = spatial.mv(rot, force_b)

    if dt is None:
        wrench = jnp.concatenate([spatial.cross(r_c, force_b), force_b], axis=-1)
        return ContactTerms(spread_sum(wrench, body, model.n_bodies), None, world_force, law.penetration)

    dt = jnp.asarray(dt, dtype)
    normal_rate = spatial.dot(n_b, velocity)
    f_expl = force_b - spatial.scale(dt * law.normal_stiffness * normal_rate, n_b)
    a = dt * law.normal_damping + dt * dt * law.normal_stiffness     # K_eff = b I + (a − b) n nᵀ
    b = dt * law.tangential_damping
    u = jnp.concatenate([spatial.cross(r_c, n_b), n_b], axis=-1)     # Sᵀ n_b
    b_point = (spatial.scale_matrix(b, _sts(r_c)) + spatial.scale_matrix(a - b, u[..., :, None] * u[..., None, :]))
    g_b = spatial.mtv(rot, jnp.broadcast_to(m.gravity, origin.shape))
    b_gravity = (spatial.scale(b, jnp.concatenate([spatial.cross(r_c, g_b), g_b], axis=-1))
                 + spatial.scale((a - b) * spatial.dot(n_b, g_b), u))  # B_p [0; g_b]
    wrench = jnp.concatenate([spatial.cross(r_c, f_expl), f_expl], axis=-1) - b_gravity
    return ContactTerms(spread_sum(wrench, body, model.n_bodies), spread_sum(b_point, body, model.n_bodies),
                        world_force, law.penetration)


def _sts(r: jax.Array) -> jax.Array:
    """``SᵀS = [[|r|² I − r rᵀ, r̃], [−r̃, I]]`` for ``S = [−r̃, I]``."""
    rx = spatial.skew(r)
    eye = jnp.broadcast_to(jnp.eye(3, dtype=r.dtype), rx.shape)
    top = jnp.concatenate([spatial.scale_matrix(spatial.dot(r, r), eye) - r[..., :, None] * r[..., None, :], rx], -1)
    bottom = jnp.concatenate([-rx, eye], -1)
    return jnp.concatenate([top, bottom], -2)


def restitution_coefficient(stiffness, damping, mass) -> jax.Array:
    """Coefficient of restitution of the non-adhesive linear spring–dashpot (module docstring;
    Schwager & Pöschel 2007) for a point of ``mass`` with the ideal law (onset ``w → 0``).
    Works elementwise on arrays, with NaN-free gradients away from ``β = ω₀`` exactly."""
    k, c, m = (jnp.asarray(x) for x in (stiffness, damping, mass))
    k, c, m = jnp.broadcast_arrays(*(x.astype(jnp.result_type(k, c, m, 1.0)) for x in (k, c, m)))
    w0_sq = k / m
    beta = c / (2.0 * m)
    gap = w0_sq - beta * beta
    critical = jnp.abs(gap) <= 1e-12 * w0_sq
    under = (gap > 0) & ~critical
    over = (gap < 0) & ~critical
    omega = jnp.sqrt(jnp.where(under, gap, 1.0))
    phase = jnp.pi - jnp.arctan2(2.0 * beta * omega, omega * omega - beta * beta)
    big = jnp.sqrt(jnp.where(over, -gap, 1.0))
    log_over = jnp.log(jnp.where(over, (beta + big) / jnp.where(over, beta - big, 1.0), 1.0))
    exponent = jnp.where(under, beta / omega * phase, jnp.where(over, beta / big * log_over, 2.0))
    return jnp.exp(-exponent)


__all__ = ["ContactTerms", "GroundContact", "PointForces", "contact_terms", "point_forces",
           "restitution_coefficient"]
