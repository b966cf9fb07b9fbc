r"""Contact points on bodies against one plane: :class:`GroundContact`.

Each point is a sphere of radius ``r`` (``r = 0``: a point) fixed in a body; the plane is
``{x : n·x = h}`` with unit normal ``n`` (world axes), an infinite world geom.  A point's contact
is the plane–sphere case of the narrow phase (:func:`sodyn.collision.primitives.plane_sphere`):
signed distance ``d = n·c − h − r`` for the centre ``c``, normal ``n`` (from the plane to the
point's body), position ``c − (r + d/2) n``, so the points feed the one compliant law and the
one rigid-contact solver (:mod:`sodyn.simulate.contact`, :mod:`sodyn.simulate.rigid_contact`)
as the slots between the world and their bodies.  :class:`~sodyn.simulate.ContactModel`
collides the model's geoms with each other instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.collision.scene import plane_rotation
from sodyn.collision.types import Contacts, GeomFrame
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


class GroundContact(CompliantContact):
    r"""Contact points on bodies against a plane (module docstring; the force law is
    :mod:`sodyn.simulate.contact`'s).

    **Arrays** (leaves: ``vmap`` randomizes them, ``grad`` differentiates them):

    - ``position (nc, 3)``: each point's centre in its body's frame;
    - ``radius (nc,)``: each point's radius (``0``: a point);
    - ``normal (3,)``: the plane's unit normal (world), ``height ()``: the plane is
      ``{x : normal·x = height}``;
    - ``stiffness``, ``damping``, ``friction`` (Coulomb ``μ``), ``slip_velocity`` (``ε``, m/s),
      ``onset`` (``w``, m): each ``()`` or ``(nc,)``.

    **Static:** ``body`` (each point's body index), ``names``.

    Build one with :meth:`from_model` (the model's collision geoms) or :meth:`at_frames`
    (named frames, e.g. URDF feet), or directly.

    **Raises** ``ValueError`` naming the argument for wrong shapes, a non-unit normal, negative
    stiffness, damping, friction or radius, or a non-positive slip velocity or onset (values
    are checked when known at construction, i.e. not under ``jit``/``vmap``).
    """

    position: jax.Array
    radius: jax.Array
    normal: jax.Array
    height: jax.Array
    stiffness: jax.Array
    damping: jax.Array
    friction: jax.Array
    slip_velocity: jax.Array
    onset: jax.Array
    body: tuple[int, ...] = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, position, radius, normal, height, stiffness, damping, friction,
                 slip_velocity=SLIP_VELOCITY, onset=ONSET, *, body: Sequence[int], names: Sequence[str] | None = None):
        self.body = tuple(int(b) for b in body)
        nc = len(self.body)
        self.names = tuple(names) if names is not None else tuple(f"point{i}" for i in range(nc))
        if len(self.names) != nc:
            raise ValueError(f"GroundContact: names has {len(self.names)} entries for {nc} points (body)")
        if nc == 0:
            raise ValueError("GroundContact: no contact points (body is empty)")
        if any(b < 0 for b in self.body):
            raise ValueError(f"GroundContact: body indices must be non-negative (a point on the world cannot "
                             f"touch the ground), got {self.body}")
        self.position = float_array(position, "GroundContact", "position")
        self.radius = float_array(radius, "GroundContact", "radius")
        self.normal = float_array(normal, "GroundContact", "normal")
        self.height = float_array(height, "GroundContact", "height")
        self.stiffness = float_array(stiffness, "GroundContact", "stiffness")
        self.damping = float_array(damping, "GroundContact", "damping")
        self.friction = float_array(friction, "GroundContact", "friction")
        self.slip_velocity = float_array(slip_velocity, "GroundContact", "slip_velocity")
        self.onset = float_array(onset, "GroundContact", "onset")

    def __check_init__(self):
        nc = len(self.body)
        expected = {"position": (nc, 3), "radius": (nc,), "normal": (3,), "height": ()}
        for name, shape in expected.items():
            got = getattr(self, name).shape
            if got != shape:
                raise ValueError(f"GroundContact: {name} must have shape {shape}, got {got}")
        for name in LAW_PARAMETERS:
            got = getattr(self, name).shape
            if got not in ((), (nc,)):
                raise ValueError(f"GroundContact: {name} must be a scalar or have shape ({nc},), got {got}")
        n = concrete_array(self.normal)
        if n is not None:
            norm = float(np.linalg.norm(n))
            if not np.isfinite(norm) or abs(norm - 1.0) > 1e-6:
                raise ValueError(f"GroundContact: normal must be a unit vector, got {n.tolist()} (norm {norm:g})")
        x = concrete_array(self.radius)
        if x is not None and (np.any(~np.isfinite(x)) or np.any(x < 0)):
            raise ValueError(f"GroundContact: radius must be finite and non-negative, got {x.tolist()}")
        check_law_values("GroundContact", self)
        for name in ("position", "height"):
            x = concrete_array(getattr(self, name))
            if x is not None and not np.all(np.isfinite(x)):
                raise ValueError(f"GroundContact: {name} must be finite, got {x.tolist()}")

    def __len__(self) -> int:
        return len(self.body)

    def slot_bodies(self, model: Model) -> tuple[np.ndarray, np.ndarray]:
        """The world (the plane) and each point's body."""
        body = np.asarray(self.body, np.int64)
        return np.full_like(body, -1), body

    def contacts(self, model: Model, rotation: jax.Array, origin: jax.Array) -> Contacts:
        """Each point as a sphere against the plane, by the narrow phase's plane–sphere case."""
        from sodyn.collision.primitives import plane_sphere

        dtype = rotation.dtype
        body = np.asarray(self.body, np.int64)
        rot, org = take(rotation, body), take(origin, body)
        centre = org + spatial.mv(rot, self.position.astype(dtype))
        n = self.normal.astype(dtype)
        plane = GeomFrame(plane_rotation(n), n * self.height.astype(dtype), jnp.zeros(3, dtype))
        radius = self.radius.astype(dtype)
        size = jnp.stack([radius, jnp.zeros_like(radius), jnp.zeros_like(radius)], axis=-1)
        spheres = GeomFrame(jnp.broadcast_to(jnp.eye(3, dtype=dtype), rot.shape), centre, size)
        c = jax.vmap(plane_sphere, in_axes=(None, 0))(plane, spheres)
        return Contacts(c.distance[:, 0], c.position[:, 0], c.normal[:, 0])

    def law(self, dtype) -> LawParameters:
        return LawParameters(*(getattr(self, f).astype(dtype) for f in LAW_PARAMETERS))

    # -- constructors -------------------------------------------------------------
    @classmethod
    def from_model(cls, model: Model, *, geoms: Sequence[str] | None = None, plane=None, stiffness=None,
                   damping=None, damping_ratio=DAMPING_RATIO, friction=None, slip_velocity=SLIP_VELOCITY,
                   onset=ONSET) -> "GroundContact":
        """Contact points from the model's collision geoms (:class:`sodyn.Geoms`).

        A sphere gives its centre with its radius, a capsule its two end centres with its
        radius, a box its 8 corners with radius 0.  ``geoms``: the names to use (default: every
        sphere, capsule and box on a body; world geoms are skipped).  ``plane``: ``(normal,
        height)``, or the name of a world plane geom; default the model's world plane geom
        (there must be at most one), else ``z = 0``.  ``friction`` defaults to each geom's
        sliding friction, combined with the plane geom's by the maximum (as MuJoCo does).
        ``stiffness``, ``damping`` (or ``damping_ratio``) default as in the module docstring.
        Points are named ``geom`` (sphere) or ``geom:i``.
        """
        g = model.geoms
        usable = ("sphere", "capsule", "box")
        if geoms is None:
            chosen = [i for i in range(len(g)) if g.type[i] in usable and g.body[i] >= 0]
            if not chosen:
                raise ValueError(f"GroundContact.from_model: model {model.name!r} has no sphere, capsule or box "
                                 f"geom on a body (geoms: {list(g.names)}); use GroundContact.at_frames")
        else:
            if isinstance(geoms, str):
                geoms = [geoms]
            chosen = []
            for name in geoms:
                if name not in g.names:
                    raise ValueError(f"GroundContact.from_model: unknown geom {name!r} in geoms; geoms are "
                                     f"{list(g.names)}")
                i = g.names.index(name)
                if g.type[i] not in usable:
                    raise ValueError(f"GroundContact.from_model: geom {name!r} in geoms is a {g.type[i]}; only "
                                     f"{usable} give contact points")
                if g.body[i] < 0:
                    raise ValueError(f"GroundContact.from_model: geom {name!r} in geoms is attached to the world")
                chosen.append(i)
            if not chosen:
                raise ValueError("GroundContact.from_model: geoms is empty")
        normal, height, plane_mu = _plane(model, plane)
        rot, trans, size = (np.asarray(x, np.float64) for x in (g.rotation, g.translation, g.size))
        mu_geom = np.asarray(g.friction, np.float64)[:, 0]
        pos, rad, body, names, mu = [], [], [], [], []
        for i in chosen:
            t, r, s = g.type[i], rot[i], size[i]
            if t == "sphere":
                pts, radius, labels = [trans[i]], s[0], [g.names[i]]
            elif t == "capsule":
                pts = [trans[i] - s[1] * r[:, 2], trans[i] + s[1] * r[:, 2]]
                radius, labels = s[0], [f"{g.names[i]}:{j}" for j in range(2)]
            else:
                signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
                pts = list(trans[i] + (signs * s) @ r.T)
                radius, labels = 0.0, [f"{g.names[i]}:{j}" for j in range(8)]
            pos += pts
            rad += [radius] * len(pts)
            body += [g.body[i]] * len(pts)
            names += labels
            mu += [max(mu_geom[i], plane_mu)] * len(pts)
        if friction is None:
            friction = np.asarray(mu)
        return cls._with_defaults(model, np.asarray(pos), np.asarray(rad), normal, height, body, names,
                                  stiffness, damping, damping_ratio, friction, slip_velocity, onset)

    @classmethod
    def at_frames(cls, model: Model, frames: Sequence[str | int], positions=None, radius=0.0, *, plane=None,
                  stiffness=None, damping=None, damping_ratio=DAMPING_RATIO, friction=1.0, slip_velocity=SLIP_VELOCITY,
                  onset=ONSET) -> "GroundContact":
        """Contact points at named frames or bodies (``model.frame_id`` names: frames, bodies,
        joints), e.g. the feet of a URDF robot.

        ``positions (nc, 3)``: offsets of the points in their frames (default: the frame
        origins); ``radius``: a scalar or ``(nc,)``.  ``plane`` and the force parameters as in
        :meth:`from_model` (``friction`` defaults to 1).  Points are named after the frames.
        """
        if isinstance(frames, (str, int, np.integer)):
            frames = [frames]
        frames = list(frames)
        if not frames:
            raise ValueError("GroundContact.at_frames: frames is empty")
        ids = [model.frame_id(f) for f in frames]
        nc = len(ids)
        offsets = np.zeros((nc, 3)) if positions is None else np.asarray(positions, np.float64)
        if offsets.shape != (nc, 3):
            raise ValueError(f"GroundContact.at_frames: positions must have shape ({nc}, 3), got {offsets.shape}")
        body = [model.frame_body[i] for i in ids]
        for f, b in zip(frames, body):
            if b < 0:
                raise ValueError(f"GroundContact.at_frames: frame {f!r} is attached to the world")
        fr, fp = np.asarray(model.frame_rotation, np.float64), np.asarray(model.frame_translation, np.float64)
        pos = np.stack([fp[i] + fr[i] @ o for i, o in zip(ids, offsets)])
        rad = np.asarray(radius, np.float64)
        if rad.shape not in ((), (nc,)):
            raise ValueError(f"GroundContact.at_frames: radius must be a scalar or have shape ({nc},), got {rad.shape}")
        names = [model.frame_names[i] for i in ids]
        normal, height, _ = _plane(model, plane)
        return cls._with_defaults(model, pos, np.broadcast_to(rad, (nc,)), normal, height, body, names, stiffness,
                                  damping, damping_ratio, friction, slip_velocity, onset)

    @classmethod
    def _with_defaults(cls, model, pos, rad, normal, height, body, names, stiffness, damping, damping_ratio,
                       friction, slip_velocity, onset) -> "GroundContact":
        stiffness, damping = default_stiffness_damping(model, stiffness, damping, damping_ratio, "GroundContact")
        dtype = model.mass.dtype
        arr = lambda x: jnp.asarray(x, dtype) if concrete_array(x) is not None else x  # noqa: E731
        return cls(arr(pos), arr(rad), arr(normal), arr(height), arr(stiffness), arr(damping), arr(friction),
                   arr(slip_velocity), arr(onset), body=body, names=names)


def _plane(model: Model, plane) -> tuple[np.ndarray, float, float]:
    """``(normal, height, friction of the plane geom or 0)`` of the ``plane`` argument."""
    g = model.geoms
    world_planes = [i for i in range(len(g)) if g.type[i] == "plane" and g.body[i] < 0]
    if plane is None:
        if len(world_planes) > 1:
            raise ValueError(f"the model has several world plane geoms {[g.names[i] for i in world_planes]}; "
                             "choose one with plane=")
        if not world_planes:
            return np.array([0.0, 0.0, 1.0]), 0.0, 0.0
        plane = g.names[world_planes[0]]
    if isinstance(plane, str):
        if plane not in g.names or g.names.index(plane) not in world_planes:
            raise ValueError(f"plane {plane!r} is not a world plane geom; world planes are "
                             f"{[g.names[i] for i in world_planes]}")
        i = g.names.index(plane)
        n = np.asarray(g.rotation[i], np.float64)[:, 2]
        return n, float(n @ np.asarray(g.translation[i], np.float64)), float(g.friction[i, 0])
    try:
        normal, height = plane
    except (TypeError, ValueError):
        raise ValueError(f"plane must be (normal, height) or a plane geom's name, got {plane!r}") from None
    n = np.asarray(normal, np.float64)
    if n.shape != (3,) or not np.all(np.isfinite(n)) or abs(np.linalg.norm(n) - 1.0) > 1e-6:
        raise ValueError(f"plane: the normal must be a finite unit 3-vector, got {normal!r}")
    h = np.asarray(height, np.float64)
    if h.shape != () or not np.isfinite(h):
        raise ValueError(f"plane: the height must be a finite scalar, got {height!r}")
    return n, float(h), 0.0


# ---------------------------------------------------------------------------
# the force law
# ---------------------------------------------------------------------------


__all__ = ["GroundContact"]
