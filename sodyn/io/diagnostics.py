"""What the loaders report about a model: warning classes, inertia repair, singular joints.

Every warning a loader emits is a :class:`LoadWarning` (a ``UserWarning``), so
``warnings.simplefilter("error", sd.LoadWarning)`` or ``pytest.warns`` catch them by class;
each carries the structured data its message lists.

**Inertias.**  A link's spatial inertia is positive semi-definite exactly when its mass is
non-negative and its rotational inertia about the centre of mass ``I`` is.  With
``s`` the largest principal moment of any link of the model and ``tol = ROUND_OFF · s``:

* an eigenvalue of ``I`` below ``−tol`` (or a negative mass, or NaN) is impossible input: an
  error naming the file, the element and the line;
* eigenvalues in ``[−tol, 0)`` are round-off: every eigenvalue with ``|λ| ≤ tol`` is set to
  zero (``I ← V diag(λ') Vᵀ``, the nearest such matrix in the Frobenius norm);
* principal moments that violate the triangle inequality ``λ₁ + λ₂ ≥ λ₃`` by at most
  ``max(ROUND_OFF · λ₃, tol)`` are moved onto it along its normal (``λ₁, λ₂ += d/3``, ``λ₃ −= d/3``);
  larger violations are kept as written (the spatial inertia is still positive semi-definite
  and Pinocchio loads it unchanged) and reported.

All of a model's defects go into one :class:`InertiaWarning`; ``strict=True`` makes it a
``ValueError`` instead.

**Singular models.**  A dof whose whole subtree carries no inertia it could move (no mass for
a translation; no mass and no rotational inertia for a rotation) and no armature has a zero
row and column in ``M``, so ``M`` is singular at every configuration.
:func:`singular_joints` finds such joints (a sufficient condition); the loaders warn with a
:class:`SingularModelWarning` naming them and the remedies.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: Relative size of an inertia defect that counts as round-off (see the module docstring).
ROUND_OFF = 1e-6
#: Triangle-inequality gaps below this fraction of ``λ₃`` are noise of the eigen-decomposition.
_EIG_NOISE = 1e-12


class LoadWarning(UserWarning):
    """Base class of the warnings emitted while loading a model."""


@dataclasses.dataclass(frozen=True)
class InertiaRepair:
    """One link's inertia defect: ``inertia`` is what the model uses (in the link frame's
    axes, about the centre of mass), ``original`` what the file says; ``repaired`` is
    ``False`` when the inertia was kept as written."""

    link: str
    where: str
    problem: str
    original: np.ndarray
    inertia: np.ndarray
    repaired: bool


class InertiaWarning(LoadWarning):
    """Round-off repairs and kept non-physical inertias of one model (``.repairs``)."""

    def __init__(self, message: str, repairs: tuple[InertiaRepair, ...] = ()):
        super().__init__(message)
        self.repairs = repairs


class SingularModelWarning(LoadWarning):
    """``M`` is singular at every configuration; ``.joints`` names the joints responsible."""

    def __init__(self, message: str, joints: tuple[str, ...] = ()):
        super().__init__(message)
        self.joints = joints


class _ElementsWarning(LoadWarning):
    """A load warning about elements of the source file, named in ``.elements``."""

    def __init__(self, message: str, elements: tuple[str, ...] = ()):
        super().__init__(message)
        self.elements = elements


class UnsupportedElementWarning(_ElementsWarning):
    """The source has elements that change the dynamics but are not modelled (``.elements``)."""


class IgnoredElementWarning(_ElementsWarning):
    """A malformed element that does not enter the model was ignored (``.elements``)."""


def inertia_scale(inertias) -> float:
    """The largest principal moment over all links (the ``s`` of the module docstring)."""
    return max((float(np.max(np.abs(np.linalg.eigvalsh(_sym(i))))) for i in inertias if np.any(i)), default=0.0)


def _sym(a) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    return 0.5 * (a + a.T)


def classify_inertia(
    link: str, where: str, inertia: np.ndarray, scale: float, keep_invalid: bool = False
) -> tuple[np.ndarray, InertiaRepair | None]:
    """Check one rotational inertia; return the inertia to use and the defect, if any.

    Raises ``ValueError`` (prefixed by ``where``) for an eigenvalue below ``−ROUND_OFF · scale``
    unless ``keep_invalid`` (then it is kept as written and reported).
    """
    inertia = _sym(inertia)
    if not np.any(inertia):
        return inertia, None
    lam, vec = np.linalg.eigh(inertia)
    tol = ROUND_OFF * scale
    if lam[0] < -tol:
        if not keep_invalid:
            raise ValueError(
                f"{where}: the rotational inertia has a clearly negative eigenvalue {lam[0]:.6g} "
                f"(principal moments {lam}; round-off tolerance {tol:.3g}), so the link's spatial "
                "inertia is not positive semi-definite; fix the file, or pass invalid_inertia='keep' "
                "to load it unchanged as Pinocchio does"
            )
        return inertia, InertiaRepair(link, where, f"negative principal moment {lam[0]:.6g} (kept as written)",
                                      inertia, inertia, False)
    problems = []
    new = lam.copy()
    if lam[0] < 0:
        new[np.abs(new) <= tol] = 0.0
        problems.append(f"principal moments {lam} within {tol:.3g} of zero set to zero")
    gap = new[2] - new[0] - new[1]
    repaired = bool(problems)
    if gap > _EIG_NOISE * new[2]:
        if gap <= max(ROUND_OFF * new[2], tol):
            new = new + np.array([1.0, 1.0, -1.0]) * gap / 3.0
            problems.append(f"triangle inequality violated by {gap:.3g}, moved onto it")
            repaired = True
        else:
            problems.append(f"principal moments {new} violate the triangle inequality by {gap:.3g} "
                            "(kept as written: no rigid body has them)")
    if not problems:
        return inertia, None
    out = (vec * new) @ vec.T if repaired else inertia
    return out, InertiaRepair(link, where, "; ".join(problems), inertia, _sym(out), repaired)


def inertia_message(source: str, repairs) -> str:
    lines = [f"{source}: {len(repairs)} link inertia(s) are not those of a rigid body:"]
    lines += [f"  {r.where.removeprefix(source + ', ')}: {r.problem}" for r in repairs]
    lines.append("(strict=True makes this an error)")
    return "\n".join(lines)


def singular_joints(model) -> tuple[str, ...]:
    """Joints with a dof that moves no inertia and has no armature (``M`` singular)."""
    n = model.n_bodies
    parent = np.asarray(model.parent)
    mass = np.asarray(model.mass, dtype=np.float64).copy()
    rot = np.any(np.asarray(model.inertia).reshape(n, -1) != 0, axis=1)
    for k in range(n - 1, -1, -1):  # bodies are in topological order: children after parents
        if parent[k] >= 0:
            mass[parent[k]] += mass[k]
            rot[parent[k]] |= rot[k]
    armature = np.asarray(model.armature)
    out = []
    for k, (name, t) in enumerate(zip(model.joint_names, model.joint_types, strict=True)):
        kinds = {"revolute": "r", "continuous": "r", "helical": "r", "prismatic": "t", "spherical": "rrr",
                 "free": "rrrttt", "planar": "ttr"}[t]
        s = int(model.topology.v_start[k])
        for i, kind in enumerate(kinds):
            moves = mass[k] > 0 or (kind == "r" and rot[k])
            if not moves and armature[s + i] == 0:
                out.append(name)
                break
    return tuple(out)


def singular_message(source: str, joints) -> str:
    return (f"{source}: the mass matrix is singular: nothing with inertia moves with joint(s) "
            f"{', '.join(map(repr, joints))} (their subtrees are massless), so forward dynamics "
            "returns NaN; give them armature, or lock them with sodyn.lock_joints")


__all__ = [
    "ROUND_OFF", "IgnoredElementWarning", "InertiaRepair", "InertiaWarning", "LoadWarning", "SingularModelWarning",
    "UnsupportedElementWarning", "classify_inertia", "inertia_scale", "singular_joints",
]
