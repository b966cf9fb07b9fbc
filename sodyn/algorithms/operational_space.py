"""Operational-space dynamics (Jain Ch. 10; GTF §6.2): ``Λ⁻¹``, ``Λ``, ``J̄``, the task-space bias.

For tasks (:mod:`sodyn.algorithms.tasks`) with the Jacobian ``J = B* φ* H*`` (eq. 10.1), the
*operational-space compliance* and *inertia* are (eqs. 10.5, 10.6)

    Λ⁻¹ = J 𝓜⁻¹ J* = B* Ω B,        Λ = (J 𝓜⁻¹ J*)⁻¹,

``Ω`` the extended operational-space compliance (10.11)–(10.13), whose blocks the Ω recursions
give (Lemma 10.1, eqs. 10.16–10.18; :mod:`sodyn.algorithms.operational_space_sweeps`) in
``O(n · T + T²)`` without forming ``𝓜`` or ``𝓜⁻¹``.  With Khatib's dynamically consistent
generalized inverse ``J̄ = 𝓜⁻¹ J* Λ``, the task-space equations of motion of
``𝓜 θ̈ + C = J* F`` are (eq. 10.8 at ``T = 0``)

    Λ ẍ + (μ + p) = F,        μ + p = J̄* C − Λ J̇ v,

``C`` the bias forces of :func:`sodyn.bias_forces`.  ``𝓜⁻¹ J*`` comes from the same sweeps
(one more scatter, ``O(n · m)``); the final solve for ``Λ`` is ``O(m³)`` with ``m = Σ dim_t``
(closed form for ``m = 1, 3, 6``).  When all tasks on one tree sit on one body (a single
end-effector task, say), ``Λ⁻¹`` and ``Λ`` cost the Riccati gather and the Υ scatter alone.
Rows of ``Λ`` follow the task order, each task contributing ``dim`` rows (angular first for
6D tasks).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.common import check_vector
from sodyn.algorithms.operational_space_sweeps import (
    compliance_from_sweeps,
    minv_jt_from_sweeps,
    task_sweeps,
)
from sodyn.algorithms.tasks import (
    resolve_call,
    stacked_task_jacobian,
    stacked_task_jdot_v,
    tasks_share_their_body,
)
from sodyn.model import Model
from sodyn.runtime.precision import full_precision


def operational_space_compliance(model: Model, q, tasks) -> jax.Array:
    """``Λ⁻¹ = J 𝓜⁻¹ J*`` ``(m, m)`` for one or several task frames (Jain eqs. 10.13–10.18).

    Computed by the Ω recursions (Υ scatter, Ψ gather, nearest-common-ancestor blocks; see
    :mod:`sodyn.algorithms.operational_space_sweeps`) in ``O(n · T + T²)``, without forming 𝓜
    or 𝓜⁻¹.  Always defined (positive semi-definite); singular where the tasks are.
    """
    q, tasks = resolve_call(model, q, tasks)
    sw = task_sweeps(model, q, tasks, with_psi=not tasks_share_their_body(model, tasks))
    return compliance_from_sweeps(model, tasks, sw)


def _regularized_inverse(a: jax.Array, regularization) -> jax.Array:
    """``(A + λ I)⁻¹`` of a symmetric PSD ``A`` (differentiable): closed form for the common sizes
    1, 3 and 6 (one point or frame task; :func:`sodyn.spatial.spd_inverse`, no LAPACK call, so
    :func:`sodyn.batch` may split it across CPU cores), otherwise by Cholesky."""
    lam = jnp.asarray(regularization, a.dtype)
    a = a + lam * jnp.eye(a.shape[0], dtype=a.dtype)
    if a.shape[0] in (1, 3, 6):
        return spatial.spd_inverse(a)
    c = jax.scipy.linalg.cho_factor(a, lower=True)
    inv = jax.scipy.linalg.cho_solve(c, jnp.eye(a.shape[0], dtype=a.dtype))
    return 0.5 * (inv + inv.T)


def operational_space_inertia(model: Model, q, tasks, regularization=0.0) -> jax.Array:
    """Operational-space inertia ``Λ = (J 𝓜⁻¹ J*)⁻¹`` ``(m, m)`` (Jain eq. 10.6).

    ``regularization = λ ≥ 0`` returns the damped inverse ``Λ_λ = (Λ⁻¹ + λ I)⁻¹`` (Tikhonov /
    damped least squares in task space): it equals ``Λ`` for ``λ = 0``, stays finite and
    smooth (its eigenvalues are at most ``1/λ``) at kinematic singularities and for redundant
    tasks (``rank J < m``), and is differentiable in ``q``, the model and ``λ``.  ``λ`` has the
    units of a compliance (1/kg for point tasks); mixed 6D tasks share one ``λ`` for both rows
    kinds.  The inverse is closed-form for m = 1, 3, 6 and a Cholesky solve otherwise, of the
    ``Λ⁻¹`` of :func:`operational_space_compliance`.

    Singular ``Λ⁻¹``: where ``Λ⁻¹ + λ I`` is singular to working precision (a kinematic
    singularity or redundant tasks with ``λ = 0``, e.g. UR5 or Panda at ``q = 0`` for a 6D
    frame task) the result is all NaN, never a finite but meaningless (indefinite, ~1/eps)
    matrix: detect it with ``jnp.isnan(Λ).any()`` and use ``λ > 0`` there.  The test is on the
    pivots ``d_k`` of the ``L D Lᵀ`` factorisation of ``A = Λ⁻¹ + λ I`` (:func:`ldl_pivots`):
    singular when some ``d_k ≤ 8 m ε A_kk`` (``ε`` the dtype's epsilon; the pivot relative to
    its own diagonal, so rows of different units are compared fairly; a rank-deficient PSD
    matrix has ``d_k`` at the round-off level, of either sign).
    """
    a = operational_space_compliance(model, q, tasks)
    lam = _regularized_inverse(a, regularization)
    shifted = a + jnp.asarray(regularization, a.dtype) * jnp.eye(a.shape[0], dtype=a.dtype)
    return jnp.where(singular_to_working_precision(shifted), jnp.nan, lam)


def ldl_pivots(a: jax.Array) -> jax.Array:
    """Pivots ``d`` ``(m,)`` of ``A = L D Lᵀ`` (``L`` unit lower triangular) of a symmetric ``A``
    without pivoting: unrolled scalar recurrences for ``m ≤ 12`` (no LAPACK call), else the
    squared diagonal of a Cholesky factor (NaN where ``A`` is not positive definite)."""
    m = a.shape[-1]
    if m > 12:
        return jnp.diagonal(jnp.linalg.cholesky(a), axis1=-2, axis2=-1) ** 2
    low: dict[tuple[int, int], jax.Array] = {}
    d: list[jax.Array] = []
    for j in range(m):
        d.append(a[..., j, j] - sum((low[j, k] ** 2 * d[k] for k in range(j)), jnp.zeros((), a.dtype)))
        for i in range(j + 1, m):
            low[i, j] = (a[..., i, j] - sum((low[i, k] * low[j, k] * d[k] for k in range(j)),
                                            jnp.zeros((), a.dtype))) / d[j]
    return jnp.stack(d, axis=-1)


def singular_to_working_precision(a: jax.Array) -> jax.Array:
    """Whether a symmetric PSD ``A`` ``(m, m)`` is singular in its dtype: a pivot ``d_k`` of its
    ``L D Lᵀ`` not above ``8 m ε A_kk``, or a non-finite one (:func:`operational_space_inertia`)."""
    m = a.shape[-1]
    pivots = ldl_pivots(jax.lax.stop_gradient(a))
    diag = jnp.diagonal(jax.lax.stop_gradient(a), axis1=-2, axis2=-1)
    tol = 8 * m * jnp.finfo(a.dtype).eps
    return jnp.any(~(pivots > tol * jnp.abs(diag)), axis=-1)


class OperationalSpaceDynamics(NamedTuple):
    """Result of :func:`operational_space_dynamics` (rows follow the task order).

    ``jacobian`` ``J`` (m, nv); ``compliance`` ``Λ⁻¹``; ``inertia`` ``Λ`` (regularized as
    requested); ``minv_jt`` ``𝓜⁻¹J*`` (nv, m); ``jbar`` the dynamically consistent generalized
    inverse ``J̄ = 𝓜⁻¹ J* Λ`` (nv, m); ``bias`` the task-space bias force ``μ + p = J̄* C − Λ J̇ v``
    (Coriolis/centrifugal and gravity, with damping and ``f_ext`` if ``C`` includes them);
    ``jdot_v`` ``J̇ v`` (the task acceleration at zero joint acceleration); ``task_velocity``
    ``J v``.
    """

    jacobian: jax.Array
    compliance: jax.Array
    inertia: jax.Array
    minv_jt: jax.Array
    jbar: jax.Array
    bias: jax.Array
    jdot_v: jax.Array
    task_velocity: jax.Array


@full_precision
def dynamically_consistent_inverse(model: Model, q, tasks, regularization=0.0) -> jax.Array:
    """``J̄ = 𝓜⁻¹ J* Λ`` ``(nv, m)`` (Khatib's dynamically consistent generalized inverse).

    ``𝓜⁻¹ J*`` comes from the acceleration scatter on the gathered Ψ (O(n · m)), ``Λ`` from
    :func:`operational_space_inertia` with the same ``regularization``.
    """
    q, tasks = resolve_call(model, q, tasks)
    sw = task_sweeps(model, q, tasks)
    lam = _regularized_inverse(compliance_from_sweeps(model, tasks, sw), regularization)
    return minv_jt_from_sweeps(model, tasks, sw) @ lam


def operational_space_bias(model: Model, q, v, tasks, regularization=0.0, f_ext=None) -> jax.Array:
    """Task-space bias force ``μ + p = J̄* C − Λ J̇ v`` ``(m,)`` (Jain's ``C_os`` at ``T = 0``, eq. 10.8).

    ``C = sodyn.bias_forces(model, q, v, f_ext)`` (Coriolis, centrifugal, gravity, damping,
    ``−f_ext``).  With it the task-space equation of motion is ``Λ ẍ + (μ + p) = F`` for
    joint torques ``τ = J* F`` (plus torques in the dynamically consistent null space).
    """
    return operational_space_dynamics(model, q, v, tasks, regularization, f_ext).bias


@full_precision
def operational_space_dynamics(model: Model, q, v, tasks, regularization=0.0, f_ext=None) -> OperationalSpaceDynamics:
    """All operational-space quantities at once, sharing one set of sweeps."""
    from sodyn.algorithms.inverse_dynamics import bias_forces

    q, tasks = resolve_call(model, q, tasks)
    v = check_vector(model, v, model.nv, "v", q.dtype)
    sw = task_sweeps(model, q, tasks)
    jac = stacked_task_jacobian(model, q, tasks, sw.task_rotation)
    comp = compliance_from_sweeps(model, tasks, sw)
    lam = _regularized_inverse(comp, regularization)
    minv_jt = minv_jt_from_sweeps(model, tasks, sw)
    jbar = minv_jt @ lam
    c = bias_forces(model, q, v, f_ext)
    jdv = stacked_task_jdot_v(model, q, v, tasks, sw.task_rotation)
    bias = jbar.T @ c - lam @ jdv
    return OperationalSpaceDynamics(jac, comp, lam, minv_jt, jbar, bias, jdv, jac @ v)


__all__ = [
    "OperationalSpaceDynamics",
    "dynamically_consistent_inverse",
    "ldl_pivots",
    "operational_space_bias",
    "operational_space_compliance",
    "operational_space_dynamics",
    "operational_space_inertia",
    "singular_to_working_precision",
]
