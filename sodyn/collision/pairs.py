"""The static list of geom pairs the narrow phase tests, and their contact parameters.

:func:`candidate_pairs` applies MuJoCo's collision filtering (``engine_collision_driver.c``:
``mj_broadphase``, ``filterBodyPair``, ``filterCollisionPair``) once, with NumPy, to the static
data of :class:`sodyn.Geoms`; only the configuration-dependent bounding-volume tests are left
to the narrow phase.  Geoms ``a`` and ``b`` on bodies ``A`` and ``B`` (sodyn bodies are
MuJoCo's weld bodies; ``-1`` is the world) form a *dynamic* pair when

1. ``A ≠ B`` — no contact within a weld body, hence none between two world geoms;
2. with ``filter_parent``: neither body is the other's (weld) parent, unless that parent is
   the world (``Geoms.weld_parent``);
3. ``(A, B)`` is not in ``Geoms.exclude``;
4. ``contype_a & conaffinity_b or contype_b & conaffinity_a`` is non-zero;
5. they are not both planes or height fields (MuJoCo has no plane–plane, plane–height field or
   height field–height field collision function);
6. ``(a, b)`` is not an explicit pair: MuJoCo drops the dynamic pair of exactly the geoms of an
   explicit ``<pair>`` (``filterCollisionPair``'s ``merged`` test is per geom pair: other geom
   pairs of the same two bodies stay).

Explicit pairs (``Geoms.pairs``) are always candidates, whatever rules 1–4 say (except
plane–plane).  Each pair is ordered ``type(geom1) ≤ type(geom2)`` in ``GEOM_TYPES`` order
(ties: the lower geom index first), the order of the narrow phase.

**Size.**  Without filters ``ng`` geoms give ``ng (ng − 1) / 2`` pairs; the rules remove the
pairs inside a body and between neighbours, so a robot with self-collision on still has
``O(ng²)`` candidates and one with it off (bitmasks) about ``n_world · n_robot``.  Compile time
grows with the number of distinct type pairs and run time with the number of candidates:
restrict them (:func:`restrict`) to what can touch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.model import Model
from sodyn.model_data import GEOM_TYPES


@dataclasses.dataclass(frozen=True)
class CandidatePairs:
    """Geom pairs ``(geom1[i], geom2[i])`` (indices into ``model.geoms``) with
    ``type(geom1) ≤ type(geom2)``; ``pair[i]`` is the explicit pair's index in
    ``model.geoms.pairs``, or ``-1`` for a dynamic pair.  Hashable (a static argument)."""

    geom1: tuple[int, ...]
    geom2: tuple[int, ...]
    pair: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.geom1)

    def names(self, model: Model) -> list[tuple[str, str]]:
        """The pairs as ``(name1, name2)``."""
        n = model.geoms.names
        return [(n[a], n[b]) for a, b in zip(self.geom1, self.geom2, strict=True)]

    def by_type(self, model: Model) -> dict[tuple[str, str], tuple[int, ...]]:
        """Indices of the pairs of each type pair ``(type1, type2)``, in ``GEOM_TYPES`` order."""
        t = model.geoms.type
        out: dict[tuple[str, str], list[int]] = {}
        for i, (a, b) in enumerate(zip(self.geom1, self.geom2, strict=True)):
            out.setdefault((t[a], t[b]), []).append(i)
        return {k: tuple(out[k]) for k in sorted(out, key=lambda k: (GEOM_TYPES.index(k[0]), GEOM_TYPES.index(k[1])))}

    def select(self, keep) -> "CandidatePairs":
        """The pairs where the boolean mask ``keep`` (or at the given indices) holds."""
        idx = np.arange(len(self))[np.asarray(keep)] if len(self) else np.zeros(0, np.int64)
        return CandidatePairs(*(tuple(int(x) for x in np.asarray(f, np.int64)[idx])
                                for f in (self.geom1, self.geom2, self.pair)))


class PairParameters(NamedTuple):
    """Contact parameters of each candidate pair (MuJoCo's ``mj_contactParam`` and driver).

    ``friction (n, 3)`` (sliding, torsional, rolling), ``margin (n,)`` (a contact acts below
    this distance: MuJoCo's ``includemargin``), ``gap (n,)`` (contacts are detected up to
    ``margin + gap``, :attr:`detection`); JAX arrays from the model's leaves, so ``grad`` flows
    to ``model.geoms``.  ``condim`` is static (a tuple of ints)."""

    friction: jax.Array
    margin: jax.Array
    gap: jax.Array
    condim: tuple[int, ...]

    @property
    def detection(self) -> jax.Array:
        """Distance below which MuJoCo generates a contact (active or not): ``margin + gap``."""
        return self.margin + self.gap


def _ordered(types: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    swap = (types[a] > types[b]) | ((types[a] == types[b]) & (a > b))
    return np.where(swap, b, a), np.where(swap, a, b)


def candidate_pairs(model: Model, **restriction) -> CandidatePairs:
    """The geom pairs of ``model`` that MuJoCo's filters let through (module docstring),
    explicit pairs first (in their order), then the dynamic ones in ``(min, max)`` index order.

    ``restriction``: the keyword arguments of :func:`restrict` (``geoms``, ``involving``,
    ``bodies``, ``exclude_types``), applied to the result.
    """
    g = model.geoms
    ng = len(g)
    types = np.array([GEOM_TYPES.index(t) for t in g.type], np.int64)
    body = np.array(g.body, np.int64).reshape(ng)
    ct, ca = np.array(g.contype, np.int64).reshape(ng), np.array(g.conaffinity, np.int64).reshape(ng)
    wp = np.array(g.weld_parent if len(g.weld_parent) == model.n_bodies else model.parent, np.int64)
    i, j = np.triu_indices(ng, 1)
    bi, bj = body[i], body[j]
    keep = bi != bj
    if g.filter_parent:
        pi, pj = np.where(bi >= 0, wp[np.maximum(bi, 0)], -2), np.where(bj >= 0, wp[np.maximum(bj, 0)], -2)
        keep &= ~((bi >= 0) & (bj >= 0) & ((bi == pj) | (bj == pi)))
    if g.exclude:
        excluded = set(g.exclude)
        keep &= ~np.array([(min(a, b), max(a, b)) in excluded for a, b in zip(bi.tolist(), bj.tolist())], bool)
    keep &= ((ct[i] & ca[j]) | (ct[j] & ca[i])) != 0
    keep &= ~((types[i] <= 1) & (types[j] <= 1))
    e1, e2 = np.array(g.pairs.geom1, np.int64), np.array(g.pairs.geom2, np.int64)
    if len(e1):
        explicit = {(min(a, b), max(a, b)) for a, b in zip(e1.tolist(), e2.tolist())}
        keep &= ~np.array([(a, b) in explicit for a, b in zip(i.tolist(), j.tolist())], bool)
    ek = np.flatnonzero(~((types[e1] <= 1) & (types[e2] <= 1))) if len(e1) else np.zeros(0, np.int64)
    a = np.concatenate([e1[ek], i[keep]])
    b = np.concatenate([e2[ek], j[keep]])
    g1, g2 = _ordered(types, a, b) if len(a) else (a, b)
    pair = np.concatenate([ek, np.full(int(keep.sum()), -1, np.int64)])
    out = CandidatePairs(tuple(int(x) for x in g1), tuple(int(x) for x in g2), tuple(int(x) for x in pair))
    return restrict(model, out, **restriction) if restriction else out


def _body_of(model: Model, ref) -> int:
    if ref is None or (isinstance(ref, (int, np.integer)) and ref == -1):
        return -1
    if isinstance(ref, str) and ref not in model.body_names and ref not in model.frame_names:
        if ref == "world":
            return -1
        raise ValueError(f"restrict: unknown body {ref!r}; bodies are {list(model.body_names)}")
    if isinstance(ref, str) and ref not in model.body_names:
        return model.frame_body[model.frame_id(ref)]  # a link merged into its moving ancestor
    return model.body_id(ref)


def restrict(model: Model, pairs: CandidatePairs, *, geoms: Iterable | None = None, involving: Iterable | None = None,
             bodies: Iterable | None = None, exclude_types: Iterable = ()) -> CandidatePairs:
    """The candidate ``pairs`` that satisfy every given condition:

    - ``geoms``: both geoms are among these (names or indices);
    - ``involving``: at least one geom is among these;
    - ``bodies``: both geoms sit on these bodies (body or frame names — a link merged into its
      moving ancestor stands for it — indices, ``"world"``/``None``/``-1`` for the world);
    - ``exclude_types``: drop pairs with a geom of one of these types (``"box"``) or of these
      type pairs (``("capsule", "box")``, either order).

    Raises ``ValueError`` for an unknown geom, body or type.
    """
    g = model.geoms
    g1, g2 = np.array(pairs.geom1, np.int64), np.array(pairs.geom2, np.int64)
    keep = np.ones(len(pairs), bool)
    if geoms is not None:
        s = np.array(sorted({g.index(x) for x in geoms}), np.int64)
        keep &= np.isin(g1, s) & np.isin(g2, s)
    if involving is not None:
        s = np.array(sorted({g.index(x) for x in involving}), np.int64)
        keep &= np.isin(g1, s) | np.isin(g2, s)
    if bodies is not None:
        s = np.array(sorted({_body_of(model, x) for x in bodies}), np.int64)
        body = np.array(g.body, np.int64).reshape(-1)
        keep &= np.isin(body[g1], s) & np.isin(body[g2], s)
    for t in exclude_types:
        ts = (t,) if isinstance(t, str) else tuple(t)
        bad = [x for x in ts if x not in GEOM_TYPES]
        if bad or len(ts) not in (1, 2):
            raise ValueError(f"restrict: exclude_types entry {t!r} is not a type or a type pair of {GEOM_TYPES}")
        t1 = np.array([g.type[x] for x in g1.tolist()], object)
        t2 = np.array([g.type[x] for x in g2.tolist()], object)
        if len(ts) == 1:
            keep &= (t1 != ts[0]) & (t2 != ts[0])
        else:
            keep &= ~(((t1 == ts[0]) & (t2 == ts[1])) | ((t1 == ts[1]) & (t2 == ts[0])))
    return pairs.select(keep)


def pair_parameters(model: Model, pairs: CandidatePairs) -> PairParameters:
    """Friction, margin, gap and condim of each candidate pair, combined as MuJoCo does.

    Dynamic pairs (``mj_contactParam``): the geom of higher ``priority`` gives its friction and
    condim; at equal priority each friction component and the condim are the larger of the
    two.  ``margin`` and ``gap`` are the two geoms' sums (MuJoCo's collision driver adds them,
    checked against ``d.contact``; MuJoCo 3.2 took the maximum and subtracted the gap from the
    margin instead).
    Explicit pairs use their own values (``model.geoms.pairs``).
    """
    g = model.geoms
    n = len(pairs)
    dtype = g.friction.dtype
    if n == 0:
        z = jnp.zeros((0,), dtype)
        return PairParameters(z.reshape(0, 3), z, z, ())
    a, b, k = (np.array(x, np.int64) for x in (pairs.geom1, pairs.geom2, pairs.pair))
    prio = np.array(g.priority, np.int64)
    cond = np.array(g.condim, np.int64)
    first, second, equal = prio[a] > prio[b], prio[a] < prio[b], prio[a] == prio[b]
    f1, f2 = g.friction[a], g.friction[b]
    friction = jnp.where(equal[:, None], jnp.maximum(f1, f2), jnp.where(first[:, None], f1, f2))
    margin = g.margin[a] + g.margin[b]
    gap = g.gap[a] + g.gap[b]
    condim = np.where(first, cond[a], np.where(second, cond[b], np.maximum(cond[a], cond[b])))
    explicit = k >= 0
    if explicit.any():
        kk = np.maximum(k, 0)
        p = g.pairs
        friction = jnp.where(explicit[:, None], p.friction[kk], friction)
        margin = jnp.where(explicit, p.margin[kk], margin)
        gap = jnp.where(explicit, p.gap[kk], gap)
        condim = np.where(explicit, np.array(p.condim, np.int64)[kk], condim)
    return PairParameters(friction, margin, gap, tuple(int(c) for c in condim))


__all__ = ["CandidatePairs", "PairParameters", "candidate_pairs", "pair_parameters", "restrict"]
