"""Closed-chain forward dynamics: the tree plus loop closures (Jain Ch. 11).

With the closures' rows ``𝔡(θ) = 0`` (:class:`~sodyn.constraints.LoopClosures`, world axes),
their Jacobian ``G_c`` (``𝔡̇ = G_c θ̇``) and ``G_c θ̈ = 𝔘́`` the acceleration they must have, the
equations of motion are (eq. 11.6)

    𝓜 θ̈ + C = T + G_c* λ,        G_c θ̈ = 𝔘́.

``λ`` is the wrench the closure applies to frame 1 (world axes, at ``anchor1``; frame 2 gets
its opposite) and ``G_c* λ`` the joint-space constraint force.

**Augmented method** (Lemma 11.2, Alg. 11.2; the default).  With the node Jacobian ``J`` of
the closures' frames (local 6D rows, ``J = B* φ* H*``) the rows are ``G_c = Q J``, ``Q`` the
small ``n_c × 6T`` map from the frames' spatial velocities to the rows (for a point ``a`` of a
frame with world rotation ``R``: ``R [−ã, I]``; for angular rows ``R [I, 0]``; frame 2's
blocks negated; a distance row is ``nᵀ`` times its point rows).  Then

    θ̈_f = 𝓜⁻¹ (T − C)                                  (articulated-body FD, O(N))
    𝔡̈_f = G_c θ̈_f + Ġ_c θ̇ − φ̈*                         (free-motion constraint error)
    [Q Λ⁻¹ Q*] λ = −𝔡̈_f,        Λ⁻¹ = J 𝓜⁻¹ J* = B* Ω B   (Ω recursions, eqs. 10.11–10.18)
    θ̈ = θ̈_f + 𝓜⁻¹ G_c* λ                              (innovations sweeps, Lemma 7.5, O(N))

``Λ⁻¹`` of the ``T`` distinct frames comes from :mod:`~sodyn.algorithms.operational_space`
(Υ scatter, Ψ gather, nearest-common-ancestor blocks) and ``𝓜⁻¹ G_c* λ`` from one
innovations gather and one acceleration scatter on the same Riccati quantities, so a call
costs O(N · T + T²) plus the ``n_c × n_c`` solve; 𝓜 is never formed or factored.  The small
dense solve is a proximal-point iteration (as Pinocchio's ``ProximalSettings``): with ``A =
Q Λ⁻¹ Q*`` and ``ρ > 0``,

    (A + ρ I) λ_{k+1} = −𝔡̈_f + ρ λ_k,        λ_0 = 0,

a fixed number of steps (``iterations``) on one Cholesky factor.  For independent rows it
converges to ``A⁻¹(−𝔡̈_f)`` geometrically (factor ``ρ/(σ + ρ)`` per step along an eigenvalue
``σ`` of ``A``).  Redundant rows (a 3D point closing a planar four-bar: ``A`` singular) stay
finite: along ``range A`` it converges to the minimum-norm solution, so ``θ̈`` is the
least-squares one (``G_c θ̈`` is the projection of ``𝔘́`` on ``range G_c``); along ``null A =
null G_c*`` the iterate moves by ``−k 𝔡̈_f,null / ρ`` (zero when the rows are consistent, as
they are for exactly redundant closures), which produces no force: ``G_c* λ`` and ``θ̈`` do not
depend on it.  ``ρ = ε · tr(A)/n_c`` with ``ε = regularization`` (default ``1e-10`` in float64,
``1e-5`` in float32).

**Projected method** (eqs. 11.31–11.36, Alg. 11.3; dense, the test oracle): ``X_c`` spans
``null G_c`` (here the orthogonal projector ``P = X_c X_c*`` from an SVD of ``G_c``),
``θ̈_p = G_c⁺ 𝔘́`` and ``P 𝓜 P θ̈_r = P (T − C − 𝓜 θ̈_p)``, ``θ̈ = θ̈_p + θ̈_r``.  Singular values
below ``√ε_mach · σ_max`` count as zero.  It forms 𝓜 (O(N³)); its gradient through the SVD is
not meant for use.

**Stabilization.** Integrating ``G_c θ̈ = −Ġ_c θ̇`` lets ``𝔡`` drift.  Baumgarte's target
``φ̈* = −α 𝔡̇ − β 𝔡`` makes the closure error obey ``𝔡̈ + α 𝔡̇ + β 𝔡 = 0``, so
``𝔘́ = −Ġ_c θ̇ − α G_c θ̇ − β 𝔡``.  ``stabilization=(α, β)`` (1/s, 1/s²); the default
(20, 100) is critically damped at 10 rad/s.  ``acceleration_target`` sets ``𝔘́`` directly
instead (a rheonomic closure, or a time stepper's own target: see
:mod:`sodyn.simulate.stepping`).

The weld's orientation row is ``log(R₁ Rᵀ R₂ᵀ)`` (rotation vector, world axes) and the
distance row ``|p_a − p_b| − d``; their velocity rows are exact at ``𝔡 = 0``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.articulated import accelerations, body_frames, riccati_and_innovation_columns
from sodyn.algorithms.common import Levels, check_state, model_params, prepare
from sodyn.algorithms.kinematics import PosesAndMotions, poses_and_motions_levels, world_subspace_columns
from sodyn.constraints import LoopClosures
from sodyn.model import WORLD, Model
from sodyn.runtime.tuning import FORWARD_UNROLL, SMALL_SOLVE
from sodyn.static_index import spread_sum, take
from sodyn.topology import dofs_to_levels, to_levels

METHODS: tuple[str, ...] = ("augmented", "projected")
DEFAULT_STABILIZATION: tuple[float, float] = (20.0, 100.0)


class ConstraintForces(NamedTuple):
    """What :func:`constrained_forward_dynamics` returns beside ``θ̈``.

    ``lambda_`` ``(n_c,)``: the closures' wrenches on frame 1 (world axes, rows as in
    :func:`constraint_residual`); ``generalized`` ``(nv,)``: ``G_c* λ``, the joint-space
    constraint force; ``residual`` ``(n_c,)``: the position error ``𝔡(θ)``;
    ``velocity_residual``: ``G_c θ̇``; ``acceleration_residual``: ``G_c θ̈ − 𝔘́``, what the solve
    leaves (zero up to round-off for consistent rows).
    """

    lambda_: jax.Array
    generalized: jax.Array
    residual: jax.Array
    velocity_residual: jax.Array
    acceleration_residual: jax.Array


# ---------------------------------------------------------------------------
# the closures' kinematics
# ---------------------------------------------------------------------------


class ClosureRows(NamedTuple):
    """The closures at ``(q, v)`` (internal): ``residual`` ``𝔡`` ``(n_c,)``, ``jacobian`` ``G_c``
    ``(n_c, nv)`` and ``bias`` ``Ġ_c θ̇`` ``(n_c,)``, all in world axes."""

    residual: jax.Array
    jacobian: jax.Array
    bias: jax.Array


class _Side(NamedTuple):
    """Frame 1 or frame 2 of each closure ``(n, ...)``, on its body ``b``: ``R`` the body's world
    rotation, ``R_f`` the frame's, ``r`` the anchor in the body frame, ``p_a`` its world position,
    ``ω`` the body's angular velocity and ``u_a = u + ω × r`` the anchor's velocity (body axes).
    The world is a body at rest at the origin.  ``slot``: the body's slot (static; ``W`` for the
    world)."""

    slot: np.ndarray
    rotation: jax.Array
    frame_rotation: jax.Array
    anchor: jax.Array
    point: jax.Array
    omega: jax.Array
    velocity: jax.Array


def _at_bodies(topo, x: jax.Array, slot: np.ndarray, world) -> jax.Array:
    """``(1, W, ...)`` values at the static slots ``slot`` (``W`` reads the world's value)."""
    flat = x.reshape((topo.width,) + x.shape[2:])
    return take(jnp.concatenate([flat, jnp.asarray(world, x.dtype)[None]]), slot)


def _side(model: Model, pm: PosesAndMotions, frames, anchors) -> _Side:
    topo = model.topology
    dtype = pm.translation.dtype
    fr = np.array([f if f != WORLD else 0 for f in frames], dtype=np.int64)
    body = np.array([int(model.frame_body[f]) if f != WORLD else -1 for f in frames], dtype=np.int64)
    moving = jnp.asarray(body >= 0)
    m = model_params(model, dtype)
    r_bf = jnp.where(moving[:, None, None], m.frame_rotation[fr], jnp.eye(3, dtype=dtype))
    p_bf = jnp.where(moving[:, None], m.frame_translation[fr], 0.0)
    slot = np.where(body >= 0, topo.body_flat[np.maximum(body, 0)], topo.width)
    rot = _at_bodies(topo, pm.rotation, slot, np.eye(3))
    vel = _at_bodies(topo, pm.velocity, slot, np.zeros(6))
    r = p_bf + spatial.mv(r_bf, anchors)
    w = vel[:, :3]
    return _Side(slot, rot, spatial.mm(rot, r_bf), r, _at_bodies(topo, pm.translation, slot, np.zeros(3))
                 + spatial.mv(rot, r), w, vel[:, 3:] + spatial.cross(w, r))


class _RowTerms(NamedTuple):
    """Per row of the closures (world axes): ``residual`` ``𝔡``; ``velocity`` ``G_c θ̇``;
    ``classical`` the part of ``Ġ_c θ̇`` that is not a work rate on the bodies' spatial
    accelerations (``ω × ṗ`` terms); ``wrench1``, ``wrench2`` ``(n_c, 6)`` each row as a wrench
    on side 1's and side 2's body (body frame), so that ``G_c θ̈ + Ġ_c θ̇ = w₁* α(b₁) − w₂* α(b₂) +
    classical``; ``slot1``, ``slot2`` (static) their bodies' slots."""

    residual: jax.Array
    velocity: jax.Array
    classical: jax.Array
    wrench1: jax.Array
    wrench2: jax.Array
    slot1: np.ndarray
    slot2: np.ndarray


def _row_terms(model: Model, closures: LoopClosures, pm: PosesAndMotions) -> _RowTerms:
    """The :class:`_RowTerms` from the bodies' poses and velocities.  A point row along the world
    axis ``e`` is the force ``Rᵀe`` at the anchor ``r``, the wrench ``[r × Rᵀe; Rᵀe]`` (so
    ``w* α = eᵀ R (u̇ + ω̇ × r)``, with classical part ``eᵀ R (ω × u_a)``); an angular row the
    moment ``[Rᵀe; 0]`` (``ω̇`` in world axes is ``R ω̇``: no classical part); a distance row the
    point rows along ``n = d/|d|``, plus ``(|ḋ|² − (nᵀḋ)²)/|d|``."""
    s1 = _side(model, pm, closures.frame1, closures.anchor1)
    s2 = _side(model, pm, closures.frame2, closures.anchor2)

    def point_wrenches(s):  # (n, 3, 6): rows [r × Rᵀe_i; Rᵀe_i]
        rt = spatial.transpose(s.rotation)
        return jnp.concatenate([spatial.transpose(spatial.mm(spatial.skew(s.anchor), rt)), s.rotation], axis=-1)

    def moment_wrenches(s):  # (n, 3, 6): rows [Rᵀe_i; 0]
        return jnp.concatenate([s.rotation, jnp.zeros_like(s.rotation)], axis=-1)

    p1, p2 = point_wrenches(s1), point_wrenches(s2)
    d = s1.point - s2.point
    dv = spatial.mv(s1.rotation, s1.velocity) - spatial.mv(s2.rotation, s2.velocity)
    cl = (spatial.mv(s1.rotation, spatial.cross(s1.omega, s1.velocity))
          - spatial.mv(s2.rotation, spatial.cross(s2.omega, s2.velocity)))
    res, vel, classical, w1, w2, rows = [], [], [], [], [], []
    for i, kind in enumerate(closures.kind):
        if kind == "weld":
            err = spatial.mm(s1.frame_rotation[i], spatial.mm(spatial.transpose(closures.rotation[i]),
                                                               spatial.transpose(s2.frame_rotation[i])))
            res += [spatial.quat_log(spatial.rotation_to_quat(err)), d[i]]
            vel += [spatial.mv(s1.rotation[i], s1.omega[i]) - spatial.mv(s2.rotation[i], s2.omega[i]), dv[i]]
            classical += [jnp.zeros(3, d.dtype), cl[i]]
            w1 += [moment_wrenches(s1)[i], p1[i]]
            w2 += [moment_wrenches(s2)[i], p2[i]]
            rows += [i] * 6
        elif kind == "point":
            res.append(d[i])
            vel.append(dv[i])
            classical.append(cl[i])
            w1.append(p1[i])
            w2.append(p2[i])
            rows += [i] * 3
        else:
            length = spatial.safe_norm(d[i])
            safe = jnp.where(length > 0, length, 1.0)
            n = d[i] / safe
            ndv = jnp.dot(n, dv[i])
            res.append((length - closures.length[i])[None])
            vel.append(ndv[None])
            classical.append((jnp.dot(n, cl[i]) + (jnp.dot(dv[i], dv[i]) - ndv ** 2) / safe)[None])
            w1.append((n @ p1[i])[None])
            w2.append((n @ p2[i])[None])
            rows.append(i)
    rows = np.asarray(rows, dtype=np.int64)
    cat = jnp.concatenate
    return _RowTerms(cat(res), cat(vel), cat(classical), cat(w1), cat(w2), s1.slot[rows], s2.slot[rows])


def _body_wrench_columns(topo, terms: _RowTerms) -> jax.Array:
    """``(1, W, n_c, 6)``: each row's wrenches placed on its bodies' slots, ``w₁`` on body 1 and
    ``−w₂`` on body 2 (``G_c* e_c = J₁* w₁ − J₂* w₂``)."""
    n_c = terms.wrench1.shape[0]
    entries, target = [], []
    for w, slot, sign in ((terms.wrench1, terms.slot1, 1.0), (terms.wrench2, terms.slot2, -1.0)):
        keep = np.flatnonzero(slot < topo.width)
        if keep.size:
            entries.append(sign * take(w, keep))
            target.append(slot[keep] * n_c + keep)
    out = spread_sum(jnp.concatenate(entries), np.concatenate(target), topo.width * n_c)
    return out.reshape((1, topo.width, n_c, 6))


def _spatial_bias(model: Model, terms: _RowTerms, acceleration: jax.Array) -> jax.Array:
    """``w₁* α(b₁) − w₂* α(b₂)`` at ``θ̈ = 0`` (``acceleration`` ``(1, W, 6)``): with ``classical``
    the bias ``Ġ_c θ̇``."""
    topo = model.topology
    a1 = _at_bodies(topo, acceleration, terms.slot1, np.zeros(6))
    a2 = _at_bodies(topo, acceleration, terms.slot2, np.zeros(6))
    return spatial.dot(terms.wrench1, a1) - spatial.dot(terms.wrench2, a2)


def _jacobian(model: Model, levels: Levels, pm: PosesAndMotions, terms: _RowTerms) -> jax.Array:
    """``G_c`` ``(n_c, nv)``: the row wrenches moved to the world origin (world axes) against each
    joint axis there (:func:`~sodyn.algorithms.kinematics.world_subspace_columns`), where the
    axis supports the body."""
    topo = model.topology
    cols = world_subspace_columns(model, levels, pm.rotation, pm.translation)  # (nv, 6)
    g = 0.0
    for w, slot, sign in ((terms.wrench1, terms.slot1, 1.0), (terms.wrench2, terms.slot2, -1.0)):
        rot = _at_bodies(topo, pm.rotation, slot, np.eye(3))
        pos = _at_bodies(topo, pm.translation, slot, np.zeros(3))
        f = spatial.mv(rot, w[:, 3:])
        world = jnp.concatenate([spatial.mv(rot, w[:, :3]) + spatial.cross(pos, f), f], axis=-1)
        support = np.zeros((len(slot), topo.nv))
        moving = slot < topo.width
        support[moving] = topo.support[topo.body_slot[0, slot[moving]]]
        g = g + sign * (world @ cols.T) * jnp.asarray(support, cols.dtype)
    return g


def _poses_and_motions(model: Model, q, v, with_acceleration: bool = True) -> tuple[Levels, PosesAndMotions]:
    levels = prepare(model, q)
    return levels, poses_and_motions_levels(levels, model.topology, dofs_to_levels(model.topology, v, 0.0),
                                            FORWARD_UNROLL, with_acceleration)


def closure_rows(model: Model, q, v, closures: LoopClosures) -> ClosureRows:
    """``𝔡``, ``G_c`` and ``Ġ_c θ̇`` of ``closures`` at ``(q, v)`` (module docstring), from one
    kinematics scatter."""
    levels, pm = _poses_and_motions(model, q, v)
    terms = _row_terms(model, closures, pm)
    return ClosureRows(terms.residual, _jacobian(model, levels, pm, terms),
                       _spatial_bias(model, terms, pm.acceleration) + terms.classical)


def constraint_residual(model: Model, q, closures: LoopClosures) -> jax.Array:
    """The closures' position error ``𝔡(θ)`` ``(n_c,)`` (world axes; per weld ``[rotation
    vector; position]``, per point the position, per distance the length error)."""
    q = _check_q(model, q)
    return closure_rows(model, q, jnp.zeros(model.nv, q.dtype), closures).residual


def constraint_jacobian(model: Model, q, closures: LoopClosures) -> jax.Array:
    """The closures' Jacobian ``G_c`` ``(n_c, nv)`` (``𝔡̇ = G_c θ̇``, world axes)."""
    q = _check_q(model, q)
    return closure_rows(model, q, jnp.zeros(model.nv, q.dtype), closures).jacobian


# ---------------------------------------------------------------------------
# forward dynamics
# ---------------------------------------------------------------------------


def _check_q(model: Model, q) -> jax.Array:
    from sodyn.algorithms.common import check_vector

    return check_vector(model, q, model.nq, "q")


def _check_closures(model: Model, closures) -> None:
    if not isinstance(closures, LoopClosures):
        raise ValueError(f"constraints must be sodyn.LoopClosures (LoopClosures.point/weld/distance or "
                         f"LoopClosures.from_equality), got {type(closures).__name__}")
    for f in closures.frame1 + closures.frame2:
        if f != WORLD and not 0 <= f < model.n_frames:
            raise ValueError(f"constraint frame index {f} out of range for model {model.name!r} "
                             f"({model.n_frames} frames): were the closures built for another model?")


def _proximal_solve(a: jax.Array, rhs: jax.Array, rho: jax.Array, iterations: int) -> jax.Array:
    """``iterations`` proximal-point steps ``(A + ρI) λ⁺ = rhs + ρ λ`` from ``λ = 0`` on one
    Cholesky factor (a small dense solve outside the recursions): unrolled in closed form up to
    :data:`SMALL_SOLVE` rows, by LAPACK beyond."""
    n = a.shape[0]
    a = a + rho * jnp.eye(n, dtype=a.dtype)
    if n > SMALL_SOLVE:
        factor = jax.scipy.linalg.cho_factor(a, lower=True)
        return jax.lax.fori_loop(0, iterations, lambda _, lam: jax.scipy.linalg.cho_solve(factor, rhs + rho * lam),
                                 jnp.zeros_like(rhs))
    low, inv_diag = _cholesky(a)
    b = spatial.unstack(rhs, 0)
    lam = _cholesky_solve(low, inv_diag, b)
    for _ in range(iterations - 1):
        lam = _cholesky_solve(low, inv_diag, [bi + rho * li for bi, li in zip(b, lam)])
    return jnp.stack(lam)


def _cholesky(a: jax.Array) -> tuple[list[list[jax.Array]], list[jax.Array]]:
    """``A = L Lᵀ`` entry by entry (``L[i][j]``, ``j < i``) and ``1 / L[i][i]``, for a small ``A``."""
    n = a.shape[0]
    e = [spatial.unstack(row, 0) for row in spatial.unstack(a, 0)]
    low: list[list[jax.Array]] = [[] for _ in range(n)]
    inv_diag = []
    for j in range(n):
        d = e[j][j] - sum((low[j][k] ** 2 for k in range(j)), jnp.zeros((), a.dtype))
        inv_diag.append(jax.lax.rsqrt(d))
        for i in range(j + 1, n):
            low[i].append((e[i][j] - sum((low[i][k] * low[j][k] for k in range(j)), jnp.zeros((), a.dtype)))
                          * inv_diag[j])
    return low, inv_diag


def _cholesky_solve(low, inv_diag, b: list[jax.Array]) -> list[jax.Array]:
    """``(L Lᵀ)⁻¹ b`` by forward and back substitution on :func:`_cholesky`'s factor."""
    n = len(b)
    y: list[jax.Array] = []
    for i in range(n):
        y.append((b[i] - sum((low[i][k] * y[k] for k in range(i)), jnp.zeros_like(b[i]))) * inv_diag[i])
    x: list[jax.Array] = [None] * n  # type: ignore[list-item]
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - sum((low[k][i] * x[k] for k in range(i + 1, n)), jnp.zeros_like(b[i]))) * inv_diag[i]
    return x


def _stabilization(stabilization, dtype) -> tuple[jax.Array, jax.Array]:
    gains = DEFAULT_STABILIZATION if stabilization is None else stabilization
    try:
        alpha, beta = gains
    except (TypeError, ValueError):
        raise ValueError(f"stabilization must be a pair (alpha, beta), got {stabilization!r}") from None
    return jnp.asarray(alpha, dtype), jnp.asarray(beta, dtype)


def constrained_forward_dynamics(
    model: Model, q, v, tau, constraints: LoopClosures, *, method: str = "augmented", f_ext=None,
    stabilization: tuple[float, float] | None = None, acceleration_target=None, regularization: float | None = None,
    iterations: int = 8, added_inertia=None,
) -> tuple[jax.Array, ConstraintForces]:
    """Joint accelerations ``θ̈`` ``(nv,)`` of the tree closed by ``constraints`` (Jain Ch. 11),
    and the :class:`ConstraintForces`.

    ``method="augmented"`` (default): O(N) tree dynamics plus the operational-space
    compliance of the closures' frames (Lemma 11.2, Alg. 11.2); ``"projected"``: the dense
    projected equations (Alg. 11.3).  See the module docstring for both, the proximal solve
    (``regularization``, ``iterations``) and the Baumgarte ``stabilization = (α, β)``
    (default ``(20, 100)``).  ``acceleration_target`` ``(n_c,)`` prescribes ``G_c θ̈``
    instead.  ``f_ext``, damping and armature enter as in :func:`sodyn.forward_dynamics`;
    ``added_inertia`` ``B`` ``(n_bodies, 6, 6)`` (augmented only) solves with
    ``𝓜 + Σ J_k* B_k J_k`` as that function does, its compliance then by ``n_c`` innovations
    sweeps (``𝓜⁻¹ G_c*``, O(N · n_c)).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    _check_closures(model, constraints)
    if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 1:
        raise ValueError(f"iterations must be a positive integer, got {iterations!r}")
    if method == "projected" and added_inertia is not None:
        raise ValueError("added_inertia is supported by method='augmented' only")
    q, v, tau, f_ext = check_state(model, q, v, tau, "tau", f_ext)
    dtype = q.dtype
    if acceleration_target is None:
        alpha, beta = _stabilization(stabilization, dtype)
    else:
        target = jnp.asarray(acceleration_target, dtype)
        if target.shape != (constraints.n_rows,):
            raise ValueError(f"acceleration_target must have shape (n_c,) = ({constraints.n_rows},), "
                             f"got {target.shape}")
    levels, pm = _poses_and_motions(model, q, v, with_acceleration=acceleration_target is not None
                                    or method == "projected")
    terms = _row_terms(model, constraints, pm)
    if acceleration_target is None:  # G_c θ̈ − 𝔘́ = 𝔡̈ + α G_c θ̇ + β 𝔡
        offset = terms.classical + alpha * terms.velocity + beta * terms.residual
    else:
        offset = -_spatial_bias(model, terms, pm.acceleration) - target
    g = _jacobian(model, levels, pm, terms)
    if method == "projected":
        bias = _spatial_bias(model, terms, pm.acceleration) + terms.classical
        if acceleration_target is None:
            target = -bias - alpha * terms.velocity - beta * terms.residual
        qdd, lam, gen = _projected(model, q, v, tau, f_ext, g, target)
        error = g @ qdd - target
    else:
        qdd, lam, error = _augmented(model, levels, pm, v, tau, f_ext, terms, offset, regularization, iterations,
                                     added_inertia)
        gen = g.T @ lam
    return qdd, ConstraintForces(lam, gen, terms.residual, terms.velocity, error)


def _augmented(model: Model, levels: Levels, pm: PosesAndMotions, v, tau, f_ext, terms: _RowTerms, offset,
               regularization, iterations: int, added):
    """Lemma 11.1 with one gather and one scatter.  The gather carries, beside the articulated
    inertias and the innovations ``ν_f`` of ``T − C``, the rows' wrenches as ``n_c`` columns of
    body forces, whose innovations ``ν_c`` give ``A = G_c 𝓜⁻¹ G_c*`` and
    ``G_c θ̈_f + (w₁* α₀(b₁) − w₂* α₀(b₂))`` (:func:`~sodyn.algorithms.articulated.riccati_and_innovation_columns`);
    ``offset`` completes the latter to ``G_c θ̈_f − 𝔘́``.  After the solve for ``λ`` the scatter
    runs once, on ``ν_f + ν_c λ``.  Gravity enters as the bodies' weights (``b(k) += M(k)
    φ*(0, k) [0; −g]``, added inertias included) instead of an acceleration of the world, so
    the scatter starts from rest.  Returns ``θ̈``, ``λ`` and ``G_c θ̈ − 𝔘́``."""
    topo = model.topology
    dtype = pm.translation.dtype
    m = model_params(model, dtype)
    frames = body_frames(model, levels)
    vel = pm.velocity
    down = spatial.mtv(pm.rotation, -m.gravity)  # the world's acceleration −g in each body frame
    world = jnp.concatenate([jnp.zeros_like(down), down], axis=-1)
    bias = spatial.force_cross(vel, spatial.apply_inertia(*frames.inertia, vel))
    bias = bias + spatial.apply_inertia(*frames.inertia, world)
    if f_ext is not None:
        bias = bias - to_levels(topo, f_ext, jnp.zeros(6, dtype))
    if added is not None:  # B_k accelerates with the world too
        added = to_levels(topo, jnp.asarray(added, dtype), jnp.zeros((6, 6), dtype))
        bias = bias + spatial.mv(added, world)
    t_blocks = dofs_to_levels(topo, tau - m.damping * v, 0.0)
    nus, cols, ab = riccati_and_innovation_columns(model, frames, t_blocks, _body_wrench_columns(topo, terms),
                                                   pm.coriolis, bias, FORWARD_UNROLL, added)
    a = 0.5 * (cols.gram + cols.gram.T)  # G_c 𝓜⁻¹ G_c*
    n_c = a.shape[0]
    error = cols.work + offset  # G_c θ̈_f − 𝔘́
    eps = (1e-10 if dtype == jnp.float64 else 1e-5) if regularization is None else regularization
    rho = jnp.asarray(eps, dtype) * jnp.trace(a) / n_c
    rho = jnp.where(rho > 0, rho, jnp.asarray(eps, dtype))
    lam = _proximal_solve(a, -error, rho, iterations)
    nus = [nu + spatial.mtv(nc, lam) for nu, nc in zip(nus, cols.nu)]  # ν_f + ν_c λ
    qdd = accelerations(model, frames, ab, nus, jnp.zeros(6, dtype), pm.coriolis, FORWARD_UNROLL)
    return qdd, lam, error + a @ lam


def _projected(model, q, v, tau, f_ext, g, target):
    from sodyn.algorithms.inverse_dynamics import bias_forces
    from sodyn.algorithms.mass_matrix import mass_matrix

    dtype = q.dtype
    nv, n_c = model.nv, g.shape[0]
    m = mass_matrix(model, q)
    c = bias_forces(model, q, v, f_ext)
    u, s, vt = jnp.linalg.svd(g, full_matrices=True)
    k = min(n_c, nv)
    tol = jnp.sqrt(jnp.finfo(dtype).eps) * jnp.max(s)
    keep = s[:k] > tol
    s_inv = jnp.where(keep, 1.0 / jnp.where(keep, s[:k], 1.0), 0.0)
    g_pinv = vt[:k].T @ (s_inv[:, None] * u[:, :k].T)  # (nv, n_c)
    null = jnp.concatenate([~keep, jnp.ones(nv - k, bool)]).astype(dtype)
    proj = vt.T @ (null[:, None] * vt)  # X_c X_c*, (nv, nv)
    qdd_p = g_pinv @ target
    rhs = proj @ (tau - c - m @ qdd_p)
    lhs = proj @ m @ proj + (jnp.eye(nv, dtype=dtype) - proj)
    qdd = qdd_p + jnp.linalg.solve(lhs, rhs)
    gen = m @ qdd + c - tau  # G_c* λ
    return qdd, g_pinv.T @ gen, gen


__all__ = [
    "ClosureRows", "ConstraintForces", "DEFAULT_STABILIZATION", "METHODS", "closure_rows",
    "constrained_forward_dynamics", "constraint_jacobian", "constraint_residual",
]
