"""Closed-chain forward dynamics: the tree plus loop closures (Jain Ch. 11).

With the closures' rows ``𝔡(θ) = 0`` (:class:`~sodyn.constraints.LoopClosures`, world axes),
their Jacobian ``G_c`` (``𝔡̇ = G_c θ̇``) and ``G_c θ̈ = 𝔘́`` the acceleration they must have, the
equations of motion are (eq. 11.6)

    𝓜 θ̈ + C = T + G_c* λ,        G_c θ̈ = 𝔘́.

``λ`` is the wrench the closure applies to frame 1 (world axes, at ``anchor1``; frame 2 gets
its opposite) and ``G_c* λ`` the joint-space constraint force.  A joint coupling's ``λ`` is the
force on joint 1's coordinate (its row ``e_{i₁}ᵀ − p′ e_{i₂}ᵀ`` is already in joint space).

**Augmented method** (Lemma 11.1, Alg. 11.1; the default):

    θ̈_f = 𝓜⁻¹ (T − C)                                  (articulated-body FD, O(N))
    [G_c 𝓜⁻¹ G_c*] λ = −(G_c θ̈_f − 𝔘́)
    θ̈ = θ̈_f + 𝓜⁻¹ G_c* λ.

Everything runs in world axes about one point ``o`` fixed in space (the first body's origin
at this instant), where every ``φ`` between bodies is the identity.  One kinematics scatter
gives the bodies' poses, velocities ``V`` and accelerations at ``θ̈ = 0`` (``α₀``, the world
accelerating by ``−g``) there, hence ``𝔡``, ``G_c θ̇``, ``Ġ_c θ̇`` and the columns of ``G_c*``
(each row a wrench about ``o`` — ``[p_a × e; e]`` for a point row along ``e``, ``[e; 0]`` for
an angular row, ``nᵀ`` times the point rows for a distance — against the joint axes there, on
the bodies' ancestors; frame 2's negated; a joint coupling's column is its row itself:
:mod:`sodyn.algorithms.constraint_rows`).  One Riccati/innovations gather (Alg. 7.1, 7.2)
then carries the ``n_c`` columns of ``G_c*`` beside ``T − C``: with ``N = D⁻¹ [I − HψK]``,
``𝓜⁻¹ = N* D N`` (Lemma 7.5), so ``G_c 𝓜⁻¹ G_c* = Σ_k ε_c* ν_c`` and ``G_c θ̈_f =
Σ_k ε_c* ν_f`` come out of the gather (``ε = D ν``), with no acceleration scatter per column
(the ``columns`` of :func:`~sodyn.algorithms.articulated.articulated_gather`); in world axes the
columns pass from body to parent untransformed.  The velocity terms ride in the bias forces,
``b̃ = V ×* M V − f_ext + M (α₀ + 𝔤)``, so the one acceleration scatter, run after the solve
on ``ν_f + ν_c λ``, starts from rest.  A call costs ``O(N · n_c)`` plus the ``n_c × n_c``
solve; 𝓜 is never formed or factored.  The small dense solve is a proximal-point iteration
(as Pinocchio's ``ProximalSettings``): with ``A = G_c 𝓜⁻¹ G_c*``, ``𝔡̈_f = G_c θ̈_f − 𝔘́``
and ``ρ > 0``,

    (A + ρ I) λ_{k+1} = −𝔡̈_f + ρ λ_k,        λ_0 = 0,

a fixed number of steps (``iterations``) on one Cholesky factor (formed, with its inverse,
entry by entry for up to :data:`~sodyn.runtime.tuning.SMALL_SOLVE` rows; by LAPACK beyond).
For independent rows it converges to ``A⁻¹(−𝔡̈_f)`` geometrically (factor ``ρ/(σ + ρ)`` per
step along an eigenvalue ``σ`` of ``A``).  Redundant rows (a 3D point closing a planar four-bar: ``A`` singular) stay
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
distance row ``|p_a − p_b| − d``; their velocity rows are exact at ``𝔡 = 0``.  A joint
coupling's row is ``q[i₁] − q0₁ − p(q[i₂] − q0₂)``, its velocity row exact everywhere.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.articulated import accelerations, articulated_gather
from sodyn.algorithms.common import check_state, model_params, passive_joint_force
from sodyn.algorithms.constraint_rows import Motions, jacobian_from_columns, motions, row_terms
from sodyn.algorithms.conventions import world_frames_at
from sodyn.constraints import LoopClosures, check_coupled_joint
from sodyn.contraction import contract
from sodyn.model import WORLD, Model
from sodyn.runtime.precision import full_precision
from sodyn.runtime.tuning import FORWARD_UNROLL, SMALL_SOLVE
from sodyn.topology import dofs_to_levels, to_levels

METHODS: tuple[str, ...] = ("augmented", "projected")
DEFAULT_STABILIZATION: tuple[float, float] = (20.0, 100.0)


class ConstraintForces(NamedTuple):
    """What :func:`constrained_forward_dynamics` returns beside ``θ̈``.

    ``lambda_`` ``(n_c,)``: the closures' wrenches on frame 1 (world axes, rows as in
    :func:`constraint_residual`; a joint coupling's force on joint 1's coordinate);
    ``generalized`` ``(nv,)``: ``G_c* λ``, the joint-space constraint force; ``residual``
    ``(n_c,)``: the position error ``𝔡(θ)``; ``velocity_residual``: ``G_c θ̇``;
    ``acceleration_residual``: ``G_c θ̈ − 𝔘́``, what the solve leaves (zero up to round-off for
    consistent rows).
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
    ``(n_c, nv)`` and ``bias`` ``Ġ_c θ̇`` ``(n_c,)``, in the closures' order; world axes for
    closures between frames, joint space for joint couplings."""

    residual: jax.Array
    jacobian: jax.Array
    bias: jax.Array


def closure_rows(model: Model, q, v, closures: LoopClosures) -> ClosureRows:
    """``𝔡``, ``G_c`` and ``Ġ_c θ̇`` of ``closures`` at ``(q, v)`` (module docstring), from one
    kinematics scatter (none for joint couplings alone; :mod:`sodyn.algorithms.constraint_rows`)."""
    terms = row_terms(model, closures, q, v)
    return ClosureRows(terms.residual, jacobian_from_columns(model, terms.columns), terms.bias)


def constraint_residual(model: Model, q, closures: LoopClosures) -> jax.Array:
    """The closures' position error ``𝔡(θ)`` ``(n_c,)`` in their order (world axes; per weld
    ``[rotation vector; position]``, per point the position, per distance the length error,
    per joint coupling ``q[i₁] − q0₁ − p(q[i₂] − q0₂)``)."""
    q = _check_q(model, q)
    return closure_rows(model, q, jnp.zeros(model.nv, q.dtype), closures).residual


def constraint_jacobian(model: Model, q, closures: LoopClosures) -> jax.Array:
    """The closures' Jacobian ``G_c`` ``(n_c, nv)`` (``𝔡̇ = G_c θ̇``; world axes, a joint
    coupling's row ``e_{i₁}ᵀ − p′(q[i₂] − q0₂) e_{i₂}ᵀ``)."""
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
        raise ValueError(f"constraints must be sodyn.LoopClosures (LoopClosures.point/weld/distance/joint_coupling or "
                         f"LoopClosures.from_equality), got {type(closures).__name__}")
    for f in closures.frame1 + closures.frame2:
        if f != WORLD and not 0 <= f < model.n_frames:
            raise ValueError(f"constraint frame index {f} out of range for model {model.name!r} "
                             f"({model.n_frames} frames): were the closures built for another model?")
    for j in closures.joint1 + closures.joint2:
        if j >= 0:
            check_coupled_joint(model, j, "were the closures built for another model?")


def _proximal_solve(a: jax.Array, rhs: jax.Array, rho: jax.Array, iterations: int) -> jax.Array:
    """``iterations`` proximal-point steps ``(A + ρI) λ⁺ = rhs + ρ λ`` from ``λ = 0`` on one
    Cholesky factor ``A + ρI = L Lᵀ`` (a small dense solve outside the recursions).  Up to
    :data:`~sodyn.runtime.tuning.SMALL_SOLVE` rows the factor and ``L⁻¹`` are formed entry by
    entry, then ``W = (A + ρI)⁻¹ = L⁻ᵀ L⁻¹`` once, so each step is one product
    ``λ⁺ = W (rhs + ρ λ)``; larger systems use LAPACK."""
    n = a.shape[0]
    a = a + rho * jnp.eye(n, dtype=a.dtype)
    if n > SMALL_SOLVE:
        factor = jax.scipy.linalg.cho_factor(a, lower=True)
        return jax.lax.fori_loop(0, iterations, lambda _, lam: jax.scipy.linalg.cho_solve(factor, rhs + rho * lam),
                                 jnp.zeros_like(rhs))
    x = _cholesky_inverse(a)
    if iterations == 1:
        return spatial.mtv(x, spatial.mv(x, rhs))
    w = contract("...ki,...kj->...ij", x, x)  # (A + ρI)⁻¹ = L⁻ᵀ L⁻¹
    lam = spatial.mv(w, rhs)
    for _ in range(iterations - 1):
        lam = spatial.mv(w, rhs + rho * lam)
    return lam


def _cholesky_inverse(a: jax.Array) -> jax.Array:
    """``L⁻¹`` ``(n, n)`` for ``A = L Lᵀ`` (``L`` lower triangular), entry by entry for a small ``A``:
    ``L_jj = √(A_jj − Σ_k L_jk²)``, ``L_ij = (A_ij − Σ_k L_ik L_jk) / L_jj`` (``k < j``), then
    ``X = L⁻¹`` by forward substitution, ``X_jj = 1 / L_jj``, ``X_ij = −(Σ_{j≤k<i} L_ik X_kj) / L_ii``."""
    n = a.shape[0]
    e = [spatial.unstack(row, 0) for row in spatial.unstack(a, 0)]
    low = [[None] * n for _ in range(n)]
    for j in range(n):
        d = e[j][j]
        for k in range(j):
            d = d - low[j][k] ** 2
        low[j][j] = jnp.sqrt(d)
        for i in range(j + 1, n):
            t = e[i][j]
            for k in range(j):
                t = t - low[i][k] * low[j][k]
            low[i][j] = t / low[j][j]
    x = [[jnp.zeros((), a.dtype)] * n for _ in range(n)]
    for j in range(n):
        x[j][j] = 1.0 / low[j][j]
        for i in range(j + 1, n):
            t = low[i][j] * x[j][j]
            for k in range(j + 1, i):
                t = t + low[i][k] * x[k][j]
            x[i][j] = -t / low[i][i]
    return jnp.stack([jnp.stack(row) for row in x])


def _stabilization(stabilization, dtype) -> tuple[jax.Array, jax.Array]:
    gains = DEFAULT_STABILIZATION if stabilization is None else stabilization
    try:
        alpha, beta = gains
    except (TypeError, ValueError):
        raise ValueError(f"stabilization must be a pair (alpha, beta), got {stabilization!r}") from None
    return jnp.asarray(alpha, dtype), jnp.asarray(beta, dtype)


@full_precision
def constrained_forward_dynamics(
    model: Model, q, v, tau, constraints: LoopClosures, *, method: str = "augmented", f_ext=None,
    stabilization: tuple[float, float] | None = None, acceleration_target=None, regularization: float | None = None,
    iterations: int = 8, added_inertia=None,
) -> tuple[jax.Array, ConstraintForces]:
    """Joint accelerations ``θ̈`` ``(nv,)`` of the tree closed by ``constraints`` (Jain Ch. 11),
    and the :class:`ConstraintForces`.

    ``method="augmented"`` (default): the tree's articulated-body sweeps carrying the
    ``n_c`` columns of ``G_c*``, O(N · n_c) (Lemma 11.1, Alg. 11.1); ``"projected"``: the dense
    projected equations (Alg. 11.3).  See the module docstring for both, the proximal solve
    (``regularization``, ``iterations``) and the Baumgarte ``stabilization = (α, β)``
    (default ``(20, 100)``).  ``acceleration_target`` ``(n_c,)`` prescribes ``G_c θ̈``
    instead.  ``f_ext``, damping and armature enter as in :func:`sodyn.forward_dynamics`;
    ``added_inertia`` ``B`` ``(n_bodies, 6, 6)`` (augmented only) solves with
    ``𝓜 + Σ J_k* B_k J_k`` (and ``B_k`` accelerating with the world) as that function does.
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
    mo = motions(model, q, v)
    terms = row_terms(model, constraints, q, v, mo)
    columns = terms.columns
    g = jacobian_from_columns(model, columns)
    if acceleration_target is None:
        target = -terms.bias - alpha * terms.velocity - beta * terms.residual
    if method == "projected":
        qdd, lam, gen = _projected(model, q, v, tau, f_ext, g, target)
        error = g @ qdd - target
    else:
        qdd, lam, error = _augmented(model, mo, v, tau, f_ext, columns, -target, regularization, iterations,
                                     added_inertia)
        gen = spatial.mtv(g, lam)
    return qdd, ConstraintForces(lam, gen, terms.residual, terms.velocity, error)


def _augmented(model: Model, mo: Motions, v, tau, f_ext, columns, offset, regularization, iterations: int,
               added):
    """Lemma 11.1 with one gather and one scatter.

    In world axes about ``o`` (:class:`~sodyn.algorithms.constraint_rows.Motions`; ``f_ext``
    and ``B`` carried there from the body frames).  With the bodies' accelerations ``α = α̃ + α₀ + 𝔤`` split into ``α̃``
    (``α̃(℘) + H* θ̈``, no velocity terms), ``α₀`` (``θ̈ = 0``, from the kinematics scatter) and
    the world's ``−g``, the tree's equations ``(M + B) α + b = …`` are those of a tree without
    velocity terms and with bias forces ``b̃ = b + (M + B)(α₀ + 𝔤)``, ``b = V ×* M V − f_ext``.
    The gather on them carries the columns of ``G_c*`` beside ``T − C`` and gives
    ``A = G_c 𝓜⁻¹ G_c*`` and ``G_c θ̈_f``
    (the ``columns`` of :func:`~sodyn.algorithms.articulated.articulated_gather`); ``offset = −𝔘́``.
    After the solve for ``λ`` the scatter runs once, on ``ν_f + ν_c λ``.
    Returns ``θ̈``, ``λ`` and ``G_c θ̈ − 𝔘́``."""
    topo = model.topology
    kin = mo.kin
    dtype = kin.translation.dtype
    m = model_params(model, dtype)
    frames = world_frames_at(model, kin.rotation, kin.translation, kin.axes)
    vel, acc = kin.velocity, mo.acceleration  # acc: α₀ + 𝔤
    bias = spatial.force_cross(vel, spatial.apply_inertia(*frames.inertia, vel))
    bias = bias + spatial.apply_inertia(*frames.inertia, acc)
    if f_ext is not None:  # body frames to the world's
        f_local = to_levels(topo, f_ext, jnp.zeros(6, dtype))
        bias = bias - spatial.force_to_parent(kin.rotation, kin.translation, f_local)
    if added is not None:
        added = to_levels(topo, jnp.asarray(added, dtype), jnp.zeros((6, 6), dtype))
        added = spatial.inertia_to_parent(kin.rotation, kin.translation, added)
        bias = bias + spatial.mv(added, acc)
    t_blocks = dofs_to_levels(topo, tau - passive_joint_force(m, v), 0.0)
    g = articulated_gather(model, frames, t_blocks, bias=bias, added=added, columns=columns, unroll=FORWARD_UNROLL)
    nus, cols, ab = g.nu, g.columns, g.factors
    a = 0.5 * (cols.gram + cols.gram.T)  # G_c 𝓜⁻¹ G_c*
    n_c = a.shape[0]
    error = cols.work + offset  # G_c θ̈_f − 𝔘́
    eps = (1e-10 if dtype == jnp.float64 else 1e-5) if regularization is None else regularization
    rho = jnp.asarray(eps, dtype) * jnp.trace(a) / n_c
    rho = jnp.where(rho > 0, rho, jnp.asarray(eps, dtype))
    lam = _proximal_solve(a, -error, rho, iterations)
    nus = [nu + spatial.mtv(nc, lam) for nu, nc in zip(nus, cols.nu)]  # ν_f + ν_c λ
    qdd = accelerations(model, frames, ab, nus, jnp.zeros(6, dtype), None, FORWARD_UNROLL)
    return qdd, lam, error + spatial.mv(a, lam)


@full_precision
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
