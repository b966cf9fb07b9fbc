r"""Compliant contact between the model's geoms: :class:`ContactModel`.

The candidate geom pairs are fixed when the contact model is built (MuJoCo's filtering,
:func:`sodyn.collision.pairs.candidate_pairs`); at each configuration the narrow phase gives
every pair its fixed number of contact slots (:mod:`sodyn.collision.collide`), and each slot
feeds the compliant law of :mod:`sodyn.simulate.contact` between the pair's two bodies: force
on body 2, the opposite on body 1, implicit terms on both.  The spring of a pair rests at the
distance ``margin`` (MuJoCo's ``includemargin``: the two geoms' margins added; 0 by default),
so a pair with a margin starts pushing before it touches; ``gap`` only widens the broad phase
(MuJoCo detects contacts up to ``margin + gap`` and leaves those beyond ``margin`` inactive).

Parameters are per candidate pair (``(npair,)``) or shared (``()``), all pytree leaves:
``stiffness``, ``damping``, ``friction`` (Coulomb ``μ``: default the pair's combined sliding
friction, MuJoCo's ``mj_contactParam``), ``slip_velocity``, ``onset``, ``margin``, ``gap``.
Defaults as in :mod:`sodyn.simulate.contact`.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.collision.collide import ContactSlots, collide_frames, contact_slots, geom_frames
from sodyn.collision.types import Contacts
from sodyn.model import Model
from sodyn.simulate.contact import (
    DAMPING_RATIO,
    LAW_PARAMETERS,
    ONSET,
    SLIP_VELOCITY,
    CompliantContact,
    LawParameters,
    check_law_values,
    concrete_array,
    default_stiffness_damping,
    float_array,
)
from sodyn.static_index import take

_PER_PAIR = LAW_PARAMETERS + ("margin", "gap")
#: Default number of coupling passes of the implicit step (:mod:`sodyn.simulate.coupling`).
COUPLING_PASSES = 2


class ContactModel(CompliantContact):
    r"""The compliant law on the contact slots of a model's candidate geom pairs (module
    docstring); pass it as ``contact=`` to :func:`~sodyn.simulate.step`,
    :func:`~sodyn.simulate.rollout` or :class:`~sodyn.simulate.RigidContact`.

    **Arrays** (leaves), each ``()`` or ``(npair,)``: ``stiffness``, ``damping``, ``friction``,
    ``slip_velocity``, ``onset``, ``margin``, ``gap``.  **Static:** ``slots``
    (:class:`~sodyn.collision.ContactSlots`: each slot's pair, geoms and bodies), ``geom1``,
    ``geom2`` (each candidate pair's geom indices), ``coupling_passes`` (the linearly implicit
    step's conjugate-gradient passes for contacts between two moving bodies,
    :mod:`sodyn.simulate.coupling`; default ``COUPLING_PASSES``, each one more forward-dynamics
    solve, exact once they outnumber the directions those contacts span; 0 for the uncoupled
    step).

    Build one with :meth:`from_model`.  **Raises** ``ValueError`` naming the argument for
    wrong shapes or (when known, i.e. not under ``jit``/``vmap``) negative or non-finite values.
    """

    stiffness: jax.Array
    damping: jax.Array
    friction: jax.Array
    slip_velocity: jax.Array
    onset: jax.Array
    margin: jax.Array
    gap: jax.Array
    slots: ContactSlots = eqx.field(static=True)
    geom1: tuple[int, ...] = eqx.field(static=True)
    geom2: tuple[int, ...] = eqx.field(static=True)
    coupling_passes: int = eqx.field(static=True)

    def __init__(self, model: Model, geom1, geom2, stiffness, damping, friction, slip_velocity=SLIP_VELOCITY,
                 onset=ONSET, margin=0.0, gap=0.0, coupling_passes: int = COUPLING_PASSES):
        if not isinstance(coupling_passes, int) or isinstance(coupling_passes, bool) or coupling_passes < 0:
            raise ValueError(f"ContactModel: coupling_passes must be a non-negative integer, got {coupling_passes!r}")
        self.coupling_passes = coupling_passes
        self.geom1 = tuple(int(i) for i in np.asarray(geom1, np.int64).reshape(-1))
        self.geom2 = tuple(int(i) for i in np.asarray(geom2, np.int64).reshape(-1))
        if len(self.geom1) != len(self.geom2):
            raise ValueError(f"ContactModel: geom1 has {len(self.geom1)} entries, geom2 {len(self.geom2)}")
        ng = len(model.geoms)
        bad = [i for i in self.geom1 + self.geom2 if not 0 <= i < ng]
        if bad:
            raise ValueError(f"ContactModel: geom index {bad[0]} out of range for model {model.name!r} ({ng} geoms)")
        self.slots = contact_slots(model, self.geom1, self.geom2)
        for name, value in zip(_PER_PAIR, (stiffness, damping, friction, slip_velocity, onset, margin, gap)):
            traced = isinstance(value, jax.core.Tracer)
            setattr(self, name, value if traced else float_array(value, "ContactModel", name))

    def __check_init__(self):
        npair = len(self.geom1)
        for name in _PER_PAIR:
            got = jnp.shape(getattr(self, name))
            if got not in ((), (npair,)):
                raise ValueError(f"ContactModel: {name} must be a scalar or have shape ({npair},) (one per "
                                 f"candidate pair), got {got}")
        check_law_values("ContactModel", self)
        for name in ("margin", "gap"):
            x = concrete_array(getattr(self, name))
            if x is not None and (np.any(~np.isfinite(x)) or np.any(x < 0)):
                raise ValueError(f"ContactModel: {name} must be finite and non-negative, got {x.tolist()}")

    def __len__(self) -> int:
        """The number of contact slots."""
        return len(self.slots)

    @property
    def n_pairs(self) -> int:
        return len(self.geom1)

    @classmethod
    def from_model(cls, model: Model, *, pairs=None, stiffness=None, damping=None, damping_ratio=DAMPING_RATIO,
                   friction=None, slip_velocity=SLIP_VELOCITY, onset=ONSET, margin=None,
                   gap=None, coupling_passes: int = COUPLING_PASSES) -> "ContactModel":
        """The compliant law on ``model``'s candidate geom pairs.

        ``pairs``: the candidate pairs (default :func:`~sodyn.collision.pairs.candidate_pairs`
        of the model: MuJoCo's filtering, explicit ``<pair>``\\ s included).  ``friction``,
        ``margin``, ``gap`` default to the pairs' combined geom values
        (:func:`~sodyn.collision.pairs.pair_parameters`; a pair of ``condim`` 1 is
        frictionless); ``stiffness``, ``damping`` (or
        ``damping_ratio``) as in :mod:`sodyn.simulate.contact`; ``coupling_passes`` as in the
        class docstring.  Raises ``ValueError`` when the model has no candidate pair."""
        from sodyn.collision.pairs import candidate_pairs, pair_parameters

        if pairs is None:
            pairs = candidate_pairs(model)
        if len(pairs.geom1) == 0:
            raise ValueError(f"ContactModel.from_model: model {model.name!r} has no candidate geom pair "
                             f"(geoms: {list(model.geoms.names)}); add geoms, or use GroundContact")
        params = pair_parameters(model, pairs)
        stiffness, damping = default_stiffness_damping(model, stiffness, damping, damping_ratio, "ContactModel")
        if friction is None:   # condim 1: frictionless
            friction = jnp.where(np.asarray(params.condim) == 1, 0.0, params.friction[:, 0])
        return cls(model, pairs.geom1, pairs.geom2, stiffness, damping, friction, slip_velocity, onset,
                   params.margin if margin is None else margin, params.gap if gap is None else gap,
                   coupling_passes)

    def slot_bodies(self, model: Model) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.slots.body1, np.int64), np.asarray(self.slots.body2, np.int64)

    def contacts(self, model: Model, rotation: jax.Array, origin: jax.Array) -> Contacts:
        detection = jnp.broadcast_to((self.margin + self.gap).astype(rotation.dtype), (self.n_pairs,))
        return collide_frames(self.slots, geom_frames(model, rotation, origin), detection, model.geoms.hfield)

    def per_slot(self, name: str, dtype) -> jax.Array:
        """Parameter ``name`` at each slot (``()`` stays a scalar)."""
        x = jnp.asarray(getattr(self, name), dtype)
        return x if x.ndim == 0 else take(x, np.asarray(self.slots.pair))

    def law(self, dtype) -> LawParameters:
        return LawParameters(*(self.per_slot(f, dtype) for f in LAW_PARAMETERS), self.per_slot("margin", dtype))


__all__ = ["ContactModel"]
