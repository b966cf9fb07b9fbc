"""Model data kept beside the kinematic tree for the actuator, contact and simulation code:
:class:`Actuators`, collision :class:`Geoms` and :class:`Keyframes` (fields of
:class:`sodyn.Model`; empty when the source has none)."""

from __future__ import annotations

import equinox as eqx
import jax

#: Collision geometry types the contact code can use (MuJoCo's meaning of ``size``).
GEOM_TYPES: tuple[str, ...] = ("plane", "sphere", "capsule", "box")


class Actuators(eqx.Module):
    """Joint actuators in MuJoCo's affine form (``na`` actuators, each driving one dof).

    With ``u = clip(ctrl, ctrl_range)``, actuator length ``l = gear · q[dof]`` and velocity
    ``l̇ = gear · v[dof]``, the actuator force is
    ``f = clip(gain · u + bias[0] + bias[1] · l + bias[2] · l̇, force_range)`` and the
    generalised force ``τ[dof] += gear · f``.  A motor has ``gain = 1``, ``bias = 0``; a
    position servo ``gain = kp``, ``bias = (0, −kp, −kv)``.  Unlimited ranges are ``±inf``.

    - ``gear``, ``gain (na,)``; ``bias (na, 3)``; ``ctrl_range``, ``force_range (na, 2)``;
    - static: ``names``, ``kind`` (``"motor"``, ``"position"``, ``"velocity"``,
      ``"general"``), ``dof`` (index into ``v``).
    """

    gear: jax.Array
    gain: jax.Array
    bias: jax.Array
    ctrl_range: jax.Array
    force_range: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    kind: tuple[str, ...] = eqx.field(static=True)
    dof: tuple[int, ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.names)


class Geoms(eqx.Module):
    """Collision geometry attached to bodies (``ng`` geoms).

    ``rotation (ng, 3, 3)`` and ``translation (ng, 3)`` place each geom in its body's frame
    (``body`` is ``-1`` for the world); ``size (ng, 3)`` follows MuJoCo: sphere ``(r, ·, ·)``,
    capsule ``(r, half-length, ·)`` along the geom's ``z``, box half-sizes, plane
    ``(half-x, half-y, ·)`` with normal ``z`` (``0`` = infinite); ``friction (ng, 3)`` is
    (sliding, torsional, rolling).  Static: ``names``, ``type`` (one of ``GEOM_TYPES``),
    ``body``.
    """

    rotation: jax.Array
    translation: jax.Array
    size: jax.Array
    friction: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)
    type: tuple[str, ...] = eqx.field(static=True)
    body: tuple[int, ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.names)


class Keyframes(eqx.Module):
    """Named states of the model: ``q (nk, nq)``, ``v (nk, nv)``; static ``names``."""

    q: jax.Array
    v: jax.Array
    names: tuple[str, ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, name: str) -> tuple[jax.Array, jax.Array]:
        """``(q, v)`` of the keyframe called ``name``."""
        if name not in self.names:
            raise ValueError(f"unknown keyframe {name!r}; keyframes are {list(self.names)}")
        k = self.names.index(name)
        return self.q[k], self.v[k]


__all__ = ["GEOM_TYPES", "Actuators", "Geoms", "Keyframes"]
