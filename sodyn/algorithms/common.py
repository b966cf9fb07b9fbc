"""Per-call preparation shared by every algorithm: inputs checked, parameters and joint
quantities in the compact slot layout (see :mod:`sodyn.topology`).

Everything here is vectorised over all bodies at once; only the recursions that truly need
the parent's value run inside the level scans.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import joints, spatial
from sodyn.model import Model, hinge_coefficients
from sodyn.static_index import spread_sum, take
from sodyn.topology import (
    AncestorSubtree,
    Topology,
    dofs_to_levels,
    restrict_kernel,
    restrict_slots,
    split_slots,
    to_levels,
)


def check_vector(model: Model, x, size: int, name: str, dtype=None) -> jax.Array:
    """Convert ``x`` to an array of shape ``(size,)`` or raise a clear error naming ``name``."""
    if x is None:
        raise TypeError(f"{name} is required")
    x = jnp.asarray(x) if dtype is None else jnp.asarray(x, dtype)
    if x.ndim != 1 or x.shape[0] != size:
        hint = " (for a batch, use jax.vmap)" if x.ndim > 1 else ""
        raise ValueError(f"{name} must have shape ({size},) for model {model.name!r}, got {x.shape}{hint}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.zeros(()).dtype)
    return x


def check_state(model: Model, q, v, x, x_name: str, f_ext=None):
    """Check ``(q, v, x, f_ext)`` of a dynamics call (``x`` is ``a`` or ``tau``); ``v`` and ``x``
    take ``q``'s dtype.  Returns the converted arrays."""
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    x = check_vector(model, x, model.nv, x_name, q.dtype)
    return q, v, x, check_f_ext(model, f_ext, q.dtype)


def check_f_ext(model: Model, f_ext, dtype) -> jax.Array | None:
    if f_ext is None:
        return None
    f = jnp.asarray(f_ext, dtype)
    if f.shape != (model.n_bodies, 6):
        raise ValueError(f"f_ext must have shape (n_bodies, 6) = ({model.n_bodies}, 6), got {f.shape}")
    return f


def _expand(a: jax.Array, n: int, at: int) -> jax.Array:
    """``a`` with ``n`` axes of size one inserted before axis ``at``."""
    return a.reshape(a.shape[:at] + (1,) * n + a.shape[at:]) if n > 0 else a


@functools.partial(jax.tree_util.register_dataclass, data_fields=["h", "rows"], meta_fields=["kernel"])
@dataclasses.dataclass(frozen=True)
class JointAxes:
    """The motion subspace ``H*`` of the joints in one kernel's slots, behind one interface.

    Three forms, one per kind of subspace (Jain §3.2, §9.1):

    * ``h`` ``(..., 6)``: one axis per slot (``H* = h``), the 1-dof joints in their body frames;
    * ``rows`` ``(..., nv_k, 6)``: the rows of ``H`` per slot, any subspace in any frame (the
      world axes of :mod:`sodyn.algorithms.articulated`);
    * neither: the constant subspace of ``kernel`` (free, spherical, planar) in its body frame,
      a selection of the spatial components (:data:`sodyn.joints.SUBSPACE_COMPONENTS`), applied
      by indexing.

    ``x`` and ``f`` may carry axes of their own (columns, tasks) between the slot axes they
    share with the subspace and their last axis.
    """

    kernel: str
    h: jax.Array | None = None
    rows: jax.Array | None = None

    def _h(self, ndim: int) -> jax.Array:
        return _expand(self.h, ndim - self.h.ndim, self.h.ndim - 1)

    def _rows(self, ndim: int) -> jax.Array:
        return _expand(self.rows, ndim - self.rows.ndim + 1, self.rows.ndim - 2)

    def times(self, x: jax.Array) -> jax.Array:
        """``H* x``: joint rates ``(..., nv_k)`` → spatial motion ``(..., 6)``."""
        if self.h is not None:
            return spatial.scale(x[..., 0], self._h(x.ndim))
        if self.rows is not None:
            return spatial.mtv(self._rows(x.ndim), x)
        comps = joints.SUBSPACE_COMPONENTS[self.kernel]
        if comps == tuple(range(6)):
            return x
        parts = spatial.unstack(x, -1)
        zero = jnp.zeros_like(parts[0])
        return jnp.stack([parts[comps.index(i)] if i in comps else zero for i in range(6)], axis=-1)

    def transpose_times(self, f: jax.Array) -> jax.Array:
        """``H f``: spatial force ``(..., 6)`` → joint forces ``(..., nv_k)``."""
        if self.h is not None:
            return spatial.dot(self._h(f.ndim), f)[..., None]
        if self.rows is not None:
            return spatial.mv(self._rows(f.ndim), f)
        return _select(f, joints.SUBSPACE_COMPONENTS[self.kernel], -1)

    def transpose_times_matrix(self, a: jax.Array) -> jax.Array:
        """``H A`` for ``A`` ``(..., 6, m)`` → ``(..., nv_k, m)``; for a symmetric ``P`` the rows
        of ``U* = H P``."""
        if self.h is not None:
            return spatial.mtv(a, self._h(a.ndim - 1))[..., None, :]
        if self.rows is not None:
            return spatial.mtv(_expand(a, 1, a.ndim - 2), self._rows(a.ndim - 1))
        return _select(a, joints.SUBSPACE_COMPONENTS[self.kernel], -2)

    def row_matrix(self, slots: tuple[int, ...], dtype) -> jax.Array:
        """``H`` as rows ``(..., nv_k, 6)``; a constant subspace is broadcast to the leading
        ``slots`` shape (the other forms carry their own)."""
        if self.h is not None:
            return self.h[..., None, :]
        if self.rows is not None:
            return self.rows
        sel = np.eye(6)[list(joints.SUBSPACE_COMPONENTS[self.kernel])]
        return jnp.broadcast_to(jnp.asarray(sel, dtype), tuple(slots) + sel.shape)


def _select(x: jax.Array, comps: tuple[int, ...], axis: int) -> jax.Array:
    """Components ``comps`` of ``x`` along ``axis`` (by one ``split``, whose transpose is one
    ``concatenate``, not a zero-padded array per slice)."""
    if comps == tuple(range(x.shape[axis])):
        return x
    parts = spatial.unstack(x, axis)
    return jnp.stack([parts[i] for i in comps], axis=axis)


class Levels(NamedTuple):
    """Configuration-dependent quantities in the slot layout ``(1, W, ...)``."""

    rel_r: jax.Array      # (1, W, 3, 3) pose of each body in its parent: x_p = R x + p
    rel_p: jax.Array      # (1, W, 3)
    inertia: jax.Array    # (1, W, 6, 6) spatial inertia about the body frame
    axes: tuple[JointAxes, ...]  # per kernel, H* in the body frames


def model_params(model: Model, dtype) -> Model:
    return model if model.mass.dtype == dtype else model.astype(dtype)


def prepare(model: Model, q: jax.Array) -> Levels:
    """Joint transforms, body-to-parent poses and spatial inertias at ``q``, in the slot layout."""
    topo: Topology = model.topology
    dtype = q.dtype
    m = model_params(model, dtype)
    rot, trans = hinge_coefficients(m, dtype)
    eye = jnp.eye(3, dtype=dtype)
    zero3 = jnp.zeros(3, dtype)
    axis_l = to_levels(topo, m.axis, jnp.array([0.0, 0.0, 1.0], dtype))
    rot_l = to_levels(topo, rot, jnp.ones((), dtype))
    trans_l = to_levels(topo, trans, jnp.zeros((), dtype))
    q_blocks = dofs_to_levels(topo, q, 1.0, which="q")

    jr, jp, axes = [], [], []
    for (kernel, s0, s1), qb in zip(topo.kernel_slots, q_blocks):
        if kernel == "hinge":
            a, r_, t_ = axis_l[:, s0:s1], rot_l[:, s0:s1], trans_l[:, s0:s1]
            r, p = joints.joint_transform(kernel, qb, a, r_, t_)
            axes.append(JointAxes(kernel, h=joints.hinge_vector(a, r_, t_)))
        else:
            r, p = joints.joint_transform(kernel, qb)
            axes.append(JointAxes(kernel))
        jr.append(r)
        jp.append(p)
    jr = jnp.concatenate(jr, axis=1)
    jp = jnp.concatenate(jp, axis=1)
    tr = to_levels(topo, m.tree_rotation, eye)
    tp = to_levels(topo, m.tree_translation, zero3)
    rel_r, rel_p = spatial.compose(tr, tp, jr, jp)

    inertia = spatial.spatial_inertia(m.mass, m.com, m.inertia)
    inertia = to_levels(topo, inertia, jnp.eye(6, dtype=dtype))
    return Levels(rel_r, rel_p, inertia, tuple(axes))


def restrict_levels(subtree: AncestorSubtree, levels: Levels) -> Levels:
    """``levels`` on the bodies of ``subtree`` only, in its own slot layout (``levels`` itself
    when the subtree is the whole tree)."""
    if subtree.is_whole_tree:
        return levels
    dtype = levels.rel_p.dtype
    axes = []
    for k, (kernel, _, _) in enumerate(subtree.topo.kernel_slots):
        full = levels.axes[subtree.full_kernel[k]]
        axes.append(JointAxes(kernel, h=None if full.h is None else restrict_kernel(subtree, k, full.h)))
    return Levels(
        restrict_slots(subtree, levels.rel_r, jnp.eye(3, dtype=dtype)),
        restrict_slots(subtree, levels.rel_p),
        restrict_slots(subtree, levels.inertia, jnp.eye(6, dtype=dtype)),
        tuple(axes),
    )


def joint_motion(axes: tuple[JointAxes, ...], x_blocks: list[jax.Array]) -> jax.Array:
    """``H* x`` for every body, ``(1, W, 6)``, from per-kernel dof blocks ``x``."""
    return jnp.concatenate([a.times(x) for a, x in zip(axes, x_blocks)], axis=1)


def joint_force(topo: Topology, axes: tuple[JointAxes, ...], f: jax.Array) -> list[jax.Array]:
    """``H f`` per kernel, from body forces ``f`` of shape ``(1, W, 6)``."""
    pieces = split_slots(f, [slice(s0, s1) for _, s0, s1 in topo.kernel_slots], axis=1)
    return [a.transpose_times(x) for a, x in zip(axes, pieces)]


def mass_parameter_levels(model: Model, dtype) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Each body's mass ``(1, W)``, centre of mass ``(1, W, 3)`` and rotational inertia about
    it ``(1, W, 3, 3)`` in the slot layout, zero for padding (the inputs of
    :func:`sodyn.spatial.inertia_parameters`)."""
    topo = model.topology
    m = model_params(model, dtype)
    return (
        to_levels(topo, m.mass, jnp.zeros((), dtype)),
        to_levels(topo, m.com, jnp.zeros(3, dtype)),
        to_levels(topo, m.inertia, jnp.zeros((3, 3), dtype)),
    )


def gravity_acceleration(model: Model, dtype) -> jax.Array:
    """Spatial acceleration of the world that accounts for gravity: ``[0; −g]``.

    (Jain's 𝔤 is the negative of the gravity field; see the errata in the digests.)
    """
    return jnp.concatenate([jnp.zeros(3, dtype), -model.gravity.astype(dtype)])


def free_joint_dofs(topo: Topology) -> np.ndarray:
    """Static dof indices ``(n_free, 6)`` of every free joint's ``[ω; v]``."""
    starts = [int(topo.v_start[k]) for k, t in enumerate(topo.joint_type) if t == "free"]
    return np.asarray(starts, np.int64).reshape(-1, 1) + np.arange(6)


def passive_joint_force(model: Model, v: jax.Array) -> jax.Array:
    """The joint forces ``(nv,)`` of damping and of a free joint's linear armature at ``v``:
    ``τ = (𝓜 + diag(armature)) θ̈ + C(q, v) + passive_joint_force(model, v)`` with ``𝓜`` and
    ``C`` those of the bodies alone.

    ``damping ⊙ v`` on every dof.  A free joint's linear armature ``A = diag(a)`` (on the
    body-frame ``v`` of ``[ω; v]``, the joint's relative velocity) is an added inertia on the
    joint's own motion, as every armature is: kinetic energy ``½ vᵀ A v`` of the relative
    velocity and, by the Euler–Poincaré equations of a rigid body, the force

        [n; f] = [v × (A v); A v̇ + ω × (A v)],

    whose ``A v̇`` is the diagonal armature in ``𝓜`` and whose velocity part, added here, does
    no work (``ω · (v × A v) + v · (ω × A v) = 0``).  For equal values ``A = a I`` the angular
    row vanishes and ``f = a (v̇ + ω × v) = a Rᵀ p̈``: the armature on the world-frame linear
    velocity ``ṗ = R v`` (MuJoCo's ``dof_armature`` of a free joint).  For a free joint to the
    world (the only kind MuJoCo has) this is a weightless translational inertia carried by the
    body; under a moving parent it is not (it adds to ``𝓜`` on the joint's own dofs only, with
    no coupling to the parent's).  A free joint's angular
    armature and every other joint's armature enter ``𝓜`` only.  The free joints' slices of
    ``v`` are read with a static gather.
    """
    m = model_params(model, v.dtype)
    out = m.damping * v
    dofs = free_joint_dofs(model.topology)
    if not dofs.size:
        return out
    ang, lin = dofs[:, :3].reshape(-1), dofs[:, 3:].reshape(-1)
    w = take(v, ang).reshape(-1, 3)  # gathers, not slices: no zero padding in reverse mode
    vl = take(v, lin).reshape(-1, 3)
    p = take(m.armature, lin).reshape(-1, 3) * vl  # A v
    gyro = jnp.concatenate([spatial.cross(vl, p).reshape(-1), spatial.cross(w, p).reshape(-1)])
    return out + spread_sum(gyro, np.concatenate([ang, lin]), model.nv)
