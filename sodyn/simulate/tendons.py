r"""Fixed tendons (MuJoCo's ``<tendon><fixed>``): linear combinations of joint coordinates that
springs, dampers, limits, friction and actuators act along.

A fixed tendon ``t`` has the length ``L_t = Σ_j c_tj q_j`` over hinge and slide joints ``j``
(MuJoCo's ``mjWRAP_JOINT`` wraps; ``q`` is MuJoCo's ``qpos``), so its moment row
``J_t = ∂L_t/∂q`` (``(nv,)``, in ``v`` columns) is constant and ``L̇_t = J_t v``.  A force ``f_t``
along the tendon acts on the joints as ``τ = Σ_t f_t J_tᵀ``.  The passive tendon forces are

* a spring with MuJoCo's dead band ``[l₋, l₊]`` (``springlength``):
  ``f = −k (L − clip(L, l₋, l₊))``, zero inside the band (``JointForces.springs``);
* a damper ``f = −d L̇`` (MuJoCo's tendon ``damping``; always on, as joint damping);
* the limit law of the joint limits (:mod:`sodyn.simulate.joint_forces`) applied to ``L`` and
  ``L̇`` with the same :class:`~sodyn.simulate.JointForces` parameters: penetrations
  ``e₊ = L − u``, ``e₋ = l − L`` of a ``limited`` tendon's ``range [l, u]``, spring ``k π(e)``,
  damper ``d γ(e) L̇``, saturation at ``limit_force_max`` (``JointForces.limits``; MuJoCo makes
  this a soft constraint);
* friction loss ``f = −F L̇ / sqrt(L̇² + ε²)`` (``frictionloss``; ``JointForces.friction``).

Each term's slopes along the tendon, ``k_t = −∂f_t/∂L`` and ``c_t = −∂f_t/∂L̇``, give the exact
joint-space stiffness ``−∂τ/∂q = Jᵀ diag(k) J`` and damping ``Jᵀ diag(c) J``.  The linearly
implicit stepper (:mod:`sodyn.simulate.stepping`) takes one stiffness and one damping per dof on
the diagonal of its articulated-body recursion, so it receives their diagonals
``Σ_t k_t J_ti²``, ``Σ_t c_t J_ti²``; the off-diagonal coupling between the joints of a tendon
stays explicit (the force at the start of the step).  The same holds for tendon actuators
(:mod:`sodyn.simulate.actuation`).  MuJoCo's tendon ``armature`` (``Jᵀ a J`` added to the mass
matrix) is not modelled: the loader warns naming the tendon.  The ``tendonpos``, ``tendonvel``
and ``tendonactuatorfrc`` sensors (:mod:`sodyn.sensors`) and the tendon couplings of
:meth:`sodyn.LoopClosures.tendon_coupling` (MuJoCo's ``<equality><tendon>``) read the same
lengths and moment rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import KERNEL_OF
from sodyn.model import Model
from sodyn.simulate.joint_forces import (
    JointForces,
    JointTerms,
    friction_loss,
    hinge_indices,
    limit_force,
    may_be_nonzero,
)
from sodyn.static_index import spread_sum, take


class Tendons(eqx.Module):
    """``n_t`` fixed tendons of a model (module docstring).

    - leaves: ``coef (n_t, nv)``, the moment rows ``J`` (``L = J`` applied to the hinge and slide
      coordinates, ``L̇ = J v``); ``stiffness``, ``damping``, ``frictionloss``, ``armature``
      ``(n_t,)``; ``spring_length (n_t, 2)`` (the dead band ``[l₋, l₊]``); ``range (n_t, 2)``;
      ``actuator_force_range (n_t, 2)`` (MuJoCo's ``actuatorfrcrange``: when the sum ``F`` of the
      ``actuator_force`` of the actuators on a tendon leaves ``[F₋, F₊]``, each of them is scaled
      by ``F₋/F`` or ``F₊/F``, and its slopes are dropped; ``±inf``: none);
    - static: ``names``, ``limited`` (per tendon: ``range`` applies), ``q_index`` (per ``v``
      column, the ``q`` index of its one-dof joint, ``-1`` for the columns of other joints,
      whose ``coef`` is zero).
    """

    coef: jax.Array
    stiffness: jax.Array
    spring_length: jax.Array
    damping: jax.Array
    range: jax.Array
    frictionloss: jax.Array
    armature: jax.Array
    actuator_force_range: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    limited: tuple[bool, ...] = eqx.field(static=True)
    q_index: tuple[int, ...] = eqx.field(static=True)

    def __check_init__(self) -> None:
        n, nv = len(self.names), len(self.q_index)
        shapes = {"coef": (n, nv), "stiffness": (n,), "spring_length": (n, 2), "damping": (n,), "range": (n, 2),
                  "frictionloss": (n,), "armature": (n,), "actuator_force_range": (n, 2)}
        for field, shape in shapes.items():
            if getattr(self, field).shape != shape:
                raise ValueError(f"Tendons.{field} must have shape {shape}, got {getattr(self, field).shape}")
        if len(self.limited) != n or len(set(self.names)) != n:
            raise ValueError("Tendons: names must be unique and limited needs one entry per tendon")

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """The index of tendon ``name``."""
        if name not in self.names:
            raise ValueError(f"unknown tendon {name!r}; tendons are {list(self.names)}")
        return self.names.index(name)

    @classmethod
    def fixed(cls, model: Model, joints: Mapping[str, Mapping[str | int, float]], *, stiffness=0.0, spring_length=None,
              damping=0.0, range=None, limited=None, frictionloss=0.0, armature=0.0,
              actuator_force_range=(-np.inf, np.inf)) -> Tendons:
        """Fixed tendons ``{name: {joint: coef, …}, …}`` of ``model``'s hinge and slide joints
        (names or indices into ``model.joint_names``).
        The other parameters are one value for all tendons or one per tendon (``spring_length``,
        ``range``: ``(n_t, 2)`` or one pair; ``spring_length=None``: the lengths at
        ``model.q_neutral``, MuJoCo's default).  ``limited`` (per tendon, or one flag) defaults
        to ``range is not None``; an unlimited tendon's range is stored as ``±inf``."""
        names = tuple(joints)
        n, topo = len(names), model.topology
        coef = np.zeros((n, model.nv))
        for t, name in enumerate(names):
            for joint, c in joints[name].items():
                k = model.joint_index(joint)
                if KERNEL_OF.get(topo.joint_type[k]) != "hinge":
                    raise ValueError(f"tendon {name!r}: joint {model.joint_names[k]!r} is {topo.joint_type[k]}; "
                                     "a fixed tendon takes hinge and slide joints")
                coef[t, int(topo.v_start[k])] += float(c)
        q_of_v = -np.ones(model.nv, np.int64)
        hinge_q, hinge_v = hinge_indices(model)
        q_of_v[hinge_v] = hinge_q
        dtype = model.mass.dtype

        def per(x, width=None):
            shape = (n,) if width is None else (n, width)
            return jnp.asarray(np.broadcast_to(np.asarray(x, np.float64), shape), dtype)

        on = np.broadcast_to(np.asarray(range is not None if limited is None else limited, bool), (n,))
        bounds = np.broadcast_to(np.asarray((-np.inf, np.inf) if range is None else range, np.float64), (n, 2))
        bounds = np.where(on[:, None], bounds, [-np.inf, np.inf])
        if np.any(bounds[:, 0] > bounds[:, 1]):
            raise ValueError(f"Tendons: a range's lower bound exceeds its upper bound: {bounds.tolist()}")
        out = cls(jnp.asarray(coef, dtype), per(stiffness), per(np.zeros(2) if spring_length is None else
                                                               spring_length, 2),
                  per(damping), per(bounds, 2), per(frictionloss), per(armature), per(actuator_force_range, 2), names,
                  tuple(bool(x) for x in on), tuple(int(x) for x in q_of_v))
        if spring_length is None:
            rest = tendon_lengths(out, model.q_neutral.astype(dtype))
            out = eqx.tree_at(lambda x: x.spring_length, out, jnp.stack([rest, rest], axis=-1))
        return out


def _of(model_or_tendons: Model | Tendons) -> Tendons:
    tendons = model_or_tendons.tendons if isinstance(model_or_tendons, Model) else model_or_tendons
    if not isinstance(tendons, Tendons):
        raise ValueError("the model has no tendons (Model.tendons is None)")
    return tendons


def tendon_lengths(model_or_tendons: Model | Tendons, q: jax.Array) -> jax.Array:
    """``L = Σ_j c_tj q_j`` ``(n_t,)`` at ``q`` (MuJoCo's ``ten_length``)."""
    t = _of(model_or_tendons)
    q = jnp.asarray(q)
    cols = np.flatnonzero(np.asarray(t.q_index) >= 0)
    if not cols.size:
        return jnp.zeros(len(t), q.dtype)
    return t.coef.astype(q.dtype)[:, cols] @ take(q, np.asarray(t.q_index)[cols])


def tendon_velocities(model_or_tendons: Model | Tendons, v: jax.Array) -> jax.Array:
    """``L̇ = J v`` ``(n_t,)`` (MuJoCo's ``ten_velocity``)."""
    v = jnp.asarray(v)
    return _of(model_or_tendons).coef.astype(v.dtype) @ v


def tendon_forces(model: Model, params: JointForces, q: jax.Array, v: jax.Array) -> JointTerms:
    """The passive tendon forces at ``(q, v)`` as joint forces ``Jᵀ f`` with the diagonals of
    their stiffness ``Jᵀ diag(k) J`` and damping ``Jᵀ diag(c) J`` (module docstring); ``limit``:
    the limits' share."""
    dtype = q.dtype
    t = jax.tree_util.tree_map(lambda x: x.astype(dtype), _of(model))
    params = jax.tree_util.tree_map(lambda x: x.astype(dtype), params)
    length, rate = tendon_lengths(t, q), tendon_velocities(t, v)
    f = k = c = jnp.zeros(len(t), dtype)
    if params.springs and may_be_nonzero(t.stiffness):
        lo, hi = t.spring_length[:, 0], t.spring_length[:, 1]
        f = f - t.stiffness * (length - jnp.clip(length, lo, hi))
        k = k + jnp.where((length < lo) | (length > hi), t.stiffness, 0.0)
    if may_be_nonzero(t.damping):
        f, c = f - t.damping * rate, c + t.damping
    if params.friction and may_be_nonzero(t.frictionloss):
        ff, fc = friction_loss(t.frictionloss, rate, params.friction_velocity)
        f, c = f + ff, c + fc
    coef = t.coef
    square = coef * coef
    limit = (jnp.zeros(model.nv, dtype),) * 3
    if params.limits and any(t.limited):
        on = np.asarray(t.limited)
        upper = limit_force(length, rate, jnp.where(on, t.range[:, 1], jnp.inf), 1.0, params)
        lower = limit_force(length, rate, jnp.where(on, t.range[:, 0], -jnp.inf), -1.0, params)
        lf, lk, lc = (a + b for a, b in zip(upper, lower, strict=True))
        limit = (lf @ coef, lk @ square, lc @ square)
    return JointTerms(f @ coef + limit[0], k @ square + limit[1], c @ square + limit[2], limit)


def with_tendon_forces(model: Model, params: JointForces, joint: JointTerms, q: jax.Array,
                       v: jax.Array) -> JointTerms:
    """``joint`` plus :func:`tendon_forces` when the model has tendons."""
    if model.tendons is None or not len(model.tendons):
        return joint
    ten = tendon_forces(model, params, q, v)
    return JointTerms(joint.force + ten.force, joint.stiffness + ten.stiffness, joint.damping + ten.damping,
                      tuple(a + b for a, b in zip(joint.limit, ten.limit, strict=True)))


def tendon_potential_energy(model: Model, params: JointForces, q: jax.Array) -> jax.Array:
    """The potential of the tendon springs, ``Σ ½ k (L − clip(L, l₋, l₊))²`` (zero without
    tendons or with ``params.springs`` off; the limit springs are left out)."""
    if model.tendons is None or not params.springs:
        return jnp.zeros((), q.dtype)
    t = jax.tree_util.tree_map(lambda x: x.astype(q.dtype), model.tendons)
    length = tendon_lengths(t, q)
    stretch = length - jnp.clip(length, t.spring_length[:, 0], t.spring_length[:, 1])
    return 0.5 * jnp.sum(t.stiffness * stretch * stretch)


def clamp_tendon_actuators(model: Model, f: jax.Array, tn: np.ndarray, on: np.ndarray) -> tuple[jax.Array, jax.Array]:
    """The forces ``f (na,)`` with those of the tendon actuators ``tn`` (on tendons ``on``)
    scaled into their tendons' ``actuator_force_range`` (:class:`Tendons`), and a mask of the
    actuators left as they were."""
    bounds = model.tendons.actuator_force_range.astype(f.dtype)
    total = spread_sum(f[tn], on, len(model.tendons))
    below, above = total < bounds[:, 0], total > bounds[:, 1]
    bound = jnp.where(below, bounds[:, 0], jnp.where(above, bounds[:, 1], 0.0))   # finite where it is used
    scale = jnp.where(below | above, bound / jnp.where(total == 0, 1.0, total), 1.0)[on]
    factor = jnp.ones_like(f).at[tn].set(scale)
    return f * factor, factor == 1.0


def tendon_sensor_values(model: Model, kind: str, index: Sequence[int], q, v, actuator_force) -> jax.Array:
    """Readings ``(n,)`` of ``tendonpos`` (``L``), ``tendonvel`` (``L̇``) or ``tendonactuatorfrc``
    (the sum of ``actuator_force`` over the actuators on the tendon, MuJoCo's
    ``mjSENS_TENDONACTFRC``) sensors on tendons ``index``."""
    idx = np.asarray(index, np.int64)
    if kind == "tendonpos":
        return tendon_lengths(model, q)[idx]
    if kind == "tendonvel":
        return tendon_velocities(model, v)[idx]
    on = np.asarray(model.actuators.tendon, np.int64)
    mask = jnp.asarray(on[None, :] == idx[:, None], actuator_force.dtype)
    return mask @ actuator_force


def fixed_tendon_wraps(mj, t: int) -> list[tuple[int, float]] | None:
    """``[(MuJoCo joint id, coef), …]`` of tendon ``t`` of a compiled ``mujoco.MjModel`` when it
    is a fixed tendon of hinge and slide joints, else ``None``."""
    import mujoco

    adr, num = int(mj.tendon_adr[t]), int(mj.tendon_num[t])
    out = []
    for w in range(adr, adr + num):
        j = int(mj.wrap_objid[w])
        if int(mj.wrap_type[w]) != int(mujoco.mjtWrap.mjWRAP_JOINT) or int(mj.jnt_type[j]) not in (2, 3):
            return None
        out.append((j, float(mj.wrap_prm[w])))
    return out


def tendons_from_mujoco(mj, model: Model, off: set[str]) -> tuple[Tendons | None, list[str]]:
    """The fixed tendons of a compiled ``mujoco.MjModel`` (``off``: the ``<flag>`` switches it
    turns off) and one line per tendon or tendon parameter not modelled: spatial tendons (and
    fixed ones on ball or free joints), ``armature``, polynomial stiffness or damping."""
    import mujoco

    obj = mujoco.mjtObj
    topo = model.topology
    at_q = {int(topo.q_start[k]): k for k in range(model.n_bodies)}   # sodyn's q is MuJoCo's qpos
    fixed, unsupported, params = {}, [], {}
    for t in range(mj.ntendon):
        name = mujoco.mj_id2name(mj, obj.mjOBJ_TENDON, t) or f"tendon{t}"
        wraps = fixed_tendon_wraps(mj, t)
        if wraps is None:
            adr, num = int(mj.tendon_adr[t]), int(mj.tendon_num[t])
            spatial = any(int(mj.wrap_type[w]) != int(mujoco.mjtWrap.mjWRAP_JOINT) for w in range(adr, adr + num))
            why = "a spatial tendon" if spatial else "a fixed tendon on a ball or free joint"
            unsupported.append(f"<tendon name={name!r}> ({why}: only fixed tendons of hinges and slides are "
                               "modelled)")
            continue
        joints: dict[int, float] = {}
        for j, c in wraps:
            k = at_q[int(mj.jnt_qposadr[j])]
            joints[k] = joints.get(k, 0.0) + c
        fixed[name] = joints
        params[name] = t
        if mj.tendon_armature[t] != 0:
            unsupported.append(f"<tendon name={name!r} armature=...> (tendon armature, Jᵀ a J in the mass matrix, "
                               "is not modelled)")
        for poly in ("stiffnesspoly", "dampingpoly"):
            if np.any(getattr(mj, f"tendon_{poly}", np.zeros((mj.ntendon, 1)))[t]):
                unsupported.append(f"<tendon name={name!r} {poly.replace('poly', '')}=...> (only the linear "
                                   "coefficient is modelled)")
    if not fixed:
        return None, unsupported
    ids = np.array(list(params.values()), np.int64)
    zero = np.zeros(len(ids))
    limited = np.asarray(mj.tendon_limited, bool)[ids] & ("limit" not in off)
    tendons = Tendons.fixed(
        model, fixed, stiffness=zero if "spring" in off else mj.tendon_stiffness[ids],
        spring_length=mj.tendon_lengthspring[ids], damping=zero if "damper" in off else mj.tendon_damping[ids],
        range=mj.tendon_range[ids], limited=limited,
        frictionloss=zero if "frictionloss" in off else mj.tendon_frictionloss[ids], armature=mj.tendon_armature[ids],
        actuator_force_range=np.where(np.asarray(mj.tendon_actfrclimited, bool)[ids, None],
                                      mj.tendon_actfrcrange[ids], [-np.inf, np.inf]))
    return tendons, unsupported


__all__ = ["Tendons", "clamp_tendon_actuators", "fixed_tendon_wraps", "tendon_forces", "tendon_lengths",
           "tendon_potential_energy", "tendon_sensor_values", "tendon_velocities", "tendons_from_mujoco",
           "with_tendon_forces"]
