"""The contact ``sodyn simulate --contact`` uses (:func:`contact_for`, :func:`geom_contact_for`)."""

from __future__ import annotations

import re

from sodyn.cli_outputs import CliError

#: ``--contact`` on a model without collision geoms puts points at frames whose name matches this.
FOOT_PATTERN = re.compile(r"foot|feet|toe|sole", re.IGNORECASE)
#: Height of the lowest point above the ground at the start (m), see :func:`sodyn.home_state`.
CLEARANCE = 0.02


def has_floating_base(model) -> bool:
    """Whether the model has a free joint at a root."""
    return any(model.joint_types[k] == "free" and int(model.parent[k]) < 0 for k in range(model.n_bodies))


def contact_for(model, clearance: float = CLEARANCE):
    """The ground contact ``sodyn simulate --contact`` uses, and its rule as words.

    1. the model's sphere, capsule and box geoms on bodies (:meth:`GroundContact.from_model`),
       else the vertices of its mesh geoms' hulls (whose geoms :func:`geom_contact_for` then
       collides);
    2. else the frames whose name contains ``foot``, ``feet``, ``toe`` or ``sole`` (any case);
    3. else the leaf bodies (bodies without children): every frame on them away from their
       origin (e.g. ``tip``), else their first frame (the body's own, at its origin).

    Frames at the same place on the same body give one point.

    The plane is the model's world plane geom, else ``z = 0``; for a fixed-base model whose
    points start below it (e.g. a chain hanging from the origin) it is lowered to ``clearance``
    below the lowest point of the neutral configuration.
    """
    import numpy as np

    import sodyn as sd

    g = model.geoms
    meshes = [i for i in range(len(g)) if g.type[i] == "mesh" and g.body[i] >= 0]
    if any(g.type[i] in ("sphere", "capsule", "box") and g.body[i] >= 0 for i in range(len(g))):
        contact, rule = sd.GroundContact.from_model(model), "collision geoms"
    elif meshes:  # the hulls' vertices stand for the geoms in the start states' clearance
        rotation, translation = np.asarray(g.rotation, np.float64), np.asarray(g.translation, np.float64)
        frames, positions = [], []
        for i in meshes:
            vertices = np.unique(np.asarray(g.vertices[i], np.float64), axis=0) @ rotation[i].T + translation[i]
            frames += [model.frame_names.index(model.body_names[g.body[i]])] * len(vertices)
            positions.append(vertices)
        contact = sd.GroundContact.at_frames(model, frames, np.concatenate(positions))
        rule = "collision geoms"
    else:
        parent, fp = np.asarray(model.parent), np.asarray(model.frame_translation, np.float64)
        frames = [f for f, name in enumerate(model.frame_names)
                  if FOOT_PATTERN.search(name) and model.frame_body[f] >= 0]
        rule = "frames named like feet"
        if not frames:
            rule = "leaf bodies"
            for k in (k for k in range(model.n_bodies) if not np.any(parent == k)):
                on = [f for f, b in enumerate(model.frame_body) if b == k]
                frames += [f for f in on if np.linalg.norm(fp[f]) > 1e-9] or on[:1]
        unique = {}  # one point per place: frames of a link and of its joint often coincide
        for f in frames:
            unique.setdefault((model.frame_body[f], *np.round(fp[f], 9)), f)
        if not unique:
            raise CliError(f"--contact: model {model.name!r} has no collision geoms, no frames named like feet "
                           "and no frames on its leaf bodies")
        contact = sd.GroundContact.at_frames(model, sorted(unique.values()))
    if not has_floating_base(model):
        fk = sd.forward_kinematics(model, model.q_neutral)
        body = np.asarray(contact.body)
        centres = (np.asarray(fk.body.translation)[body]
                   + np.einsum("nij,nj->ni", np.asarray(fk.body.rotation)[body], np.asarray(contact.position)))
        n = np.asarray(contact.normal)
        lowest = float(np.min(centres @ n - np.asarray(contact.radius)))
        if lowest < float(contact.height):
            import equinox as eqx
            import jax.numpy as jnp

            contact = eqx.tree_at(lambda c: c.height, contact, jnp.asarray(lowest - clearance, contact.height.dtype))
            rule += f", plane lowered to {lowest - clearance:.3g} m"
    return contact, rule


def geom_contact_for(model, ground):
    """The contact ``sodyn simulate --contact`` uses for a model with collision geoms on its
    bodies: its geoms against each other and a ground plane (:class:`~sodyn.ContactModel`), the
    ground the model's own world plane or height field geom, else ``ground``'s plane added to the model
    (:func:`~sodyn.collision.scene.with_ground_plane`).  Returns ``(model, contact)``."""
    import numpy as np

    import sodyn as sd
    from sodyn.collision.scene import with_ground_plane

    g = model.geoms
    if not any(t in ("plane", "hfield") and b < 0 for t, b in zip(g.type, g.body)):
        model = with_ground_plane(model, normal=np.asarray(ground.normal, np.float64), height=float(ground.height))
    return model, sd.ContactModel.from_model(model)


__all__ = ["CLEARANCE", "FOOT_PATTERN", "contact_for", "geom_contact_for", "has_floating_base"]
