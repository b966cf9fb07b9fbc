"""MJCF import through the ``mujoco`` package, and MuJoCo ↔ sodyn state conversions.

:func:`load_mjcf` compiles the file with ``mujoco.MjModel.from_xml_path`` (or
``from_xml_string``) and :func:`from_mujoco` converts the *compiled* model, so every MJCF
default, ``<include>``, ``childclass`` and inertia-from-geometry rule is MuJoCo's own.

Conversion rules
----------------
* **Bodies** keep MuJoCo's order (depth-first, the order of ``qpos``/``qvel``).  A MuJoCo
  body with several joints becomes a chain of sodyn bodies, one per joint: all but the last
  are massless and named ``<body>__<joint>``; the last carries the inertia (``body_mass``,
  ``body_ipos``, ``body_iquat``, ``body_inertia``; like MuJoCo, the body frame stands in for
  the inertial frame where the compiler marked them the same, ``body_sameframe``).
* **Joint anchors.**  A sodyn body frame sits on its joint (hinge/ball: at ``jnt_pos``).
  When the anchor is not the MuJoCo body origin the body is named ``<body>__anchor`` and a
  frame named ``<body>`` marks the MuJoCo body frame, so ``frame_pose(model, q, "<body>")``
  is MuJoCo's ``xpos``/``xmat``.  Named sites become frames too.
* **Reference positions** (``ref``, i.e. ``qpos0`` of hinges and slides) are folded into the
  joint placement, so ``q`` *is* MuJoCo's ``qpos`` for every joint type: hinge angles and
  slide displacements, ``[p, quat wxyz]`` for free joints, ``quat wxyz`` for balls.
* **Velocities.**  Hinge, slide and ball velocities are the same in both libraries (a ball's
  ``qvel`` is the child's angular velocity relative to its parent, in the child frame).  A
  free joint's ``qvel`` is ``[v_world; ω_local]`` (linear velocity of the body origin in the
  world frame, angular velocity in the body frame); sodyn's is ``[ω; v]`` with both in the
  body frame, so converting velocities, accelerations and generalised forces of free joints
  needs the body orientation ``q`` (and, for accelerations, ``v``): see
  :func:`v_from_mujoco`, :func:`a_from_mujoco`, :func:`tau_from_mujoco`,
  :func:`mass_matrix_from_mujoco`.
* **Joint data.**  ``dof_damping`` → ``damping``, ``dof_armature`` → ``armature``,
  ``dof_frictionloss`` → ``friction``, ``jnt_range`` of limited joints → limits,
  ``jnt_stiffness`` → ``stiffness`` (per dof; a free joint's per-dof data are reordered from
  MuJoCo's ``[linear; angular]`` to sodyn's ``[ω; v]``), ``qpos_spring`` → ``spring_reference``,
  ``qpos0`` → ``q_neutral`` (what :func:`sodyn.neutral_configuration` returns),
  ``opt.gravity`` → ``gravity``.  (MuJoCo applies free-joint armature and damping to
  ``[v_world; ω_local]``; they are copied as is.  With equal linear values ``a`` (MJCF's
  one value per joint) both are exact: MuJoCo's armature force ``a p̈`` is
  ``a (v̇_lin + ω × v_lin)`` in the body frame, the diagonal armature in ``M`` plus the
  velocity force of :func:`sodyn.algorithms.common.passive_joint_force`, and its damping
  ``d ṗ`` is ``d v_lin``.  Unequal linear values (``Rᵀ diag(a) R`` in the body frame, which
  depends on the orientation) are approximated, and one
  :class:`~sodyn.io.diagnostics.ApproximatedElementWarning` names the joints; see
  :func:`sodyn.io._mjcf_checks.free_armature_message`.)
* **Numbers.**  NaN or infinity in a numeric attribute is an error naming the element and the
  attribute, also where MuJoCo compiles it or (a geom's ``mass``, ``fromto``) silently
  ignores it (:mod:`sodyn.io._mjcf_checks`).
* **Options.**  ``<flag>`` switches that remove a force are applied to the data: ``gravity``
  disabled → zero gravity, ``spring`` → zero stiffness, ``damper`` → zero damping,
  ``frictionloss`` → zero friction, ``limit`` → no limits, ``contact`` → no collision geoms,
  ``actuation`` → no actuators, ``clampctrl`` → unbounded controls, ``constraint`` → all of
  friction loss, limits, contacts and equality constraints.
* **Actuators** with a joint transmission on a hinge or slide, a fixed or affine gain, no or
  affine bias and activation dynamics none, ``integrator``, ``filter`` or ``filterexact``
  (``<motor>``, ``<position>``, ``<velocity>``, ``<intvelocity>``, ``<damper>`` and ``<general>``
  of that form; ``ctrllimited``, ``forcelimited``, ``actlimited``, ``actearly``) →
  :class:`~sodyn.model_data.Actuators`; a joint's symmetric ``actuatorfrcrange`` → its
  ``effort_limit``.  Body ``gravcomp`` → ``Model.gravcomp``.  **Keyframes** →
  :class:`~sodyn.model_data.Keyframes`.
* **Simulation data** the steppers use by default: ``<sensor>`` elements →
  ``Model.sensors`` (:func:`sodyn.io.mjcf_sensors.sensors_from_mujoco`); ``density``,
  ``viscosity``, ``wind`` and ``fluidshape`` → ``Model.fluid``
  (:func:`sodyn.simulate.fluid.fluid_from_mujoco`); active ``<equality>`` elements
  (``connect``, ``weld``, ``joint``) → ``Model.closures`` (:class:`~sodyn.LoopClosures`,
  hard constraints where MuJoCo's are soft).
* **Collision** → :class:`~sodyn.model_data.Geoms`: every geom MuJoCo can collide (``contype`` or
  ``conaffinity`` non-zero, or named by a ``<pair>``) of type plane, sphere, capsule,
  ellipsoid, cylinder, box, mesh (the convex hull MuJoCo collides, in MuJoCo's geom frame:
  :func:`sodyn.io._mjcf_elements.mesh_hull`) or height field (MuJoCo's compiled, normalised
  ``hfield_data`` and ``hfield_size``: :class:`~sodyn.model_data.HeightFields`), with its size,
  pose, ``contype``, ``conaffinity``, ``condim``, ``friction``, ``margin``, ``gap`` and
  ``priority``; ``<contact><pair>`` → :class:`~sodyn.model_data.ContactPairs` (friction entries 0,
  2, 3 of MuJoCo's five);
  ``<contact><exclude>`` → ``Geoms.exclude`` (between the weld bodies: where sodyn merged a
  jointless body into its parent this excludes more than MuJoCo, and the warning says so);
  ``<flag filterparent="disable">`` → ``Geoms.filter_parent``; a body with several joints
  keeps its MuJoCo parent for the parent filter (``Geoms.weld_parent``).  The candidate
  pairs are those of MuJoCo's filters (:func:`sodyn.collision.pairs.candidate_pairs`).
* **Equality constraints** (``connect``, ``weld``, ``joint``, and ``tendon`` between fixed tendons)
  are also returned by ``load_mjcf(..., with_constraints=True)`` as :class:`EqualityConstraints`.
* **Fixed tendons** (``<tendon><fixed>`` of hinges and slides) → ``Model.tendons``
  (:class:`sodyn.simulate.tendons.Tendons`: stiffness with its ``springlength`` dead band,
  damping, ``range`` when ``limited``, ``frictionloss``, ``actuatorfrcrange``); actuators on
  them keep their place among the actuators (``Actuators.tendon``),
  ``tendonpos``/``tendonvel``/``tendonactfrc`` sensors read them, and an active
  ``<equality><tendon>`` between them is a ``"tendon"`` coupling of ``Model.closures``
  (:meth:`sodyn.LoopClosures.tendon_coupling`; a ``"tendon"`` row of the returned
  :class:`EqualityConstraints`).
* **Not modelled, one** :class:`~sodyn.io.diagnostics.UnsupportedElementWarning` **per model
  naming each element:** spatial tendons (and fixed ones on ball or free joints), a fixed
  tendon's ``armature`` and polynomial stiffness/damping, tendon equalities on other tendons,
  sensors of other types, collision geoms of other types (SDF, a height field without cells)
  and the pairs naming them, condim 4/6 (kept as data; sodyn's contact law applies sliding
  friction only), non-default ``solref``/``solimp``/``solmix`` of geoms and pairs (sodyn's contact law
  has its own stiffness and damping), an ``<exclude>`` that sodyn's weld-body exclusion
  widens, other actuators, gravity compensation through the actuators (``actuatorgravcomp``),
  flexes, equality constraints of other types, and the ``override`` flag.  A free joint
  below another body or combined with other joints in one body raises ``ValueError``
  (MuJoCo itself rejects both).
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.io import _xml, diagnostics
from sodyn.io._mjcf_checks import check_compiled_numbers, check_xml_numbers, free_armature_message
from sodyn.io._mjcf_elements import (
    add_actuators,
    add_contact,
    add_geoms,
    qvel_to_v,
    switched_off,
    unsupported_elements,
    with_simulation_data,
)
from sodyn.io.mjcf_equality import EqualityConstraints, equality_constraints
from sodyn.joints import JointSpec
from sodyn.model import Model
from sodyn.model_builder import ModelBuilder
from sodyn.rotations import axis_angle_to_matrix, quat_to_matrix


def load_mjcf(
    path_or_xml, *, name: str | None = None, dtype=None, with_constraints: bool = False
) -> Model | tuple[Model, EqualityConstraints]:
    """Compile an MJCF file or XML string with ``mujoco`` and convert it (module docstring).

    Returns the :class:`Model`, or ``(model, constraints)`` with ``with_constraints=True``
    (``constraints`` an :class:`EqualityConstraints`, empty when the file has none).

    Raises ``FileNotFoundError`` for a missing file, ``IsADirectoryError`` for a directory, and
    ``ValueError`` (naming the file and MuJoCo's message, which gives the element and line)
    when MuJoCo rejects the model, when a numeric attribute is not finite, or when the bytes
    cannot be decoded.  A model whose ``M`` is singular at every configuration loads with a
    :class:`~sodyn.io.diagnostics.SingularModelWarning` naming the joints.
    """
    import mujoco

    if isinstance(path_or_xml, (bytes, bytearray)):
        path_or_xml = _xml.clean_text(_xml.decode(bytes(path_or_xml), "<MJCF string>"))
    if _xml.looks_like_xml(path_or_xml):
        source = "<MJCF string>"
        text = _xml.clean_text(path_or_xml)
        check_xml_numbers(text, source)
        try:
            mj = mujoco.MjModel.from_xml_string(text)
        except ValueError as e:
            raise ValueError(f"{source}: MuJoCo could not compile the model: {e}") from None
    else:
        text, source, _ = _xml.read_source(path_or_xml, "MJCF")  # errors name the file
        check_xml_numbers(text, source)
        try:
            mj = mujoco.MjModel.from_xml_path(source)
        except ValueError as e:
            raise ValueError(f"{source}: MuJoCo could not compile the model: {e}") from None
    try:
        return from_mujoco(mj, name=name, dtype=dtype, with_constraints=with_constraints, source=source)
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None


def from_mujoco(mj, name: str | None = None, dtype=None, with_constraints: bool = False,
                source: str = "<MjModel>") -> Model | tuple[Model, EqualityConstraints]:
    """Convert a compiled ``mujoco.MjModel`` into a sodyn :class:`Model` (module docstring);
    ``(model, constraints)`` with ``with_constraints=True``."""
    import mujoco

    obj = mujoco.mjtObj
    jt = mujoco.mjtJoint

    def nm(kind, i, fallback):
        s = mujoco.mj_id2name(mj, kind, i)
        return s if s else fallback

    check_compiled_numbers(mj, nm)
    flags_off = switched_off(mj)
    unsupported: list[str] = []
    gravity = np.zeros(3) if "gravity" in flags_off else np.asarray(mj.opt.gravity, float)
    b = ModelBuilder(gravity=gravity, name=name or nm(obj.mjOBJ_MODEL, 0, "mjcf"))
    used: set[str] = set()

    def unique(s):
        base, i = s, 1
        while s in used:
            s, i = f"{base}_{i}", i + 1
        used.add(s)
        return s

    body_names = [nm(obj.mjOBJ_BODY, i, f"body{i}") for i in range(mj.nbody)]
    joint_names = [nm(obj.mjOBJ_JOINT, j, f"joint{j}") for j in range(mj.njnt)]
    used.update(body_names[1:])
    # For each MuJoCo body: (sodyn body carrying it, MuJoCo body origin in that body's frame).
    last: dict[int, tuple[int | None, np.ndarray]] = {0: (None, np.zeros(3))}
    frames: list[tuple[str, int | None, np.ndarray, np.ndarray]] = []
    for i in range(1, mj.nbody):
        bname = body_names[i]
        par, off = last[int(mj.body_parentid[i])]
        r_b = quat_to_matrix(mj.body_quat[i])
        p_b = off + np.asarray(mj.body_pos[i], float)
        mass = float(mj.body_mass[i])
        # MuJoCo computes with the body frame when the compiler found the inertial frame to
        # coincide with it (body_sameframe 1: position and axes, 3: axes only).
        same = int(mj.body_sameframe[i])
        ri = np.eye(3) if same in (1, 3) else quat_to_matrix(mj.body_iquat[i])
        inertia = ri @ np.diag(mj.body_inertia[i]) @ ri.T
        ipos = np.zeros(3) if same == 1 else np.asarray(mj.body_ipos[i], float)
        jadr, jnum = int(mj.body_jntadr[i]), int(mj.body_jntnum[i])
        if jnum == 0:
            k = b.add_body(bname, par, JointSpec.fixed(), rotation=r_b, translation=p_b, mass=mass,
                           com=ipos, inertia=inertia, gravcomp=float(mj.body_gravcomp[i]), massless_ok=True,
                           check_triangle_inequality=False)
            last[i] = (k, np.zeros(3))
            continue
        rot, trans, prev_anchor = r_b, p_b, np.zeros(3)
        parent = par
        for n, j in enumerate(range(jadr, jadr + jnum)):
            t = int(mj.jnt_type[j])
            jname = joint_names[j]
            dof = int(mj.jnt_dofadr[j])
            nvj = {jt.mjJNT_FREE: 6, jt.mjJNT_BALL: 3}.get(t, 1)
            # MuJoCo's free-joint dofs are [linear; angular], sodyn's [ω; v]: per-dof data follow them
            dofs = np.arange(dof, dof + nvj)[[3, 4, 5, 0, 1, 2] if t == jt.mjJNT_FREE else slice(None)]
            axis = np.asarray(mj.jnt_axis[j], float)
            ref = float(mj.qpos0[mj.jnt_qposadr[j]])
            anchor = np.zeros(3) if t in (jt.mjJNT_FREE, jt.mjJNT_SLIDE) else np.asarray(mj.jnt_pos[j], float)
            # Placement of this joint in the previous sodyn body: undo the previous anchor,
            # move to this one (in MuJoCo body axes, which every body of the chain shares).
            trans = trans + rot @ (anchor - prev_anchor)
            effort = np.inf
            if getattr(mj, "jnt_actfrclimited", np.zeros(mj.njnt))[j] and t in (jt.mjJNT_HINGE, jt.mjJNT_SLIDE):
                lo_f, hi_f = (float(x) for x in mj.jnt_actfrcrange[j])
                if lo_f == -hi_f:
                    effort = hi_f
                else:
                    unsupported.append(f"<joint name={jname!r} actuatorfrcrange='{lo_f:g} {hi_f:g}'> (only a "
                                       "symmetric range is modelled, as the effort limit)")
            lower = upper = None
            if mj.jnt_limited[j] and t in (jt.mjJNT_HINGE, jt.mjJNT_SLIDE) and "limit" not in flags_off:
                lower, upper = float(mj.jnt_range[j][0]), float(mj.jnt_range[j][1])
            qa = int(mj.jnt_qposadr[j])
            qs = slice(qa, qa + {jt.mjJNT_FREE: 7, jt.mjJNT_BALL: 4}.get(t, 1))
            if t == jt.mjJNT_FREE:
                if parent is not None or jnum != 1:
                    raise ValueError(f"body {bname!r}: a free joint must be the only joint of a "
                                     "top-level body")
                spec, rot, trans = JointSpec.free(), np.eye(3), np.zeros(3)
            elif t == jt.mjJNT_BALL:
                spec = JointSpec.spherical()
            elif t == jt.mjJNT_HINGE:
                spec = JointSpec.revolute(axis) if lower is not None else JointSpec.continuous(axis)
                rot = rot @ axis_angle_to_matrix(axis, -ref)  # q is qpos: fold qpos0 into the placement
            elif t == jt.mjJNT_SLIDE:
                spec = JointSpec.prismatic(axis)
                trans = trans - ref * (rot @ (axis / np.linalg.norm(axis)))
            else:  # pragma: no cover - MuJoCo has no other joint type
                raise ValueError(f"joint {jname!r}: MuJoCo joint type {t} is not supported")
            is_last = n == jnum - 1
            if is_last:
                body_name = bname if not np.any(anchor) else unique(f"{bname}__anchor")
            else:
                body_name = unique(f"{bname}__{jname}")
            k = b.add_body(
                body_name, parent, spec, rotation=rot, translation=trans,
                mass=mass if is_last else 0.0, com=ipos - anchor if is_last else np.zeros(3),
                inertia=inertia if is_last else np.zeros((3, 3)), joint_name=jname,
                damping=0.0 if "damper" in flags_off else np.asarray(mj.dof_damping[dofs]),
                armature=np.asarray(mj.dof_armature[dofs]),
                friction=0.0 if "frictionloss" in flags_off else np.asarray(mj.dof_frictionloss[dofs]),
                lower=lower, upper=upper, effort_limit=effort,
                stiffness=0.0 if "spring" in flags_off else float(mj.jnt_stiffness[j]),
                spring_reference=np.asarray(mj.qpos_spring[qs]), q_neutral=np.asarray(mj.qpos0[qs]),
                gravcomp=float(mj.body_gravcomp[i]) if is_last else 0.0, massless_ok=True,
                check_triangle_inequality=False,
            )
            parent, rot, trans, prev_anchor = k, np.eye(3), np.zeros(3), anchor
        last[i] = (parent, -prev_anchor)
        if jnum > 1:  # the chain is one MuJoCo body: its parent is the chain's parent
            b.set_weld_parent(parent, par)
        if np.any(prev_anchor):
            frames.append((bname, parent, np.eye(3), -prev_anchor))
    for s in range(mj.nsite):
        sname = mujoco.mj_id2name(mj, obj.mjOBJ_SITE, s)
        if not sname or sname in used:
            continue
        used.add(sname)
        par, off = last[int(mj.site_bodyid[s])]
        frames.append((sname, par, quat_to_matrix(mj.site_quat[s]), off + np.asarray(mj.site_pos[s], float)))
    for fname, par, r, p in frames:
        b.add_frame(fname, par, rotation=r, translation=p)
    if "contact" not in flags_off:
        add_contact(mj, b, last, nm, add_geoms(mj, b, last, nm, unsupported), unsupported)
    if "actuation" not in flags_off:
        add_actuators(mj, b, joint_names, nm, flags_off, unsupported)
    for k in range(mj.nkey):
        b.add_keyframe(nm(obj.mjOBJ_KEY, k, f"key{k}"), mj.key_qpos[k], qvel_to_v(mj, mj.key_qpos[k], mj.key_qvel[k]))
    unsupported_elements(mj, nm, flags_off, with_constraints, unsupported)
    model = b.build(dtype=dtype, check_singular=False)  # checked below, naming the source
    equality = equality_constraints(mj, model, body_names, "equality" in flags_off)
    model = with_simulation_data(mj, model, equality, unsupported)
    if unsupported:
        warnings.warn(diagnostics.UnsupportedElementWarning(
            f"{source}: sodyn does not model these elements, which change the dynamics:\n  " + "\n  ".join(unsupported),
            tuple(unsupported)), stacklevel=3)
    approximated = free_armature_message(mj, nm, source)
    if approximated is not None:
        warnings.warn(diagnostics.ApproximatedElementWarning(*approximated), stacklevel=3)
    diagnostics.warn_singular(model, source, stacklevel=3)
    if with_constraints:
        return model, equality
    return model


# ---------------------------------------------------------------------------
# state conversions
# ---------------------------------------------------------------------------


def _free_rows(model: Model):
    """(q start, v start) of every free joint."""
    out = []
    for k, t in enumerate(model.joint_types):
        if t == "free":
            out.append((int(model.topology.q_start[k]), int(model.topology.v_start[k])))
    return out


def _check(x, n, what):
    x = jnp.asarray(x)
    if x.shape[-1] != n:
        raise ValueError(f"{what} must have {n} entries, got shape {x.shape}")
    return x


def q_from_mujoco(model: Model, qpos):
    """MuJoCo ``qpos`` → sodyn ``q`` (the same numbers: see the module docstring)."""
    return _check(qpos, model.nq, "qpos")


def q_to_mujoco(model: Model, q):
    """sodyn ``q`` → MuJoCo ``qpos`` (the same numbers)."""
    return _check(q, model.nq, "q")


def _rot(q, s):
    return spatial.quat_to_rotation(q[..., s + 3: s + 7])


def v_from_mujoco(model: Model, q, qvel):
    """MuJoCo ``qvel`` → sodyn ``v``; free joints ``[v_world; ω_local]`` → ``[ω; Rᵀ v_world]``."""
    q, v = _check(q, model.nq, "q"), _check(qvel, model.nv, "qvel")
    for s, d in _free_rows(model):
        lin = spatial.mtv(_rot(q, s), v[..., d: d + 3])
        v = v.at[..., d: d + 6].set(jnp.concatenate([v[..., d + 3: d + 6], lin], axis=-1))
    return v


def v_to_mujoco(model: Model, q, v):
    """sodyn ``v`` → MuJoCo ``qvel``; free joints ``[ω; v]`` → ``[R v; ω]``."""
    q, v = _check(q, model.nq, "q"), _check(v, model.nv, "v")
    for s, d in _free_rows(model):
        lin = spatial.mv(_rot(q, s), v[..., d + 3: d + 6])
        v = v.at[..., d: d + 6].set(jnp.concatenate([lin, v[..., d: d + 3]], axis=-1))
    return v


def a_from_mujoco(model: Model, q, v, qacc):
    """MuJoCo ``qacc`` → sodyn ``v̇`` (``v`` is sodyn's velocity).

    For a free joint ``v̇_lin = Rᵀ p̈ − ω × v_lin`` (the body-frame linear velocity rotates
    with the body); other joints are unchanged.
    """
    q, v, a = _check(q, model.nq, "q"), _check(v, model.nv, "v"), _check(qacc, model.nv, "qacc")
    for s, d in _free_rows(model):
        w, vl = v[..., d: d + 3], v[..., d + 3: d + 6]
        lin = spatial.mtv(_rot(q, s), a[..., d: d + 3]) - spatial.cross(w, vl)
        a = a.at[..., d: d + 6].set(jnp.concatenate([a[..., d + 3: d + 6], lin], axis=-1))
    return a


def a_to_mujoco(model: Model, q, v, a):
    """sodyn ``v̇`` → MuJoCo ``qacc`` (inverse of :func:`a_from_mujoco`)."""
    q, v, a = _check(q, model.nq, "q"), _check(v, model.nv, "v"), _check(a, model.nv, "a")
    for s, d in _free_rows(model):
        w, vl = v[..., d: d + 3], v[..., d + 3: d + 6]
        lin = spatial.mv(_rot(q, s), a[..., d + 3: d + 6] + spatial.cross(w, vl))
        a = a.at[..., d: d + 6].set(jnp.concatenate([lin, a[..., d: d + 3]], axis=-1))
    return a


def tau_from_mujoco(model: Model, q, qfrc):
    """MuJoCo generalised force → sodyn's (dual to the velocities: the same map as ``v``)."""
    return v_from_mujoco(model, q, qfrc)


def tau_to_mujoco(model: Model, q, tau):
    """sodyn generalised force → MuJoCo's."""
    return v_to_mujoco(model, q, tau)


def velocity_map_to_mujoco(model: Model, q):
    """The matrix ``G(q)`` with ``qvel = G v``."""
    q = _check(q, model.nq, "q")
    return v_to_mujoco(model, q, jnp.eye(model.nv, dtype=q.dtype)).T


def mass_matrix_from_mujoco(model: Model, q, M_mj):
    """MuJoCo's ``M`` (``qvel`` coordinates, e.g. from ``mj_fullM``) → sodyn's: ``Gᵀ M G``."""
    G = velocity_map_to_mujoco(model, q)
    return G.T @ jnp.asarray(M_mj) @ G


__all__ = [
    "EqualityConstraints", "a_from_mujoco", "a_to_mujoco", "from_mujoco", "load_mjcf", "mass_matrix_from_mujoco",
    "q_from_mujoco", "q_to_mujoco", "tau_from_mujoco", "tau_to_mujoco", "v_from_mujoco",
    "v_to_mujoco", "velocity_map_to_mujoco",
]
