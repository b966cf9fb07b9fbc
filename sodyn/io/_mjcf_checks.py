"""Checks of MJCF numbers that MuJoCo's compiler lets through, for :mod:`sodyn.io.mjcf`.

MuJoCo accepts NaN and infinity in most numeric attributes (``pos``, ``damping``,
``armature``, ``stiffness``, ``range``, ``ref``, …: it prints a warning and compiles them into
the model), and it reads ``mass="nan"`` or ``fromto="nan …"`` of a geom as *not given*
(NaN is its "unspecified" value), silently using the density-based mass or the ``size``
instead.  sodyn refuses both, so a typo never becomes a model that integrates to NaN or a
wrong mass: :func:`check_xml_numbers` scans the XML before compiling (naming the element,
its line and the attribute), and :func:`check_compiled_numbers` checks the compiled arrays that
sodyn reads (which also covers ``<include>``\\ d files), naming the element and attribute.
"""

from __future__ import annotations

import numpy as np

from sodyn.io import _xml

#: MJCF attributes holding numbers (on any element, ``<default>`` classes included).
NUMERIC_ATTRIBUTES = frozenset({
    "pos", "quat", "axisangle", "euler", "xyaxes", "zaxis", "fromto", "size", "mass", "density",
    "diaginertia", "fullinertia", "axis", "range", "damping", "armature", "stiffness", "springref", "ref",
    "frictionloss", "friction", "margin", "gap", "gear", "gainprm", "biasprm", "ctrlrange", "forcerange",
    "kp", "kv", "gravity", "timestep", "qpos", "qvel", "ctrl", "solref", "solimp", "solmix", "springdamper",
    "priority", "condim", "polycoef", "anchor", "relpose", "torquescale", "lengthrange", "actuatorfrcrange",
})


def _nonfinite(text: str) -> bool:
    """Whether ``text`` is a list of numbers with a NaN or an infinity among them."""
    try:
        vals = [float(t) for t in text.split()]
    except ValueError:
        return False  # not a number list: MuJoCo reports it
    return bool(vals) and not all(np.isfinite(vals))


def check_xml_numbers(text: str, source: str) -> None:
    """Raise ``ValueError`` naming the element, line and attribute of the first numeric
    attribute of the MJCF ``text`` (not its includes) holding NaN or infinity."""
    try:
        doc = _xml.parse(text, source)
    except ValueError:
        return  # malformed: MuJoCo's own message is the better one
    for el in doc.root.iter():
        for attr, value in el.attrib.items():
            if attr in NUMERIC_ATTRIBUTES and _nonfinite(value):
                raise doc.error(el, f"attribute {attr}={value!r} is not finite (NaN or infinity); MuJoCo "
                                "would compile it (or, for a geom's mass or fromto, silently ignore it)")


def check_compiled_numbers(mj, nm) -> None:
    """Raise ``ValueError`` naming the elements and attributes of the compiled ``mj`` whose
    numbers that sodyn reads are not finite (``nm(kind, id, fallback)`` names an element)."""
    import mujoco

    obj = mujoco.mjtObj
    bad: list[str] = []

    def scan(kind, tag, n, fields):
        for attr, values, rows in fields:
            count = len(rows) if rows is not None else n
            if count == 0:
                continue
            values = np.asarray(values, dtype=np.float64).reshape(count, -1)
            for r in np.flatnonzero(~np.all(np.isfinite(values), axis=1)):
                i = int(rows[r]) if rows is not None else int(r)
                if tag == "body" and i == 0:
                    continue
                bad.append(f"<{tag} name={nm(kind, i, f'{tag}{i}')!r}> attribute {attr} = {values[r].tolist()}")

    scan(obj.mjOBJ_BODY, "body", mj.nbody, [
        ("pos", mj.body_pos, None), ("quat (orientation)", mj.body_quat, None), ("mass", mj.body_mass, None),
        ("<inertial> pos", mj.body_ipos, None), ("<inertial> quat", mj.body_iquat, None),
        ("<inertial> diaginertia", mj.body_inertia, None)])
    scan(obj.mjOBJ_JOINT, "joint", mj.njnt, [
        ("pos", mj.jnt_pos, None), ("axis", mj.jnt_axis, None), ("range", mj.jnt_range, None),
        ("stiffness", mj.jnt_stiffness, None),
        ("damping", mj.dof_damping, mj.dof_jntid), ("armature", mj.dof_armature, mj.dof_jntid),
        ("frictionloss", mj.dof_frictionloss, mj.dof_jntid)])
    for j in range(mj.njnt):
        a = int(mj.jnt_qposadr[j])
        nq = {0: 7, 1: 4}.get(int(mj.jnt_type[j]), 1)
        for attr, arr in (("ref", mj.qpos0), ("springref", mj.qpos_spring)):
            if not np.all(np.isfinite(arr[a: a + nq])):
                bad.append(f"<joint name={nm(obj.mjOBJ_JOINT, j, f'joint{j}')!r}> attribute {attr} = "
                           f"{np.asarray(arr[a: a + nq]).tolist()}")
    scan(obj.mjOBJ_GEOM, "geom", mj.ngeom, [
        ("size", mj.geom_size, None), ("pos", mj.geom_pos, None), ("quat (orientation)", mj.geom_quat, None),
        ("friction", mj.geom_friction, None), ("margin", mj.geom_margin, None), ("gap", mj.geom_gap, None)])
    scan(obj.mjOBJ_SITE, "site", mj.nsite, [("pos", mj.site_pos, None), ("quat (orientation)", mj.site_quat, None)])
    scan(obj.mjOBJ_ACTUATOR, "actuator", mj.nu, [
        ("gear", mj.actuator_gear, None), ("gainprm", mj.actuator_gainprm, None),
        ("biasprm", mj.actuator_biasprm, None), ("ctrlrange", mj.actuator_ctrlrange, None),
        ("forcerange", mj.actuator_forcerange, None)])
    scan(obj.mjOBJ_KEY, "key", mj.nkey, [("qpos", mj.key_qpos, None), ("qvel", mj.key_qvel, None)])
    if not np.all(np.isfinite(mj.opt.gravity)):
        bad.append(f"<option> attribute gravity = {np.asarray(mj.opt.gravity).tolist()}")
    if bad:
        raise ValueError("numbers that are not finite (NaN or infinity), which MuJoCo compiled:\n  " + "\n  ".join(bad))


def free_armature_message(mj, nm, source: str) -> tuple[str, tuple[str, ...]] | None:
    """The warning text and joint names for free joints whose three linear armature values,
    or three linear damping values, differ (``None`` if there are none).

    MuJoCo adds ``dof_armature`` ``A = diag(a)`` to the diagonal of ``M`` in its own
    coordinates, where a free joint's first three velocities are the world-frame linear
    velocity ``ṗ``: the armature's force is ``A p̈``, in sodyn's body-frame coordinates
    (``v_lin = Rᵀ ṗ``) ``Rᵀ A R (v̇_lin + ω × v_lin)``.  sodyn's free-joint linear armature is
    the body-frame added inertia ``A`` with its velocity force
    (:func:`sodyn.algorithms.common.passive_joint_force`): ``A v̇_lin + ω × (A v_lin)`` on the
    linear rows and ``v_lin × (A v_lin)`` on the angular ones.  For equal values ``A = a I``
    both are ``a (v̇_lin + ω × v_lin)`` and the model is exact; for unequal values
    ``Rᵀ A R`` depends on the orientation and sodyn's ``A`` does not.  MuJoCo's linear damping
    ``D ṗ`` is ``Rᵀ D R v_lin`` in sodyn's coordinates, ``d v_lin`` (sodyn's) only for equal
    values.  (MJCF gives one armature and one damping per joint, so unequal values come only
    from a compiled model edited before :func:`~sodyn.io.mjcf.from_mujoco`.)  The angular
    armature and damping act on ``ω`` in the body frame in both libraries and are exact.
    """
    import mujoco

    names, kinds = [], set()
    for j in range(mj.njnt):
        if int(mj.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE):
            d = int(mj.jnt_dofadr[j])
            unequal = [k for k, x in (("armature", mj.dof_armature), ("damping", mj.dof_damping))
                       if np.ptp(np.asarray(x[d: d + 3], np.float64)) > 0]
            if unequal:
                names.append(nm(mujoco.mjtObj.mjOBJ_JOINT, j, f"joint{j}"))
                kinds.update(unequal)
    if not names:
        return None
    what = " and ".join(k for k in ("armature", "damping") if k in kinds)
    return (f"{source}: free joint(s) {', '.join(map(repr, names))} have unequal {what} values on their three "
            "linear dofs, which sodyn approximates: MuJoCo applies them to the world-frame linear velocity "
            "(qvel[0:3]), which is Rᵀ diag(a) R in the body frame and depends on the orientation; sodyn applies "
            "diag(a) to the body-frame linear velocity (for armature: an added translational inertia carried by "
            "the body).  With equal values the two agree at every orientation; with unequal ones the mass "
            "matrix, inverse and forward dynamics differ from MuJoCo's on the free joint's rows.  The angular "
            "armature and damping are exact.", tuple(names))


__all__ = ["NUMERIC_ATTRIBUTES", "check_compiled_numbers", "check_xml_numbers", "free_armature_message"]
