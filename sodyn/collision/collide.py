r"""Collision of a model's geoms at a configuration: :func:`collide`, and the static slot layout
the contact laws use (:class:`ContactSlots`).

**Pipeline.**  The candidate pairs are fixed when the model is built
(:func:`sodyn.collision.pairs.candidate_pairs`: MuJoCo's filtering), so the program has one
shape for every state.  Each pair type ``(t₁, t₂)`` (``t₁ ≤ t₂`` in ``GEOM_TYPES`` order) has a
narrow-phase function returning a fixed number of contact slots (:mod:`~sodyn.collision.
primitives`, :mod:`~sodyn.collision.convex`, and for a mesh geom, the last type,
:mod:`~sodyn.collision.hull_contacts` and :mod:`~sodyn.collision.hull_curved`); the pairs of one
type run as one ``jax.vmap`` of that function, and the slots of all pairs are concatenated type
by type.  Slot ``i`` belongs to
the candidate pair ``pair[i]``, between geoms ``geom1[i]`` and ``geom2[i]`` on bodies
``body1[i]`` and ``body2[i]`` (``−1``: the world).

**Broad phase.**  Each step masks the pairs whose bounding spheres are farther apart than the
pair's detection distance, ``|c₁ − c₂| − ρ₁ − ρ₂ > margin + gap`` (``ρ`` the geom's bounding radius; a plane has
none): their slots carry ``distance = FAR``.  Under ``jax.vmap`` a mask saves no arithmetic
(every slot is computed for every world, as in MJX), so time grows linearly with the number of
candidate pairs and compile time with the number of distinct pair types; restrict the pairs
(:func:`~sodyn.collision.pairs.candidate_pairs`'s options) to what can touch.

**Meshes.**  A mesh geom is its convex hull: the model's ``Geoms.vertices`` and ``faces`` with the
topology :func:`~sodyn.collision.hull_topology.hull_topology` derives from them (face polygons,
edges), computed in :func:`geom_frames` once per mesh geom and call (it depends on the model
only, so a ``jax.vmap`` over worlds does not repeat it); the frames are then
:class:`~sodyn.collision.types.MeshFrame`.  A model without mesh geoms skips all of it.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.collision.types import FAR, Contacts, GeomFrame, Hull, MeshFrame
from sodyn.model import Model
from sodyn.model_data import GEOM_TYPES
from sodyn.static_index import take


def pair_functions() -> tuple[dict[tuple[str, str], Callable], dict[tuple[str, str], int]]:
    """The narrow-phase function and slot count of every supported pair type."""
    from sodyn.collision import convex, heightfield, hull_contacts, hull_curved, primitives

    functions = {**primitives.PAIR_FUNCTIONS, **convex.CONVEX_PAIRS, **hull_contacts.HULL_PAIRS,
                 **hull_curved.CURVED_PAIRS}
    slots = {**primitives.SLOTS, **convex.SLOTS, **hull_contacts.SLOTS, **hull_curved.SLOTS, **heightfield.SLOTS}
    return functions, slots


class ContactSlots(eqx.Module):
    """The static contact-slot layout of a list of candidate geom pairs (module docstring).

    ``pair``, ``geom1``, ``geom2``, ``body1``, ``body2``: per slot, ``(nc,)`` integer tuples;
    ``groups``: per pair type, ``(type1, type2, pair indices, slots per pair, field)`` in slot
    order; ``field`` is ``None``, or for a height field's pairs (one group per height field and window size,
    so a small geom reads a small window)
    ``(k, grid)``: its index in ``Geoms.hfield`` and the :class:`~sodyn.collision.heightfield.Grid`
    sized for the group's geoms."""

    pair: tuple[int, ...] = eqx.field(static=True)
    geom1: tuple[int, ...] = eqx.field(static=True)
    geom2: tuple[int, ...] = eqx.field(static=True)
    body1: tuple[int, ...] = eqx.field(static=True)
    body2: tuple[int, ...] = eqx.field(static=True)
    groups: tuple[tuple[str, str, tuple[int, ...], int, tuple | None], ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.pair)


def _detection(model: Model, a, b):
    """The detection distances (margin + gap) of the geom pairs ``(a, b)``, used where concrete."""
    g = model.geoms
    return (g.margin + g.gap)[a] + (g.margin + g.gap)[b]


def _window(model: Model, a: int, b: int) -> tuple[int, int, int]:
    """The group key of a height-field pair: the field's index and the ``rows × cols`` window of
    cells the geom ``b`` alone needs (:func:`~sodyn.collision.heightfield.model_grid`), so each
    group's window is sized for its own geoms (a foot's, not the trunk's)."""
    from sodyn.collision.heightfield import model_grid

    grid = model_grid(model, a, [b], _detection(model, np.asarray([a]), np.asarray([b])))
    return (int(model.geoms.hfield_id[a]), grid.rows, grid.cols)


def contact_slots(model: Model, geom1, geom2) -> ContactSlots:
    """The slot layout of the candidate pairs ``(geom1[p], geom2[p])`` (geom indices of
    ``model.geoms``, ``type(geom1) ≤ type(geom2)``).  Raises ``ValueError`` naming a pair of a
    type sodyn has no narrow phase for."""
    g = model.geoms
    _, slots = pair_functions()
    geom1, geom2 = (np.asarray(x, np.int64).reshape(-1) for x in (geom1, geom2))
    by_type: dict[tuple[str, str], list[int]] = {}
    for p, (a, b) in enumerate(zip(geom1, geom2)):
        key = (g.type[a], g.type[b])
        if key not in slots:
            raise ValueError(f"collision: no narrow phase for the pair {g.names[a]!r} ({key[0]}) – "
                             f"{g.names[b]!r} ({key[1]}); pairs are ordered {' < '.join(GEOM_TYPES)}")
        by_type.setdefault(key + (_window(model, a, b) if key[0] == "hfield" else ()), []).append(p)
    pair, groups = [], []
    for key in sorted(by_type, key=lambda k: (_TYPE_ORDER[k[0]], _TYPE_ORDER[k[1]], k[2:])):
        members, n = by_type[key], slots[key[:2]]
        field = None
        if key[0] == "hfield":
            from sodyn.collision.heightfield import model_grid

            a, b = geom1[members], geom2[members]
            field = (key[2], model_grid(model, a[0], b, _detection(model, a, b)))
        groups.append((key[0], key[1], tuple(members), n, field))
        pair += [p for p in members for _ in range(n)]
    pair = np.asarray(pair, np.int64)
    g1, g2 = geom1[pair], geom2[pair]
    body = np.asarray(g.body, np.int64)
    as_tuple = lambda x: tuple(int(i) for i in x)  # noqa: E731
    return ContactSlots(as_tuple(pair), as_tuple(g1), as_tuple(g2), as_tuple(body[g1]), as_tuple(body[g2]),
                        tuple(groups))


_TYPE_ORDER = {t: i for i, t in enumerate(GEOM_TYPES)}


def geom_frames(model: Model, rotation: jax.Array, origin: jax.Array) -> GeomFrame | MeshFrame:
    """Every geom in world axes (``(ng, …)`` leaves) from the bodies' world rotations
    ``(n_bodies, 3, 3)`` and origins ``(n_bodies, 3)``: ``R_g = R_b R_{b,g}``,
    ``p_g = o_b + R_b p_{b,g}`` (world geoms keep their placement).  A model with mesh geoms
    gets a :class:`~sodyn.collision.types.MeshFrame`, whose ``hull`` rows hold each mesh geom's
    hull (zero rows for the other geoms)."""
    g = model.geoms
    dtype = rotation.dtype
    body = np.asarray(g.body, np.int64)
    rot_b = take(_with_world(rotation, jnp.eye(3, dtype=dtype)), np.where(body < 0, model.n_bodies, body))
    org_b = take(_with_world(origin, jnp.zeros(3, dtype)), np.where(body < 0, model.n_bodies, body))
    local_r, local_p = g.rotation.astype(dtype), g.translation.astype(dtype)
    frames = GeomFrame(spatial.mm(rot_b, local_r), org_b + spatial.mv(rot_b, local_p), g.size.astype(dtype))
    mesh = np.flatnonzero(np.asarray(g.type, object) == "mesh")
    if not mesh.size:
        return frames
    from sodyn.collision.hull_topology import hull_topology

    hulls = jax.vmap(hull_topology)(take(g.vertices.astype(dtype), mesh), take(g.faces.astype(dtype), mesh))
    row = np.full(len(g), len(mesh))
    row[mesh] = np.arange(len(mesh))
    hull = Hull(*(_rows(x, row) for x in hulls))
    return MeshFrame(*frames, hull)


def _rows(x: jax.Array, row: np.ndarray) -> jax.Array:
    """``x`` with a zero row appended, gathered at the static ``row`` indices."""
    x = jnp.concatenate([x, jnp.zeros((1,) + x.shape[1:], x.dtype)])
    return take(x, row) if jnp.issubdtype(x.dtype, jnp.floating) else x[row]


def _pair_frame(frames: GeomFrame | MeshFrame, index: np.ndarray, type_: str) -> GeomFrame | MeshFrame:
    """The frames of geoms ``index`` (static), as the pair function of ``type_`` takes them."""
    base = GeomFrame(*(take(x, index) for x in (frames.rotation, frames.position, frames.size)))
    if type_ != "mesh":
        return base
    return MeshFrame(*base, Hull(*(take(x, index) if jnp.issubdtype(x.dtype, jnp.floating) else x[index]
                                   for x in frames.hull)))


def _with_world(x: jax.Array, world: jax.Array) -> jax.Array:
    """``x (n, …)`` with the world's value appended as row ``n`` (body index −1)."""
    return jnp.concatenate([x, world[None]], axis=0)


def bounding_radius(type_: str, size: jax.Array) -> jax.Array:
    """Radius of a sphere about the geom's centre that holds it (``inf`` for a plane)."""
    if type_ == "plane":
        return jnp.full(size.shape[:-1], jnp.inf, size.dtype)
    if type_ == "sphere":
        return size[..., 0]
    if type_ == "capsule":
        return size[..., 0] + size[..., 1]
    if type_ == "ellipsoid":
        return jnp.max(size, axis=-1)
    if type_ == "cylinder":
        return jnp.sqrt(size[..., 0] ** 2 + size[..., 1] ** 2)
    if type_ == "mesh":
        return size[..., 0]
    return jnp.sqrt(spatial.dot(size, size))


def collide_frames(slots: ContactSlots, frames: GeomFrame | MeshFrame, margin: jax.Array,
                   hfield=None) -> Contacts:
    """The contacts of every slot ``(nc, …)`` for geoms at world ``frames`` (:func:`geom_frames`),
    with the per-pair detection distance ``margin (npair,)`` (``margin + gap``) for the
    broad-phase mask (module docstring); ``hfield``: the model's ``Geoms.hfield`` (needed when a
    pair has a height field)."""
    functions, _ = pair_functions()
    out = []
    for t1, t2, members, _, field in slots.groups:
        g1 = np.asarray([slots.geom1[slots.pair.index(p)] for p in members])
        g2 = np.asarray([slots.geom2[slots.pair.index(p)] for p in members])
        f1, f2 = _pair_frame(frames, g1, t1), _pair_frame(frames, g2, t2)
        if field is None:
            c = jax.vmap(functions[(t1, t2)])(f1, f2)
        else:
            from sodyn.collision.heightfield import hfield_pair

            if hfield is None:
                raise ValueError("collide_frames: a height field pair needs hfield= (the model's Geoms.hfield)")
            c = jax.vmap(hfield_pair(t2, field[1]), (0, 0, None))(f1, f2, hfield.field(field[0]))
        gap = (spatial.safe_norm(f2.position - f1.position) - bounding_radius(t1, f1.size)
               - bounding_radius(t2, f2.size))
        far = gap > take(margin, np.asarray(members))
        distance = jnp.where(far[:, None], jnp.asarray(FAR, c.distance.dtype), c.distance)
        out.append(Contacts(distance.reshape(-1), c.position.reshape(-1, 3), c.normal.reshape(-1, 3)))
    if not out:
        dtype = frames.position.dtype
        return Contacts(jnp.zeros((0,), dtype), jnp.zeros((0, 3), dtype), jnp.zeros((0, 3), dtype))
    return Contacts(*(jnp.concatenate(parts, axis=0) for parts in zip(*out)))


class ContactSet(eqx.Module):
    """The contacts of a configuration (:func:`collide`), one entry per contact slot:
    ``distance (nc,)`` (signed, m), ``position (nc, 3)`` and ``normal (nc, 3)`` (world; the
    normal from ``geom1`` to ``geom2``), ``active (nc,)`` (``distance < margin`` of the pair);
    static ``geom1``, ``geom2`` (geom indices) and ``pair`` (candidate pair index) per slot."""

    distance: jax.Array
    position: jax.Array
    normal: jax.Array
    active: jax.Array
    geom1: tuple[int, ...] = eqx.field(static=True)
    geom2: tuple[int, ...] = eqx.field(static=True)
    pair: tuple[int, ...] = eqx.field(static=True)


def collide(model: Model, q, pairs=None) -> ContactSet:
    """The contacts of ``model``'s candidate geom pairs at configuration ``q (nq,)``.

    ``pairs``: candidate pairs (default :func:`~sodyn.collision.pairs.candidate_pairs` of the
    model); the margins are the pairs' combined ones
    (:func:`~sodyn.collision.pairs.pair_parameters`).  Pure JAX: ``jit``, ``vmap`` and
    ``grad`` go through (distances and normals are differentiable in ``q``)."""
    from sodyn.algorithms.common import check_vector
    from sodyn.algorithms.kinematics import forward_kinematics
    from sodyn.collision.pairs import candidate_pairs, pair_parameters

    q = check_vector(model, q, model.nq, "q")
    if pairs is None:
        pairs = candidate_pairs(model)
    slots = contact_slots(model, pairs.geom1, pairs.geom2)
    params = pair_parameters(model, pairs)
    margin = jnp.asarray(params.margin, q.dtype)
    fk = forward_kinematics(model, q)
    c = collide_frames(slots, geom_frames(model, fk.body.rotation, fk.body.translation),
                       jnp.asarray(params.detection, q.dtype), model.geoms.hfield)
    active = c.distance < take(margin, np.asarray(slots.pair, np.int64)) if len(slots) else c.distance < 0
    return ContactSet(c.distance, c.position, c.normal, active, slots.geom1, slots.geom2, slots.pair)


__all__ = ["ContactSet", "ContactSlots", "bounding_radius", "collide", "collide_frames", "contact_slots",
           "geom_frames", "pair_functions"]
