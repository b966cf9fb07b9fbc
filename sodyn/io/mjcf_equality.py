"""MuJoCo ``<equality>`` constraints on a sodyn model: :class:`EqualityConstraints`, what
``load_mjcf(..., with_constraints=True)`` returns beside the model."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.io._mjcf_elements import EQ_NAMES, eq_supported, tendon_eq_supported
from sodyn.model import WORLD, Model
from sodyn.rotations import quat_to_matrix


class EqualityConstraints(eqx.Module):
    """MuJoCo ``<equality>`` constraints (``ne`` of them) on a sodyn model.

    ``frame1``/``frame2`` index ``model.frame_names`` (``-1`` = world).  Per ``kind``:

    * ``"connect"``: the point ``anchor1`` of frame 1 coincides with the point ``anchor2`` of
      frame 2 (each in its frame);
    * ``"weld"``: additionally frame 1's orientation is ``R₂ · relative_rotation``; the point
      ``anchor1`` of frame 1 coincides with ``anchor2`` of frame 2; ``torque_scale`` weighs
      the rotational residual (MuJoCo's ``torquescale``);
    * ``"joint"``: ``q[joint1] − q0₁ = Σₖ polycoef[k] (q[joint2] − q0₂)ᵏ`` with ``q0`` the
      neutral values (``joint2`` ``-1``: ``q[joint1] − q0₁ = polycoef[0]``);
    * ``"tendon"``: ``L[tendon1] − L0₁ = Σₖ polycoef[k] (L[tendon2] − L0₂)ᵏ`` with ``L`` the
      lengths of the fixed tendons ``model.tendons`` and ``L0`` their lengths at the neutral
      configuration (MuJoCo's ``tendon_length0``; ``tendon2`` ``-1``: ``L[tendon1] − L0₁ =
      polycoef[0]``).  Only equalities between fixed tendons of hinges and slides are listed.

    Static fields: ``names``, ``kind``, ``frame1``, ``frame2``, ``joint1``, ``joint2``
    (indices into ``q``, ``-1`` where unused), ``active`` (enabled in the file), ``tendon1``,
    ``tendon2`` (indices into ``model.tendons``, ``-1`` where unused).
    """

    anchor1: jax.Array
    anchor2: jax.Array
    relative_rotation: jax.Array
    torque_scale: jax.Array
    polycoef: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    kind: tuple[str, ...] = eqx.field(static=True)
    frame1: tuple[int, ...] = eqx.field(static=True)
    frame2: tuple[int, ...] = eqx.field(static=True)
    joint1: tuple[int, ...] = eqx.field(static=True)
    joint2: tuple[int, ...] = eqx.field(static=True)
    active: tuple[bool, ...] = eqx.field(static=True)
    tendon1: tuple[int, ...] = eqx.field(static=True)
    tendon2: tuple[int, ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.names)


def equality_constraints(mj, model: Model, body_names, disabled: bool) -> EqualityConstraints:
    """The supported ``<equality>`` elements (see :class:`EqualityConstraints`)."""
    import mujoco

    from sodyn.simulate.tendons import fixed_tendon_wraps

    site = int(mujoco.mjtObj.mjOBJ_SITE)
    # MuJoCo tendon id → index into model.tendons (the fixed tendons of hinges and slides, in file order)
    fixed = [t for t in range(mj.ntendon) if fixed_tendon_wraps(mj, t) is not None]
    tendon_index = {t: i for i, t in enumerate(fixed)}
    rows = []
    for e in range([mj.neq, 0][disabled]):
        if not (eq_supported(mj, e) or tendon_eq_supported(mj, e)):
            continue
        kind = EQ_NAMES[int(mj.eq_type[e])]
        data = np.asarray(mj.eq_data[e], float)
        o1, o2 = int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])
        a1, a2, rel, ts, poly = np.zeros(3), np.zeros(3), np.eye(3), 1.0, np.zeros(5)
        f1 = f2 = WORLD
        j1 = j2 = t1 = t2 = -1
        if kind == "tendon":
            t1, t2 = tendon_index[o1], tendon_index[o2] if o2 >= 0 else -1
            poly = data[:5]
        elif kind == "joint":
            j1 = int(mj.jnt_qposadr[o1])
            j2 = int(mj.jnt_qposadr[o2]) if o2 >= 0 else -1
            poly = data[:5]
        else:
            if int(mj.eq_objtype[e]) == site:  # points of two sites, on their bodies
                a1, a2 = np.asarray(mj.site_pos[o1], float), np.asarray(mj.site_pos[o2], float)
                o1, o2 = int(mj.site_bodyid[o1]), int(mj.site_bodyid[o2])
            elif kind == "connect":
                a1, a2 = data[0:3], data[3:6]
            else:  # weld: residual quaternion q2⁻¹ q1 relpose, so R1 = R2 relposeᵀ
                a1, a2, rel, ts = data[3:6], data[0:3], quat_to_matrix(data[6:10]).T, float(data[10])
            f1 = WORLD if o1 == 0 else model.frame_id(body_names[o1])
            f2 = WORLD if o2 == 0 else model.frame_id(body_names[o2])
        rows.append((mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_EQUALITY, e) or f"equality{e}", kind, f1, f2, j1, j2,
                     bool(mj.eq_active0[e]), a1, a2, rel, ts, poly, t1, t2))
    arr = lambda x, shape: jnp.asarray(np.array(x, dtype=np.float64).reshape(shape), dtype=model.mass.dtype)  # noqa: E731
    return EqualityConstraints(
        anchor1=arr([r[7] for r in rows], (-1, 3)), anchor2=arr([r[8] for r in rows], (-1, 3)),
        relative_rotation=arr([r[9] for r in rows], (-1, 3, 3)), torque_scale=arr([r[10] for r in rows], (-1,)),
        polycoef=arr([r[11] for r in rows], (-1, 5)),
        names=tuple(r[0] for r in rows), kind=tuple(r[1] for r in rows), frame1=tuple(r[2] for r in rows),
        frame2=tuple(r[3] for r in rows), joint1=tuple(r[4] for r in rows), joint2=tuple(r[5] for r in rows),
        active=tuple(r[6] for r in rows), tendon1=tuple(r[12] for r in rows), tendon2=tuple(r[13] for r in rows),
    )


__all__ = ["EqualityConstraints", "equality_constraints"]
