"""Hybrid (prescribed-motion) dynamics and the under-actuated Jacobians (Jain Ch. 16).

Each dof is either *prescribed*, its acceleration ``θ̈_a`` given and its force ``T_a``
unknown (Jain's "active" dofs), or *free*, its force ``T_p`` given and its acceleration
``θ̈_p`` unknown ("passive").  With ``𝓜`` partitioned accordingly, the equations of motion
``𝓜 θ̈ + C = T`` give (eqs. 16.2–16.5)

    [T_a; θ̈_p] = [[S_aa, S_ap], [−S_ap*, S_pp]] [θ̈_a; T_p − C_p] + [C_a; 0],
    S_pp = 𝓜_pp⁻¹,   S_ap = 𝓜_ap 𝓜_pp⁻¹,   S_aa = 𝓜_aa − 𝓜_ap 𝓜_pp⁻¹ 𝓜_pa,

which the articulated-body recursions of the *passive arm* (the prescribed dofs locked)
solve in O(N) without forming 𝓜 (Lemma 16.2).  Tips to base, one gather fusing the
passive-arm Riccati recursion (Alg. 16.1) and the innovations (Alg. 16.2, step 1):

    P(k) = M(k) + Σ_c φ(k, c) P⁺(c) φ*(k, c),     ẑ(k) = b(k) + Σ_c φ(k, c) z⁺(c)
    D_p(k) = H_p P H_p* (+ armature),   G_p = P H_p* D_p⁻¹,   P⁺(k) = P − G_p H_p P
    z(k) = ẑ(k) + P(k) a̲(k),   a̲(k) = a(k) + H_a*(k) θ̈_a(k)
    ε_p(k) = T_p(k) − H_p z(k),   ν_p = D_p⁻¹ ε_p,   z⁺(k) = z(k) + P H_p* ν_p

and base to tips, one scatter (Alg. 16.2, step 2, with the errata of the digest):

    α⁺(k) = φ*(℘(k), k) α(℘(k)),   θ̈_p(k) = ν_p(k) − G_p*(k) α⁺(k)
    α(k) = α⁺(k) + H*(k) θ̈(k) + a(k),   T(k) = H(k) f(k),   f(k) = P(k) α(k) + ẑ(k)

(``f(k) = P α⁺ + z`` of the book for a wholly prescribed joint, eq. 16.15c).  Here ``a`` and
``b`` are the velocity-dependent terms of :func:`~sodyn.algorithms.articulated.forward_dynamics`
(``b`` includes ``−f_ext``) and the world accelerates by ``−g``.  With every dof free this is
the articulated-body algorithm, with every dof prescribed ``P`` is the composite inertia and
the scatter is inverse dynamics.

**Mixed joints.**  The book takes each hinge to be wholly active or passive and splits mixed
ones.  Here the mask is per dof: a joint's free dofs ``H_p`` (rows of ``H``) and prescribed
dofs ``H_a`` both move the same body, so the derivation above holds row by row, with
``D_p`` the free dofs' block of the joint's ``D`` and ``ν``, ``G*`` zero on its prescribed
rows.  Locking is done by masking ``D⁻¹`` (:func:`~sodyn.algorithms.articulated.riccati_kernel`
with ``free``): the mask is static, so each slot's mask is a constant array and the program
is the same for every mask.  Armature enters ``D_p`` and ``T``, damping and the free joints'
linear-armature velocity force (:func:`~sodyn.algorithms.common.passive_joint_force`) ``T``, as in
:func:`~sodyn.algorithms.inverse_dynamics.inverse_dynamics`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.articulated import armature_blocks, articulated_gather
from sodyn.algorithms.common import (
    check_state,
    check_vector,
    gravity_acceleration,
    joint_motion,
    model_params,
    passive_joint_force,
    prepare,
)
from sodyn.algorithms.conventions import Frames, body_frames, forward_terms, pose_motion_to_child
from sodyn.algorithms.tasks import task_jacobian, task_jdot_v
from sodyn.model import Model
from sodyn.runtime.precision import full_precision
from sodyn.runtime.tuning import FORWARD_UNROLL
from sodyn.sweeps import Fields, scatter
from sodyn.topology import dofs_from_levels, dofs_to_levels


class HybridResult(NamedTuple):
    """The solution of the hybrid dynamics: every dof's acceleration ``a`` ``(nv,)`` (the
    given ``a_prescribed`` on prescribed dofs) and force ``tau`` ``(nv,)`` (the given
    ``tau_free`` on free dofs)."""

    a: jax.Array
    tau: jax.Array


class UnderactuatedJacobians(NamedTuple):
    """The under-actuated Jacobians of Jain §16.3 at zero velocity and free-dof force.

    ``generalized`` ``𝒥_G`` ``(m, n_a)``: task acceleration per unit prescribed acceleration
    (eq. 16.22), ``𝒥_G = 𝒥_a + 𝒥_p 𝒥_D`` (eq. 16.21); ``disturbance`` ``𝒥_D`` ``(n_p, n_a)``:
    free-dof accelerations per unit prescribed acceleration, ``𝒥_D = −S_ap* = −𝓜_pp⁻¹ 𝓜_pa``
    (eq. 16.23).  Columns follow the prescribed dofs, rows of ``𝒥_D`` the free dofs, each in
    increasing dof order.
    """

    generalized: jax.Array
    disturbance: jax.Array


def check_prescribed(model: Model, prescribed) -> np.ndarray:
    """``prescribed`` as a static boolean NumPy mask of shape ``(nv,)``, or a ValueError."""
    try:
        mask = np.asarray(prescribed)
    except jax.errors.TracerArrayConversionError:
        raise ValueError("prescribed must be a static boolean mask (a tuple or NumPy array of bools), "
                         "not a traced array: it fixes the structure of the recursion") from None
    if mask.dtype != np.bool_:
        raise ValueError(f"prescribed must be a boolean mask, got dtype {mask.dtype}")
    if mask.shape != (model.nv,):
        raise ValueError(f"prescribed must have shape (nv,) = ({model.nv},) for model {model.name!r}, "
                         f"got {mask.shape}")
    return mask


def _free_blocks(model: Model, mask: np.ndarray, dtype) -> list[np.ndarray]:
    """Per kernel the static ``(1, W_k, nv_k)`` 0/1 mask of free dofs (padding: free, so its
    ``D`` stays invertible)."""
    free = np.append(~mask, True).astype(dtype)
    return [free[vi] for vi in model.topology.v_index]


def hybrid_sweeps(model: Model, frames: Frames, mask: np.ndarray, t_blocks, qdd_blocks, coriolis, bias,
                  root_acceleration: jax.Array, unroll: int = 1) -> tuple[jax.Array, jax.Array]:
    """Jain Alg. 16.1 and 16.2 (module docstring): the fused passive-arm Riccati and
    innovations gather, then the acceleration and force scatter.

    ``t_blocks``: per kernel the free dofs' forces ``T_p`` (read on free dofs only);
    ``qdd_blocks``: the prescribed accelerations ``θ̈_a`` (zero on free dofs); ``coriolis``
    and ``bias`` the ``a`` and ``b`` terms ``(1, W, 6)`` (each zero if ``None``).  Returns
    ``θ̈`` and ``T = H f + armature ⊙ θ̈`` ``(nv,)``, on every dof.
    """
    topo = model.topology
    dtype = frames.inertia[0].dtype
    a_bar = joint_motion(frames.axes, qdd_blocks)
    a_bar = a_bar if coriolis is None else a_bar + coriolis
    g = articulated_gather(model, frames, t_blocks, coriolis=a_bar, bias=bias, free=_free_blocks(model, mask, dtype),
                           factors=("U", "G"), joint_bias=True, unroll=unroll)

    def kernel_step(kernel, a_plus, cor):
        k = kernel.x
        qdd = k.nu - spatial.mv(k.factors.G, a_plus) + k.qdd_a  # ν and G* vanish on prescribed dofs
        acc = a_plus + k.axes.times(qdd)
        acc = acc if cor is None else acc + cor
        return acc, (qdd, spatial.mv(k.factors.U, acc) + k.joint_bias + k.armature * qdd)  # T = H (P α + ẑ) + Iₐ θ̈

    def step(parent_acc, level):
        return level.each_kernel(kernel_step, pose_motion_to_child(level.x.pose, parent_acc), level.x.coriolis)

    kernel_xs = Fields(axes=frames.axes, armature=armature_blocks(model, dtype), factors=g.factors.kernels, nu=g.nu,
                       joint_bias=g.joint_bias, qdd_a=qdd_blocks)
    res = scatter(topo, step, root_acceleration, Fields(pose=frames.pose, coriolis=coriolis), kernel_xs,
                  unroll=unroll)
    return dofs_from_levels(topo, [r[0] for r in res]), dofs_from_levels(topo, [r[1] for r in res])


def hybrid_dynamics(model: Model, q, v, prescribed, a_prescribed, tau_free, f_ext=None) -> HybridResult:
    """Prescribed-motion (hybrid) dynamics in O(N) (Jain Lemma 16.2, Alg. 16.1 and 16.2).

    ``prescribed`` is a static boolean mask ``(nv,)`` (a tuple or NumPy array, not a traced
    value): ``True`` for a dof whose acceleration is given, read from ``a_prescribed``
    ``(nv,)``; ``False`` for a dof whose force is given, read from ``tau_free`` ``(nv,)``.
    The entries of each vector at the other dofs are ignored.  A joint's dofs may be mixed
    (module docstring).  ``f_ext`` ``(n_bodies, 6)``: external forces in body frames, as for
    :func:`sodyn.forward_dynamics`.

    Returns :class:`HybridResult`, the ``θ̈`` and ``τ`` with ``𝓜 θ̈ + C(q, v) = τ``
    (:func:`sodyn.mass_matrix`, :func:`sodyn.bias_forces`): with every dof prescribed ``τ``
    is :func:`sodyn.inverse_dynamics`, with none ``θ̈`` is :func:`sodyn.forward_dynamics`.
    Derivatives are those of the recursions (differentiated through the sweeps).
    """
    mask = check_prescribed(model, prescribed)
    q, v, a_prescribed, f_ext = check_state(model, q, v, a_prescribed, "a_prescribed", f_ext)
    tau_free = check_vector(model, tau_free, model.nv, "tau_free", q.dtype)
    dtype = q.dtype
    topo = model.topology
    m = model_params(model, dtype)
    pm = jnp.asarray(mask)
    passive = passive_joint_force(m, v)
    qdd_a = jnp.where(pm, a_prescribed, 0.0)
    t_p = jnp.where(pm, 0.0, tau_free - passive)
    frames, coriolis, bias = forward_terms(model, q, v, f_ext, "local", FORWARD_UNROLL)
    qdd, tau = hybrid_sweeps(model, frames, mask, dofs_to_levels(topo, t_p, 0.0), dofs_to_levels(topo, qdd_a, 0.0),
                             coriolis, bias, gravity_acceleration(m, dtype), FORWARD_UNROLL)
    return HybridResult(qdd, jnp.where(pm, tau + passive, tau_free))


def _acceleration_map(model: Model, q: jax.Array, mask: np.ndarray) -> jax.Array:
    """``∂θ̈/∂θ̈_a`` ``(nv, n_a)``: the columns of Jain Alg. 16.3, step 3 (``θ̇ = 0``, ``T_p = 0``,
    no gravity, ``θ̈_a = e_k``), all swept at once; the passive-arm Riccati quantities depend
    on ``q`` alone, so under ``vmap`` they are computed once."""
    topo = model.topology
    dtype = q.dtype
    active = np.flatnonzero(mask)
    frames = body_frames(model, prepare(model, q))
    t0 = dofs_to_levels(topo, jnp.zeros(model.nv, dtype), 0.0)

    def column(e):
        return hybrid_sweeps(model, frames, mask, t0, dofs_to_levels(topo, e, 0.0), None, None,
                             jnp.zeros(6, dtype))[0]

    units = jnp.asarray(np.eye(model.nv)[:, active], dtype)
    return jax.vmap(column, in_axes=1, out_axes=1)(units)


@full_precision
def underactuated_jacobians(model: Model, q, prescribed, tasks) -> UnderactuatedJacobians:
    """The generalized Jacobian ``𝒥_G`` and disturbance Jacobian ``𝒥_D`` of the tasks (Jain
    §16.3, Alg. 16.3) at ``q``, for the prescribed dofs ``prescribed`` (static ``(nv,)``
    boolean mask, as in :func:`hybrid_dynamics`) and ``tasks`` as in
    :func:`sodyn.task_jacobian`.

    Alg. 16.3: at ``θ̇ = 0`` and ``T_p = 0`` without gravity, the hybrid sweeps with
    ``θ̈_a = e_k`` give column ``k`` of ``𝒥_D`` (the free accelerations) and, through the
    task Jacobian ``𝒥``, of ``𝒥_G = 𝒥 [e_k; 𝒥_D e_k]`` (the task acceleration,
    ``𝔅*[ψ* − ΩP]H_a*``, eq. 16.22).  The Riccati gather is shared by the columns; the
    innovations and scatter run once per prescribed dof: O(N · n_a).
    """
    mask = check_prescribed(model, prescribed)
    q = check_vector(model, q, model.nq, "q")
    x = _acceleration_map(model, q, mask)
    return UnderactuatedJacobians(task_jacobian(model, q, tasks) @ x, x[np.flatnonzero(~mask)])


@full_precision
def underactuated_computed_torque(model: Model, q, v, prescribed, tasks, task_acceleration, tau_free,
                                  f_ext=None) -> HybridResult:
    """Computed torque for an under-actuated system (Jain Alg. 16.4): the prescribed
    accelerations that give the tasks the acceleration ``task_acceleration`` ``(m,)`` (the
    least-squares/minimum-norm one where ``𝒥_G`` is not square), and the resulting
    :class:`HybridResult`.

    The task acceleration is ``𝒥_G θ̈_a + ẍ₀``, with the drift ``ẍ₀ = 𝒥 θ̈₀ + 𝒥̇ θ̇`` from the
    hybrid dynamics at ``θ̈_a = 0`` (velocity, gravity and ``T_p`` terms).  Then
    ``θ̈_a = 𝒥_G⁺ (task_acceleration − ẍ₀)`` (a small dense pseudo-inverse, outside the
    recursions) and one more run of :func:`hybrid_dynamics` gives ``T_a`` and ``θ̈_p``.
    """
    mask = check_prescribed(model, prescribed)
    q, v, tau_free, f_ext = check_state(model, q, v, tau_free, "tau_free", f_ext)
    active = np.flatnonzero(mask)
    x = _acceleration_map(model, q, mask)
    jac = task_jacobian(model, q, tasks)
    target = check_vector(model, task_acceleration, jac.shape[0], "task_acceleration", q.dtype)
    zero = jnp.zeros(model.nv, q.dtype)
    drift = jac @ hybrid_dynamics(model, q, v, mask, zero, tau_free, f_ext).a + task_jdot_v(model, q, v, tasks)
    qdd_a = jnp.linalg.pinv(jac @ x) @ (target - drift)
    return hybrid_dynamics(model, q, v, mask, zero.at[active].set(qdd_a), tau_free, f_ext)


__all__ = [
    "HybridResult",
    "UnderactuatedJacobians",
    "hybrid_dynamics",
    "underactuated_computed_torque",
    "underactuated_jacobians",
]
