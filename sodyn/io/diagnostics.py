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
:func:`singular_joints` finds such joints (a sufficient condition).  Beyond massless subtrees,
:func:`numerically_singular_joints` runs the articulated-body (Riccati) recursion once in
NumPy, O(n), and names the joints whose pivot ``D(k)`` is singular (``M`` is singular exactly
when a pivot is): a zero principal moment of inertia about a joint axis, a free joint on a
massless body duplicating a slider below it.  :func:`warn_singular` (which the loaders call)
reports both in one :class:`SingularModelWarning` naming the joints and the remedies, keeping
only pivots singular both at the neutral and at a generic configuration (a pose-dependent
kinematic singularity is not a defect of the model).
"""

from __future__ import annotations

import dataclasses
import warnings

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


class ApproximatedElementWarning(_ElementsWarning):
    """The source has elements that sodyn models only approximately (``.elements``), e.g. a
    MuJoCo free joint's linear armature; the message gives the size of the difference."""


class IgnoredElementWarning(_ElementsWarning):
    """A malformed element that does not enter the model was ignored (``.elements``)."""


class InvalidLimitWarning(IgnoredElementWarning):
    """Joint limits that no configuration satisfies (``lower > upper``) were left out of the
    model (``±inf``); ``.elements`` names the joints."""


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


#: ``M`` counts as singular where an articulated-body pivot ``D(k)`` has an eigenvalue below this
#: fraction of the largest eigenvalue of any pivot (the loaders' numerical check).
SINGULAR_RATIO = 1e-12


def _quat_matrix(quat: np.ndarray) -> np.ndarray:
    w, x, y, z = quat / np.linalg.norm(quat)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _joint_poses(model, q: np.ndarray):
    """Joint transforms ``(R (n, 3, 3), p (n, 3))`` at ``q`` and motion subspaces ``H`` (one
    6 × nv array per body, ``[ω; v]``) of :mod:`sodyn.joints`, in NumPy (hinges vectorised)."""
    n, topo = model.n_bodies, model.topology
    axis, pitch = np.asarray(model.axis, np.float64), np.asarray(model.pitch, np.float64)
    types = np.array(model.joint_types)
    rot, pos = np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3))
    hinge = np.isin(types, ("revolute", "continuous", "prismatic", "helical"))
    rho = np.where(types == "prismatic", 0.0, 1.0)
    tau = np.where(types == "prismatic", 1.0, np.where(types == "helical", pitch, 0.0))
    th = np.where(hinge, q[np.minimum(topo.q_start, len(q) - 1)], 0.0)
    k = np.zeros((n, 3, 3))
    k[:, [2, 0, 1], [1, 2, 0]] = axis
    k[:, [1, 2, 0], [2, 0, 1]] = -axis
    ang = (rho * th)[:, None, None]
    rot[hinge] = (np.eye(3) + np.sin(ang) * k + (1 - np.cos(ang)) * k @ k)[hinge]
    pos[hinge] = ((tau * th)[:, None] * axis)[hinge]
    h_hinge = np.concatenate([rho[:, None] * axis, tau[:, None] * axis], axis=1)[:, :, None]
    eye = np.eye(6)
    subspaces = []
    for b, t in enumerate(model.joint_types):
        s0 = int(topo.q_start[b])
        if t == "free":
            rot[b], pos[b] = _quat_matrix(q[s0 + 3: s0 + 7]), q[s0: s0 + 3]
            subspaces.append(eye)
        elif t == "spherical":
            rot[b] = _quat_matrix(q[s0: s0 + 4])
            subspaces.append(eye[:, :3])
        elif t == "planar":
            c, sn = np.cos(q[s0 + 2]), np.sin(q[s0 + 2])
            rot[b], pos[b] = [[c, -sn, 0.0], [sn, c, 0.0], [0.0, 0.0, 1.0]], [q[s0], q[s0 + 1], 0.0]
            subspaces.append(eye[:, [3, 4, 2]])
        else:
            subspaces.append(h_hinge[b])
    return rot, pos, subspaces


def numerically_singular_joints(model, q=None) -> tuple[tuple[str, ...], float]:
    """Joints whose articulated-body pivot ``D(k) = H*(k) P(k) H(k) + armature`` is singular at
    ``q`` (default: the neutral configuration), and the smallest ratio of a pivot eigenvalue
    to the largest.

    ``M = [I + HφK] D [I + HφK]*`` with a unit-triangular outer factor (Jain Ch. 7), so ``M``
    is singular exactly when some ``D(k)`` is; one O(n) tips-to-base pass of the Riccati
    recursion finds the joints (no ``n × n`` eigendecomposition, so long chains load fast).
    ``D(k)`` is singular when joint ``k`` moves no inertia that the joints below it do not
    already move: a zero principal moment of inertia of a body about a joint axis, a free
    joint over a massless body duplicating a slider below it, a massless subtree.  Singular
    pivots are pseudo-inverted, so each defect is named once, at its joint.
    """
    n = model.n_bodies
    parent = np.asarray(model.parent)
    topo = model.topology
    q = np.asarray(model.q_neutral if q is None else q, dtype=np.float64)
    mass, com = np.asarray(model.mass, np.float64), np.asarray(model.com, np.float64)
    tree_r, tree_p = np.asarray(model.tree_rotation, np.float64), np.asarray(model.tree_translation, np.float64)
    armature = np.asarray(model.armature, np.float64)
    # Spatial inertias about the body frames, [[J_O, m c~], [-m c~, m I]] (vectorised).
    cx = np.zeros((n, 3, 3))
    cx[:, [2, 0, 1], [1, 2, 0]] = com
    cx[:, [1, 2, 0], [2, 0, 1]] = -com
    p_art = np.zeros((n, 6, 6))
    p_art[:, :3, :3] = np.asarray(model.inertia, np.float64) - mass[:, None, None] * cx @ cx
    p_art[:, :3, 3:] = mass[:, None, None] * cx
    p_art[:, 3:, :3] = -mass[:, None, None] * cx
    p_art[:, 3:, 3:] = mass[:, None, None] * np.eye(3)
    # Child-from-parent velocity transforms X = [[Rᵀ, 0], [−Rᵀ p~, Rᵀ]] at q.
    r_j, p_j, subspaces = _joint_poses(model, q)
    rot = tree_r @ r_j
    pos = tree_p + np.einsum("kij,kj->ki", tree_r, p_j)
    px = np.zeros((n, 3, 3))
    px[:, [2, 0, 1], [1, 2, 0]] = pos
    px[:, [1, 2, 0], [2, 0, 1]] = -pos
    rt = np.swapaxes(rot, 1, 2)
    x = np.zeros((n, 6, 6))
    x[:, :3, :3] = x[:, 3:, 3:] = rt
    x[:, 3:, :3] = -rt @ px
    low = np.zeros(n)
    scale = 0.0
    for k in range(n - 1, -1, -1):
        h = subspaces[k]
        p = p_art[k]
        ph = p @ h
        vs = int(topo.v_start[k])
        if h.shape[1] == 1:
            d = float(h[:, 0] @ ph[:, 0]) + armature[vs]
            low[k] = d
            scale = max(scale, d)
            p_plus = p - np.outer(ph[:, 0], ph[:, 0]) / d if d > SINGULAR_RATIO * scale else p
        else:
            d = h.T @ ph + np.diag(armature[vs: vs + h.shape[1]])
            lam, vec = np.linalg.eigh(0.5 * (d + d.T))
            low[k] = lam[0]
            scale = max(scale, lam[-1])
            keep = lam > SINGULAR_RATIO * scale
            p_plus = p - (ph @ vec[:, keep] / lam[keep]) @ (vec[:, keep].T @ ph.T)
        if parent[k] >= 0:
            p_art[parent[k]] += x[k].T @ p_plus @ x[k]
    if scale <= 0:
        return tuple(model.joint_names), 0.0
    bad = low <= SINGULAR_RATIO * scale
    return tuple(name for name, b in zip(model.joint_names, bad, strict=True) if b), float(low.min() / scale)


def _generic_configuration(model) -> np.ndarray:
    """A fixed pseudo-random configuration (angles and positions in ``[-1, 1]``, random unit
    quaternions), away from the special poses where the neutral configuration may sit."""
    rng = np.random.default_rng(46)
    q = rng.uniform(-1.0, 1.0, model.nq)
    for k, t in enumerate(model.joint_types):
        s = int(model.topology.q_start[k])
        a = {"free": s + 3, "spherical": s}.get(t)
        if a is not None:
            quat = rng.normal(size=4)
            q[a: a + 4] = quat / np.linalg.norm(quat)
    return q


def warn_singular(model, source: str, stacklevel: int = 2) -> tuple[str, ...]:
    """Warn (:class:`SingularModelWarning`) if ``M`` is singular at every configuration, naming
    the joints: those of :func:`singular_joints` (massless subtrees) and those that
    :func:`numerically_singular_joints` finds both at the neutral configuration and at a
    generic one (e.g. a zero principal moment of inertia about a joint axis, or a free joint
    duplicating a slider; a pose-dependent kinematic singularity is not reported).  Returns
    the joints named.  The loaders call it after building the model."""
    massless = singular_joints(model)
    numeric, ratio = numerically_singular_joints(model)
    if numeric:  # keep only what is singular at a generic configuration too (not a kinematic singularity)
        generic, ratio2 = numerically_singular_joints(model, _generic_configuration(model))
        numeric, ratio = tuple(j for j in numeric if j in generic), max(ratio, ratio2)
    named = set(massless) | set(numeric)
    joints = tuple(j for j in model.joint_names if j in named)
    if not joints:
        return joints
    parts = []
    if massless:
        parts.append(singular_message(source, massless))
    others = [j for j in joints if j not in massless]
    if others:
        where = ", ".join(f"{j!r} (body {model.body_names[model.joint_names.index(j)]!r})" for j in others)
        parts.append(
            f"{source}: the mass matrix is singular at the neutral configuration (smallest articulated-body "
            f"pivot eigenvalue / largest = {ratio:.3g} < {SINGULAR_RATIO:g}): joint(s) {where} move no inertia "
            "independently of the other joints (a zero principal moment of inertia about a joint's axis, or a "
            "free joint on a massless body duplicating a slider), so forward dynamics returns NaN or garbage; "
            "fix the inertias, give the joints armature, or lock them with sodyn.lock_joints")
    warnings.warn(SingularModelWarning("\n".join(parts), joints), stacklevel=stacklevel + 1)
    return joints


__all__ = [
    "ROUND_OFF", "SINGULAR_RATIO", "ApproximatedElementWarning", "IgnoredElementWarning", "InertiaRepair",
    "InertiaWarning", "InvalidLimitWarning", "LoadWarning", "SingularModelWarning", "UnsupportedElementWarning",
    "classify_inertia", "inertia_scale", "numerically_singular_joints", "singular_joints", "warn_singular",
]
