r"""Contacts of a height field (geom 1) with a sphere, capsule, ellipsoid, cylinder, box or mesh
(geom 2): :func:`hfield_pair`, in the fixed window of cells described by a :class:`Grid`.

**Surface.**  In the height field's frame the samples are ``(x_c, y_r, z_top · e[r, c])`` on the
grid ``x_c = −x₀ + c δx``, ``y_r = −y₀ + r δy`` (``δx = 2x₀/(ncol − 1)``, ``δy = 2y₀/(nrow − 1)``),
each cell split into the triangles ``(v₀₀, v₁₁, v₀₁')`` and ``(v₀₀, v₁₀', v₁₁)`` along its
diagonal from ``(c, r)`` to ``(c + 1, r + 1)``, as MuJoCo splits them
(:class:`~sodyn.model_data.HeightFields`).  The normal points from the height field to the geom.

**Window.**  A pair function reads a fixed block of ``rows × cols`` cells: those within the
*reach* ``R`` of the geom's centre ``c`` horizontally, ``R`` the geom's bounding radius ``ρ`` plus
the pair's detection distance (margin + gap), fixed when the function is built (:func:`grid`).
An interval of length ``2R`` meets at most ``⌊2R/δ⌋ + 2`` cells, so ``cols = min(ncol − 1,
⌊2R/δx⌋ + 2)`` (likewise ``rows``), starting at ``clamp(⌊(c_x − R + x₀)/δx⌋, 0, ncol − 1 − cols)``.
Every contact up to the detection distance ``d`` lies in it: its terrain point is within
``ρ + d`` of ``c``.  A geom that grows beyond ``ρ`` afterwards (a randomized size) loses the
contacts outside its window, so build with the largest size; the cost grows with the window's
``2 rows cols`` triangles (:func:`grid` warns above ``MAX_TRIANGLES``).

**Candidates.**  Each triangle of the window gives one contact with the geom
(:mod:`~sodyn.collision.heightfield_triangles`): for a sphere or a capsule the exact distance of
its rounded core to the triangle (closed forms); for the other geoms the exact contact of the
geom and the triangle's prism (its column down to ``−z_base``, MuJoCo's per-prism contact) from
the hull narrow phase (:mod:`~sodyn.collision.hull_contacts`, :mod:`~sodyn.collision.hull_curved`).
Besides, the geom's surface points (box corners, hull vertices, capsule ends, cylinder rim points)
against the plane of the triangle under each.

**Local minima.**  A triangle's candidate is a contact of the terrain only if it is a local
minimum of the distance over the whole surface, not merely over its own triangle.  Its terrain
witness ``q`` lies in the triangle's interior, on an edge or at a vertex (barycentric coordinates
of ``q``'s horizontal position, within rounding), and the triangles sharing that feature (one
across an edge, up to six around a vertex) are compared: the candidate is kept when none of them
is closer, equal ones going to the lowest index.  This drops the copies of one contact that the
triangles around an edge or a vertex all report, and the contacts with an edge that a
neighbouring face hides (a duplicate would double the contact's stiffness).  A prism contact whose
witness is not on the top triangle (a wall or the bottom, inside the terrain: its support set in
the normal's direction holds a bottom vertex) is dropped, and so is a witness on the window's
border inside the field (its sharers lie outside the window, and no contact within the reach
does).

**Slots.**  Slot 0 is the deepest kept triangle candidate: the geom's exact signed distance to the
surface while its core (a sphere's centre, a capsule's axis) stays above it, the deepest prism
contact (MuJoCo's deepest, less its internal walls) for the other geoms.  Slot 1 is the deepest
surface point (per-prism contacts can be shallower where a geom straddles prisms, a surface point
below a face is not).  The others are picked among the kept candidates and the surface points to
spread the contact polygon: greedy farthest-point selection in the plane ``⊥`` slot 0's normal,
each next point the one farthest from those chosen, less ``SPREAD_WEIGHT`` times its height above
slot 0 (a box resting on a face gets its four corners, a capsule lying on its side both ends);
near-copies are left unused (``distance = FAR``).  A mesh instead gets 8 slots chosen as
against a plane (:mod:`~sodyn.collision.hull_contacts`): the two above and the next deepest
candidates, four in all, then the extremes along the diagonals of its axes, in the plane ``⊥``
slot 0's normal, of the candidates within ``SKIN`` of slot 0 or below the surface, so that a hull
resting on many points of nearly equal depth keeps the same points from step to step.  A geom
whose reach lies outside the field, or that lies wholly below its base ``−z_base`` (MuJoCo's
test), has every slot ``FAR``.

**Derivatives.**  The window, the classification and the selection are discrete; the selected
candidates' distances and positions are differentiable in the geom's pose and size and in the
elevation samples (through the triangles' vertices), finite at touching and on flat terrain.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from sodyn.collision.heightfield_triangles import barycentric, core_triangle, prism, surface_contact, surface_points
from sodyn.collision.types import FAR, Contacts, GeomFrame, MeshFrame
from sodyn.spatial import mm, mtv, mv

#: The geom types a height field collides with.
TYPES = ("sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")
#: Contact slots per pair type.
SLOTS: dict[tuple[str, str], int] = {("hfield", "sphere"): 3, ("hfield", "capsule"): 4, ("hfield", "ellipsoid"): 3,
                                     ("hfield", "cylinder"): 4, ("hfield", "box"): 4, ("hfield", "mesh"): 8}
#: Triangles in a pair's window above which :func:`grid` warns (each is one narrow-phase call).
MAX_TRIANGLES = 512
#: Penalty per metre of height above slot 0 when spreading the other slots; distinct slots are at
#: least ``DUPLICATE`` times the reach apart.
SPREAD_WEIGHT, DUPLICATE = 1.0, 1e-3


class Grid(NamedTuple):
    """The static description a height-field pair function is built for: the field's ``nrow``,
    ``ncol`` and ``size = (x₀, y₀, z_top, z_base)``, the window's ``rows × cols`` cells and the
    ``reach`` it was sized for (module docstring).  Hashable."""

    nrow: int
    ncol: int
    size: tuple[float, float, float, float]
    rows: int
    cols: int
    reach: float


def grid(nrow: int, ncol: int, size, reach: float, what: str = "height field pair") -> Grid:
    """The :class:`Grid` of a height field with ``nrow × ncol`` samples and ``size`` for a geom of
    bounding radius plus detection distance ``reach`` (m, positive): the window of
    ``min(n − 1, ⌊2 reach/δ⌋ + 2)`` cells along each axis.  Warns (naming ``what``) when the
    window holds more than ``MAX_TRIANGLES`` triangles."""
    size = tuple(float(s) for s in size)
    if nrow < 2 or ncol < 2 or len(size) != 4 or min(size) <= 0 or not reach > 0 or not math.isfinite(reach):
        raise ValueError(f"{what}: a height-field grid needs nrow, ncol >= 2, a positive size (x, y, z_top, z_base) "
                         f"and a finite positive reach, got {nrow}, {ncol}, {size}, {reach}")
    cols = min(ncol - 1, int(math.floor(reach * (ncol - 1) / size[0])) + 2)
    rows = min(nrow - 1, int(math.floor(reach * (nrow - 1) / size[1])) + 2)
    if 2 * rows * cols > MAX_TRIANGLES:
        warnings.warn(f"{what}: the geom (reach {reach:.3g} m) spans {rows} × {cols} cells of its height field "
                      f"({2 * rows * cols} triangles, each tested every step); a coarser grid or a smaller geom "
                      "is cheaper", stacklevel=2)
    return Grid(int(nrow), int(ncol), size, rows, cols, float(reach))


@functools.cache
def _topology(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The window's triangles ``(T, 3)`` (vertex indices of the ``(rows + 1) × (cols + 1)``
    samples, row-major; triangle ``2(i cols + j) + k`` of cell ``(i, j)``, ``k = 0`` the one above
    the diagonal); per triangle and feature (0 the face, ``1 + k`` the edge from vertex ``k`` to
    ``k + 1``, ``4 + k`` vertex ``k``) the other triangles sharing it, padded with ``T``; and
    ``(T, 7, 4)`` whether the feature lies on the window's first or last column, first or last
    row (there it has sharers outside the window)."""
    tri = []
    for i in range(rows):
        for j in range(cols):
            v00, v01 = i * (cols + 1) + j, i * (cols + 1) + j + 1
            v10, v11 = v00 + cols + 1, v01 + cols + 1
            tri += [(v00, v11, v10), (v00, v01, v11)]
    tri = np.array(tri, np.int32)
    by_vertex, by_edge = {}, {}
    for t, (a, b, c) in enumerate(tri.tolist()):
        for v in (a, b, c):
            by_vertex.setdefault(v, []).append(t)
        for e in ((a, b), (b, c), (c, a)):
            by_edge.setdefault(frozenset(e), []).append(t)
    share = np.full((len(tri), 7, 6), len(tri), np.int32)
    for t, v in enumerate(tri.tolist()):
        for k in range(3):
            edge = [s for s in by_edge[frozenset((v[k], v[(k + 1) % 3]))] if s != t]
            share[t, 1 + k, : len(edge)] = edge
            around = [s for s in by_vertex[v[k]] if s != t]
            share[t, 4 + k, : len(around)] = around
    col, row = np.arange((rows + 1) * (cols + 1)) % (cols + 1), np.arange((rows + 1) * (cols + 1)) // (cols + 1)
    sides = np.stack([col == 0, col == cols, row == 0, row == rows], axis=-1)           # (V, 4)
    features = [[0, 1, 2], [0, 1], [1, 2], [2, 0], [0], [1], [2]]
    border = np.stack([np.all(sides[tri[:, f]], axis=1) if len(f) < 3 else np.zeros((len(tri), 4), bool)
                       for f in features], axis=1)
    return tri, share, border


def _feature(lam: Array, tol: Array) -> Array:
    """The feature holding a point of barycentric coordinates ``lam (..., 3)`` (``_topology``'s
    numbering): the face if all three exceed ``tol``, the edge opposite the vanishing one, or the
    vertex of the largest."""
    npos = jnp.sum(lam > tol, axis=-1)
    edge = 1 + (jnp.argmin(lam, axis=-1) + 1) % 3
    return jnp.where(npos >= 3, 0, jnp.where(npos == 2, edge, 4 + jnp.argmax(lam, axis=-1)))


def _support_feature(tri: Array, base: float, n: Array, tol: Array) -> tuple[Array, Array]:
    """Per prism, whether its contact with normal ``n`` (outward from the prism) is on the top
    triangle, and that feature (``_topology``'s numbering): the prism's support set in ``n``, its
    vertices within ``tol`` of ``max_k n·v_k``, holds no bottom vertex (else the contact is on a
    wall or the bottom, inside the terrain), and its top vertices name the face (three), an edge
    (two) or a vertex (one).  The normal alone decides, exact for every narrow phase."""
    proj = jnp.einsum("tkc,tc->tk", tri, n)
    low = jnp.einsum("tkc,tc->tk", tri.at[:, :, 2].set(-base), n)
    best = jnp.maximum(jnp.max(proj, axis=1), jnp.max(low, axis=1))
    top = proj >= best[:, None] - tol
    on = ~jnp.any(low >= best[:, None] - tol, axis=1)
    count = jnp.sum(top, axis=1)
    edge = 1 + (jnp.argmin(top, axis=1) + 1) % 3
    return on, jnp.where(count >= 3, 0, jnp.where(count == 2, edge, 4 + jnp.argmax(top, axis=1)))


def _kept(d: Array, feature: Array, on: Array, share: np.ndarray, tol: Array) -> Array:
    """Which candidates are local minima over the surface (module docstring): on the top triangle
    (``on``) and no closer than any triangle sharing their feature (ties: the lowest index).
    The caller drops the features on the window's border inside the field, whose sharers it
    does not see (no contact within the reach lies there)."""
    n = d.shape[0]
    padded = jnp.concatenate([jnp.where(on, d, jnp.inf), jnp.full((1,), jnp.inf, d.dtype)])
    mine = jnp.arange(n)
    others = jnp.asarray(share)[mine, feature]                           # (T, 6)
    dd = padded[others]
    beaten = (dd < d[:, None] - tol) | ((dd <= d[:, None] + tol) & (others < mine[:, None]))
    return on & ~jnp.any(beaten, axis=1)


def _spread(x: Array, h: Array, valid: Array, n: Array, chosen: list[Array], slots: int,
            tol: float) -> tuple[Array, Array]:
    """Indices ``(slots,)`` of points of ``x (Q, 3)`` (heights ``h``, mask ``valid``), and whether
    each is a distinct point: the ``chosen`` ones first (each unless it repeats an earlier one),
    then greedy farthest-point selection in the plane ``⊥ n``, each next point maximising its
    distance to the points chosen so far less ``SPREAD_WEIGHT (h − h₀)⁺`` (``h₀`` the first
    point's: lower points first); a point within ``tol`` of a chosen one repeats it (collinear
    points, a capsule's, give both ends)."""
    rel = x - x[chosen[0]]
    rel = rel - jnp.einsum("qc,c->q", rel, n)[:, None] * n
    pen = SPREAD_WEIGHT * jnp.maximum(h - h[chosen[0]], 0.0)
    gap = jnp.full(h.shape, jnp.inf, h.dtype)
    sel, ok = [], []
    for i in range(slots):
        k = jnp.argmax(jnp.where(valid & (gap > tol), gap - pen, -jnp.inf))
        if i < len(chosen):
            k = jnp.where(valid[chosen[i]] & (gap[chosen[i]] > tol), chosen[i], k)
        sel.append(k)
        ok.append(valid[k] & (gap[k] > tol))
        gap = jnp.where(ok[-1], jnp.minimum(gap, jnp.sqrt(jnp.sum((rel - rel[k]) ** 2, axis=-1))), gap)
    return jnp.stack(sel), jnp.stack(ok)


def _deepest_and_extremes(x: Array, h: Array, valid: Array, n: Array, rotation: Array, chosen: list[Array],
                          tol: float) -> tuple[Array, Array]:
    """A mesh's 8 slots (module docstring): the ``chosen`` points and the next deepest valid ones
    (four in all), then the extremes along the diagonals of the mesh's axes in the plane ``⊥ n``
    among the valid points within ``SKIN`` of the first or below the surface; whether each is a
    distinct valid point (a repeat is left unused)."""
    from sodyn.collision.hull_contacts import DEEPEST, SKIN, deepest_indices, diagonal_extremes, distinct

    first = deepest_indices(h, DEEPEST, chosen, valid)
    candidate = valid & (h <= jnp.maximum(h[chosen[0]] + SKIN, 0.0))
    sel = jnp.concatenate([first, diagonal_extremes(x, candidate, n, rotation)])
    return sel, distinct(x[sel], valid[sel], tol)


def _highest(type_: str, g) -> Array:
    """The highest ``z`` of a geom (in the height field's frame): its support point in ``+z``."""
    if type_ == "mesh":
        return jnp.max(g.position[2] + g.hull.vertices @ g.rotation[2])
    from sodyn.collision.support import support

    return support(type_, g, jnp.array([0.0, 0.0, 1.0], g.position.dtype))[2]


def _prism_function(type_: str) -> Callable:
    """The hull narrow phase of a ``type_`` geom against a prism (a mesh), one slot."""
    if type_ in ("ellipsoid", "cylinder"):
        from sodyn.collision.hull_curved import curved_pair

        return curved_pair(type_)
    from sodyn.collision.hull_contacts import polytope_pair

    return polytope_pair(type_, "mesh", 1)


def hfield_pair(type_: str, g: Grid) -> Callable[[GeomFrame, GeomFrame | MeshFrame, Array], Contacts]:
    """The narrow phase ``f(g1, g2, elevation) -> Contacts`` (``SLOTS[("hfield", type_)]`` slots)
    of a height field ``g1`` (its frame; ``elevation (nrow, ncol)`` its normalised samples) and a
    geom ``g2`` of type ``type_`` (a :class:`~sodyn.collision.types.MeshFrame` for a mesh), for the
    field and window of ``g`` (module docstring).  Pure JAX for one pair: ``jax.vmap`` it."""
    if type_ not in TYPES:
        raise ValueError(f"no height-field narrow phase for a {type_!r} geom; types are {TYPES}")
    nrow, ncol, (sx, sy, top, base), rows, cols, reach = g
    dx, dy = 2.0 * sx / (ncol - 1), 2.0 * sy / (nrow - 1)
    tri_index, share, border = _topology(rows, cols)
    slots = SLOTS[("hfield", type_)]
    closed = type_ in ("sphere", "capsule")
    on_prism = None if closed else _prism_function(type_)

    def pair(g1: GeomFrame, g2, elevation: Array) -> Contacts:
        if elevation.shape != (nrow, ncol):
            raise ValueError(f"height field pair: elevation has shape {elevation.shape}, the grid ({nrow}, {ncol})")
        dt = g2.position.dtype
        eps = jnp.finfo(dt).eps
        r1 = g1.rotation.astype(dt)
        loc = g2._replace(rotation=mm(jnp.swapaxes(r1, -1, -2), g2.rotation),
                          position=mtv(r1, g2.position - g1.position))
        x, y = loc.position[0], loc.position[1]
        c0 = jnp.clip(jnp.floor((x - reach + sx) / dx), 0, ncol - 1 - cols).astype(jnp.int32)
        r0 = jnp.clip(jnp.floor((y - reach + sy) / dy), 0, nrow - 1 - rows).astype(jnp.int32)
        z = jax.lax.dynamic_slice(elevation.astype(dt), (r0, c0), (rows + 1, cols + 1)) * top
        xs = -sx + dx * (c0 + jnp.arange(cols + 1)).astype(dt)
        ys = -sy + dy * (r0 + jnp.arange(rows + 1)).astype(dt)
        verts = jnp.stack([jnp.broadcast_to(xs[None, :], z.shape), jnp.broadcast_to(ys[:, None], z.shape), z], -1)
        tri = verts.reshape(-1, 3)[tri_index]                                              # (T, 3, 3)
        tol_b = jnp.sqrt(eps)
        if closed:
            s, rad = loc.size, loc.size[0]
            half = s[1] * loc.rotation[:, 2] if type_ == "capsule" else jnp.zeros(3, dt)
            d, n, q = jax.vmap(core_triangle, (None, None, None, 0))(loc.position - half, loc.position + half, rad, tri)
            pos = q + 0.5 * d[:, None] * n
            on, feature = jnp.ones(d.shape, bool), _feature(jax.vmap(barycentric)(tri, q), tol_b)
        else:
            c = jax.vmap(on_prism, (None, 0))(loc, jax.vmap(prism, (0, None))(tri, base))
            d, n, pos = c.distance[:, 0], -c.normal[:, 0], c.position[:, 0]
            on, feature = _support_feature(tri, base, n, tol_b * (dx + dy + top + base))
        inner = jnp.stack([c0 > 0, c0 + cols < ncol - 1, r0 > 0, r0 + rows < nrow - 1])
        on = on & ~jnp.any(jnp.asarray(border)[jnp.arange(d.shape[0]), feature] & inner, axis=-1)
        kept = _kept(d, feature, on, share, 1e3 * eps * (reach + top + base))
        pts, prad = surface_points(type_, loc)
        if pts.shape[0]:
            u, v = (pts[:, 0] + sx) / dx - c0, (pts[:, 1] + sy) / dy - r0
            j = jnp.clip(jnp.floor(u), 0, cols - 1).astype(jnp.int32)
            i = jnp.clip(jnp.floor(v), 0, rows - 1).astype(jnp.int32)
            t = 2 * (i * cols + j) + jnp.where(v - i >= u - j, 0, 1)
            ds, ns, qs = jax.vmap(surface_contact, (0, None, 0))(pts, prad, tri[t])
            inside = ((jnp.abs(pts[:, 0]) <= sx) & (jnp.abs(pts[:, 1]) <= sy) & (u >= 0) & (u <= cols) & (v >= 0)
                      & (v <= rows))
            pos = jnp.concatenate([pos, qs + 0.5 * ds[:, None] * ns])
            d, n = jnp.concatenate([d, ds]), jnp.concatenate([n, ns])
            valid = jnp.concatenate([kept, inside])
        else:
            valid = kept
        near = (jnp.abs(x) <= sx + reach) & (jnp.abs(y) <= sy + reach) & (_highest(type_, loc) >= -base)
        nt = kept.shape[0]
        b = jnp.argmin(jnp.where(kept, d[:nt], jnp.inf))
        chosen = [b] if nt == d.shape[0] else [b, nt + jnp.argmin(jnp.where(valid[nt:], d[nt:], jnp.inf))]
        if type_ == "mesh":
            sel, ok = _deepest_and_extremes(pos, d, valid, n[b], loc.rotation, chosen, DUPLICATE * reach)
        else:
            sel, ok = _spread(pos, d, valid, n[b], chosen, slots, DUPLICATE * reach)
        ok = ok & kept[b] & near
        dist = jnp.where(ok, d[sel], jnp.asarray(FAR, dt))
        pos_w = g1.position.astype(dt) + mv(r1, jnp.where(ok[:, None], pos[sel], pos[b]))
        normal_w = mv(r1, jnp.where(ok[:, None], n[sel], n[b]))
        return Contacts(dist, pos_w, normal_w)

    pair.__name__ = f"hfield_{type_}"
    pair.__doc__ = f"Contacts of a height field ``g1`` and a {type_} ``g2`` (:func:`hfield_pair`)."
    return pair


#: Per pair type, the factory ``grid -> pair function`` (:func:`hfield_pair`): the pair function
#: depends on the static :class:`Grid` of the height field and the geoms it meets.
PAIRS: dict[tuple[str, str], Callable[[Grid], Callable]] = {
    key: functools.partial(hfield_pair, key[1]) for key in SLOTS}


def model_grid(model, hfield_geom: int, geoms, detection=0.0) -> Grid:
    """The :class:`Grid` of height field geom ``hfield_geom`` of ``model`` for its pairs with
    ``geoms`` (indices), whose detection distances (margin + gap) are ``detection`` (scalar or one
    per geom; ignored where traced): the reach is the largest ``Geoms.rbound`` (the geoms'
    bounding radii as built, static, so this works on a traced model too) plus detection."""
    gs = model.geoms
    k = gs.hfield_id[hfield_geom]
    if k < 0:
        raise ValueError(f"geom {gs.names[hfield_geom]!r} is a {gs.type[hfield_geom]}, not a height field")
    idx = [int(i) for i in np.asarray(geoms).reshape(-1)]
    try:
        det = np.broadcast_to(np.asarray(detection, np.float64), (len(idx),))
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        det = np.zeros(len(idx))
    if any(gs.rbound[i] < 0 for i in idx):
        raise ValueError(f"height field {gs.names[hfield_geom]!r}: the bounding radii of geoms "
                         f"{[gs.names[i] for i in idx if gs.rbound[i] < 0]} are unknown (built from traced sizes)")
    reach = max([gs.rbound[i] + float(e) for i, e in zip(idx, det)] + [1e-9])
    what = f"height field {gs.names[hfield_geom]!r} with geom(s) {[gs.names[i] for i in idx]}"
    return grid(gs.hfield.nrow[k], gs.hfield.ncol[k], gs.hfield.size[k], reach, what)


__all__ = ["DUPLICATE", "MAX_TRIANGLES", "PAIRS", "SLOTS", "SPREAD_WEIGHT", "TYPES", "Grid", "grid", "hfield_pair",
           "model_grid"]
