"""The values the narrow phase passes around: a geom placed in the world (:class:`GeomFrame`)
and the contacts of one geom pair in a fixed number of slots (:class:`Contacts`).

Conventions (MuJoCo's ``mjContact``): ``distance`` is the signed distance between the two
surfaces (negative: penetration), ``normal`` the unit world normal pointing from geom 1 to
geom 2, ``position`` the world point midway between the two surfaces along the normal.  A
pair function returns the same number of slots whatever the poses, so the program has one
shape for every state; a slot with no contact carries ``distance = FAR`` (finite, so that
gradients through the force laws stay NaN-free) and a unit normal.

A mesh geom is its convex hull (:class:`Hull`, in the geom's frame: the model's vertices and
face planes with the topology the narrow phase derives from them,
:func:`sodyn.collision.hull_topology.hull_topology`); :class:`MeshFrame` places it in the
world."""

from __future__ import annotations

from typing import NamedTuple

import jax

#: Signed distance of an unused contact slot, m (far beyond any margin; finite in float32).
FAR = 1e6


class GeomFrame(NamedTuple):
    """One geom in world axes: ``rotation (3, 3)`` (columns: the geom's axes), ``position (3,)``
    (its centre) and ``size (3,)`` (MuJoCo's meaning, :class:`sodyn.Geoms`)."""

    rotation: jax.Array
    position: jax.Array
    size: jax.Array


class Hull(NamedTuple):
    """A convex polytope in its geom's frame (``V`` vertices, ``F`` faces, ``E`` edges, all
    padded to static sizes):

    - ``vertices (V, 3)``; ``faces (F, 4)``: planes ``[m, o]``, ``m`` the unit outward normal,
      ``m·x ≤ o`` inside (the model's data, padded by repetition);
    - ``face_valid (F,)``: not a padding repeat; ``polygon (F, V)``: each face's vertex indices
      counter-clockwise seen from outside, ``count (F,)`` of them (the rest repeat the first);
    - ``edges (E, 2)``: vertex indices ``(a, b)`` of each edge, ``edge_faces (E, 2)``: the face
      whose boundary runs ``a → b`` and the face across the edge, ``edge_valid (E,)``."""

    vertices: jax.Array
    faces: jax.Array
    face_valid: jax.Array
    polygon: jax.Array
    count: jax.Array
    edges: jax.Array
    edge_faces: jax.Array
    edge_valid: jax.Array


class MeshFrame(NamedTuple):
    """A mesh geom in world axes: :class:`GeomFrame`'s ``rotation``, ``position``, ``size``
    (``(ρ, 0, 0)``, ``ρ`` the hull's bounding radius about the geom origin) and its ``hull``
    (:class:`Hull`, geom frame).  :func:`sodyn.collision.collide.geom_frames` returns one for all
    geoms (leading axis ``ng``) when the model has a mesh geom."""

    rotation: jax.Array
    position: jax.Array
    size: jax.Array
    hull: Hull


class Contacts(NamedTuple):
    """Contacts of one pair, or of many (leading axes): ``distance (..., n)``,
    ``position (..., n, 3)``, ``normal (..., n, 3)`` (module docstring)."""

    distance: jax.Array
    position: jax.Array
    normal: jax.Array


__all__ = ["FAR", "Contacts", "GeomFrame", "Hull", "MeshFrame"]
