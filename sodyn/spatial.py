"""Spatial (6D) algebra, rotations and unit quaternions.

Conventions (DESIGN.md §3): spatial motion vectors are ``[ω; v]`` and force vectors
``[n; f]``, angular part first, as in Jain (*Robot and Multibody Dynamics*, §1.2) and
Featherstone.  A rigid transform is stored as a pair ``(R, p)``: the pose of a child frame
in its parent, ``x_parent = R x_child + p``.  Jain's rigid-body transformation operator
(eq. 1.31) for that pair, acting on forces from the child to the parent, is

    φ = [[R, p~ R], [0, R]],

and its transpose ``φ*`` maps parent motion to child motion.  Every function here works on
arbitrary leading batch dimensions and never forms 6×6 transforms explicitly.  Small-matrix
products (``mm``, ``mv``, ``mtv``, ``mtm``, ``dot``) are :func:`~sodyn.contraction.contract`
calls (see :mod:`sodyn.contraction` for how they compile).

Quaternions are ``[w, x, y, z]`` with unit norm.  All maps are smooth and NaN-free at the
identity and at zero rotation vectors, including their derivatives.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from sodyn.contraction import contract
from sodyn.runtime.trig import sincos

# ---------------------------------------------------------------------------
# components (split, not slice: see ``unstack``)
# ---------------------------------------------------------------------------


def unstack(x: Array, axis: int = -1) -> tuple[Array, ...]:
    """The components of ``x`` along a small ``axis``, that axis removed.

    Written with one ``split`` rather than one slice per component: in reverse mode a
    slice transposes to a zero-padded full-size array (one per component, then summed),
    a split to a single ``concatenate``, so the gradients of the recursions do not write a
    full-size array per component.
    """
    return tuple(jnp.squeeze(c, axis) for c in jnp.split(x, x.shape[axis], axis=axis))


def halves(x: Array, axis: int = -1) -> tuple[Array, Array]:
    """The angular and linear halves ``[ω; v]`` (or 3×3 block rows/columns) along ``axis``."""
    a, b = jnp.split(x, 2, axis=axis)
    return a, b


def blocks(m: Array) -> tuple[Array, Array, Array, Array]:
    """The 3×3 blocks ``A, B, C, D`` of ``[[A, B], [C, D]]`` (6×6 on the last two axes)."""
    top, bot = halves(m, -2)
    a, b = halves(top, -1)
    c, d = halves(bot, -1)
    return a, b, c, d


# ---------------------------------------------------------------------------
# small-matrix products (``contract`` calls, see sodyn/contraction.py)
# ---------------------------------------------------------------------------


def mm(a: Array, b: Array) -> Array:
    """Matrix product ``a @ b`` of small matrices (a :func:`~sodyn.contraction.contract`)."""
    return contract("...ij,...jk->...ik", a, b)


def mv(a: Array, x: Array) -> Array:
    """Matrix-vector product ``a @ x`` of small matrices (see :func:`mm`)."""
    return contract("...ij,...j->...i", a, x)


def mtv(a: Array, x: Array) -> Array:
    """Transposed matrix-vector product ``aᵀ @ x`` (see :func:`mm`)."""
    return contract("...ji,...j->...i", a, x)


def mtm(a: Array, b: Array) -> Array:
    """``aᵀ @ b`` of small matrices (see :func:`mm`)."""
    return contract("...ji,...jk->...ik", a, b)


def dot(a: Array, b: Array) -> Array:
    """Inner product over the last (small) axis."""
    return contract("...i,...i->...", a, b)


def scale(s: Array, x: Array) -> Array:
    """``s x`` for one scalar ``s[...]`` per vector ``x[..., :]`` (see :func:`mm`)."""
    return contract("...,...i->...i", s, x)


def scale_matrix(s: Array, m: Array) -> Array:
    """``s m`` for one scalar ``s[...]`` per matrix ``m[..., :, :]`` (see :func:`mm`)."""
    return contract("...,...ij->...ij", s, m)


def transpose(a: Array) -> Array:
    """Swap the last two axes."""
    return jnp.swapaxes(a, -1, -2)


def cross(a: Array, b: Array) -> Array:
    """3-vector cross product ``a × b`` on the last axis."""
    a0, a1, a2 = unstack(a)
    b0, b1, b2 = unstack(b)
    return jnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def skew(a: Array) -> Array:
    """The cross-product matrix ``a~`` with ``a~ b = a × b`` (Jain eq. 1.3)."""
    a0, a1, a2 = unstack(a)
    z = jnp.zeros_like(a0)
    return jnp.stack(
        [
            jnp.stack([z, -a2, a1], axis=-1),
            jnp.stack([a2, z, -a0], axis=-1),
            jnp.stack([-a1, a0, z], axis=-1),
        ],
        axis=-2,
    )


def safe_norm(x: Array, axis: int = -1) -> Array:
    """Euclidean norm whose gradient is zero (not NaN) at ``x = 0``."""
    sq = jnp.sum(x * x, axis=axis)
    is_zero = sq == 0.0
    return jnp.where(is_zero, 0.0, jnp.sqrt(jnp.where(is_zero, 1.0, sq)))


# ---------------------------------------------------------------------------
# spatial cross products (Jain eqs. 1.23–1.27)
# ---------------------------------------------------------------------------


def motion_cross(v: Array, m: Array) -> Array:
    """Spatial motion cross product ``v ×ₘ m`` (Jain's ``Ṽ m``, eq. 1.23)."""
    w, u = halves(v)
    mw, mu = halves(m)
    return jnp.concatenate([cross(w, mw), cross(w, mu) + cross(u, mw)], axis=-1)


def force_cross(v: Array, f: Array) -> Array:
    """Spatial force cross product ``v ×f f = -(v ×ₘ)ᵀ f`` (Jain's ``V̄ f``, eq. 1.26)."""
    w, u = halves(v)
    n, fl = halves(f)
    return jnp.concatenate([cross(w, n) + cross(u, fl), cross(w, fl)], axis=-1)


# ---------------------------------------------------------------------------
# rigid transforms (R, p)
# ---------------------------------------------------------------------------


def compose(r1: Array, p1: Array, r2: Array, p2: Array) -> tuple[Array, Array]:
    """Pose composition ``T1 ∘ T2`` for ``T = (R, p)``."""
    return mm(r1, r2), p1 + mv(r1, p2)


def inverse_transform(r: Array, p: Array) -> tuple[Array, Array]:
    """Inverse pose ``T⁻¹ = (Rᵀ, -Rᵀ p)``."""
    rt = transpose(r)
    return rt, -mv(rt, p)


def motion_to_child(r: Array, p: Array, m: Array) -> Array:
    """Apply ``φ*`` : parent motion ``[ω; v]`` expressed in the child frame.

    ``ω_c = Rᵀ ω_p`` and ``v_c = Rᵀ (v_p + ω_p × p)`` (Jain eq. 1.32).
    """
    w, u = halves(m)
    return jnp.concatenate([mtv(r, w), mtv(r, u + cross(w, p))], axis=-1)


def motion_to_parent(r: Array, p: Array, m: Array) -> Array:
    """Inverse of :func:`motion_to_child`: child motion expressed in the parent frame."""
    w, u = halves(m)
    w, u = mv(r, w), mv(r, u)
    return jnp.concatenate([w, u - cross(w, p)], axis=-1)


def force_to_parent(r: Array, p: Array, f: Array) -> Array:
    """Apply ``φ`` : child force ``[n; f]`` expressed in the parent frame (Jain eq. 1.33).

    ``f_p = R f_c`` and ``n_p = R n_c + p × f_p``.
    """
    n, fl = halves(f)
    fl = mv(r, fl)
    return jnp.concatenate([mv(r, n) + cross(p, fl), fl], axis=-1)


def force_to_child(r: Array, p: Array, f: Array) -> Array:
    """Inverse of :func:`force_to_parent`."""
    n, fl = halves(f)
    return jnp.concatenate([mtv(r, n - cross(p, fl)), mtv(r, fl)], axis=-1)


def motion_transform_matrix(r: Array, p: Array) -> Array:
    """The 6×6 matrix ``φ*`` of :func:`motion_to_child` (parent motion → child motion)."""
    rt = transpose(r)
    z = jnp.zeros_like(r)
    top = jnp.concatenate([rt, z], axis=-1)
    bot = jnp.concatenate([-mm(rt, skew(p)), rt], axis=-1)
    return jnp.concatenate([top, bot], axis=-2)


def _skew_times(p: Array, m: Array) -> Array:
    """``p~ M`` for a 3-vector ``p`` and a 3×3 ``M`` (column-wise cross products)."""
    return jnp.swapaxes(cross(p[..., None, :], jnp.swapaxes(m, -1, -2)), -1, -2)


def inertia_to_parent(r: Array, p: Array, inertia: Array) -> Array:
    """Spatial inertia of the child expressed about the parent frame: ``φ I φ*``.

    This is the congruence used by the composite-body (Lyapunov) and articulated-body
    (Riccati) recursions, Jain eqs. 4.20 and 6.12.  With ``I = [[A, B], [Bᵀ, C]]`` rotated
    into parent axes (``A' = R A Rᵀ`` etc.) and ``φ = [[I, p~], [0, I]]`` for the shift,

        C_p = C',   B_p = B' + p~ C',   A_p = A' + p~ B'ᵀ − B_p p~,

    computed on 3×3 blocks (any symmetric ``I``, not only rigid-body inertias).
    """
    rt = transpose(r)
    a0, b0, _, c0 = blocks(inertia)
    a = mm(r, mm(a0, rt))
    b = mm(r, mm(b0, rt))
    c = mm(r, mm(c0, rt))
    b_p = b + _skew_times(p, c)
    a_p = a + _skew_times(p, transpose(b)) + transpose(_skew_times(p, transpose(b_p)))
    top = jnp.concatenate([a_p, b_p], axis=-1)
    bot = jnp.concatenate([transpose(b_p), c], axis=-1)
    return jnp.concatenate([top, bot], axis=-2)


def _swap_blocks(m: Array) -> Array:
    """``[[A, B], [C, D]] → [[D, C], [B, A]]`` on 3×3 blocks (angular-first ↔ linear-first)."""
    a, b, c, d = blocks(m)
    top = jnp.concatenate([d, c], axis=-1)
    bot = jnp.concatenate([b, a], axis=-1)
    return jnp.concatenate([top, bot], axis=-2)


def compliance_to_child(r: Array, p: Array, compliance: Array) -> Array:
    """``φ* Y φ`` for a symmetric force-to-motion map ``Y`` of the parent (Jain eq. 10.19).

    With the blocks reordered linear-first, ``φ*`` of ``(R, p)`` has the form of ``φ`` for
    the inverse pose ``(Rᵀ, −Rᵀ p)``, so the product is :func:`inertia_to_parent` of the
    inverse pose on 3×3 blocks, with no 6×6 products.
    """
    ri, pi = inverse_transform(r, p)
    return _swap_blocks(inertia_to_parent(ri, pi, _swap_blocks(compliance)))


def spatial_inertia(mass: Array, com: Array, rot_inertia: Array) -> Array:
    """Spatial inertia about a frame origin, angular first (Jain eq. 2.5).

    ``[[J_O, m c~], [-m c~, m I]]`` with ``J_O = J_c - m c~ c~``, where ``c`` is the centre
    of mass in the frame and ``J_c`` the rotational inertia about the centre of mass.
    """
    cx = skew(com)
    return inertia_from_parameters(mass, mass[..., None] * com, rot_inertia - mass[..., None, None] * mm(cx, cx))


def inertia_from_parameters(mass: Array, first_moment: Array, rot_inertia_origin: Array) -> Array:
    """The spatial inertia ``[[J_O, h~], [-h~, m I]]`` from its parameters: mass ``m``, first
    moment ``h = m c`` and rotational inertia ``J_O`` about the frame origin (Jain eq. 2.5).
    The matrix is linear in them, so inertias about one point add by their parameters."""
    hx = skew(first_moment)
    eye = jnp.broadcast_to(jnp.eye(3, dtype=hx.dtype), hx.shape)
    top = jnp.concatenate([rot_inertia_origin, hx], axis=-1)
    bottom = jnp.concatenate([-hx, mass[..., None, None] * eye], axis=-1)
    return jnp.concatenate([top, bottom], axis=-2)


def inertia_parameters(mass, com, rot_inertia) -> tuple:
    """A body's inertia about a point ``O`` as ``(m, h, J_O)`` (Jain eqs. 2.5–2.8), from its mass
    ``m``, centre of mass ``c`` relative to ``O`` and rotational inertia ``J_c`` about it:
    ``h = m c`` and ``J_O = J_c − m c̃ c̃``.  The spatial inertia is ``[[J_O, h̃], [−h̃, m I]]``,
    linear in the three, so a sum of inertias about one point is the sum of their parameters."""
    cx = skew(com)
    return mass, mass[..., None] * com, rot_inertia - mass[..., None, None] * mm(cx, cx)


def world_inertia_parameters(mass, com, rot_inertia, wr: Array, wp: Array) -> tuple:
    """:func:`inertia_parameters` about the world origin in world axes, for a body at pose
    ``(R, p)``: centre of mass ``R c + p``, rotational inertia ``R J_c Rᵀ``."""
    com_world = mv(wr, com) + wp
    rot_inertia_world = mm(wr, mm(rot_inertia, transpose(wr)))
    return inertia_parameters(mass, com_world, rot_inertia_world)


def apply_inertia(mass, first_moment, rot_inertia_origin, motion: Array) -> Array:
    """The force ``M h`` of the spatial inertia with parameters ``(m, h, J_O)``
    (:func:`inertia_parameters`) on the motion ``[ω; v]``: ``[J_O ω + h × v; m v − h × ω]``."""
    w, v = halves(motion)
    top = mv(rot_inertia_origin, w) + cross(first_moment, v)
    bottom = mass[..., None] * v - cross(first_moment, w)
    return jnp.concatenate([top, bottom], axis=-1)


def inverse_3x3(a: Array) -> Array:
    """Inverse of 3×3 matrices by the adjugate, ``a⁻¹ = adj(a) / det(a)`` (elementwise, no LU)."""
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = (unstack(r) for r in unstack(a, -2))
    c00 = a11 * a22 - a12 * a21
    c01 = a12 * a20 - a10 * a22
    c02 = a10 * a21 - a11 * a20
    c10 = a02 * a21 - a01 * a22
    c11 = a00 * a22 - a02 * a20
    c12 = a01 * a20 - a00 * a21
    c20 = a01 * a12 - a02 * a11
    c21 = a02 * a10 - a00 * a12
    c22 = a00 * a11 - a01 * a10
    det = a00 * c00 + a01 * c01 + a02 * c02
    rows = [jnp.stack(r, axis=-1) for r in ((c00, c10, c20), (c01, c11, c21), (c02, c12, c22))]
    return jnp.stack(rows, axis=-2) / det[..., None, None]


def spd_inverse(d: Array) -> Array:
    """Inverse of small symmetric positive-definite matrices (the ``D(k)`` of Jain eq. 6.12).

    Sizes 1 and 3 are closed-form; size 6 (a free joint) goes by 3×3 blocks and the Schur
    complement ``S = C − Bᵀ A⁻¹ B``,

        [[A, B], [Bᵀ, C]]⁻¹ = [[A⁻¹ + A⁻¹B S⁻¹BᵀA⁻¹, −A⁻¹B S⁻¹], [−S⁻¹BᵀA⁻¹, S⁻¹]],

    small products and closed-form 3×3 inverses, which XLA:CPU runs much faster than a
    batched LU; other sizes use ``jnp.linalg.inv``.  The input is symmetrised first.
    """
    d = 0.5 * (d + transpose(d))
    n = d.shape[-1]
    if d.size == 0:
        return d
    if n == 1:
        return 1.0 / d
    if n == 3:
        return inverse_3x3(d)
    if n == 6:
        a, b, _, c = blocks(d)
        ai = inverse_3x3(a)
        aib = mm(ai, b)
        s = c - mtm(b, aib)
        si = inverse_3x3(0.5 * (s + transpose(s)))
        top_right = -mm(aib, si)
        top_left = ai - mm(top_right, transpose(aib))
        top = jnp.concatenate([top_left, top_right], axis=-1)
        bot = jnp.concatenate([transpose(top_right), si], axis=-1)
        return jnp.concatenate([top, bot], axis=-2)
    return jnp.linalg.inv(d)


# ---------------------------------------------------------------------------
# rotations and quaternions [w, x, y, z]
# ---------------------------------------------------------------------------


def axis_angle_to_rotation(axis: Array, angle: Array) -> Array:
    """Rodrigues' formula for a unit ``axis``: ``I + sin θ a~ + (1 − cos θ) a~²``."""
    ax = skew(axis)
    s, c = sincos(angle)
    eye = jnp.eye(3, dtype=ax.dtype)
    return eye + scale_matrix(s, ax) + scale_matrix(1.0 - c, mm(ax, ax))


def quat_to_rotation(q: Array) -> Array:
    """Rotation matrix of a quaternion ``[w, x, y, z]``; normalises ``q`` first."""
    q = scale(1.0 / jnp.sqrt(dot(q, q)), q)
    w, x, y, z = unstack(q)
    return jnp.stack(
        [
            jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def quat_multiply(a: Array, b: Array) -> Array:
    """Hamilton product ``a ⊗ b``."""
    aw, av = a[..., 0], a[..., 1:]
    bw, bv = b[..., 0], b[..., 1:]
    w = aw * bw - dot(av, bv)
    v = scale(aw, bv) + scale(bw, av) + cross(av, bv)
    return jnp.concatenate([w[..., None], v], axis=-1)


def quat_conjugate(q: Array) -> Array:
    """Conjugate (inverse for unit quaternions)."""
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def _sinc_half(theta_sq: Array) -> tuple[Array, Array]:
    """``cos(θ/2)`` and ``sin(θ/2)/θ`` from ``θ²``, smooth (with derivatives) at ``θ = 0``."""
    small = theta_sq < 1e-8
    safe = jnp.where(small, 1.0, theta_sq)
    theta = jnp.sqrt(safe)
    sin_half, cos_half = sincos(theta / 2)
    c = jnp.where(small, 1.0 - theta_sq / 8.0, cos_half)
    s = jnp.where(small, 0.5 - theta_sq / 48.0, sin_half / theta)
    return c, s


def quat_exp(omega: Array) -> Array:
    """Unit quaternion of the rotation vector ``omega`` (exponential map of SO(3))."""
    c, s = _sinc_half(dot(omega, omega))
    return jnp.concatenate([c[..., None], scale(s, omega)], axis=-1)


def quat_log(q: Array) -> Array:
    """Rotation vector of a unit quaternion, shortest path (``w ≥ 0`` branch).

    Smooth and NaN-free at the identity: uses ``2 atan2(|v|, w) / |v|`` with a series near 0.
    """
    q = jnp.where(q[..., :1] < 0, -q, q)
    w, v = q[..., 0], q[..., 1:]
    vsq = dot(v, v)
    small = vsq < 1e-12
    vn = jnp.sqrt(jnp.where(small, 1.0, vsq))
    factor = jnp.where(small, 2.0 / w * (1.0 - vsq / (3.0 * w * w)), 2.0 * jnp.arctan2(vn, w) / vn)
    return factor[..., None] * v


def rotation_to_quat(r: Array) -> Array:
    """Quaternion ``[w, x, y, z]`` (``w ≥ 0``) of a rotation matrix (NumPy-style branches)."""
    m00, m11, m22 = r[..., 0, 0], r[..., 1, 1], r[..., 2, 2]
    tr = m00 + m11 + m22
    d21, d02, d10 = r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0], r[..., 1, 0] - r[..., 0, 1]
    s01, s02, s12 = r[..., 0, 1] + r[..., 1, 0], r[..., 0, 2] + r[..., 2, 0], r[..., 1, 2] + r[..., 2, 1]
    cands = jnp.stack(
        [
            jnp.stack([1 + tr, d21, d02, d10], -1),
            jnp.stack([d21, 1 + m00 - m11 - m22, s01, s02], -1),
            jnp.stack([d02, s01, 1 - m00 + m11 - m22, s12], -1),
            jnp.stack([d10, s02, s12, 1 - m00 - m11 + m22], -1),
        ],
        axis=-2,
    )
    diag = jnp.stack([tr, m00, m11, m22], axis=-1)
    best = jnp.argmax(diag, axis=-1)
    q = jnp.take_along_axis(cands, best[..., None, None], axis=-2)[..., 0, :]
    q = q / jnp.sqrt(dot(q, q))[..., None]
    return jnp.where(q[..., :1] < 0, -q, q)

