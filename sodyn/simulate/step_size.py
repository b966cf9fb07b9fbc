r"""The stable-step estimate of the linearly implicit step (:func:`stable_step`) and the
:class:`StiffStepWarning` that :func:`~sodyn.simulate.rollout` and :func:`~sodyn.simulate.step`
give, when the parameters are known at construction, for a step beyond it.

**What it estimates.**  The linearly implicit step (:mod:`sodyn.simulate.stepping`) takes each
stiff force linearized about the end of the step, so it stays stable at any ``dt``; what a too
large step loses is accuracy.  Linearized, each stiff term is a spring ``k`` and a damper ``c``
on a mass ``m``, with the modes ``e^{st}`` of

    m s² + c s + k = 0.

A fast real root (a damper's rate ``c/m``) the step takes in its stride: implicit Euler brings
such a mode to rest within the step, as the stiff damper does.  What it cannot follow is the
slower root: the oscillation of an underdamped term, ``|s| = ω = sqrt(k/m)`` for
``ζ = c / (2 sqrt(k m)) ≤ 1``, or the spring-back of an overdamped one,
``|s| = (c − sqrt(c² − 4 k m)) / (2m) = 2k / (c + sqrt(c² − 4 k m))`` (``≈ k/c`` for ``ζ ≫ 1``).
A step longer than ``1/|s|`` spans more than a radian of the oscillation, or more than the
spring-back's time constant, and the step's answer is then set by its own numerical damping
rather than by ``k`` and ``c``.  The estimate is

    dt_s = min over the stiff terms of 1 / |s_slow|.

**The terms** (each spring with the damping that acts with it):

* each compliant contact slot: its normal stiffness ``k`` and damping ``c`` against the
  model's total mass ``M``, the mode of the whole model on one contact by which the default
  stiffness is set (:mod:`sodyn.simulate.contact`: ``k = M g / SINK`` with ``c = 2ζ sqrt(k M)``
  gives ``dt_s = (ζ + sqrt(ζ² − 1)) sqrt(SINK / g)`` for ``ζ ≥ 1``, 26 ms at the default
  ``ζ = 1.5`` and ``g = 9.81 m/s²``);
* each dof's joint spring (``model.stiffness``) and position servo (``k = −bias₁ gear²``,
  ``c = −bias₂ gear²``, :mod:`sodyn.simulate.actuation`) with the joint damping
  (``model.damping``), against the dof's inertia ``𝓜_ii(q) + armature_i`` (``q`` the neutral
  configuration unless given).  The fixed tendons (``model.tendons``, moment rows ``J``,
  :mod:`sodyn.simulate.tendons`) add the joint-space stiffness ``Jᵀ diag(k_t) J`` of their
  springs (as if outside the ``springlength`` dead band) and damping ``Jᵀ diag(d_t) J``, and a
  servo on tendon ``t`` adds ``(−bias₁ gear²) J_tᵀ J_t`` and ``(−bias₂ gear²) J_tᵀ J_t``; the
  estimate is per dof, so it takes their diagonals ``Σ_t k_t J_ti²``, ``Σ_t d_t J_ti²`` (the
  diagonals the linearly implicit step treats implicitly; the coupling between the joints of a
  tendon is left out);
* with the joint limit's stiffness and damping (:class:`~sodyn.simulate.JointForces`) added,
  for each hinge dof with a finite limit, and their diagonals ``Σ_t k J_ti²``, ``Σ_t d J_ti²``
  over the limited tendons.

Friction (the contacts' tangential damper, the joints' friction loss) is a damper alone and
has no slow root; a rigid contact (:class:`~sodyn.simulate.RigidContact`) has no spring.  The
name follows the explicit schemes, for which a step of this order is the stability limit
(symplectic Euler on a critically damped term: ``ω dt < 2(√2 − 1)``; on a damper:
``dt c/m < 2``); for the linearly implicit step it is a resolution limit.  The explicit
integrators (``"semi_implicit"``, ``"rk4"``) are not covered: they need steps below ``dt_s``
and below every damper's ``2m/c``, friction's included.

**The warning.**  ``rollout`` and ``step`` with ``integrator="implicit"`` compare the substep
``dt / substeps`` with ``dt_s`` when ``dt`` and every parameter the estimate reads are
concrete (known while tracing; under ``jit`` of the parameters, or ``vmap`` over them, no
estimate is made and nothing is said), and warn :class:`StiffStepWarning` naming ``dt``,
``dt_s``, the stiffest term and the ``substeps`` that would resolve it.  ``substeps`` is static:
the step then runs ``substeps`` linearly implicit substeps in one ``lax.scan``.  Silence it
with ``warnings.filterwarnings("ignore", category=StiffStepWarning)``.
"""

from __future__ import annotations

import math
import warnings
import weakref
from typing import NamedTuple

import jax
import numpy as np

from sodyn.joints import KERNEL_OF
from sodyn.model import Model
from sodyn.simulate.contact import CompliantContact, concrete_array


class StiffStepWarning(UserWarning):
    """A step of the linearly implicit integrator longer than the stable-step estimate of its
    stiffest term (:func:`stable_step`): stable, but that term is not resolved."""


class StiffestTerm(NamedTuple):
    """What :func:`stiffest_term` returns: the estimate ``dt`` (s; ``inf`` with no stiff term)
    and a description of the term that sets it (``""`` with none)."""

    dt: float
    term: str


def slow_rate(k, c, m) -> np.ndarray:
    """The smaller root modulus ``|s|`` of ``m s² + c s + k = 0`` (module docstring),
    elementwise: ``sqrt(k/m)`` when underdamped, ``2k / (c + sqrt(c² − 4km))`` otherwise; ``0``
    without a spring."""
    k, c, m = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in (k, c, m)))
    with np.errstate(divide="ignore", invalid="ignore"):
        disc = c * c - 4.0 * k * m
        under = np.sqrt(np.where(m > 0, k / m, np.inf))
        over = 2.0 * k / (c + np.sqrt(np.maximum(disc, 0.0)))
        rate = np.where(disc < 0, under, over)
    return np.where(k > 0, np.nan_to_num(rate, nan=np.inf), 0.0)


def _concrete(*xs) -> list[np.ndarray] | None:
    out = [concrete_array(x) for x in xs]
    return None if any(x is None for x in out) else [np.asarray(x, np.float64) for x in out]


def _contact_terms(model: Model, contact, mass: float):
    """The contact slots' rates ``|s_slow|`` and a function naming slot ``i`` (``None``: a
    parameter is traced)."""
    if not isinstance(contact, CompliantContact):
        return np.zeros(0), str
    if hasattr(contact, "stiffness") and hasattr(contact, "damping"):
        values = _concrete(contact.stiffness, contact.damping)
    else:
        with jax.ensure_compile_time_eval():
            law = contact.law(np.float64 if jax.config.jax_enable_x64 else np.float32)
            values = _concrete(law.stiffness, law.damping)
    if values is None:
        return None
    k, c = np.broadcast_arrays(*values)
    rate = np.atleast_1d(slow_rate(k, c, mass))
    names = getattr(contact, "names", None)
    geom1, geom2 = getattr(contact, "geom1", None), getattr(contact, "geom2", None)

    def label(i: int) -> str:
        if k.ndim == 0:
            what = "every contact slot"
        elif names is not None and len(names) == rate.size:
            what = f"contact point {names[i]!r}"
        elif geom1 is not None and len(geom1) == rate.size:
            g = model.geoms.names
            what = f"contact pair ({g[geom1[i]]!r}, {g[geom2[i]]!r})"
        else:
            what = f"contact slot {i}"
        kk, cc = np.ravel(k)[i if k.ndim else 0], np.ravel(c)[i if c.ndim else 0]
        return f"{what} (stiffness {kk:.3g}, damping {cc:.3g} against the model's mass {mass:.3g})"

    return rate, label


def _dof_names(model: Model) -> list[str]:
    """Each dof's joint name (``name[j]`` for the ``j``-th dof of a multi-dof joint)."""
    body = np.asarray(model.topology.dof_body)
    names = []
    for i, b in enumerate(body):
        n = int(np.sum(body == b))
        j = i - int(model.topology.v_start[b])
        names.append(model.joint_names[b] if n == 1 else f"{model.joint_names[b]}[{j}]")
    return names


def _tendon_squares(model: Model):
    """The fixed tendons' ``(J², k_t, d_t)`` (``J² (n_t, nv)`` the squared moment rows; zero
    tendons without ``model.tendons``), or ``None`` when a parameter is traced."""
    tendons = model.tendons
    if tendons is None or not len(tendons):
        return np.zeros((0, model.nv)), np.zeros(0), np.zeros(0)
    values = _concrete(tendons.coef, tendons.stiffness, tendons.damping)
    if values is None:
        return None
    coef, stiffness, damping = values
    return coef * coef, stiffness, damping


def _joint_springs(model: Model, actuators, joint_forces):
    """Per dof ``(k, c)`` always acting and ``(k_lim, c_lim)`` added at a finite limit, with
    the kinds of spring present, or ``None`` when a parameter is traced.  A tendon's terms
    enter through the diagonal of ``Jᵀ (·) J`` (module docstring)."""
    values = _concrete(model.stiffness, model.damping, model.lower_limit, model.upper_limit)
    tendons = _tendon_squares(model)
    if values is None or tendons is None:
        return None
    stiffness, damping, lower, upper = values
    square, t_stiffness, t_damping = tendons
    springs = joint_forces is None or joint_forces.springs
    k = stiffness.copy() if springs else np.zeros(model.nv)
    kinds = [["spring"] if x > 0 else [] for x in k]
    k_tendon = t_stiffness @ square if springs else np.zeros(model.nv)
    k = k + k_tendon
    c = damping + t_damping @ square
    for i in np.flatnonzero(k_tendon > 0):
        kinds[i].append("tendon spring")
    if actuators is not None and len(actuators):
        act = _concrete(actuators.gear, actuators.bias)
        if act is None:
            return None
        gear, bias = act
        for i, (dof, tendon) in enumerate(zip(actuators.dof, actuators.tendon)):
            kp, kv = -bias[i, 1] * gear[i] ** 2, -bias[i, 2] * gear[i] ** 2
            row = np.eye(model.nv)[dof] if tendon < 0 else square[tendon]
            k += max(kp, 0.0) * row
            c += max(kv, 0.0) * row
            for j in np.flatnonzero(row > 0) if kp > 0 else ():
                kinds[j].append("servo")
    k_lim, c_lim = np.zeros(model.nv), np.zeros(model.nv)
    if joint_forces is not None and joint_forces.limits:
        lim = _concrete(joint_forces.limit_stiffness, joint_forces.limit_damping)
        if lim is None:
            return None
        topo = model.topology
        for b, t in enumerate(topo.joint_type):
            if KERNEL_OF.get(t) != "hinge":
                continue
            qi, vi = int(topo.q_start[b]), int(topo.v_start[b])
            if np.isfinite(lower[qi]) or np.isfinite(upper[qi]):
                k_lim[vi], c_lim[vi] = float(lim[0]), float(lim[1])
        limited = np.asarray(model.tendons.limited if model.tendons is not None else (), bool)
        reach = square[limited].sum(axis=0)
        k_lim, c_lim = k_lim + float(lim[0]) * reach, c_lim + float(lim[1]) * reach
    return k, c, k_lim, c_lim, kinds


_INERTIA_CACHE: dict[int, tuple[weakref.ref, np.ndarray]] = {}


def _dof_inertia(model: Model, q) -> np.ndarray | None:
    """``𝓜_ii(q) + armature_i`` (``None`` when the model or ``q`` is traced); at the neutral
    configuration it is computed once per model object."""
    from sodyn.algorithms.mass_matrix import mass_matrix

    if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(model)):
        return None
    if q is None:
        cached = _INERTIA_CACHE.get(id(model))
        if cached is not None and cached[0]() is model:
            return cached[1]
    elif concrete_array(q) is None:
        return None
    with jax.ensure_compile_time_eval():
        diag = np.diag(np.asarray(mass_matrix(model, model.q_neutral if q is None else q), np.float64))
    inertia = diag + np.asarray(model.armature, np.float64)
    if q is None:
        if len(_INERTIA_CACHE) > 64:
            _INERTIA_CACHE.clear()
        _INERTIA_CACHE[id(model)] = (weakref.ref(model), inertia)
    return inertia


def stiffest_term(model: Model, *, contact=None, actuators=None, joint_forces=None, q=None,
                  step: float | None = None) -> StiffestTerm | None:
    """:func:`stable_step` with the term that sets it.  With ``step`` given, the joints'
    inertias are computed only when some joint term could be stiffer than ``1/step`` by its
    damping alone (``|s_slow| ≤ 2k/c``): then a result above ``step`` may be ``inf``."""
    chunks = []                         # (rates, function naming the i-th)
    mass = concrete_array(model.mass)
    if mass is None:
        return None
    if contact is not None:
        found = _contact_terms(model, contact, float(np.sum(np.asarray(mass, np.float64))))
        if found is None:
            return None
        chunks.append(found)
    springs = _joint_springs(model, actuators, joint_forces)
    if springs is None:
        return None
    k, c, k_lim, c_lim, kinds = springs
    modes = [(k, c, kinds), (k + k_lim, c + c_lim, [x + ["limit"] if y > 0 else x for x, y in zip(kinds, k_lim)])]
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = max(float(np.max(np.where(kk > 0, 2.0 * kk / cc, 0.0), initial=0.0)) for kk, cc, _ in modes)
    if any(np.any(kk > 0) for kk, _, _ in modes) and (step is None or bound * step > 1.0):
        inertia = _dof_inertia(model, q)
        if inertia is None:
            return None
        for kk, cc, what in modes:
            def label(i, kk=kk, cc=cc, what=what):
                return (f"joint {_dof_names(model)[i]!r} ({' + '.join(what[i]) or 'spring'}: stiffness {kk[i]:.3g}, "
                        f"damping {cc[i]:.3g} against the dof's inertia {inertia[i]:.3g})")
            chunks.append((slow_rate(kk, cc, inertia), label))
    best, term = 0.0, ""
    for rates, label in chunks:
        rates = np.atleast_1d(rates)
        if rates.size and float(np.max(rates)) > best:
            i = int(np.argmax(rates))
            best, term = float(rates[i]), label(i)
    return StiffestTerm(1.0 / best if best > 0 else math.inf, term)


def stable_step(model: Model, *, contact=None, actuators=None, joint_forces=None, q=None) -> float | None:
    """The stable-step estimate ``dt_s`` (seconds) of the linearly implicit step (module
    docstring): ``min 1/|s_slow|`` over the stiff terms of ``contact`` (a compliant contact
    model), ``actuators`` (default: the model's own), ``joint_forces``
    (:class:`~sodyn.simulate.JointForces`; default on) and the model's joint and fixed-tendon
    springs and dampers (a tendon's through the diagonal of ``Jᵀ diag(k) J``, ``Jᵀ diag(d) J``),
    with the joints' inertias at ``q`` (default: the neutral configuration).

    Returns ``inf`` without a stiff term and ``None`` when a value it needs is traced (under
    ``jit`` or ``vmap`` of the parameters)."""
    from sodyn.simulate.stepping import resolve_forces

    forces = resolve_forces(model, actuators, joint_forces, contact)
    found = stiffest_term(model, contact=forces.contact, actuators=forces.actuators, joint_forces=forces.joint,
                          q=q)
    return None if found is None else found.dt


def warn_if_stiff(model: Model, forces, dt, substeps: int, integrator: str, stacklevel: int = 2) -> None:
    """Warn :class:`StiffStepWarning` when the substep ``dt / substeps`` of the implicit
    integrator exceeds :func:`stable_step` (module docstring); silent when anything is traced."""
    if integrator != "implicit":
        return
    h = concrete_array(dt)
    if h is None or np.ndim(h) != 0 or not np.isfinite(h) or h <= 0:
        return
    h = float(h) / substeps
    found = stiffest_term(model, contact=forces.contact, actuators=forces.actuators, joint_forces=forces.joint,
                          step=h)
    if found is None or not h > found.dt:
        return
    needed = math.ceil(h * substeps / found.dt)
    warnings.warn(
        f"the step dt = {h * substeps:.4g} s (substeps={substeps}: {h:.4g} s each) exceeds the stable-step "
        f"estimate {found.dt:.4g} s of the stiffest term, {found.term}: the linearly implicit step stays stable "
        f"but does not resolve it; pass substeps={needed} (static) or dt ≤ {found.dt:.4g} s "
        f"(sodyn.simulate.stable_step)", StiffStepWarning, stacklevel=stacklevel + 1)


__all__ = ["StiffStepWarning", "StiffestTerm", "slow_rate", "stable_step", "stiffest_term", "warn_if_stiff"]
