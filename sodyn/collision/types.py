"""The values the narrow phase passes around: a geom placed in the world (:class:`GeomFrame`)
and the contacts of one geom pair in a fixed number of slots (:class:`Contacts`).

Conventions (MuJoCo's ``mjContact``): ``distance`` is the signed distance between the two
surfaces (negative: penetration), ``normal`` the unit world normal pointing from geom 1 to
geom 2, ``position`` the world point midway between the two surfaces along the normal.  A
pair function returns the same number of slots whatever the poses, so the program has one
shape for every state; a slot with no contact carries ``distance = FAR`` (finite, so that
gradients through the force laws stay NaN-free) and a unit normal."""

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


class Contacts(NamedTuple):
    """Contacts of one pair, or of many (leading axes): ``distance (..., n)``,
    ``position (..., n, 3)``, ``normal (..., n, 3)`` (module docstring)."""

    distance: jax.Array
    position: jax.Array
    normal: jax.Array


__all__ = ["FAR", "Contacts", "GeomFrame"]
