"""The articulated-body recursions (Jain Ch. 6–7, tree form §9.4): forward dynamics, ``𝓜⁻¹``,
``𝓜⁻¹ x``, ``log det 𝓜`` and the Riccati quantities the operational-space code builds on.

Riccati recursion (Alg. 7.1; one gather, tips to base), with ``U* = H P`` and ``G* = D⁻¹ U*``
kept as rows:

    P(k) = M(k) + Σ_{c ∈ children(k)} φ(k, c) P⁺(c) φ*(k, c)
    D(k) = H(k) P(k) H*(k) + armature(k),     P⁺(k) = P(k) − U(k) G*(k)

Innovations (Alg. 7.2, gather) and accelerations (Lemma 7.6, scatter):

    z(k) = P(k) a(k) + b(k) − f_ext(k) + Σ_c φ(k, c) z⁺(c)
    ε(k) = T(k) − H(k) z(k),   ν(k) = D⁻¹(k) ε(k),   z⁺(k) = z(k) + U(k) ν(k)
    α⁺(k) = φ*(℘(k), k) α(℘(k)),   θ̈(k) = ν(k) − G*(k) α⁺(k),   α(k) = α⁺(k) + H*(k) θ̈(k) + a(k)

Forward dynamics runs the first two fused in one gather, then the scatter.  With ``a = b = 0``
and ``T = x`` the innovations and accelerations give ``𝓜⁻¹ x = [I − HψK]* D⁻¹ [I − HψK] x``
(Lemma 7.5) in O(N) without forming 𝓜, and ``log det 𝓜 = Σ_k log det D(k)`` (Lemma 7.3).
``D``, ``ν`` and ``θ̈`` are joint-space quantities, the same in every frame.

**Conventions** (the ``convention`` argument, as Pinocchio's ``Convention``):

* ``"local"`` (default): each body's quantities in its own frame, with the ``φ`` of each level.
  Accurate in every precision.
* ``"world"``: every spatial quantity in world axes about one point fixed in space, the first
  body's origin (:func:`~sodyn.algorithms.kinematics.centred_world_poses_levels`).  There every
  ``φ(℘(k), k)`` is the identity: the gathers add what the children send and the scatter
  passes the parent's value on, with no 6 × 6 congruence per level; the joint axes ``H*_w``,
  the inertias ``M_w`` (Jain eqs. 2.6–2.8, entering the sweep as their ten parameters),
  velocities and bias terms are formed for all bodies outside it, after one more sweep for the
  world poses.  It can be faster in float64.  About one point, a light body far from it carries
  inertia terms of order ``m |r|²`` that cancel in its ``D``: in float32, a humanoid's gripper
  links a metre from the base lose two to three digits of ``𝓜⁻¹``, which body frames keep.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from sodyn import spatial
from sodyn.algorithms.common import (
    JointAxes,
    Levels,
    check_state,
    check_vector,
    gravity_acceleration,
    mass_parameter_levels,
    model_params,
    passive_joint_force,
    prepare,
)
from sodyn.algorithms.inverse_dynamics import unchecked_inverse_dynamics
from sodyn.algorithms.kinematics import (
    centred_world_poses_levels,
    velocities_levels,
    world_kinematics_levels,
    world_subspace_blocks,
)
from sodyn.contraction import contract
from sodyn.model import Model
from sodyn.runtime.tuning import FORWARD_UNROLL
from sodyn.sweeps import gather, in_slots, scatter
from sodyn.topology import Topology, dofs_from_levels, dofs_to_levels, from_levels, to_levels
from sodyn.unit_columns import sum_of_column_products

Convention = Literal["local", "world"]
CONVENTIONS: tuple[str, ...] = ("local", "world")

#: The name (:func:`jax.ad_checkpoint.checkpoint_name`) that forward dynamics gives, in its
#: derivative, to its acceleration and its Riccati quantities: what a rematerialised computation
#: keeps for its reverse pass (``jax.checkpoint(policy=save_only_these_names(FACTORS))``, as
#: :func:`sodyn.simulate.step` is), so that pass recomputes kinematics and force laws but not
#: the Riccati sweep.
FACTORS = "sodyn.forward_dynamics.factors"


# ---------------------------------------------------------------------------
# frames: what a convention changes
# ---------------------------------------------------------------------------


@functools.partial(jax.tree_util.register_dataclass, data_fields=["pose", "axes", "inertia"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class Frames:
    """The frames the recursions run in, per slot ``(1, W, ...)``.

    ``pose``: each body's ``(R, p)`` in its parent, the ``φ`` between levels (``None`` in world
    axes, where every ``φ`` is the identity); ``axes``: per kernel ``H*`` in those frames;
    ``inertia``: each body's inertia parameters ``(m, h, J)`` about its frame's point
    (:func:`sodyn.spatial.inertia_parameters`).
    """

    pose: tuple[jax.Array, jax.Array] | None
    axes: tuple[JointAxes, ...]
    inertia: tuple[jax.Array, jax.Array, jax.Array]


def pose_inertia_to_parent(pose, p: jax.Array) -> jax.Array:
    """``φ P φ*`` for a :class:`Frames` ``pose`` (the identity for ``None``: world axes)."""
    return p if pose is None else spatial.inertia_to_parent(*pose, p)


def pose_force_to_parent(pose, f: jax.Array) -> jax.Array:
    """``φ f`` for a :class:`Frames` ``pose`` (the identity for ``None``); ``f`` may carry
    columns after the slot axis."""
    if pose is None:
        return f
    r, p = pose
    extra = f.ndim - p.ndim  # columns carried per slot
    return spatial.force_to_parent(_expand_slots(r, extra), _expand_slots(p, extra), f)


def pose_motion_to_child(pose, m: jax.Array) -> jax.Array:
    """``φ* m`` for a :class:`Frames` ``pose`` (the identity for ``None``)."""
    return m if pose is None else spatial.motion_to_child(*pose, m)


def _expand_slots(x: jax.Array, n: int) -> jax.Array:
    """Axes of size one after the slot axis of a per-slot pose."""
    return x.reshape(x.shape[:1] + (1,) * n + x.shape[1:]) if n else x


def _check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")


def body_frames(model: Model, levels: Levels) -> Frames:
    """The ``"local"`` frames: body frames, the link transforms as ``φ``."""
    dtype = levels.rel_p.dtype
    params = spatial.inertia_parameters(*mass_parameter_levels(model, dtype))
    return Frames((levels.rel_r, levels.rel_p), levels.axes, params)


def world_frames(model: Model, levels: Levels) -> Frames:
    """The ``"world"`` frames: world axes about the first body's origin."""
    wr, wp = centred_world_poses_levels(levels, model.topology)
    return world_frames_at(model, wr, wp, world_subspace_blocks(model.topology, levels, wr, wp))


def world_frames_at(model: Model, wr: jax.Array, wp: jax.Array, axes: list[jax.Array]) -> Frames:
    """The ``"world"`` frames of bodies at the centred world poses ``(R_w, p_w)`` with world
    joint axes ``axes`` (per kernel, rows ``(1, W_k, nv_k, 6)``)."""
    params = spatial.world_inertia_parameters(*mass_parameter_levels(model, wp.dtype), wr, wp)
    return Frames(None, tuple(JointAxes("rows", rows=a) for a in axes), params)


def frames_for(model: Model, levels: Levels, convention: str) -> Frames:
    """The frames of ``convention`` (``"local"`` or ``"world"``)."""
    _check_convention(convention)
    return body_frames(model, levels) if convention == "local" else world_frames(model, levels)


# ---------------------------------------------------------------------------
# one slot's Riccati and innovations steps
# ---------------------------------------------------------------------------


class RiccatiKernel(NamedTuple):
    """One kernel's Riccati quantities: ``U* = H P`` and ``G* = D⁻¹ U*`` as rows
    ``(..., nv_k, 6)``, ``D`` and ``D⁻¹`` ``(..., nv_k, nv_k)``."""

    U: jax.Array
    D: jax.Array
    D_inv: jax.Array
    G: jax.Array


def riccati_kernel(p: jax.Array, axes: JointAxes, armature: jax.Array,
                   free: jax.Array | None = None) -> tuple[jax.Array, RiccatiKernel]:
    """``P⁺ = P − U G*`` and the kernel's :class:`RiccatiKernel` (Jain Alg. 7.1).

    ``free`` ``(..., nv_k)`` (0 or 1, or ``None`` for all 1) marks the dofs whose acceleration
    the recursion solves for; the others are locked, as the active hinges of Jain Alg. 16.1.
    ``D⁻¹`` is then the inverse ``D_p⁻¹`` of the free dofs' block ``D_p = H_p P H_p*``
    embedded with zeros, so ``G* = D⁻¹ U*`` has zero rows and ``P⁺ = P − U_p D_p⁻¹ U_p*``
    (eq. 16.7; ``P⁺ = P`` for a locked joint).  ``D`` stays the whole joint's ``H P H* +``
    armature.
    """
    u = axes.transpose_times_matrix(p)
    d = axes.transpose_times(u)
    d = d + armature[..., None] * jnp.eye(d.shape[-1], dtype=d.dtype)
    if free is None:
        dinv = spatial.spd_inverse(d)
    else:  # [[D_p, 0], [0, 1]]⁻¹ with the locked block zeroed: D_p⁻¹ embedded
        pair = free[..., :, None] * free[..., None, :]
        dinv = spatial.spd_inverse(d * pair + (1.0 - free)[..., None] * jnp.eye(d.shape[-1], dtype=d.dtype)) * pair
    g = spatial.mm(dinv, u)
    return p - spatial.mtm(u, g), RiccatiKernel(u, d, dinv, g)


def innovation_kernel(z: jax.Array, axes: JointAxes, ric: RiccatiKernel, t: jax.Array):
    """``ν = D⁻¹ (T − H z)`` and ``z⁺ = z + U ν`` (Jain Alg. 7.2); ``z`` ``(..., 6)`` may carry
    columns after the slot axis, which ``ric`` is broadcast over."""
    extra = z.ndim - ric.U.ndim + 1
    u, dinv = (_expand_slots(x, extra) for x in (ric.U, ric.D_inv))
    nu = spatial.mv(dinv, t - axes.transpose_times(z))
    return z + spatial.mtv(u, nu), nu


# ---------------------------------------------------------------------------
# the sweeps
# ---------------------------------------------------------------------------


class ArticulatedBodies(NamedTuple):
    """The Riccati quantities in the slot layout: per kernel a :class:`RiccatiKernel` of
    ``(1, W_k, ...)`` arrays, and the articulated inertias ``P`` and ``P⁺`` ``(1, W, 6, 6)``
    (``None`` unless asked for)."""

    kernels: tuple[RiccatiKernel, ...]
    P: jax.Array | None = None
    P_plus: jax.Array | None = None


def armature_blocks(model: Model, dtype) -> list[jax.Array]:
    """Per kernel ``(1, W_k, nv_k)`` armature; padding slots get one, so their ``D`` stays
    invertible (nothing they compute reaches a real body)."""
    return dofs_to_levels(model.topology, model_params(model, dtype).armature, 1.0)


def riccati(model: Model, frames: Frames, with_inertias: bool = False) -> ArticulatedBodies:
    """The Riccati recursion (Jain Alg. 7.1) as one gather."""
    dtype = frames.inertia[0].dtype

    def step(from_children, level):
        pose, inertia = level.x
        big_p = spatial.inertia_from_parameters(*inertia) + from_children
        outs, p_plus = [], []
        for pk, axes, arm in zip(level.per_kernel(big_p), *zip(*level.kernels)):
            pp, ric = riccati_kernel(pk, axes, arm)
            p_plus.append(pp)
            outs.append((ric, (pk, pp) if with_inertias else ()))
        return pose_inertia_to_parent(pose, jnp.concatenate(p_plus, axis=0)), tuple(outs)

    kernel_xs = tuple(zip(frames.axes, armature_blocks(model, dtype)))
    outs = gather(model.topology, step, jnp.zeros((6, 6), dtype), (frames.pose, frames.inertia), kernel_xs)
    kernels = tuple(o[0] for o in outs)
    if not with_inertias:
        return ArticulatedBodies(kernels)
    big_p, p_plus = in_slots(tuple(o[1] for o in outs))
    return ArticulatedBodies(kernels, big_p, p_plus)


def _only(ab: ArticulatedBodies, *fields: str) -> tuple[RiccatiKernel, ...]:
    """The Riccati quantities a sweep reads (the others ``None``, so they are not scan inputs)."""
    return tuple(RiccatiKernel(*(getattr(r, f) if f in fields else None for f in RiccatiKernel._fields))
                 for r in ab.kernels)


def innovations(model: Model, frames: Frames, ab: ArticulatedBodies, t_blocks, unroll: int = 1) -> list[jax.Array]:
    """The innovations gather (Jain Alg. 7.2) at ``a = b = 0``: per kernel ``ν = D⁻¹ ε``
    ``(1, W_k, nv_k)`` for joint forces ``t_blocks``."""
    dtype = t_blocks[0].dtype

    def step(z, level):
        (pose,) = level.x
        z_plus, nus = [], []
        for zk, axes, ric, t in zip(level.per_kernel(z), *zip(*level.kernels)):
            zp, nu = innovation_kernel(zk, axes, ric, t)
            z_plus.append(zp)
            nus.append(nu)
        return pose_force_to_parent(pose, jnp.concatenate(z_plus, axis=0)), tuple(nus)

    kernel_xs = tuple(zip(frames.axes, _only(ab, "U", "D_inv"), t_blocks))
    return list(gather(model.topology, step, jnp.zeros(6, dtype), (frames.pose,), kernel_xs, unroll=unroll))


def accelerations(model: Model, frames: Frames, ab: ArticulatedBodies, nus, root_acceleration,
                  coriolis=None, unroll: int = 1) -> jax.Array:
    """The acceleration scatter (Jain Lemma 7.6): ``θ̈ = ν − G* α⁺``, ``α = α⁺ + H* θ̈ + a``
    (``a`` omitted when ``coriolis`` is ``None``); returns ``θ̈`` ``(nv,)``."""

    def step(parent_acc, level):
        pose, cor = level.x
        a_plus = pose_motion_to_child(pose, parent_acc)
        qdd, motion = [], []
        for ak, axes, ric, nu in zip(level.per_kernel(a_plus), *zip(*level.kernels)):
            qk = nu - spatial.mv(ric.G, ak)
            qdd.append(qk)
            motion.append(axes.times(qk))
        acc = a_plus + jnp.concatenate(motion, axis=0)
        return (acc if cor is None else acc + cor), tuple(qdd)

    kernel_xs = tuple(zip(frames.axes, _only(ab, "G"), nus))
    qdd = scatter(model.topology, step, root_acceleration, (frames.pose, coriolis), kernel_xs, unroll=unroll)
    return dofs_from_levels(model.topology, list(qdd))


def inverse_times(model: Model, frames: Frames, ab: ArticulatedBodies, x: jax.Array) -> jax.Array:
    """``𝓜⁻¹ x`` by the innovations gather and acceleration scatter (Jain Lemma 7.5)."""
    nus = innovations(model, frames, ab, dofs_to_levels(model.topology, x, 0.0), FORWARD_UNROLL)
    return accelerations(model, frames, ab, nus, jnp.zeros(6, x.dtype), unroll=FORWARD_UNROLL)


# ---------------------------------------------------------------------------
# forward dynamics
# ---------------------------------------------------------------------------


def forward_dynamics(model: Model, q, v, tau, f_ext=None, *, convention: Convention = "local",
                     added_inertia=None) -> jax.Array:
    """Joint accelerations ``θ̈`` by the O(N) articulated-body algorithm (Jain Lemma 7.6).

    Gravity, external forces ``f_ext`` ``(n_bodies, 6)`` (body frame), joint damping with
    a free joint's linear-armature velocity force (``τ − passive_joint_force(model, v)``,
    :func:`~sodyn.algorithms.common.passive_joint_force`) and armature (added to ``D``) are
    included, consistently with :func:`sodyn.inverse_dynamics`.  The Riccati and innovations recursions run fused in one
    gather (Alg. 7.1 and 7.2 share their tip-to-base sweep), then one scatter.  ``convention``
    picks the frames (module docstring): ``"local"`` (default) or ``"world"``.

    ``added_inertia`` ``B`` ``(n_bodies, 6, 6)`` (symmetric positive semi-definite, body
    frames, ``"local"`` only) is added to each body's inertia in the Riccati recursion, so the
    sweeps solve ``(𝓜 + Σ_k J_k* B_k J_k) θ̈ = τ − C(q, v) − Σ_k J_k* B_k ᾱ(k)``, with ``J_k`` body
    k's Jacobian and ``ᾱ(k) = J̇_k θ̇ − 𝔤(k)`` its acceleration at ``θ̈ = 0`` in the recursion
    (the world accelerating by ``−g``).  The linearly implicit stepper puts contact dampers
    and springs there (:mod:`sodyn.simulate.contact`).

    Derivatives (forward and reverse mode, with respect to the model's parameters too) come
    from the implicit function theorem on ``ID(q, v, θ̈) = τ`` rather than from
    differentiating the recursions: ``dθ̈ = 𝓜⁻¹ (dτ − ∂ID/∂(q, v, params, f_ext) · d(…))``,
    with ``𝓜⁻¹`` applied in O(N) by the innovations sweeps (Lemma 7.5) on the Riccati
    quantities of the forward pass, and the partials of ID at fixed ``θ̈`` by differentiating
    the Newton–Euler recursions (Carpentier & Mansard's analytical ABA derivatives take the
    same route).
    """
    _check_convention(convention)
    q, v, tau, f_ext = check_state(model, q, v, tau, "tau", f_ext)
    if added_inertia is not None:
        added_inertia = jnp.asarray(added_inertia, q.dtype)
        if added_inertia.shape != (model.n_bodies, 6, 6):
            raise ValueError(f"added_inertia must have shape (n_bodies, 6, 6) = ({model.n_bodies}, 6, 6), "
                             f"got {added_inertia.shape}")
        if convention != "local":
            raise ValueError("added_inertia is given in body frames: use convention='local'")
        if f_ext is None:
            f_ext = jnp.zeros((model.n_bodies, 6), q.dtype)
    return _forward_dynamics(model, q, v, tau, f_ext, added_inertia, convention)


@functools.partial(jax.custom_jvp, nondiff_argnums=(6,))
def _forward_dynamics(model: Model, q, v, tau, f_ext, added, convention: str):
    return _ACCELERATIONS[convention](model, q, v, tau, f_ext, added)


def _accelerations(model: Model, q, v, tau, f_ext, added, convention: str) -> jax.Array:
    return _articulated_forward(model, q, v, tau, f_ext, convention, added)[0]


#: Per convention, ``θ̈`` of the fused ABA.
_ACCELERATIONS = {c: functools.partial(_accelerations, convention=c) for c in CONVENTIONS}


@_forward_dynamics.defjvp
def _forward_dynamics_jvp(convention, primals, tangents):
    model, q, v, tau, f_ext, added = primals
    d_model, dq, dv, dtau, df, d_added = tangents
    qdd, frames, ab = _articulated_forward(model, q, v, tau, f_ext, convention, added)
    qdd, ab = checkpoint_name((qdd, ab), FACTORS)

    def id_at_fixed_acceleration(m, q, v, f, b):  # B_k acts on the body accelerations (world at −g)
        return unchecked_inverse_dynamics(m, q, v, qdd, f, b)

    _, d_id = jax.jvp(id_at_fixed_acceleration, (model, q, v, f_ext, added), (d_model, dq, dv, df, d_added))
    return qdd, inverse_times(model, frames, ab, dtau - d_id)


def forward_terms(model: Model, q, v, f_ext, convention: str, unroll: int):
    """The frames, the velocity terms ``a(k) = V(k) ×ₘ H*(k) θ̇(k)`` and the bias forces
    ``b(k) = V(k) ×_f M(k) V(k) − f_ext(k)`` (Jain eq. 5.14) in the convention's frames."""
    topo = model.topology
    dtype = q.dtype
    levels = prepare(model, q)
    v_blocks = dofs_to_levels(topo, v, 0.0)
    f_local = None if f_ext is None else to_levels(topo, f_ext, jnp.zeros(6, dtype))
    if convention == "local":
        frames = body_frames(model, levels)
        vel, joint = velocities_levels(levels, topo, v_blocks, unroll)
    else:
        wr, wp, axes, vel, joint = world_kinematics_levels(levels, topo, v_blocks, unroll)
        frames = world_frames_at(model, wr, wp, axes)
        if f_local is not None:
            f_local = spatial.force_to_parent(wr, wp, f_local)
    coriolis = spatial.motion_cross(vel, joint)
    bias = spatial.force_cross(vel, spatial.apply_inertia(*frames.inertia, vel))
    return frames, coriolis, bias if f_local is None else bias - f_local


def _articulated_inertia(inertia, p_children: jax.Array, extra: jax.Array | None) -> jax.Array:
    """``P(k) = M(k) + Σ_c φ(k, c) P⁺(c)`` (Alg. 7.1), plus an added inertia ``extra``."""
    big_p = spatial.inertia_from_parameters(*inertia) + p_children
    return big_p if extra is None else big_p + extra


def _riccati_and_innovation_kernels(level, big_p: jax.Array, z: jax.Array) -> list[tuple]:
    """One level of the fused Riccati and innovations gather (Alg. 7.1, 7.2): per kernel ``P⁺``,
    ``z⁺``, ``ν`` and the :class:`RiccatiKernel` (without ``D``, which ``𝓜⁻¹ x`` does not need),
    from the level's kernel inputs ``(axes, armature, T, …)``."""
    out = []
    for pk, zk, (axes, arm, t, *_) in zip(level.per_kernel(big_p), level.per_kernel(z), level.kernels):
        pp, ric = riccati_kernel(pk, axes, arm)
        zp, nu = innovation_kernel(zk, axes, ric, t)
        out.append((pp, zp, nu, ric._replace(D=None)))
    return out


def riccati_and_innovations(model: Model, frames: Frames, t_blocks, coriolis=None, bias=None,
                             unroll: int = 1, added=None) -> tuple[list[jax.Array], ArticulatedBodies]:
    """The Riccati and innovations recursions fused in one gather (Jain Alg. 7.1 and 7.2 share
    their tip-to-base sweep), with ``z(k) = P(k) a(k) + b(k) + Σ_c φ(k, c) z⁺(c)`` for the
    velocity terms ``a = coriolis`` and bias forces ``b = bias`` (each zero if ``None``).
    ``added`` ``(1, W, 6, 6)`` (or ``None``) is added to each body's inertia.  Returns per
    kernel ``ν`` and the Riccati quantities (without ``D``)."""
    dtype = frames.inertia[0].dtype

    def step(from_children, level):
        pose, inertia, cor, b, extra = level.x
        p_children, z = from_children
        big_p = _articulated_inertia(inertia, p_children, extra)
        z = z if cor is None else z + spatial.mv(big_p, cor) + b
        kernels = _riccati_and_innovation_kernels(level, big_p, z)
        sent = (pose_inertia_to_parent(pose, jnp.concatenate([k[0] for k in kernels], axis=0)),
                pose_force_to_parent(pose, jnp.concatenate([k[1] for k in kernels], axis=0)))
        return sent, tuple((nu, ric) for _, _, nu, ric in kernels)

    zero = (jnp.zeros((6, 6), dtype), jnp.zeros(6, dtype))
    kernel_xs = tuple(zip(frames.axes, armature_blocks(model, dtype), t_blocks))
    outs = gather(model.topology, step, zero, (frames.pose, frames.inertia, coriolis, bias, added), kernel_xs,
                  unroll=unroll)
    return [o[0] for o in outs], ArticulatedBodies(tuple(o[1] for o in outs))


class InnovationColumns(NamedTuple):
    """What :func:`riccati_and_innovation_columns` returns for ``n`` columns of joint forces
    ``x_c``: per kernel their innovations ``ν_c = N x_c`` ``(1, W_k, n, nv_k)``; ``gram``
    ``(n, n)``, the compliance ``x_c* 𝓜⁻¹ x_d``; ``work`` ``(n,)``, ``x_c* θ̈`` for the ``θ̈`` of
    the acceleration scatter of the sweep's own ``ν`` from rest, without velocity terms."""

    nu: list[jax.Array]
    gram: jax.Array
    work: jax.Array


def riccati_and_innovation_columns(model: Model, frames: Frames, t_blocks, columns, bias=None, unroll: int = 1,
                                   added=None) -> tuple[list[jax.Array], InnovationColumns, ArticulatedBodies]:
    """The Riccati and innovations gather (Jain Alg. 7.1, 7.2) for the joint forces ``t_blocks``
    with bias forces ``b = bias`` and no velocity terms (``z(k) = b(k) + Σ_c φ(k, c) z⁺(c)``), and
    in the same sweep the innovations of ``n`` columns of joint forces ``x_c`` (``columns``, per
    kernel ``(1, W_k, n, nv_k)``) at ``b = 0``: ``ε_c = x_c − H z_c``, ``ν_c = D⁻¹ ε_c``,
    ``z_c⁺ = z_c + U ν_c``.

    With ``N = D⁻¹ [I − HψK]`` the innovations operator, ``𝓜⁻¹ = N* D N`` (Lemma 7.5), so
    ``x_c* 𝓜⁻¹ y = Σ_k ε_c(k)* ν_y(k)``: the columns' compliance, and ``x_c* θ̈`` for the
    ``θ̈ = N* D ν`` that :func:`accelerations` makes of ``ν`` from rest without velocity terms,
    come out of the gather, without a scatter per column.  Returns per kernel ``ν``, the
    :class:`InnovationColumns` and the Riccati quantities (without ``D``).
    """
    dtype = frames.inertia[0].dtype

    def step(from_children, level):
        pose, inertia, b, extra = level.x
        p_children, z, zc = from_children
        big_p = _articulated_inertia(inertia, p_children, extra)
        z = z if b is None else z + b
        kernels = _riccati_and_innovation_kernels(level, big_p, z)
        zc_plus, outs = [], []
        for (_, _, nu, ric), zck, (axes, _, _, tc) in zip(kernels, level.per_kernel(zc), level.kernels):
            eps = tc - axes.transpose_times(zck)
            nu_c = spatial.mv(ric.D_inv[:, None], eps)
            zc_plus.append(zck + spatial.mtv(ric.U[:, None], nu_c))
            outs.append((nu, nu_c, eps, ric))
        sent = (pose_inertia_to_parent(pose, jnp.concatenate([k[0] for k in kernels], axis=0)),
                pose_force_to_parent(pose, jnp.concatenate([k[1] for k in kernels], axis=0)),
                pose_force_to_parent(pose, jnp.concatenate(zc_plus, axis=0)))
        return sent, tuple(outs)

    n = columns[0].shape[-2]
    zero = (jnp.zeros((6, 6), dtype), jnp.zeros(6, dtype), jnp.zeros((n, 6), dtype))
    kernel_xs = tuple(zip(frames.axes, armature_blocks(model, dtype), t_blocks, columns))
    outs = gather(model.topology, step, zero, (frames.pose, frames.inertia, bias, added), kernel_xs, unroll=unroll)
    nus, nu_c, eps = ([o[i] for o in outs] for i in range(3))
    gram = sum(contract("...wid,...wjd->...ij", e, x) for e, x in zip(eps, nu_c))
    work = sum(contract("...wid,...wd->...i", e, x) for e, x in zip(eps, nus))
    return nus, InnovationColumns(nu_c, gram.reshape((n, n)), work.reshape((n,))), ArticulatedBodies(
        tuple(o[3] for o in outs))


def _articulated_forward(model: Model, q, v, tau, f_ext, convention: str, added=None):
    """The fused ABA; returns ``θ̈``, the frames and the Riccati quantities (for ``𝓜⁻¹ x``)."""
    dtype = q.dtype
    m = model_params(model, dtype)
    unroll = FORWARD_UNROLL
    frames, coriolis, bias = forward_terms(model, q, v, f_ext, convention, unroll)
    t_blocks = dofs_to_levels(model.topology, tau - passive_joint_force(m, v), 0.0)
    if added is not None:
        added = to_levels(model.topology, added, jnp.zeros((6, 6), dtype))
    nus, ab = riccati_and_innovations(model, frames, t_blocks, coriolis, bias, unroll, added)
    qdd = accelerations(model, frames, ab, nus, gravity_acceleration(m, dtype), coriolis, unroll)
    return qdd, frames, ab


# ---------------------------------------------------------------------------
# 𝓜⁻¹, 𝓜⁻¹ x, log det 𝓜, the Riccati quantities
# ---------------------------------------------------------------------------


def inverse_mass_matrix_times(model: Model, q, x, *, convention: Convention = "local") -> jax.Array:
    """``𝓜⁻¹ x`` in O(N) by the innovations factorization (Jain Lemma 7.5), without 𝓜."""
    q = check_vector(model, q, model.nq, "q")
    x = check_vector(model, x, model.nv, "x", q.dtype)
    frames = frames_for(model, prepare(model, q), convention)
    nus, ab = riccati_and_innovations(model, frames, dofs_to_levels(model.topology, x, 0.0))
    return accelerations(model, frames, ab, nus, jnp.zeros(6, x.dtype))


def inverse_mass_matrix(model: Model, q, *, convention: Convention = "local") -> jax.Array:
    """``𝓜⁻¹`` ``(nv, nv)`` from ``[I − HψK]* D⁻¹ [I − HψK]`` (Jain eq. 7.20), 𝓜 never formed.

    With ``N = D⁻¹ [I − HψK]`` (the innovations ``ν`` of the unit vectors, Lemma 7.5),
    ``𝓜⁻¹ = N* D N = Σ_c ν_c(e_a) · D ν_c(e_b)``.  The unit vectors are swept together, each
    segment of levels carrying only the columns its subtrees can see, and the sum over ``c``
    is formed per subtree (:mod:`sodyn.unit_columns`).
    """
    _check_convention(convention)
    return _INVERSE_MASS_MATRIX[convention](model, check_vector(model, q, model.nq, "q"))


def _inverse_mass_matrix(model: Model, q, convention: str) -> jax.Array:
    frames = frames_for(model, prepare(model, q), convention)
    ab = riccati(model, frames)

    def step(z, level):
        (pose,) = level.x
        z_plus, outs = [], []
        for zk, axes, ric, unit in zip(level.per_kernel(z), *zip(*level.kernels), level.units):
            zp, nu = innovation_kernel(zk, axes, ric, unit)
            z_plus.append(zp)
            outs.append((nu, spatial.mv(_expand_slots(ric.D, 1), nu)))
        return pose_force_to_parent(pose, jnp.concatenate(z_plus, axis=0)), tuple(outs)

    per_segment = gather(model.topology, step, jnp.zeros(6, q.dtype), (frames.pose,),
                         tuple(zip(frames.axes, ab.kernels)), unit_columns=True)
    minv = sum_of_column_products(
        model.topology, [[o[0] for o in seg] for seg in per_segment], [[o[1] for o in seg] for seg in per_segment]
    )
    return 0.5 * (minv + minv.T)


_INVERSE_MASS_MATRIX = {c: functools.partial(_inverse_mass_matrix, convention=c) for c in CONVENTIONS}


def log_det_mass_matrix(model: Model, q) -> jax.Array:
    """``log det 𝓜 = Σ_k log det D(k)`` (Jain Lemma 7.3), O(N)."""
    q = check_vector(model, q, model.nq, "q")
    topo = model.topology
    ab = riccati(model, body_frames(model, prepare(model, q)))
    mask = jnp.asarray(topo.mask)
    total = jnp.zeros((), q.dtype)
    for (_, s0, s1), ric in zip(topo.kernel_slots, ab.kernels):
        d = jnp.where(mask[:, s0:s1, None, None], ric.D, jnp.eye(ric.D.shape[-1], dtype=q.dtype))  # padding: 0
        if d.shape[-1] == 1:
            ld = jnp.log(d[..., 0, 0])
        else:
            chol = jnp.linalg.cholesky(0.5 * (d + spatial.transpose(d)))
            ld = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        total = total + jnp.sum(ld)
    return total


class ArticulatedBodyInertias(NamedTuple):
    """The articulated-body quantities of Jain Ch. 6–7, in body/dof order.

    ``P``, ``P_plus`` and ``tau_bar`` are ``(n_bodies, 6, 6)`` about each body frame; ``psi``
    is ``ψ(℘(k), k) = φ(℘(k), k) τ̄(k)`` about the parent's frame.  ``D`` is the
    block-diagonal ``(nv, nv)`` matrix of the ``D(k)``.  ``G`` is ``(nv, 6)``: row ``j`` is the
    column of ``G(k)`` for dof ``j`` of body ``k``; ``K`` likewise holds ``φ(℘(k), k) G(k)``.
    """

    P: jax.Array
    P_plus: jax.Array
    D: jax.Array
    G: jax.Array
    tau_bar: jax.Array
    psi: jax.Array
    K: jax.Array


def articulated_body_inertias(model: Model, q) -> ArticulatedBodyInertias:
    """The Riccati quantities ``P, P⁺, D, G, τ̄, ψ, K`` at ``q`` in body frames (Jain Alg. 7.1)."""
    q = check_vector(model, q, model.nq, "q")
    topo: Topology = model.topology
    dtype = q.dtype
    levels = prepare(model, q)
    ab = riccati(model, body_frames(model, levels), with_inertias=True)
    nv = topo.nv
    g = dofs_from_levels(topo, [ric.G for ric in ab.kernels])  # (nv, 6): rows of G*
    d = jnp.zeros((nv, nv), dtype)
    for ric, vi in zip(ab.kernels, topo.v_index):
        real = vi[..., 0] < nv
        idx = vi[real]  # (n_k, nv_k)
        d = d.at[idx[:, :, None], idx[:, None, :]].set(ric.D[real])
    h_rows = dofs_from_levels(topo, [a.row_matrix(ric.G.shape[:-2], dtype) for a, ric in zip(levels.axes, ab.kernels)])
    gh = jnp.zeros((topo.n_bodies, 6, 6), dtype).at[topo.dof_body].add(g[:, :, None] * h_rows[:, None, :])
    tau_bar = jnp.eye(6, dtype=dtype) - gh
    rel_r, rel_p = from_levels(topo, levels.rel_r), from_levels(topo, levels.rel_p)
    phi = spatial.transpose(spatial.motion_transform_matrix(rel_r, rel_p))
    psi = spatial.mm(phi, tau_bar)
    k = spatial.mv(phi[topo.dof_body], g)
    return ArticulatedBodyInertias(from_levels(topo, ab.P), from_levels(topo, ab.P_plus), d, g, tau_bar, psi, k)
