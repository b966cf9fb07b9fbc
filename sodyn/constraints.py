"""Loop-closure constraints between two frames of a tree, and joint couplings (Jain §11.1, §11.4).

A closed-chain mechanism is a spanning tree (the :class:`~sodyn.Model`) plus *cut edges*, each
a holonomic constraint ``𝔡(θ) = 0`` between a frame 1 and a frame 2 (either may be the world).
:class:`LoopClosures` holds any number of them, and of joint couplings, of four kinds:

* ``"weld"`` (6 rows): frame 1 is rigidly attached to frame 2: the point ``anchor1`` of frame 1
  coincides with the point ``anchor2`` of frame 2 and ``R₁ = R₂ · rotation``;
* ``"point"`` (3 rows; MuJoCo's ``connect``, a ball joint): ``p₁ + R₁ a₁ = p₂ + R₂ a₂``;
* ``"distance"`` (1 row): ``|p₁ + R₁ a₁ − (p₂ + R₂ a₂)| = d`` (a massless rod, ``d > 0``);
* ``"joint"`` (1 row; MuJoCo's ``<equality><joint>``): two one-dof (hinge or slide) joints
  coupled by a polynomial, ``q[i₁] − q0₁ = Σₖ cₖ (q[i₂] − q0₂)ᵏ`` (``k = 0..4``), or one joint
  held at ``q[i₁] = q0₁ + c₀``.  ``q0`` are reference values (by default the model's
  ``q_neutral``, MuJoCo's ``qpos0``);
* ``"tendon"`` (1 row; MuJoCo's ``<equality><tendon>``): the same polynomial coupling of two
  fixed tendons' lengths (``model.tendons``, :mod:`sodyn.simulate.tendons`),
  ``L₁ − L0₁ = Σₖ cₖ (L₂ − L0₂)ᵏ``, or one tendon held at ``L₁ = L0₁ + c₀`` (``L0``: the
  lengths at ``q_neutral``, MuJoCo's ``tendon_length0``).

Anchors are in their own frame's axes.  The rows between frames are expressed in **world
axes** (rows ``[ω₁ − ω₂; ṗ_a − ṗ_b]`` for a weld, ``ṗ_a − ṗ_b`` for a point, the velocity along
``p_a − p_b`` for a distance), so the multipliers ``λ`` are the wrench ``[moment; force]``
(world axes, at ``anchor1``) that the closure applies to frame 1; frame 2 receives its
opposite.  A joint coupling's row is ``𝔡 = q[i₁] − q0₁ − p(q[i₂] − q0₂)`` in joint space, its
``λ`` the generalized force on joint 1.
:func:`sodyn.algorithms.constrained.constrained_forward_dynamics` enforces them all.

Build closures with :meth:`LoopClosures.weld`, :meth:`LoopClosures.point`,
:meth:`LoopClosures.distance` and :meth:`LoopClosures.joint_coupling` (URDF users), or convert
MJCF ``<equality>`` elements with :meth:`LoopClosures.from_equality`; concatenate with ``+`` or
:meth:`LoopClosures.concatenate`.  Anchors, rotations, distances, polynomial coefficients and
reference values are pytree leaves (differentiable, vmappable); kinds, frames and joints are
static.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import KERNEL_OF
from sodyn.model import WORLD, Model
from sodyn.runtime.precision import full_precision

KINDS: tuple[str, ...] = ("weld", "point", "distance", "joint", "tendon")
ROWS: dict[str, int] = {"weld": 6, "point": 3, "distance": 1, "joint": 1, "tendon": 1}
#: the kinds whose rows are in joint space (no kinematics)
COUPLINGS: tuple[str, ...] = ("joint", "tendon")


class LoopClosures(eqx.Module):
    """Loop-closure constraints (module docstring for their meaning).

    ``anchor1``, ``anchor2`` ``(n, 3)``: the constrained points in frame 1's and frame 2's axes;
    ``rotation`` ``(n, 3, 3)``: a weld's relative orientation ``R₂ᵀ R₁`` (identity otherwise);
    ``length`` ``(n,)``: a distance constraint's length ``d`` (zero otherwise); ``polycoef``
    ``(n, 5)``: a joint coupling's ``c₀ … c₄`` and ``reference`` ``(n, 2)`` its ``(q0₁, q0₂)``
    (zero otherwise).  Static: ``kind``, ``frame1``, ``frame2`` (indices into
    ``model.frame_names``, ``-1`` = the world; ``-1`` for a joint coupling), ``joint1``,
    ``joint2`` (a joint coupling's joints, indices into ``model.joint_names``; ``-1`` for no
    second joint and for the other kinds), ``names``, ``tendon1``, ``tendon2`` (a tendon
    coupling's tendons, indices into ``model.tendons``; ``-1`` likewise; filled with ``-1`` when
    not given).
    """

    anchor1: jax.Array
    anchor2: jax.Array
    rotation: jax.Array
    length: jax.Array
    polycoef: jax.Array
    reference: jax.Array
    kind: tuple[str, ...] = eqx.field(static=True)
    frame1: tuple[int, ...] = eqx.field(static=True)
    frame2: tuple[int, ...] = eqx.field(static=True)
    joint1: tuple[int, ...] = eqx.field(static=True)
    joint2: tuple[int, ...] = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
    tendon1: tuple[int, ...] | None = eqx.field(static=True, default=None)
    tendon2: tuple[int, ...] | None = eqx.field(static=True, default=None)

    def __post_init__(self) -> None:
        none = (-1,) * len(self.kind)
        self.tendon1 = none if self.tendon1 is None else tuple(self.tendon1)
        self.tendon2 = none if self.tendon2 is None else tuple(self.tendon2)

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def n_rows(self) -> int:
        """Number of scalar constraint rows ``n_c`` (6 per weld, 3 per point, 1 per distance or
        joint coupling)."""
        return sum(ROWS[k] for k in self.kind)

    @property
    def row_offsets(self) -> tuple[int, ...]:
        """First row of each closure (static)."""
        return tuple(int(x) for x in np.cumsum([0] + [ROWS[k] for k in self.kind])[:-1])

    def __add__(self, other: LoopClosures) -> LoopClosures:
        return LoopClosures.concatenate(self, other)

    @staticmethod
    def concatenate(*closures: LoopClosures) -> LoopClosures:
        """All closures of ``closures``, in order."""
        if not closures:
            raise ValueError("concatenate needs at least one LoopClosures")
        for c in closures:
            if not isinstance(c, LoopClosures):
                raise TypeError(f"can only concatenate LoopClosures, got {type(c).__name__}")
        cat = lambda name: jnp.concatenate([getattr(c, name) for c in closures])  # noqa: E731
        tup = lambda name: sum((getattr(c, name) for c in closures), ())  # noqa: E731
        return LoopClosures(**{name: cat(name) for name in _LEAVES},
                            **{name: tup(name) for name in ("kind", "frame1", "frame2", "joint1", "joint2", "names",
                                                            "tendon1", "tendon2")})

    # -- constructors -----------------------------------------------------------------

    @classmethod
    @full_precision
    def weld(cls, model: Model, frame1, frame2, *, rotation=None, anchor1=None, anchor2=None, q=None,
             name: str | None = None) -> LoopClosures:
        """Weld ``frame1`` to ``frame2`` (6 rows): ``anchor1`` (default the origin of frame 1)
        coincides with ``anchor2`` of frame 2 and ``R₁ = R₂ · rotation``.

        With a configuration ``q``, the relative pose at ``q`` is kept: ``rotation = R₂ᵀR₁``
        and ``anchor2`` is where ``anchor1`` sits in frame 2 (both unless given).  Without
        ``q`` the defaults are the identity and the origins (the two frames coincide).
        """
        f1, f2 = _frames(model, frame1, frame2, "weld")
        a1 = _vector(anchor1, "anchor1", model)
        if q is not None:
            (r1, p1), (r2, p2) = _poses(model, q, (f1, f2))
            rel = r2.T @ r1 if rotation is None else _rotation(rotation, model)
            a2 = r2.T @ (p1 + r1 @ a1 - p2) if anchor2 is None else _vector(anchor2, "anchor2", model)
        else:
            rel = _rotation(rotation, model)
            a2 = _vector(anchor2, "anchor2", model)
        return cls._one("weld", f1, f2, a1, a2, rel, jnp.zeros((), a1.dtype), name, model)

    @classmethod
    @full_precision
    def point(cls, model: Model, frame1, frame2, *, anchor1=None, anchor2=None, q=None,
              name: str | None = None) -> LoopClosures:
        """Point ``anchor1`` of ``frame1`` coincides with ``anchor2`` of ``frame2`` (3 rows; a
        ball joint, MuJoCo's ``connect``).  With ``q`` and no ``anchor2``, ``anchor2`` is where
        ``anchor1`` sits in frame 2 at ``q``; otherwise both default to the frame origins."""
        f1, f2 = _frames(model, frame1, frame2, "point")
        a1 = _vector(anchor1, "anchor1", model)
        if q is not None and anchor2 is None:
            (r1, p1), (r2, p2) = _poses(model, q, (f1, f2))
            a2 = r2.T @ (p1 + r1 @ a1 - p2)
        else:
            a2 = _vector(anchor2, "anchor2", model)
        return cls._one("point", f1, f2, a1, a2, jnp.eye(3, dtype=a1.dtype), jnp.zeros((), a1.dtype), name, model)

    @classmethod
    @full_precision
    def distance(cls, model: Model, frame1, frame2, distance=None, *, anchor1=None, anchor2=None, q=None,
                 name: str | None = None) -> LoopClosures:
        """``|p_a − p_b| = distance`` between ``anchor1`` of ``frame1`` and ``anchor2`` of
        ``frame2`` (1 row).  ``distance=None`` takes the distance at ``q`` (then required)."""
        f1, f2 = _frames(model, frame1, frame2, "distance")
        a1, a2 = _vector(anchor1, "anchor1", model), _vector(anchor2, "anchor2", model)
        if distance is None:
            if q is None:
                raise ValueError("distance: give the distance or a configuration q to measure it at")
            (r1, p1), (r2, p2) = _poses(model, q, (f1, f2))
            d = jnp.linalg.norm(p1 + r1 @ a1 - p2 - r2 @ a2)
        else:
            d = jnp.asarray(distance, a1.dtype)
            if d.shape != ():
                raise ValueError(f"distance must be a scalar, got shape {d.shape}")
        _check_positive(d)
        return cls._one("distance", f1, f2, a1, a2, jnp.eye(3, dtype=a1.dtype), d, name, model)

    @classmethod
    @full_precision
    def joint_coupling(cls, model: Model, joint1: str | int, joint2: str | int | None = None,
                       polycoef: Sequence[float] | jax.Array = (0.0, 1.0, 0.0, 0.0, 0.0), *,
                       reference: Sequence[float] | jax.Array | None = None,
                       name: str | None = None) -> LoopClosures:
        """Couple two one-dof (hinge or slide) joints (1 row; MuJoCo's ``<equality><joint>``):
        ``q[joint1] − q0₁ = Σₖ cₖ (q[joint2] − q0₂)ᵏ`` with ``polycoef = (c₀, …, c₄)`` (fewer
        entries: the rest zero; the default ``(0, 1)`` makes the two joints move alike).
        ``joint2=None`` holds ``joint1`` at ``q0₁ + c₀``.  ``reference = (q0₁, q0₂)``
        (default: the joints' ``model.q_neutral``, MuJoCo's ``qpos0``).  Joints are names or
        indices into ``model.joint_names``.  The row is ``𝔡 = q[i₁] − q0₁ − p(x)``,
        ``x = q[i₂] − q0₂``, with Jacobian ``e_{i₁}ᵀ − p′(x) e_{i₂}ᵀ``.
        """
        j1 = _joint(model, joint1, "joint1")
        j2 = -1 if joint2 is None else _joint(model, joint2, "joint2")
        if reference is None:
            q0 = model.q_neutral[np.asarray(model.topology.q_start)[[j1, max(j2, 0)]]]
            reference = q0 * jnp.asarray([1.0, float(j2 >= 0)], q0.dtype)
        return cls._coupling(model, "joint", (j1, j2), model.joint_names, polycoef, reference, name)

    @classmethod
    def _coupling(cls, model: Model, kind: str, pair, names, polycoef, reference, name) -> LoopClosures:
        """One ``"joint"`` or ``"tendon"`` coupling of ``pair = (i₁, i₂)`` (``i₂ = -1``: none)."""
        dtype = model.mass.dtype
        i1, i2 = pair
        if i1 == i2:
            raise ValueError(f"{kind} coupling of {kind} {names[i1]!r} with itself")
        c = jnp.asarray(polycoef, dtype)
        if c.ndim != 1 or not 1 <= c.shape[0] <= 5:
            raise ValueError(f"polycoef must hold 1 to 5 polynomial coefficients (c₀, …, c₄), got shape {c.shape}")
        c = jnp.pad(c, (0, 5 - c.shape[0]))
        ref = jnp.asarray(reference, dtype)
        if ref.shape != (2,):
            raise ValueError(f"reference must be the pair of reference values, got shape {ref.shape}")
        label = names[i1] + ("" if i2 < 0 else f", {names[i2]}")
        eye = jnp.eye(3, dtype=dtype)[None]
        joints, tendons = (pair, (-1, -1)) if kind == "joint" else ((-1, -1), pair)
        return cls(jnp.zeros((1, 3), dtype), jnp.zeros((1, 3), dtype), eye, jnp.zeros(1, dtype), c[None],
                   ref[None], (kind,), (WORLD,), (WORLD,), joints[:1], joints[1:],
                   (f"{kind}({label})" if name is None else name,), tendons[:1], tendons[1:])

    @classmethod
    def tendon_coupling(cls, model: Model, tendon1: str | int, tendon2: str | int | None = None,
                        polycoef: Sequence[float] | jax.Array = (0.0, 1.0, 0.0, 0.0, 0.0), *,
                        reference: Sequence[float] | jax.Array | None = None,
                        name: str | None = None) -> LoopClosures:
        """Couple two fixed tendons of ``model.tendons`` (1 row; MuJoCo's ``<equality><tendon>``):
        ``L₁ − L0₁ = Σₖ cₖ (L₂ − L0₂)ᵏ`` (:meth:`joint_coupling` with tendon lengths for joint
        coordinates; ``tendon2=None`` holds ``L₁`` at ``L0₁ + c₀``).  ``reference = (L0₁, L0₂)``
        defaults to the lengths at ``model.q_neutral`` (MuJoCo's ``tendon_length0``).  The row
        is ``𝔡 = L₁ − L0₁ − p(x)``, ``x = L₂ − L0₂``, with Jacobian ``J₁ − p′(x) J₂``."""
        from sodyn.simulate.tendons import tendon_lengths

        if model.tendons is None:
            raise ValueError("a tendon coupling needs the model's tendons (Model.tendons is None)")
        t1, t2 = (-1 if t is None else model.tendons.index(t) if isinstance(t, str) else int(t)
                  for t in (tendon1, tendon2))
        if not (0 <= t1 < len(model.tendons) and t2 < len(model.tendons)):
            raise ValueError(f"tendon indices ({tendon1}, {tendon2}) out of range [0, {len(model.tendons)})")
        if reference is None:
            rest = tendon_lengths(model, model.q_neutral)
            reference = jnp.stack([rest[t1], rest[t2] if t2 >= 0 else jnp.zeros_like(rest[0])])
        return cls._coupling(model, "tendon", (t1, t2), model.tendons.names, polycoef, reference, name)

    @classmethod
    def from_equality(cls, model: Model, equality, *, joint: str = "convert", inactive: str = "skip") -> LoopClosures:
        """Closures from MJCF ``<equality>`` constraints (:class:`sodyn.io.EqualityConstraints`,
        what ``load_mjcf(path, with_constraints=True)`` returns beside the model).

        ``connect`` becomes a ``"point"`` closure and ``weld`` a ``"weld"`` closure (a weld with
        ``torquescale = 0`` constrains no rotation: a ``"point"`` closure).  ``joint``
        equalities (polynomial couplings of two joint coordinates) become ``"joint"`` couplings
        (:meth:`joint_coupling`, reference values ``qpos0``) with ``joint="convert"`` (default);
        ``joint="skip"`` leaves them out with a warning and ``joint="raise"`` raises
        ``NotImplementedError`` (the behaviour before couplings were supported).  ``tendon``
        equalities become ``"tendon"`` couplings (:meth:`tendon_coupling` of ``model.tendons``,
        reference lengths at ``model.q_neutral``, MuJoCo's ``tendon_length0``), placed after all
        the other closures (the order of ``Model.closures`` of a loaded model).  Hard closures
        ignore MuJoCo's ``solref``/``solimp`` softness and ``torquescale`` weighting.
        Equalities disabled in the file are left out (``inactive="skip"``) or kept (``"keep"``).
        """
        if joint not in ("convert", "raise", "skip"):
            raise ValueError(f"joint must be 'convert', 'raise' or 'skip', got {joint!r}")
        if inactive not in ("skip", "keep"):
            raise ValueError(f"inactive must be 'skip' or 'keep', got {inactive!r}")
        parts, tendon_parts = [], []
        for i, kind in enumerate(equality.kind):
            name = equality.names[i]
            if not equality.active[i] and inactive == "skip":
                continue
            if kind == "tendon":
                if model.tendons is None:
                    raise ValueError(f"equality {name!r} couples tendons, but the model has none (Model.tendons "
                                     "is None)")
                t2 = equality.tendon2[i]
                tendon_parts.append(cls.tendon_coupling(model, equality.tendon1[i], None if t2 < 0 else t2,
                                                        equality.polycoef[i], name=name))
                continue
            if kind == "joint" and joint == "convert":
                j1, j2 = _joint_at_q(model, equality.joint1[i], name), _joint_at_q(model, equality.joint2[i], name)
                parts.append(cls.joint_coupling(model, j1, None if j2 < 0 else j2, equality.polycoef[i], name=name))
                continue
            if kind == "joint":
                msg = f"equality {name!r} is a joint coupling"
                if joint == "raise":
                    raise NotImplementedError(msg + " and joint='raise' (the default, 'convert', converts it)")
                warnings.warn(msg + ": left out (joint='skip')", stacklevel=2)
                continue
            f1, f2 = equality.frame1[i], equality.frame2[i]
            a1, a2 = equality.anchor1[i], equality.anchor2[i]
            if kind == "weld" and float(equality.torque_scale[i]) != 0.0:
                parts.append(cls.weld(model, f1, f2, rotation=equality.relative_rotation[i], anchor1=a1, anchor2=a2,
                                      name=name))
            elif kind in ("weld", "connect"):
                parts.append(cls.point(model, f1, f2, anchor1=a1, anchor2=a2, name=name))
            else:
                raise ValueError(f"equality {name!r}: unknown kind {kind!r}")
        if not parts + tendon_parts:
            raise ValueError("the equality constraints contain no active connect, weld, joint or tendon element")
        return cls.concatenate(*parts, *tendon_parts)

    @classmethod
    def _one(cls, kind, f1, f2, a1, a2, rel, d, name, model) -> LoopClosures:
        dtype = model.mass.dtype
        name = name if name is not None else f"{kind}({_frame_name(model, f1)}, {_frame_name(model, f2)})"
        return cls(jnp.asarray(a1, dtype)[None], jnp.asarray(a2, dtype)[None], jnp.asarray(rel, dtype)[None],
                   jnp.asarray(d, dtype)[None], jnp.zeros((1, 5), dtype), jnp.zeros((1, 2), dtype),
                   (kind,), (f1,), (f2,), (-1,), (-1,), (name,))


#: The pytree leaves of :class:`LoopClosures`, in order.
_LEAVES: tuple[str, ...] = ("anchor1", "anchor2", "rotation", "length", "polycoef", "reference")


# ---------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------


def _is_world(frame) -> bool:
    return frame is None or (isinstance(frame, str) and frame in ("world", "universe")) or (
        isinstance(frame, (int, np.integer)) and int(frame) == WORLD)


def _frame_name(model: Model, f: int) -> str:
    return "world" if f == WORLD else model.frame_names[f]


def _frames(model: Model, frame1, frame2, kind: str) -> tuple[int, int]:
    """Resolve the two frames (``None``, ``"world"`` or ``-1`` is the world) and check them."""
    f1 = WORLD if _is_world(frame1) else model.frame_id(frame1)
    f2 = WORLD if _is_world(frame2) else model.frame_id(frame2)
    b1 = WORLD if f1 == WORLD else int(model.frame_body[f1])
    b2 = WORLD if f2 == WORLD else int(model.frame_body[f2])
    n1, n2 = _frame_name(model, f1), _frame_name(model, f2)
    if f1 == f2:
        raise ValueError(f"{kind} constraint between frame {n1!r} and itself")
    if b1 == b2:
        where = "the world" if b1 == WORLD else f"body {model.body_names[b1]!r}"
        raise ValueError(f"{kind} constraint between frames {n1!r} and {n2!r}, which are both on {where}: "
                         "no joint can move one relative to the other")
    return f1, f2


def check_coupled_joint(model: Model, j: int, hint: str = "") -> None:
    """Raise ``ValueError`` unless joint (body) index ``j`` is a one-dof joint of ``model``
    (revolute, continuous, prismatic or helical: ``q̇ = v``), what a joint coupling needs."""
    if not 0 <= j < model.n_bodies:
        raise ValueError(f"joint index {j} out of range for model {model.name!r} ({model.n_bodies} joints)"
                         + (f": {hint}" if hint else ""))
    jtype = model.joint_types[j]
    if KERNEL_OF.get(jtype) != "hinge":
        raise ValueError(f"joint {model.joint_names[j]!r} is a {jtype} joint: a joint coupling needs one-dof "
                         "(hinge or slide) joints" + (f" ({hint})" if hint else ""))


def _joint(model: Model, joint, what: str) -> int:
    """The index of ``joint`` (a name or an index into ``model.joint_names``), checked."""
    if isinstance(joint, str):
        if joint not in model.joint_names:
            raise ValueError(f"{what}: unknown joint {joint!r}; joints are {list(model.joint_names)}")
        j = model.joint_names.index(joint)
    elif isinstance(joint, (int, np.integer)) and not isinstance(joint, bool):
        j = int(joint)
    else:
        raise ValueError(f"{what} must be a joint name or index, got {joint!r}")
    check_coupled_joint(model, j)
    return j


def _joint_at_q(model: Model, q_index: int, name: str) -> int:
    """The joint whose coordinate is ``q[q_index]`` (``-1`` for ``-1``), for an MJCF equality."""
    if q_index < 0:
        return -1
    moving = np.array([KERNEL_OF.get(t) is not None for t in model.joint_types])
    hits = np.flatnonzero((np.asarray(model.topology.q_start) == q_index) & moving)
    if hits.size == 0:
        raise ValueError(f"equality {name!r}: no joint starts at q[{q_index}]")
    return int(hits[0])


def _vector(x, name: str, model: Model) -> jax.Array:
    dtype = model.mass.dtype
    if x is None:
        return jnp.zeros(3, dtype)
    a = jnp.asarray(x, dtype)
    if a.shape != (3,):
        raise ValueError(f"{name} must be a 3-vector (a point in its frame's axes), got shape {a.shape}")
    return a


def _rotation(x, model: Model) -> jax.Array:
    dtype = model.mass.dtype
    if x is None:
        return jnp.eye(3, dtype=dtype)
    r = jnp.asarray(x, dtype)
    if r.shape != (3, 3):
        raise ValueError(f"rotation must be a 3×3 rotation matrix, got shape {r.shape}")
    try:
        rn = np.asarray(r, dtype=np.float64)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return r
    if not np.allclose(rn.T @ rn, np.eye(3), atol=1e-5) or np.linalg.det(rn) < 0:
        raise ValueError("rotation must be a proper rotation matrix (RᵀR = I, det R = 1)")
    return r


def _check_positive(d) -> None:
    try:
        value = float(d)
    except (TypeError, jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return
    if not value > 0:
        raise ValueError(f"distance must be positive (use a point constraint for coincident points), got {value}")


def _poses(model: Model, q, frames) -> list[tuple[jax.Array, jax.Array]]:
    from sodyn.algorithms.kinematics import forward_kinematics

    fk = jax.jit(forward_kinematics)(model, q)
    out = []
    for f in frames:
        if f == WORLD:
            out.append((jnp.eye(3, dtype=fk.frame.translation.dtype), jnp.zeros(3, fk.frame.translation.dtype)))
        else:
            out.append((fk.frame.rotation[f], fk.frame.translation[f]))
    return out


__all__ = ["COUPLINGS", "KINDS", "LoopClosures", "ROWS", "check_coupled_joint"]
