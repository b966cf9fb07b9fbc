"""Fluid forces: MuJoCo's stateless inertia-box and ellipsoid models (MuJoCo documentation,
*Computation → Fluid forces*, https://mujoco.readthedocs.io/en/stable/computation/fluid.html).

Both models act on a frame fixed to a body: its velocity ``[ω; v]`` relative to the fluid
(``v`` of the frame's origin minus the ``wind`` ``w``, both resolved in the frame's axes) gives
a wrench ``[τ; f]`` in the same axes, applied at the frame's origin.  ``ρ`` is ``density``,
``μ`` ``viscosity``; products ``⊙`` and ``|x| x`` act entrywise.

**Inertia box** (MuJoCo's ``mj_inertiaBoxFluidModel``), one frame per body at its centre of
mass along its principal axes, the box of equal mass ``m`` and principal moments
``I = (I₀, I₁, I₂)`` with sides ``bᵢ = √(6 max(ε, Iⱼ + Iₖ − Iᵢ) / m)`` and mean ``d = Σ bᵢ / 3``::

    τ = −π d³ μ ω − (ρ / 64) s_ω ⊙ |ω| ω,   s_ω = (b₀(b₁⁴ + b₂⁴), b₁(b₀⁴ + b₂⁴), b₂(b₀⁴ + b₁⁴))
    f = −3π d μ v − (ρ / 2) s_v ⊙ |v| v,     s_v = (b₁b₂, b₀b₂, b₀b₁)

(Stokes drag of the sphere of diameter ``d`` and quadratic drag on the box's faces).

**Ellipsoid** (``mj_ellipsoidFluidModel``, a body with a geom of ``fluidshape="ellipsoid"``),
one frame per geom with semi-axes ``r`` and MuJoCo's ``geom_fluid`` coefficients: interaction
``C``, blunt drag ``C_b``, slender drag ``C_s``, angular drag ``C_a``, Kutta lift ``C_K``,
Magnus lift ``C_M``, virtual mass ``m_v`` and inertia ``J_v`` (3 each).  With ``V = 4π r₀r₁r₂/3``,
``D = 2 Σ rᵢ / 3``, ``A_max = π r_max r_mid``, the projected area ``A = π √(Σ (rⱼrₖ)⁴vᵢ² / Σ (rⱼrₖvᵢ)²)``,
``n = ((r₁r₂)²v₀, (r₂r₀)²v₁, (r₀r₁)²v₂)``, ``cos α = Σ (rⱼrₖvᵢ)² / (|v| Σ (rⱼrₖ)⁴vᵢ²)``,
``Iᵢ = 8π rᵢ max(rⱼ, rₖ)⁴ / 15`` and ``I_max = 8π r_mid r_max⁴ / 15``::

    f = C [ρ (m_v ⊙ v) × ω + C_M ρ V ω × v + C_K ρ cos α A (n × v) × v
           − (3π D μ + ρ |v| (C_b A + C_s (A_max − A))) v]
    τ = C [ρ (m_v ⊙ v) × v + ρ (J_v ⊙ ω) × ω − (π D³ μ + ρ |(C_a I + C_s (I_max − I)) ⊙ ω|) ω]

(added-mass gyroscopic terms without the acceleration part, as in MuJoCo; Magnus and Kutta
lift; viscous and quadratic drag).  Semi-axes are MuJoCo's ``mju_geomSemiAxes``.  ``A`` and
``|v| cos α`` depend on the direction ``u = v / |v|`` only and are computed from it; for
``|v| ≤ ε`` the projected area and the Kutta lift are zero (as MuJoCo's ``qfrc_fluid`` has them).

Bodies lighter than ``ε = 10⁻¹⁵`` feel no fluid force.  The box and ellipsoid frames, sizes
and coefficients are fixed when the :class:`Fluid` is made; ``density``, ``viscosity`` and
``wind`` are leaves (vmappable, differentiable).  :func:`fluid_wrenches` gives body-frame
wrenches about the body origins for ``f_ext`` of :func:`sodyn.simulate.step`;
:func:`fluid_forces` the generalised force ``Σₖ Jₖᵀ Fₖ`` (MuJoCo's ``qfrc_fluid``).
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.algorithms.kinematics import body_velocities, forward_kinematics
from sodyn.model import Model
from sodyn.rotations import quat_to_matrix

MINVAL = 1e-15  # MuJoCo's mjMINVAL
_PI = np.pi


class Fluid(eqx.Module):
    """A fluid of ``density`` (kg/m³), ``viscosity`` (Pa·s) and ``wind`` (world frame, m/s)
    acting on inertia boxes and ellipsoids fixed to the model's bodies (module docstring).

    ``box_*`` hold one row per inertia box: ``box_size`` full side lengths, ``box_rotation``
    its axes (columns) and ``box_position`` its centre in the frame of body ``box_body[i]``.
    ``ellipsoid_*`` likewise per ellipsoid: ``ellipsoid_semiaxes`` and ``ellipsoid_coef``
    (MuJoCo's 12 ``geom_fluid`` numbers: interaction, blunt, slender, angular drag, Kutta,
    Magnus lift, virtual mass (3), virtual inertia (3)).
    """

    density: jax.Array
    viscosity: jax.Array
    wind: jax.Array
    box_size: jax.Array
    box_rotation: jax.Array
    box_position: jax.Array
    ellipsoid_semiaxes: jax.Array
    ellipsoid_coef: jax.Array
    ellipsoid_rotation: jax.Array
    ellipsoid_position: jax.Array
    box_body: tuple[int, ...] = eqx.field(static=True)
    ellipsoid_body: tuple[int, ...] = eqx.field(static=True)

    @classmethod
    def from_model(cls, model: Model, density, viscosity, wind: Sequence[float] = (0.0, 0.0, 0.0)) -> Fluid:
        """Inertia boxes of every body with mass (MuJoCo's default model), from ``model.mass``
        and the principal axes of ``model.inertia`` (kept as the body axes when the inertia is
        diagonal in them, else an eigen-decomposition).  Where two principal moments are equal
        and the inertia is not diagonal in body axes, the axes in that plane are arbitrary and
        the quadratic drag may differ from MuJoCo's; :func:`fluid_from_mujoco` uses MuJoCo's
        frames (and MuJoCo's bodies where sodyn merged jointless bodies into their parents)."""
        mass, com, inertia = (np.asarray(x, np.float64) for x in (model.mass, model.com, model.inertia))
        bodies, sizes, rots, pos = [], [], [], []
        for k in range(model.n_bodies):
            if mass[k] < MINVAL:
                continue
            j = 0.5 * (inertia[k] + inertia[k].T)
            off = j - np.diag(np.diag(j))
            if np.max(np.abs(off)) <= 1e-14 * max(np.trace(j), MINVAL):
                principal, r = np.diag(j).copy(), np.eye(3)
            else:
                principal, r = np.linalg.eigh(j)
                if np.linalg.det(r) < 0:
                    r[:, 2] = -r[:, 2]
            bodies.append(k)
            sizes.append(box_sides(mass[k], principal))
            rots.append(r)
            pos.append(com[k])
        return _make(model, density, viscosity, wind, (bodies, sizes, rots, pos), ([], [], [], [], []))


def box_sides(mass: float, principal: np.ndarray) -> np.ndarray:
    """Sides of MuJoCo's inertia box: ``bᵢ = √(6 max(ε, Iⱼ + Iₖ − Iᵢ) / m)``."""
    i0, i1, i2 = (float(x) for x in principal)
    return np.sqrt(np.maximum(MINVAL, np.array([i1 + i2 - i0, i0 + i2 - i1, i0 + i1 - i2])) / mass * 6.0)


def _make(model: Model, density, viscosity, wind, boxes, ellipsoids) -> Fluid:
    dtype = model.mass.dtype

    def arr(x, shape):
        return jnp.asarray(np.asarray(x, np.float64).reshape(shape), dtype)

    bb, bs, br, bp = boxes
    eb, es, ec, er, ep = ellipsoids
    return Fluid(
        density=jnp.asarray(density, dtype), viscosity=jnp.asarray(viscosity, dtype), wind=arr(wind, (3,)),
        box_size=arr(bs, (-1, 3)), box_rotation=arr(br, (-1, 3, 3)), box_position=arr(bp, (-1, 3)),
        ellipsoid_semiaxes=arr(es, (-1, 3)), ellipsoid_coef=arr(ec, (-1, 12)),
        ellipsoid_rotation=arr(er, (-1, 3, 3)), ellipsoid_position=arr(ep, (-1, 3)),
        box_body=tuple(int(k) for k in bb), ellipsoid_body=tuple(int(k) for k in eb),
    )


def _semiaxes(geom_type: int, size: np.ndarray) -> np.ndarray:
    """MuJoCo's ``mju_geomSemiAxes``."""
    import mujoco

    g = mujoco.mjtGeom
    if geom_type == g.mjGEOM_SPHERE:
        return np.full(3, size[0])
    if geom_type == g.mjGEOM_CAPSULE:
        return np.array([size[0], size[0], size[1] + size[0]])
    if geom_type == g.mjGEOM_CYLINDER:
        return np.array([size[0], size[0], size[1]])
    return np.asarray(size[:3], np.float64)


def _local_pose(same: int, pos, quat, ipos, iquat) -> tuple[np.ndarray, np.ndarray]:
    """A geom's pose in its MuJoCo body frame, read as MuJoCo's kinematics does (``geom_sameframe``:
    1 body frame, 2 inertial frame, 3 body axes, 4 inertial axes)."""
    if same == 1:
        return np.eye(3), np.zeros(3)
    if same == 2:
        return quat_to_matrix(iquat), np.asarray(ipos, np.float64)
    r = np.eye(3) if same == 3 else quat_to_matrix(iquat) if same == 4 else quat_to_matrix(quat)
    return r, np.asarray(pos, np.float64)


def fluid_from_mujoco(mj, model: Model) -> tuple[Fluid | None, list[str]]:
    """The fluid of a compiled ``mujoco.MjModel`` (``opt.density``, ``opt.viscosity``,
    ``opt.wind``) on the sodyn ``model`` converted from it (:func:`sodyn.load_mjcf`).

    Boxes and ellipsoids are MuJoCo's own: ``body_mass``, ``body_inertia`` and the inertial
    frame (``body_ipos``, ``body_iquat``) per body, or, for a body with a geom whose
    ``geom_fluid`` interaction coefficient is positive, every geom with a non-zero one (all
    geoms, also those that do not collide), each placed in the sodyn body that carries its
    MuJoCo body through the frame named after that body.  Returns ``(None, [])`` when the
    fluid is off (density and viscosity not positive, or both ``spring`` and ``damper``
    disabled), else ``(fluid, notes)``, ``notes`` naming what is not modelled.
    """
    import mujoco

    opt = mj.opt
    dsbl = mujoco.mjtDisableBit
    off = int(dsbl.mjDSBL_SPRING) | int(dsbl.mjDSBL_DAMPER)
    if not (opt.density > 0 or opt.viscosity > 0) or (int(opt.disableflags) & off) == off:
        return None, []
    names = list(model.frame_names)
    frame_body = np.asarray(model.frame_body)
    frame_r, frame_p = np.asarray(model.frame_rotation, np.float64), np.asarray(model.frame_translation, np.float64)
    boxes: tuple[list, list, list, list] = ([], [], [], [])
    ells: tuple[list, list, list, list, list] = ([], [], [], [], [])
    notes: list[str] = []
    for i in range(1, mj.nbody):
        if mj.body_mass[i] < MINVAL:
            continue
        bname = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, i) or f"body{i}"
        if bname not in names:
            notes.append(f"<body name={bname!r}> (fluid forces: no sodyn frame of that name)")
            continue
        f = names.index(bname)
        k = int(frame_body[f])
        if k < 0:  # welded to the world: its wrench moves no dof
            continue
        rf, pf = frame_r[f], frame_p[f]
        same_b = int(mj.body_sameframe[i])
        ri = np.eye(3) if same_b in (1, 3) else quat_to_matrix(mj.body_iquat[i])
        ipos = np.zeros(3) if same_b == 1 else np.asarray(mj.body_ipos[i], np.float64)
        geoms = range(int(mj.body_geomadr[i]), int(mj.body_geomadr[i]) + int(mj.body_geomnum[i]))
        if any(mj.geom_fluid[g, 0] > 0 for g in geoms):
            for g in geoms:
                coef = np.asarray(mj.geom_fluid[g], np.float64)
                if coef[0] == 0.0:
                    continue
                rg, pg = _local_pose(int(mj.geom_sameframe[g]), mj.geom_pos[g], mj.geom_quat[g], ipos,
                                     mj.body_iquat[i])
                for lst, x in zip(ells, (k, _semiaxes(int(mj.geom_type[g]), mj.geom_size[g]), coef,
                                         rf @ rg, pf + rf @ pg)):
                    lst.append(x)
        else:
            for lst, x in zip(boxes, (k, box_sides(float(mj.body_mass[i]), mj.body_inertia[i]), rf @ ri,
                                      pf + rf @ ipos)):
                lst.append(x)
    fluid = _make(model, float(opt.density), float(opt.viscosity), np.asarray(opt.wind, np.float64), boxes, ells)
    return fluid, notes


# ---------------------------------------------------------------------------
# force laws (local frame; w angular, v linear velocity relative to the fluid)
# ---------------------------------------------------------------------------


def _masked(x: jax.Array, floor: float = 0.0) -> tuple[jax.Array, jax.Array]:
    """``(big, x_safe)``: ``big`` where ``|x| > floor``, ``x_safe`` is ``x`` there and ones
    elsewhere, so a term computed from ``x_safe`` and masked by ``big`` has a finite (zero)
    gradient at ``x = 0``."""
    nz = jnp.sum(x * x, axis=-1, keepdims=True) > floor * floor
    return nz, jnp.where(nz, x, jnp.ones_like(x))


def safe_norm(x: jax.Array, keepdims: bool = False) -> jax.Array:
    """Euclidean norm over the last axis with a zero (not NaN) gradient at ``x = 0``."""
    sq = jnp.sum(x * x, axis=-1, keepdims=keepdims)
    return jnp.where(sq > 0, jnp.sqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)


def _box_law(fluid: Fluid, w: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array]:
    b = fluid.box_size
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    diam = jnp.mean(b, axis=-1, keepdims=True)
    s_w = jnp.stack([b0 * (b1**4 + b2**4), b1 * (b0**4 + b2**4), b2 * (b0**4 + b1**4)], axis=-1)
    s_v = jnp.stack([b1 * b2, b0 * b2, b0 * b1], axis=-1)
    mu, rho = fluid.viscosity, fluid.density
    torque = -_PI * diam**3 * mu * w - rho * s_w * jnp.abs(w) * w / 64.0
    force = -3.0 * _PI * diam * mu * v - 0.5 * rho * s_v * jnp.abs(v) * v
    return torque, force


def _ellipsoid_law(fluid: Fluid, w: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array]:
    r, c = fluid.ellipsoid_semiaxes, fluid.ellipsoid_coef
    rho, mu = fluid.density, fluid.viscosity
    interaction, blunt, slender, angular, kutta, magnus = (c[..., j: j + 1] for j in range(6))
    vmass, vinertia = c[..., 6:9], c[..., 9:12]
    # added mass (gyroscopic part)
    p_lin, p_ang = rho * vmass * v, rho * vinertia * w
    force = jnp.cross(p_lin, w)
    torque = jnp.cross(p_lin, v) + jnp.cross(p_ang, w)
    # geometry
    r0, r1, r2 = r[..., 0:1], r[..., 1:2], r[..., 2:3]
    volume = 4.0 / 3.0 * _PI * r0 * r1 * r2
    d_max, d_min = jnp.max(r, -1, keepdims=True), jnp.min(r, -1, keepdims=True)
    d_mid = jnp.sum(r, -1, keepdims=True) - d_max - d_min
    a_max = _PI * d_max * d_mid
    eq_d = 2.0 / 3.0 * jnp.sum(r, -1, keepdims=True)  # diameter of the Stokes sphere
    cross_areas = jnp.concatenate([r1 * r2, r2 * r0, r0 * r1], axis=-1)  # (rⱼ rₖ) per axis i
    force = force + magnus * rho * volume * jnp.cross(w, v)
    # projected area and Kutta lift from the direction u = v / |v| (zero for |v| ≤ ε), quadratic drag
    big, vs = _masked(v, MINVAL)
    u = vs / jnp.linalg.norm(vs, axis=-1, keepdims=True)
    denom = jnp.sum(cross_areas**4 * u**2, -1, keepdims=True)
    num = jnp.sum((cross_areas * u) ** 2, -1, keepdims=True)
    tiny = jnp.finfo(u.dtype).tiny  # both sums are positive for positive semi-axes and |u| = 1
    a_proj = jnp.where(big, _PI * jnp.sqrt(denom / jnp.maximum(tiny, num)), 0.0)
    cos_alpha = num / jnp.maximum(tiny, denom)
    circulation = kutta * rho * cos_alpha * a_proj * jnp.cross(cross_areas**2 * u, u)
    speed = safe_norm(v, keepdims=True)
    lift = jnp.where(big, jnp.sum(vs * vs, -1, keepdims=True) * jnp.cross(circulation, u), 0.0)
    drag = (3.0 * _PI * eq_d * mu + rho * speed * (a_proj * blunt + slender * (a_max - a_proj)))
    force = force + lift - drag * v
    # angular drag
    rolled = jnp.maximum(jnp.roll(r, -1, -1), jnp.roll(r, -2, -1))
    moments = 8.0 / 15.0 * _PI * r * rolled**4
    i_max = 8.0 / 15.0 * _PI * d_mid * d_max**4
    mom = w * (angular * moments + slender * (i_max - moments))
    ang_quad = rho * safe_norm(mom, keepdims=True) * w
    torque = torque - mu * _PI * eq_d**3 * w - ang_quad
    return interaction * torque, interaction * force


def _element_wrenches(law, fluid: Fluid, bodies: tuple[int, ...], rot, pos, body_r, vel, n_bodies: int):
    """Wrenches about the body origins (body frames) of the elements of one model."""
    if not bodies:
        return jnp.zeros((n_bodies, 6), vel.dtype)
    idx = np.asarray(bodies, np.int64)
    om, lin = vel[idx, :3], vel[idx, 3:]
    lin = lin + jnp.cross(om, pos)  # velocity of the element's origin, body frame
    wind_body = jnp.einsum("kji,j->ki", body_r[idx], fluid.wind.astype(vel.dtype))
    w_loc = jnp.einsum("kji,kj->ki", rot, om)
    v_loc = jnp.einsum("kji,kj->ki", rot, lin - wind_body)
    torque, force = law(fluid, w_loc, v_loc)
    f_b = jnp.einsum("kij,kj->ki", rot, force)
    n_b = jnp.einsum("kij,kj->ki", rot, torque) + jnp.cross(pos, f_b)
    return jnp.zeros((n_bodies, 6), vel.dtype).at[idx].add(jnp.concatenate([n_b, f_b], -1))


def _wrenches(model: Model, fluid: Fluid, body_r: jax.Array, vel: jax.Array) -> jax.Array:
    n = model.n_bodies
    return (_element_wrenches(_box_law, fluid, fluid.box_body, fluid.box_rotation, fluid.box_position,
                              body_r, vel, n)
            + _element_wrenches(_ellipsoid_law, fluid, fluid.ellipsoid_body, fluid.ellipsoid_rotation,
                                fluid.ellipsoid_position, body_r, vel, n))


def fluid_wrenches(model: Model, fluid: Fluid, q, v) -> jax.Array:
    """Fluid wrenches ``[n; f]`` on every body, ``(n_bodies, 6)``, in the body frame about the
    body origin (the ``f_ext`` convention of :func:`sodyn.simulate.step`)."""
    q = jnp.asarray(q)
    body_r = forward_kinematics(model, q).body.rotation
    return _wrenches(model, fluid, body_r, body_velocities(model, q, v))


def fluid_forces(model: Model, fluid: Fluid, q, v) -> jax.Array:
    """The generalised fluid force ``Σₖ Jₖᵀ Fₖ`` ``(nv,)`` (MuJoCo's ``qfrc_fluid`` in sodyn's
    velocity coordinates: :func:`sodyn.io.tau_to_mujoco` converts it).  ``Jₖᵀ`` is the
    transpose of the linear map ``v ↦ Vₖ`` of :func:`sodyn.body_velocities`, applied by
    ``jax.vjp``."""
    q = jnp.asarray(q)
    body_r = forward_kinematics(model, q).body.rotation
    vel, pullback = jax.vjp(lambda u: body_velocities(model, q, u), jnp.asarray(v, q.dtype))
    return pullback(_wrenches(model, fluid, body_r, vel))[0]


__all__ = ["MINVAL", "Fluid", "box_sides", "fluid_forces", "fluid_from_mujoco", "fluid_wrenches"]
