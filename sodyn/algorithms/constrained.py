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

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms import operational_space as osm
from sodyn.algorithms.articulated import (
    body_frames,
    forward_dynamics,
    inverse_times,
    riccati_and_innovations,
)
from sodyn.algorithms.common import check_state, prepare
from sodyn.algorithms.kinematics import forward_kinematics, frame_jacobians, frame_motions
from sodyn.constraints import LoopClosures
from sodyn.model import WORLD, Model
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
    """The closures at ``(q, v)`` (internal): ``residual`` ``𝔡`` ``(n_c,)``, ``Q`` ``(n_c, T, 6)``
    (rows ← the task frames' local spatial velocities), ``jacobian`` ``G_c = Q J``
    ``(n_c, nv)``, ``bias`` ``Ġ_c θ̇`` ``(n_c,)`` and the task frames (static)."""

    residual: jax.Array
    Q: jax.Array
    jacobian: jax.Array
    bias: jax.Array
    tasks: tuple[int, ...]


def _task_frames(model: Model, closures: LoopClosures) -> tuple[int, ...]:
    """The distinct frames on moving bodies that the closures involve (static)."""
    frames = set()
    for f in closures.frame1 + closures.frame2:
        if f != WORLD and int(model.frame_body[f]) >= 0:
            frames.add(int(f))
    return tuple(sorted(frames))


def _side(model: Model, fk, vf, af, tasks, frames, anchors, dtype):
    """Per closure, one side's world rotation ``R``, anchor position ``p_a``, the map ``S =
    R[−ã, I]`` (anchor velocity in world axes ← local spatial velocity), the anchor's classical
    velocity and acceleration at ``θ̈ = 0`` and the angular acceleration (world axes), and the task index
    (``-1``: the side does not move)."""
    n = len(frames)
    f_idx = np.array([f if f != WORLD else 0 for f in frames], dtype=np.int64)
    is_world = np.array([f == WORLD for f in frames])
    eye = jnp.broadcast_to(jnp.eye(3, dtype=dtype), (n, 3, 3))
    rot = jnp.where(jnp.asarray(is_world)[:, None, None], eye, fk.frame.rotation[f_idx])
    pos = jnp.where(jnp.asarray(is_world)[:, None], 0.0, fk.frame.translation[f_idx])
    t_idx = np.array([tasks.index(f) if f in tasks else -1 for f in frames], dtype=np.int64)
    moving = jnp.asarray(t_idx >= 0)[:, None]
    v = jnp.where(moving, vf[np.maximum(t_idx, 0)], 0.0) if len(tasks) else jnp.zeros((n, 6), dtype)
    a = jnp.where(moving, af[np.maximum(t_idx, 0)], 0.0) if len(tasks) else jnp.zeros((n, 6), dtype)
    w, u, wd, ud = v[:, :3], v[:, 3:], a[:, :3], a[:, 3:]
    point = pos + spatial.mv(rot, anchors)
    s = spatial.mm(rot, jnp.concatenate([-spatial.skew(anchors), eye], axis=-1))  # (n, 3, 6)
    u_a = u + spatial.cross(w, anchors)  # anchor velocity, frame axes
    acc = spatial.mv(rot, ud + spatial.cross(wd, anchors) + spatial.cross(w, u_a))
    return rot, point, s, spatial.mv(rot, u_a), acc, spatial.mv(rot, wd), t_idx


def closure_rows(model: Model, q, v, closures: LoopClosures) -> ClosureRows:
    """``𝔡``, ``Q``, ``G_c`` and ``Ġ_c θ̇`` of ``closures`` at ``(q, v)`` (module docstring)."""
    dtype = q.dtype
    tasks = _task_frames(model, closures)
    fk = forward_kinematics(model, q)
    if tasks:
        vf, af = frame_motions(model, q, v, None, list(tasks))  # local; af = J̇ θ̇
        jac = frame_jacobians(model, q, list(tasks), "local")  # (T, 6, nv)
    else:
        vf = af = jac = None
    r1, p1, s1, vel1, acc1, wd1, t1 = _side(model, fk, vf, af, tasks, closures.frame1, closures.anchor1, dtype)
    r2, p2, s2, vel2, acc2, wd2, t2 = _side(model, fk, vf, af, tasks, closures.frame2, closures.anchor2, dtype)
    n_t = max(len(tasks), 1)
    zero_rot = jnp.zeros((len(closures), 3, 3), dtype)
    ang1 = jnp.concatenate([r1, zero_rot], axis=-1)  # R [I, 0]
    ang2 = jnp.concatenate([r2, zero_rot], axis=-1)
    d = p1 - p2
    res, rows_q, bias = [], [], []
    def blocks(i, b1, b2):  # a side's rows at its task's columns (frame 2 negated)
        out = jnp.zeros((b1.shape[0], n_t, 6), dtype)
        if t1[i] >= 0:
            out = out.at[:, t1[i]].add(b1)
        if t2[i] >= 0:
            out = out.at[:, t2[i]].add(-b2)
        return out

    for i, kind in enumerate(closures.kind):
        place = functools.partial(blocks, i)

        point_bias = acc1[i] - acc2[i]
        if kind == "point":
            res.append(d[i])
            rows_q.append(place(s1[i], s2[i]))
            bias.append(point_bias)
        elif kind == "weld":
            err = spatial.mm(r1[i], spatial.mm(spatial.transpose(closures.rotation[i]), spatial.transpose(r2[i])))
            res.append(jnp.concatenate([spatial.quat_log(spatial.rotation_to_quat(err)), d[i]]))
            rows_q.append(jnp.concatenate([place(ang1[i], ang2[i]), place(s1[i], s2[i])]))
            bias.append(jnp.concatenate([wd1[i] - wd2[i], point_bias]))
        else:  # distance: |d| − d0, rows nᵀ (point rows); 𝔡̈ = nᵀ d̈ + (|ḋ|² − (nᵀḋ)²)/|d|
            length = spatial.safe_norm(d[i])
            safe = jnp.where(length > 0, length, 1.0)
            n = d[i] / safe
            dv = vel1[i] - vel2[i]
            res.append((length - closures.length[i])[None])
            rows_q.append(jnp.tensordot(n, place(s1[i], s2[i]), axes=1)[None])
            bias.append((jnp.dot(n, point_bias) + (jnp.dot(dv, dv) - jnp.dot(n, dv) ** 2) / safe)[None])
    big_q = jnp.concatenate(rows_q)  # (n_c, T, 6)
    g = jnp.zeros((big_q.shape[0], model.nv), dtype) if jac is None else jnp.tensordot(big_q, jac, axes=2)
    return ClosureRows(jnp.concatenate(res), big_q, g, jnp.concatenate(bias), tasks)


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
    Cholesky factor (a small dense solve outside the recursions)."""
    n = a.shape[0]
    factor = jax.scipy.linalg.cho_factor(a + rho * jnp.eye(n, dtype=a.dtype), lower=True)
    return jax.lax.fori_loop(0, iterations, lambda _, lam: jax.scipy.linalg.cho_solve(factor, rhs + rho * lam),
                             jnp.zeros_like(rhs))


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
    rows = closure_rows(model, q, v, constraints)
    g = rows.jacobian
    if acceleration_target is None:
        target = -rows.bias - alpha * (g @ v) - beta * rows.residual
    if method == "projected":
        qdd, lam, gen = _projected(model, q, v, tau, f_ext, g, target)
    else:
        qdd, lam, gen = _augmented(model, q, v, tau, f_ext, rows, target, regularization, iterations, added_inertia)
    return qdd, ConstraintForces(lam, gen, rows.residual, g @ v, g @ qdd - target)


def _augmented(model, q, v, tau, f_ext, rows: ClosureRows, target, regularization, iterations, added):
    dtype = q.dtype
    g = rows.jacobian
    n_c = g.shape[0]
    a_free = forward_dynamics(model, q, v, tau, f_ext, added_inertia=added)
    if added is None:  # Λ⁻¹ of the frames by the Ω recursions, then Q Λ⁻¹ Q*
        tasks = osm.resolve_tasks(model, [osm.FrameTask(f) for f in rows.tasks])
        sw = osm.task_sweeps(model, q, tasks, with_psi=not osm._tasks_share_their_body(model, tasks))
        comp = osm._compliance_from_sweeps(model, tasks, sw)  # (6T, 6T), local axes
        big_q = rows.Q.reshape((n_c, -1))
        a = big_q @ comp @ big_q.T
        frames = body_frames(model, sw.levels)
        minv_times = lambda x: inverse_times(model, frames, sw.abi, x)  # noqa: E731
    else:  # (𝓜 + Σ J* B J)⁻¹ G_c* column by column on the Riccati quantities of that system
        topo = model.topology
        frames = body_frames(model, prepare(model, q))
        zero = dofs_to_levels(topo, jnp.zeros(model.nv, dtype), 0.0)
        added_levels = to_levels(topo, jnp.asarray(added, dtype), jnp.zeros((6, 6), dtype))
        _, ab = riccati_and_innovations(model, frames, zero, added=added_levels)
        minv_gt = jax.vmap(lambda x: inverse_times(model, frames, ab, x), out_axes=1)(g)  # (nv, n_c)
        a = g @ minv_gt
        minv_times = lambda x: minv_gt @ x  # noqa: E731  (x = λ here)
    a = 0.5 * (a + a.T)
    eps = (1e-10 if dtype == jnp.float64 else 1e-5) if regularization is None else regularization
    rho = jnp.asarray(eps, dtype) * jnp.trace(a) / n_c
    rho = jnp.where(rho > 0, rho, jnp.asarray(eps, dtype))
    lam = _proximal_solve(a, -(g @ a_free - target), rho, iterations)
    gen = g.T @ lam
    qdd = a_free + (minv_times(gen) if added is None else minv_times(lam))
    return qdd, lam, gen


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
