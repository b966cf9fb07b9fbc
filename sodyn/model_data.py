"""Model data kept beside the kinematic tree for the actuator, contact and simulation code:
:class:`Actuators`, collision :class:`Geoms` (with their :class:`ContactPairs`) and
:class:`Keyframes` (fields of :class:`sodyn.Model`; empty when the source has none)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

#: Collision geometry types, in MuJoCo's ``mjtGeom`` order (MuJoCo's meaning of ``size``; a
#: ``"mesh"`` geom is the convex hull of its mesh, as MuJoCo collides meshes).  The order is
#: that of the narrow phase: a pair is tested as ``(geom1, geom2)`` with
#: ``GEOM_TYPES.index(type1) <= GEOM_TYPES.index(type2)``, so a height field (``"hfield"``,
#: :class:`HeightFields`) is geom 1 against every type but the plane, as in MuJoCo.
GEOM_TYPES: tuple[str, ...] = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")
#: Contact dimensions MuJoCo defines: 1 frictionless, 3 sliding, 4 + torsional, 6 + rolling friction.
CONDIMS: tuple[int, ...] = (1, 3, 4, 6)


#: Activation dynamics of an actuator (MuJoCo's ``dyntype``): none (the force follows the control),
#: an integrator ``ȧ = u``, a first-order filter ``ȧ = (u − a) / τ`` integrated by Euler
#: (``"filter"``) or exactly over the step (``"filterexact"``).
DYNAMICS: tuple[str, ...] = ("none", "integrator", "filter", "filterexact")


class Actuators(eqx.Module):
    """Joint actuators in MuJoCo's affine form (``na`` actuators, each driving one dof).

    With ``u = clip(ctrl, ctrl_range)``, actuator length ``l = gear · q[dof]`` and velocity
    ``l̇ = gear · v[dof]``, the input ``w`` is ``u`` (``dynamics "none"``) or the actuator's
    activation ``a`` (a state, :attr:`sodyn.simulate.State.act`), and the actuator force is

        f = clip(g(l, l̇) · w + b(l, l̇), F(l̇)),    g = gain + gain_slope · (l, l̇),
        b = bias · (1, l, l̇),                       τ[dof] += gear · f

    (MuJoCo's ``gaintype``/``biastype`` ``"affine"``; a motor has ``gain = 1``, ``bias = 0``; a
    position servo ``gain = kp``, ``bias = (0, −kp, −kv)``).  The force range ``F(l̇)`` is
    ``force_range`` intersected with the torque–speed envelope of a voltage-limited motor,
    ``[−τ_s − β l̇, τ_s − β l̇]`` (``stall_force`` ``τ_s``, ``back_emf`` slope ``β``; beyond its
    no-load speed ``τ_s / β`` the envelope brakes), and with the power limit ``|f l̇| ≤ P``
    (``power_limit``) where the actuator does work.  Unlimited ranges are ``±inf``.

    Activation dynamics (:data:`DYNAMICS`): ``ȧ = u`` (``"integrator"``) or ``ȧ = (u − a) / τ``
    (``"filter"``, ``"filterexact"``; ``time_constant`` ``τ``), the activation clipped to
    ``act_range`` after each step; with ``act_early`` the force uses the next step's
    activation (MuJoCo's ``actearly``).

    - ``gear``, ``gain``, ``time_constant``, ``stall_force``, ``back_emf``, ``power_limit``
      ``(na,)``; ``gain_slope (na, 2)``; ``bias (na, 3)``; ``ctrl_range``, ``force_range``,
      ``act_range (na, 2)``;
    - static: ``names``, ``kind`` (``"motor"``, ``"position"``, ``"velocity"``, ``"damper"``,
      ``"intvelocity"``, ``"dc_motor"``, ``"general"``…), ``dof`` (index into ``v``),
      ``dynamics`` (one of :data:`DYNAMICS` per actuator), ``act_early``, ``tendon`` (``-1``: the
      joint transmission above; ``t ≥ 0``: MuJoCo's tendon transmission on fixed tendon ``t`` of
      ``model.tendons``, ``l = gear · L_t``, ``l̇ = gear · J_t v``, ``τ += gear · f · J_tᵀ``
      (:mod:`sodyn.simulate.tendons`); its ``dof`` is then a one-dof joint the tendon moves,
      used only by estimates such as :func:`sodyn.simulate.stable_step`).
    """

    gear: jax.Array
    gain: jax.Array
    bias: jax.Array
    ctrl_range: jax.Array
    force_range: jax.Array
    gain_slope: jax.Array
    time_constant: jax.Array
    act_range: jax.Array
    stall_force: jax.Array
    back_emf: jax.Array
    power_limit: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    kind: tuple[str, ...] = eqx.field(static=True)
    dof: tuple[int, ...] = eqx.field(static=True)
    dynamics: tuple[str, ...] = eqx.field(static=True)
    act_early: tuple[bool, ...] = eqx.field(static=True)
    tendon: tuple[int, ...] = eqx.field(static=True)

    def __init__(self, gear, gain, bias, ctrl_range, force_range, names, kind, dof, *, gain_slope=None,
                 time_constant=None, act_range=None, stall_force=None, back_emf=None, power_limit=None,
                 dynamics=None, act_early=None, tendon=None):
        n = len(names)
        dtype = jnp.asarray(gear).dtype

        def leaf(x, fill, shape):
            return jnp.full(shape, fill, dtype) if x is None else jnp.asarray(x)

        self.gear, self.gain, self.bias = gear, gain, bias
        self.ctrl_range, self.force_range = ctrl_range, force_range
        self.gain_slope = leaf(gain_slope, 0.0, (n, 2))
        self.time_constant = leaf(time_constant, 1.0, (n,))
        self.act_range = (jnp.tile(jnp.asarray([-jnp.inf, jnp.inf], dtype), (n, 1)) if act_range is None
                          else jnp.asarray(act_range))
        self.stall_force = leaf(stall_force, jnp.inf, (n,))
        self.back_emf = leaf(back_emf, 0.0, (n,))
        self.power_limit = leaf(power_limit, jnp.inf, (n,))
        self.names, self.kind, self.dof = tuple(names), tuple(kind), tuple(dof)
        self.dynamics = ("none",) * n if dynamics is None else tuple(dynamics)
        self.act_early = (False,) * n if act_early is None else tuple(bool(x) for x in act_early)
        self.tendon = (-1,) * n if tendon is None else tuple(int(x) for x in tendon)

    def __check_init__(self):
        bad = [d for d in self.dynamics if d not in DYNAMICS]
        if bad:
            raise ValueError(f"Actuators: dynamics must be one of {DYNAMICS}, got {bad[0]!r}")
        if not len(self.dynamics) == len(self.act_early) == len(self.tendon) == len(self.names):
            raise ValueError("Actuators: dynamics, act_early and tendon need one entry per actuator")

    def __len__(self) -> int:
        return len(self.names)

    @property
    def n_act(self) -> int:
        """Number of activation states (actuators with dynamics), the length of ``State.act``."""
        return sum(d != "none" for d in self.dynamics)


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


class HeightFields(eqx.Module):
    r"""Height fields (MuJoCo's ``<hfield>``) that the ``"hfield"`` geoms of :class:`Geoms` refer to.

    Height field ``k`` is a grid of ``nrow × ncol`` samples over the rectangle ``[−x, x] × [−y, y]``
    of its geom's frame, ``(x, y, z_top, z_base) = size[k]``: sample ``(r, c)`` (row along ``y``,
    column along ``x``) is the point

        (−x + 2x c/(ncol − 1),  −y + 2y r/(nrow − 1),  z_top · elevation[k, r, c]),

    and the solid below the surface reaches down to ``z = −z_base``.  Each cell
    ``[c, c + 1] × [r, r + 1]`` is split into two triangles along its diagonal from ``(c, r)`` to
    ``(c + 1, r + 1)`` (MuJoCo's triangulation).  As in MuJoCo the elevation is normalised: a
    loader scales the source's values to ``[0, 1]``, so ``z_top`` is the largest height.

    - ``elevation (n_hf, R, C)``: the normalised samples (a leaf: differentiable, and replaceable
      per Monte Carlo sample); field ``k`` uses ``elevation[k, :nrow[k], :ncol[k]]``, the rest is
      zero padding (``R``, ``C`` the largest sizes; shape ``(0, 2, 2)`` without height fields);
    - static ``names``, ``nrow``, ``ncol`` (each at least 2) and ``size`` (4-tuples of floats).
    """

    elevation: jax.Array
    names: tuple[str, ...] = eqx.field(static=True, default=())
    nrow: tuple[int, ...] = eqx.field(static=True, default=())
    ncol: tuple[int, ...] = eqx.field(static=True, default=())
    size: tuple[tuple[float, float, float, float], ...] = eqx.field(static=True, default=())

    def __check_init__(self) -> None:
        n = len(self.names)
        if not (len(self.nrow) == len(self.ncol) == len(self.size) == n == self.elevation.shape[0]):
            raise ValueError(f"HeightFields: {n} names, {len(self.nrow)} nrow, {len(self.ncol)} ncol, "
                             f"{len(self.size)} sizes and elevation {self.elevation.shape} must agree")
        if n and (self.elevation.shape[1] < max(self.nrow) or self.elevation.shape[2] < max(self.ncol)):
            raise ValueError(f"HeightFields: elevation {self.elevation.shape} is smaller than the largest "
                             f"grid ({max(self.nrow)}, {max(self.ncol)})")

    def __len__(self) -> int:
        return len(self.names)

    def field(self, k: int) -> jax.Array:
        """The ``(nrow[k], ncol[k])`` normalised elevation of height field ``k``."""
        return self.elevation[k, : self.nrow[k], : self.ncol[k]]

    @classmethod
    def empty(cls, dtype=None) -> "HeightFields":
        """No height fields."""
        return cls(jnp.zeros((0, 2, 2), dtype))


class Geoms(eqx.Module):
    """Collision geometry attached to bodies (``ng`` geoms) and the rules that say which pairs
    of them may touch (MuJoCo's, see :func:`sodyn.collision.pairs.candidate_pairs`).

    Leaves:

    - ``rotation (ng, 3, 3)``, ``translation (ng, 3)``: the geom's pose in its body's frame;
    - ``size (ng, 3)`` as in MuJoCo: sphere ``(r, ·, ·)``; capsule ``(r, h, ·)`` and cylinder
      ``(r, h, ·)`` along the geom's ``z`` (``h`` half the length of the cylindrical part);
      ellipsoid and box semi-axes / half-sizes; plane ``(half-x, half-y, ·)`` with normal ``z``
      (``0`` = infinite); mesh ``(ρ, 0, 0)`` with ``ρ = max |v|`` over its hull vertices (the
      bounding radius about the geom origin);
    - ``vertices (ng, V, 3)``: a mesh geom's convex-hull vertices in the geom frame, padded to
      the common ``V`` by repeating the hull's first vertex; zeros for other geoms (``V = 1``
      when no geom is a mesh);
    - ``faces (ng, F, 4)``: a mesh geom's hull faces as planes ``[n, d]`` (``n`` the unit
      outward normal in the geom frame, ``n·x ≤ d`` inside; coplanar hull triangles merged
      into one face), padded by repeating the first face; zeros for other geoms (``F = 1``
      when no geom is a mesh);
    - ``hfield``: the :class:`HeightFields` of the ``"hfield"`` geoms (a height field geom has
      ``size = (x, y, max(z_top, z_base))``: its half-extents, so that ``|size|`` bounds it);
    - ``friction (ng, 3)``: (sliding, torsional, rolling) coefficients;
    - ``margin (ng,)``: a contact acts once the surfaces are closer than the pair's margin
      (MuJoCo adds the two geoms' margins), so it can push before they touch;
    - ``gap (ng,)``: contacts are detected up to ``margin + gap`` but act only below
      ``margin`` (MuJoCo's "inactive" contacts; added over the pair too).

    Static:

    - ``names``, ``type`` (one of ``GEOM_TYPES``), ``body`` (``-1`` = the world);
    - ``hfield_id``: per geom, the index of its height field in ``hfield`` (``-1`` for the other
      types);
    - ``rbound``: per geom, the radius of a sphere about its centre that holds it as built
      (:func:`bounding_radius` of its size; MuJoCo's ``geom_rbound``), filled in from the sizes;
      the height-field pairs size their static windows from it (a size grown later by a
      randomization is not seen: build with the largest);
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
    vertices: jax.Array | None = None
    faces: jax.Array | None = None
    pairs: ContactPairs | None = None
    hfield: HeightFields | None = None
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
    hfield_id: tuple[int, ...] = eqx.field(static=True, default=())
    rbound: tuple[float, ...] = eqx.field(static=True, default=())

    def __post_init__(self) -> None:
        """Fill what a caller left out with MuJoCo's defaults (margin, gap 0; contype,
        conaffinity 1; condim 3; priority 0; no explicit pairs), no mesh data (zero
        ``vertices``/``faces`` rows) and no height fields.  Geoms appended after the last row of
        ``vertices``, ``faces``, ``hfield_id`` and ``rbound`` (a primitive added with
        ``dataclasses.replace``) get zero rows, ``-1`` and their bounding radius; a mesh geom
        without its row, or a height field geom without its field, is an error."""
        ng = len(self.names)
        dtype = self.size.dtype if hasattr(self.size, "dtype") else None
        if self.margin is None:
            self.margin = jnp.zeros((ng,), dtype)
        if self.gap is None:
            self.gap = jnp.zeros((ng,), dtype)
        self.vertices = self._mesh_rows("vertices", self.vertices, 3, dtype)
        self.faces = self._mesh_rows("faces", self.faces, 4, dtype)
        if self.pairs is None:
            self.pairs = ContactPairs.empty(dtype)
        if self.hfield is None:
            self.hfield = HeightFields.empty(dtype)
        self.hfield_id = self._hfield_ids()
        self.rbound = self._rbounds()
        for field, value in (("contype", 1), ("conaffinity", 1), ("condim", 3), ("priority", 0)):
            if not getattr(self, field):
                setattr(self, field, (value,) * ng)

    def _mesh_rows(self, field: str, x, width: int, dtype) -> jax.Array:
        ng = len(self.names)
        if x is None:
            return jnp.zeros((ng, 1, width), dtype)
        if not hasattr(x, "shape") or x.ndim != 3 or x.shape[-1] != width:
            raise ValueError(f"Geoms.{field} must have shape (ng, n, {width}), got {getattr(x, 'shape', x)}")
        missing = ng - x.shape[0]
        if missing < 0 or any(t == "mesh" for t in self.type[x.shape[0]:]):
            raise ValueError(f"Geoms.{field} has {x.shape[0]} rows for {ng} geoms (a mesh geom needs its row)")
        if missing:
            x = jnp.concatenate([x, jnp.zeros((missing, *x.shape[1:]), x.dtype)], axis=0)
        return x

    def _rbounds(self) -> tuple[float, ...]:
        """``rbound`` completed from the sizes for geoms after its end (``-1.0`` where the sizes
        are traced)."""
        have = tuple(float(r) for r in self.rbound)[: len(self.names)]
        if len(have) == len(self.names):
            return have
        try:
            size = np.asarray(self.size, np.float64).reshape(-1, 3)
        except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
            return have + (-1.0,) * (len(self.names) - len(have))
        return have + tuple(bounding_radius(t, s) for t, s in zip(self.type[len(have):], size[len(have):]))

    def _hfield_ids(self) -> tuple[int, ...]:
        """``hfield_id`` padded with ``-1`` for geoms appended after its end (a primitive added
        with ``dataclasses.replace``); a height field geom must name a height field."""
        ids = tuple(int(i) for i in self.hfield_id) + (-1,) * max(0, len(self.names) - len(self.hfield_id))
        nf = len(self.hfield)
        ok = len(ids) == len(self.names) and all((0 <= k < nf) if t == "hfield" else k == -1
                                                 for t, k in zip(self.type, ids))
        if not ok:
            raise ValueError(f"Geoms.hfield_id {ids} does not match the geom types {self.type} and the "
                             f"{nf} height field(s) (each hfield geom names one, the others have -1)")
        return ids

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


def bounding_radius(type: str, size) -> float:
    """Radius of a sphere about a geom's centre that holds it (MuJoCo's ``geom_rbound``; 0 for a
    plane, which has none), from its ``size`` (:class:`Geoms`)."""
    s = np.asarray(size, np.float64)
    if type == "plane":
        return 0.0
    if type in ("sphere", "mesh"):
        return float(s[0])
    if type == "capsule":
        return float(s[0] + s[1])
    if type == "ellipsoid":
        return float(np.max(s))
    if type == "cylinder":
        return float(np.hypot(s[0], s[1]))
    return float(np.linalg.norm(s))


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
    used = {"sphere": 1, "capsule": 1, "cylinder": 1, "ellipsoid": 3, "box": 3, "mesh": 1, "hfield": 3}.get(type, 0)
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


def check_height_field(where: str, elevation, size) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """Validate a height field (:class:`HeightFields`; ``where`` names its geom in errors): the
    ``elevation (nrow, ncol)`` grid, at least 2×2, finite and within ``[0, 1]`` (MuJoCo's
    normalisation), and ``size = (x, y, z_top, z_base)``, four finite positive numbers.  Return
    the elevation as a float64 NumPy array and the size as a tuple of floats."""
    sz = np.asarray(size, np.float64).reshape(-1) if np.ndim(size) <= 1 else np.zeros(0)
    if sz.shape != (4,) or not np.all(np.isfinite(sz)) or np.any(sz <= 0):
        raise ValueError(f"{where}: a height field's size must be four finite positive numbers "
                         f"(x, y, z_top, z_base), got {size!r}")
    e = np.asarray(elevation, np.float64)
    if e.ndim != 2 or e.shape[0] < 2 or e.shape[1] < 2:
        raise ValueError(f"{where}: a height field's elevation must be an (nrow, ncol) grid with nrow, ncol >= 2, "
                         f"got shape {e.shape}")
    if not np.all(np.isfinite(e)):
        r, c = np.argwhere(~np.isfinite(e))[0]
        raise ValueError(f"{where}: elevation[{r}, {c}] = {e[r, c]} is not finite")
    if e.min() < 0 or e.max() > 1:
        raise ValueError(f"{where}: elevation must lie in [0, 1] (heights are z_top · elevation), got "
                         f"[{e.min():.6g}, {e.max():.6g}]; normalise it, e.g. with sodyn.terrain.from_heights")
    return e, (float(sz[0]), float(sz[1]), float(sz[2]), float(sz[3]))


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


__all__ = ["CONDIMS", "DYNAMICS", "GEOM_TYPES", "Actuators", "ContactPairs", "Geoms", "HeightFields", "Keyframes",
           "bounding_radius", "check_geom", "check_height_field"]
