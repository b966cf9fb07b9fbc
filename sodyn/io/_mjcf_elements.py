"""MuJoCo model elements beyond the kinematic tree, converted for :mod:`sodyn.io.mjcf`:
``<flag>`` switches, collision geoms, actuators, keyframe velocities, and the list of the
elements sodyn does not model (see the :mod:`sodyn.io.mjcf` docstring for the rules)."""

from __future__ import annotations

import numpy as np

from sodyn.model import ModelBuilder
from sodyn.rotations import quat_to_matrix

#: MuJoCo geom types kept as collision geometry, by ``mjtGeom`` value.
_GEOM_KEPT = {0: "plane", 2: "sphere", 3: "capsule", 6: "box"}
_GEOM_NAMES = {1: "hfield", 4: "ellipsoid", 5: "cylinder", 7: "mesh", 8: "sdf"}
#: MuJoCo equality types, by ``mjtEq`` value.
EQ_NAMES = {0: "connect", 1: "weld", 2: "joint", 3: "tendon", 4: "flex", 5: "distance"}


def switched_off(mj) -> set[str]:
    """Names of the dynamics-changing ``<flag>`` switches that the model turns off."""
    import mujoco

    bits = mujoco.mjtDisableBit
    off = {n for n in ("constraint", "equality", "frictionloss", "limit", "contact", "spring", "damper", "gravity",
                       "clampctrl", "actuation")
           if mj.opt.disableflags & int(getattr(bits, f"mjDSBL_{n.upper()}"))}
    if "constraint" in off:
        off |= {"equality", "frictionloss", "limit", "contact"}
    return off


def qvel_to_v(mj, qpos, qvel) -> np.ndarray:
    """MuJoCo ``qvel`` → sodyn ``v`` in NumPy (free joints: ``[v_world; ω]`` → ``[ω; Rᵀ v_world]``)."""
    v = np.array(qvel, dtype=np.float64)
    for j in range(mj.njnt):
        if mj.jnt_type[j] == 0:  # free
            a, d = int(mj.jnt_qposadr[j]), int(mj.jnt_dofadr[j])
            r = quat_to_matrix(qpos[a + 3: a + 7])
            v[d: d + 6] = np.concatenate([qvel[d + 3: d + 6], r.T @ qvel[d: d + 3]])
    return v


def add_geoms(mj, b: ModelBuilder, last, nm, unsupported: list[str]) -> None:
    import mujoco

    for g in range(mj.ngeom):
        if mj.geom_contype[g] == 0 and mj.geom_conaffinity[g] == 0:
            continue  # visual only
        t = int(mj.geom_type[g])
        gname = nm(mujoco.mjtObj.mjOBJ_GEOM, g, f"geom{g}")
        if t not in _GEOM_KEPT:
            unsupported.append(f"<geom name={gname!r} type={_GEOM_NAMES.get(t, t)!r}> (collision geometry of "
                               "this type)")
            continue
        par, off = last[int(mj.geom_bodyid[g])]
        b.add_geom(gname, par, _GEOM_KEPT[t], np.asarray(mj.geom_size[g], float),
                   rotation=quat_to_matrix(mj.geom_quat[g]), translation=off + np.asarray(mj.geom_pos[g], float),
                   friction=np.asarray(mj.geom_friction[g], float))


def add_actuators(mj, b: ModelBuilder, joint_names, nm, off, unsupported: list[str]) -> None:
    import mujoco

    for i in range(mj.nu):
        aname = nm(mujoco.mjtObj.mjOBJ_ACTUATOR, i, f"actuator{i}")
        j = int(mj.actuator_trnid[i, 0])
        ok = (int(mj.actuator_trntype[i]) == int(mujoco.mjtTrn.mjTRN_JOINT) and int(mj.jnt_type[j]) in (2, 3)
              and int(mj.actuator_dyntype[i]) == int(mujoco.mjtDyn.mjDYN_NONE)
              and int(mj.actuator_gaintype[i]) == int(mujoco.mjtGain.mjGAIN_FIXED)
              and int(mj.actuator_biastype[i]) in (int(mujoco.mjtBias.mjBIAS_NONE), int(mujoco.mjtBias.mjBIAS_AFFINE)))
        if not ok:
            unsupported.append(f"<actuator name={aname!r}> (only fixed-gain, affine-bias actuators without "
                               "activation dynamics on a hinge or slide are modelled)")
            continue
        gain = float(mj.actuator_gainprm[i, 0])
        bias = np.asarray(mj.actuator_biasprm[i, :3], float) if mj.actuator_biastype[i] else np.zeros(3)
        kind = "general"
        if gain == 1 and not np.any(bias):
            kind = "motor"
        elif bias[0] == 0 and bias[1] == -gain and bias[2] <= 0:
            kind = "position"
        elif bias[0] == 0 and bias[1] == 0 and bias[2] == -gain:
            kind = "velocity"
        inf = np.array([-np.inf, np.inf])
        ctrl = (np.asarray(mj.actuator_ctrlrange[i], float)
                if mj.actuator_ctrllimited[i] and "clampctrl" not in off else inf)
        force = np.asarray(mj.actuator_forcerange[i], float) if mj.actuator_forcelimited[i] else inf
        b.add_actuator(aname, joint_names[j], kind=kind, gear=float(mj.actuator_gear[i, 0]), gain=gain, bias=bias,
                       ctrl_range=ctrl, force_range=force)


def unsupported_elements(mj, nm, off, with_constraints: bool, out: list[str]) -> None:
    import mujoco

    obj = mujoco.mjtObj
    for t in range(mj.ntendon):
        out.append(f"<tendon name={nm(obj.mjOBJ_TENDON, t, f'tendon{t}')!r}>")
    for i in np.flatnonzero(mj.body_gravcomp):
        out.append(f"<body name={nm(obj.mjOBJ_BODY, int(i), f'body{i}')!r} gravcomp={mj.body_gravcomp[i]:g}>")
    if mj.opt.density or mj.opt.viscosity:
        out.append(f"<option density={mj.opt.density:g} viscosity={mj.opt.viscosity:g}> (fluid forces)")
    for g in np.flatnonzero(mj.geom_fluid[:, 0]):
        out.append(f"<geom name={nm(obj.mjOBJ_GEOM, int(g), f'geom{g}')!r} fluidshape='ellipsoid'> (fluid forces)")
    if mj.npair and "contact" not in off:
        out.append(f"{mj.npair} <contact><pair> element(s) (explicit contact pairs)")
    if getattr(mj, "nflex", 0):
        out.append(f"{mj.nflex} <flex> element(s)")
    if mj.opt.enableflags & int(mujoco.mjtEnableBit.mjENBL_OVERRIDE) and "contact" not in off:
        out.append("<flag override='enable'> (contact parameter override)")
    if "equality" in off:
        return
    for e in range(mj.neq):
        kind = int(mj.eq_type[e])
        if not with_constraints or not eq_supported(mj, e):
            out.append(f"<equality><{EQ_NAMES.get(kind, kind)} name={nm(obj.mjOBJ_EQUALITY, e, f'equality{e}')!r}>"
                       + ("" if with_constraints else " (pass with_constraints=True to get it)"))


def eq_supported(mj, e: int) -> bool:
    """connect (bodies or sites), weld between bodies, joint coupling of hinges/slides."""
    import mujoco

    kind, objtype = int(mj.eq_type[e]), int(mj.eq_objtype[e])
    body, site = int(mujoco.mjtObj.mjOBJ_BODY), int(mujoco.mjtObj.mjOBJ_SITE)
    if kind == 0:
        return objtype in (body, site)
    if kind == 1:
        return objtype == body
    if kind == 2:
        return all(mj.jnt_type[j] in (2, 3) for j in mj.eq_obj1id[e: e + 1].tolist() + [
            x for x in mj.eq_obj2id[e: e + 1].tolist() if x >= 0])
    return False


__all__ = [
    "EQ_NAMES", "add_actuators", "add_geoms", "eq_supported", "qvel_to_v", "switched_off",
    "unsupported_elements",
]
