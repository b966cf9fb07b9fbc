"""Model data kept beside the kinematic tree for the actuator, contact and simulation code:
:class:`Actuators`, collision :class:`Geoms` (with their :class:`ContactPairs`) and
:class:`Keyframes` (fields of :class:`sodyn.Model`; empty when the source has none)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

#: Collision geometry types, in MuJoCo's ``mjtGeom`` order (MuJoCo's meaning of ``size``).  The
#: order is that of the narrow phase: a pair is tested as ``(geom1, geom2)`` with
#: ``GEOM_TYPES.index(type1) <= GEOM_TYPES.index(type2)``.
GEOM_TYPES: tuple[str, ...] = ("plane", "sphere", "capsule", "ellipsoid", "cylinder", "box")
#: Contact dimensions MuJoCo defines: 1 frictionless, 3 sliding, 4 + torsional, 6 + rolling friction.
CONDIMS: tuple[int, ...] = (1, 3, 4, 6)


class Actuators(eqx.Module):
    """Joint actuators in MuJoCo's affine form (``na`` actuators, each driving one dof).

    With ``u = clip(ctrl, ctrl_range)``, actuator length ``l = gear · q[dof]`` and velocity
    ``l̇ = gear · v[dof]``, the actuator force is
    ``f = clip(gain · u + bias[0] + bias[1] · l + bias[2] · l̇, force_range)`` and the
    generalised force ``τ[dof] += gear · f``.  A motor has ``gain = 1``, ``bias = 0``; a
    position servo ``gain = kp``, ``bias = (0, −kp, −kv)``.  Unlimited ranges are ``±inf``.

    - ``gear``, ``gain (na,)``; ``bias (na, 3)``; ``ctrl_range``, ``force_range (na, 2)``;
    - static: ``names``, ``kind`` (``"motor"``, ``"position"``, ``"velocity"``,
      ``"general"``), ``dof`` (index into ``v``).
    """

    gear: jax.Array
    gain: jax.Array
    bias: jax.Array
    ctrl_range: jax.Array
    force_range: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    kind: tuple[str, ...] = eqx.field(static=True)
    dof: tuple[int, ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.names)


class ContactPairs(eqx.Module):
    """Explicit contact pairs (MuJoCo's ``<contact><pair>``): ``np`` geom pairs tested whatever
    the body filters and the ``contype``/``conaffinity`` bitmasks say, with their own contact
    parameters instead of those combined from the two geoms.

    - ``friction (np, 3)``: (sliding, torsional, rolling) — MuJoCo's 5-vector ``pair friction``
      read at indices 0, 2 and 3; ``margin (np,)``, ``gap (np,)`` (as in :class:`Geoms`);
    - static ``geom1``, ``geom2`` (geom indices), ``condim`` (one of ``CONDIMS``), ``names``.
    """

    friction: jax.Array
    margin: jax.Array
    gap: jax.Array
    geom1: tuple[int, ...] = eqx.field(static=True)
    geom2: tuple[int, ...] = eqx.field(static=True)
    condim: tuple[int, ...] = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.geom1)

    @classmethod
    def empty(cls, dtype=None) -> "ContactPairs":
        """No explicit pairs."""
        z = jnp.zeros((0,), dtype)
        return cls(friction=z.reshape(0, 3), margin=z, gap=z, geom1=(), geom2=(), condim=(), names=())


class Geoms(eqx.Module):
    """Collision geometry attached to bodies (``ng`` geoms) and the rules that say which pairs
    of them may touch (MuJoCo's, see :func:`sodyn.collision.pairs.candidate_pairs`).

    Leaves:

    - ``rotation (ng, 3, 3)``, ``translation (ng, 3)``: the geom's pose in its body's frame;
    - ``size (ng, 3)`` as in MuJoCo: sphere ``(r, ·, ·)``; capsule ``(r, h, ·)`` and cylinder
      ``(r, h, ·)`` along the geom's ``z`` (``h`` half the length of the cylindrical part);
      ellipsoid and box semi-axes / half-sizes; plane ``(half-x, half-y, ·)`` with normal ``z``
      (``0`` = infinite);
    - ``friction (ng, 3)``: (sliding, torsional, rolling) coefficients;
    - ``margin (ng,)``: a contact acts once the surfaces are closer than the pair's margin
      (MuJoCo adds the two geoms' margins), so it can push before they touch;
    - ``gap (ng,)``: contacts are detected up to ``margin + gap`` but act only below
      ``margin`` (MuJoCo's "inactive" contacts; added over the pair too).

    Static:

    - ``names``, ``type`` (one of ``GEOM_TYPES``), ``body`` (``-1`` = the world);
    - ``contype``, ``conaffinity`` (bitmasks: two geoms may collide when
      ``contype₁ & conaffinity₂ or contype₂ & conaffinity₁`` is non-zero), ``condim``
      (``CONDIMS``), ``priority`` (the higher one's friction and condim win in a pair);
    - ``pairs``: the explicit :class:`ContactPairs`;
    - ``exclude``: body index pairs ``(b1, b2)``, ``b1 < b2`` (``-1`` = world), whose geoms never
      collide dynamically (MuJoCo's ``<exclude>``);
    - ``filter_parent``: geoms of a body and of its parent never collide (unless the parent is
      the world) — MuJoCo's default, off with ``<flag filterparent="disable">``;
    - ``weld_parent``: per body, the body ``filter_parent`` treats as its parent: the tree parent,
      except that a loader that splits one source body into a chain (a MuJoCo body with several
      joints) names the chain's parent for the body that carries the geoms.

    Bodies are MuJoCo's weld bodies: links welded to their parent (fixed joints, MJCF bodies
    without joints) were merged into the moving body, and geoms of one body never collide.
    """

    rotation: jax.Array
    translation: jax.Array
    size: jax.Array
    friction: jax.Array
    margin: jax.Array | None = None
    gap: jax.Array | None = None
    pairs: ContactPairs | None = None
    names: tuple[str, ...] = eqx.field(static=True, default=())
    type: tuple[str, ...] = eqx.field(static=True, default=())
    body: tuple[int, ...] = eqx.field(static=True, default=())
    contype: tuple[int, ...] = eqx.field(static=True, default=())
    conaffinity: tuple[int, ...] = eqx.field(static=True, default=())
    condim: tuple[int, ...] = eqx.field(static=True, default=())
    priority: tuple[int, ...] = eqx.field(static=True, default=())
    exclude: tuple[tuple[int, int], ...] = eqx.field(static=True, default=())
    filter_parent: bool = eqx.field(static=True, default=True)
    weld_parent: tuple[int, ...] = eqx.field(static=True, default=())

    def __post_init__(self) -> None:
        """Fill what a caller left out with MuJoCo's defaults (margin, gap 0; contype,
        conaffinity 1; condim 3; priority 0; no explicit pairs)."""
        ng = len(self.names)
        dtype = self.size.dtype if hasattr(self.size, "dtype") else None
        if self.margin is None:
            self.margin = jnp.zeros((ng,), dtype)
        if self.gap is None:
            self.gap = jnp.zeros((ng,), dtype)
        if self.pairs is None:
            self.pairs = ContactPairs.empty(dtype)
        for field, value in (("contype", 1), ("conaffinity", 1), ("condim", 3), ("priority", 0)):
            if not getattr(self, field):
                setattr(self, field, (value,) * ng)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, geom: str | int) -> int:
        """Index of a geom given its name (or index)."""
        if isinstance(geom, (int, np.integer)):
            if not 0 <= geom < len(self):
                raise ValueError(f"geom index {geom} out of range [0, {len(self)})")
            return int(geom)
        if geom in self.names:
            return self.names.index(geom)
        raise ValueError(f"unknown geom {geom!r}; geoms are {list(self.names)}")


def _int(x, where: str, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"{where}: {what} must be an integer, got {x!r}")
    return int(x)


def check_geom(where: str, type: str, size: np.ndarray, friction: np.ndarray, *, contype=1, conaffinity=1,
               condim=3, margin=0.0, gap=0.0, priority=0) -> dict:
    """Validate one geom's collision data (``where`` names it in errors); return the static part
    as plain ints and the scalars as floats.  ``size`` and ``friction`` are 3-vectors already."""
    if type not in GEOM_TYPES:
        raise ValueError(f"{where}: unknown geom type {type!r}; expected one of {GEOM_TYPES}")
    if type in ("capsule", "cylinder") and size[1] < 0:
        raise ValueError(f"{where}: a {type}'s half-length size[1] must be non-negative, got {size[1]}")
    if np.any(size < 0):
        raise ValueError(f"{where}: size must be non-negative, got {size}")
    used = {"sphere": 1, "capsule": 1, "cylinder": 1, "ellipsoid": 3, "box": 3}.get(type, 0)
    if np.any(size[:used] <= 0):
        raise ValueError(f"{where}: {type} size[:{used}] must be positive, got {size}")
    if np.any(friction < 0) or not np.all(np.isfinite(friction)):
        raise ValueError(f"{where}: friction must be finite and non-negative, got {friction}")
    out = {k: _int(v, where, k) for k, v in (("contype", contype), ("conaffinity", conaffinity),
                                            ("condim", condim), ("priority", priority))}
    for k in ("contype", "conaffinity"):
        if not 0 <= out[k] < 2**31:
            raise ValueError(f"{where}: {k} must be a non-negative 31-bit mask, got {out[k]}")
    if out["condim"] not in CONDIMS:
        raise ValueError(f"{where}: condim must be one of {CONDIMS}, got {out['condim']}")
    for k, v in (("margin", margin), ("gap", gap)):
        v = float(v)
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"{where}: {k} must be finite and non-negative, got {v}")
        out[k] = v
    return out


class Keyframes(eqx.Module):
    """Named states of the model: ``q (nk, nq)``, ``v (nk, nv)``; static ``names``."""

    q: jax.Array
    v: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, name: str) -> tuple[jax.Array, jax.Array]:
        """``(q, v)`` of the keyframe called ``name``."""
        if name not in self.names:
            raise ValueError(f"unknown keyframe {name!r}; keyframes are {list(self.names)}")
        k = self.names.index(name)
        return self.q[k], self.v[k]


__all__ = ["CONDIMS", "GEOM_TYPES", "Actuators", "ContactPairs", "Geoms", "Keyframes", "check_geom"]
