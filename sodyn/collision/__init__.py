"""Collision between geoms: the candidate pairs of a model (MuJoCo's filtering,
:mod:`~sodyn.collision.pairs`), the narrow phase of every pair of primitives
(:mod:`~sodyn.collision.primitives`, :mod:`~sodyn.collision.boxes`,
:mod:`~sodyn.collision.convex`) and of a mesh geom's convex hull with any geom
(:mod:`~sodyn.collision.hull_contacts`, :mod:`~sodyn.collision.hull_curved`, on
:mod:`~sodyn.collision.hull_topology` and :mod:`~sodyn.collision.hull_distance`), of a height
field with any geom (:mod:`~sodyn.collision.heightfield`), and :func:`collide`, the contacts of a
configuration (:mod:`~sodyn.collision.collide`)."""

from sodyn.collision.collide import ContactSet, ContactSlots, collide
from sodyn.collision.pairs import CandidatePairs, PairParameters, candidate_pairs, pair_parameters, restrict
from sodyn.collision.scene import set_elevation, with_ground_plane, with_height_field
from sodyn.collision.types import FAR, Contacts, GeomFrame, Hull, MeshFrame

__all__ = ["FAR", "CandidatePairs", "ContactSet", "ContactSlots", "Contacts", "GeomFrame", "Hull", "MeshFrame",
           "PairParameters", "candidate_pairs", "collide", "pair_parameters", "restrict", "set_elevation",
           "with_ground_plane", "with_height_field"]
