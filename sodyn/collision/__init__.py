"""Collision between geoms: the candidate pairs of a model (MuJoCo's filtering,
:mod:`~sodyn.collision.pairs`), the narrow phase of every pair of primitives
(:mod:`~sodyn.collision.primitives`, :mod:`~sodyn.collision.boxes`,
:mod:`~sodyn.collision.convex`), and :func:`collide`, the contacts of a configuration
(:mod:`~sodyn.collision.collide`)."""

from sodyn.collision.collide import ContactSet, ContactSlots, collide
from sodyn.collision.pairs import CandidatePairs, PairParameters, candidate_pairs, pair_parameters, restrict
from sodyn.collision.scene import with_ground_plane
from sodyn.collision.types import FAR, Contacts, GeomFrame

__all__ = ["FAR", "CandidatePairs", "ContactSet", "ContactSlots", "Contacts", "GeomFrame", "PairParameters",
           "candidate_pairs", "collide", "pair_parameters", "restrict", "with_ground_plane"]
