"""MuJoCo model elements beyond the kinematic tree, converted for :mod:`sodyn.io.mjcf`:
``<flag>`` switches, collision geoms, actuators, keyframe velocities, the simulation data the
steppers use (sensors, fluid, equality constraints), and the list of the elements sodyn does not
model (see the :mod:`sodyn.io.mjcf` docstring for the rules)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from sodyn.io.meshes import Hull, convex_hull
from sodyn.model import Model
from sodyn.model_builder import ModelBuilder
from sodyn.rotations import quat_to_matrix

#: MuJoCo geom types kept as collision geometry, by ``mjtGeom`` value.
_GEOM_KEPT = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}
_GEOM_NAMES = {8: "sdf"}
#: MuJoCo's default solver parameters of geoms and pairs (``solref``, ``solimp``, ``solmix``).
_SOLREF, _SOLIMP = (0.02, 1.0), (0.9, 0.95, 0.001, 0.5, 2.0)
_SOLVER_NOTE = ("(MuJoCo's constraint-solver impedance; sodyn's contact law uses its own stiffness and damping, "
                "sodyn.simulate.contact)")
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


def _listed(names: list[str], most: int = 8) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def add_geoms(mj, b: ModelBuilder, last, nm, unsupported: list[str]) -> dict[int, str]:
    """Add the collision geoms (``contype`` or ``conaffinity`` non-zero, or named by a
    ``<pair>``) of the types sodyn models; return ``{MuJoCo geom id: sodyn geom name}``."""
    import mujoco

    in_pair = set(mj.pair_geom1.tolist()) | set(mj.pair_geom2.tolist())
    taken = {mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g) for g in range(mj.ngeom)}
    kept: dict[int, str] = {}
    wide, solver = [], []
    fields: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for g in range(mj.ngeom):
        if mj.geom_contype[g] == 0 and mj.geom_conaffinity[g] == 0 and g not in in_pair:
            continue  # visual only
        t = int(mj.geom_type[g])
        gname = nm(mujoco.mjtObj.mjOBJ_GEOM, g, None)
        if gname is None:  # unnamed: geom<g>, unless a named geom took that
            gname, i = f"geom{g}", 1
            while gname in taken:
                gname, i = f"geom{g}_{i}", i + 1
            taken.add(gname)
        hfield = height_field(mj, int(mj.geom_dataid[g]), fields) if t == 1 else None
        if t not in _GEOM_KEPT or (t == 1 and hfield is None):
            why = "a height field with fewer than 2 rows or columns" if t == 1 else "collision geometry of this type"
            unsupported.append(f"<geom name={gname!r} type={_GEOM_NAMES.get(t, 'hfield')!r}> ({why})")
            continue
        par, off = last[int(mj.geom_bodyid[g])]
        mesh = _GEOM_KEPT[t] == "mesh"
        size = hfield[1] if t == 1 else None if mesh else np.asarray(mj.geom_size[g], float)
        b.add_geom(gname, par, _GEOM_KEPT[t], size,
                   rotation=quat_to_matrix(mj.geom_quat[g]), translation=off + np.asarray(mj.geom_pos[g], float),
                   friction=np.asarray(mj.geom_friction[g], float), contype=int(mj.geom_contype[g]),
                   conaffinity=int(mj.geom_conaffinity[g]), condim=int(mj.geom_condim[g]),
                   margin=float(mj.geom_margin[g]), gap=float(mj.geom_gap[g]), priority=int(mj.geom_priority[g]),
                   vertices=mesh_hull(mj, int(mj.geom_dataid[g]), gname) if mesh else None,
                   elevation=None if hfield is None else hfield[0])
        kept[g] = gname
        if mj.geom_condim[g] > 3:
            wide.append(gname)
        if (not np.allclose(mj.geom_solref[g], _SOLREF) or not np.allclose(mj.geom_solimp[g], _SOLIMP)
                or mj.geom_solmix[g] != 1):
            solver.append(gname)
    if wide:
        unsupported.append(f"condim 4/6 of geom(s) {_listed(wide)} (torsional/rolling friction: kept as data, "
                           "but sodyn's contact law applies sliding friction only)")
    if solver:
        unsupported.append(f"non-default solref/solimp/solmix of geom(s) {_listed(solver)} {_SOLVER_NOTE}")
    return kept


def height_field(mj, k: int, cache: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """MuJoCo's compiled height field ``k``: ``(elevation (nrow, ncol), size (4,))``, the
    elevation ``hfield_data`` as MuJoCo normalised it (row ``r`` at ``y = −y₀ + 2y₀ r/(nrow − 1)``;
    a PNG's top row is MuJoCo's last); ``None`` for a grid without cells (fewer than 2 rows or
    columns, which MuJoCo never collides).  Geoms sharing a height field get the same arrays."""
    if k not in cache:
        nrow, ncol, adr = int(mj.hfield_nrow[k]), int(mj.hfield_ncol[k]), int(mj.hfield_adr[k])
        data = np.asarray(mj.hfield_data[adr: adr + nrow * ncol], np.float64).reshape(nrow, ncol)
        cache[k] = None if nrow < 2 or ncol < 2 else (data, np.asarray(mj.hfield_size[k], np.float64))
    return cache[k]


def mesh_hull(mj, mesh: int, gname: str) -> Hull:
    """The convex hull MuJoCo collides for mesh ``mesh``, in the geom frame: the vertices of
    its convex graph (``mesh_graph``: ``numvert``, ``numface``, ``vert_edgeadr``,
    ``vert_globalid``, …; the hull qhull found, capped by ``maxhullvert``), else the hull of all
    its vertices.  ``mesh_vert`` is already in the geom frame: the compiler moved the mesh to
    its own frame and composed that move into ``geom_pos``/``geom_quat``."""
    adr, num = int(mj.mesh_vertadr[mesh]), int(mj.mesh_vertnum[mesh])
    vert = np.asarray(mj.mesh_vert[adr: adr + num], float)
    graph = int(mj.mesh_graphadr[mesh])
    if graph >= 0:
        nv = int(mj.mesh_graph[graph])
        vert = vert[np.asarray(mj.mesh_graph[graph + 2 + nv: graph + 2 + 2 * nv])]
    return convex_hull(vert, what=f"geom {gname!r}")


def add_contact(mj, b: ModelBuilder, last, nm, kept: dict[int, str], unsupported: list[str]) -> None:
    """``<contact><pair>`` and ``<exclude>``, ``<flag filterparent>`` and the weld parents."""
    import mujoco

    obj = mujoco.mjtObj
    b.filter_parent = not mj.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    wide, solver = [], []
    for p in range(mj.npair):
        pname = nm(obj.mjOBJ_PAIR, p, f"pair{p}")
        g1, g2 = int(mj.pair_geom1[p]), int(mj.pair_geom2[p])
        missing = [nm(obj.mjOBJ_GEOM, g, f"geom{g}") for g in (g1, g2) if g not in kept]
        if missing:
            unsupported.append(f"<pair name={pname!r}> (its geom(s) {_listed(missing)} are of a type sodyn does "
                               "not model)")
            continue
        f = np.asarray(mj.pair_friction[p], float)
        b.add_contact_pair(kept[g1], kept[g2], name=pname, condim=int(mj.pair_dim[p]), friction=f[[0, 2, 3]],
                           margin=float(mj.pair_margin[p]), gap=float(mj.pair_gap[p]))
        if mj.pair_dim[p] > 3:
            wide.append(pname)
        if (not np.allclose(mj.pair_solref[p], _SOLREF) or not np.allclose(mj.pair_solimp[p], _SOLIMP)
                or np.any(mj.pair_solreffriction[p])):
            solver.append(pname)
    if wide:
        unsupported.append(f"condim 4/6 of pair(s) {_listed(wide)} (torsional/rolling friction: kept as data, "
                           "but sodyn's contact law applies sliding friction only)")
    if solver:
        unsupported.append(f"non-default solref/solreffriction/solimp of pair(s) {_listed(solver)} {_SOLVER_NOTE}")
    excluded = {(int(s >> 16), int(s & 0xFFFF)) for s in mj.exclude_signature}
    for b1, b2 in sorted(excluded):
        b.add_contact_exclude(last[b1][0], last[b2][0])
        wider = _wider_exclusion(mj, b1, b2, kept, excluded)
        if wider:
            n1, n2 = (nm(obj.mjOBJ_BODY, x, f"body{x}") for x in (b1, b2))
            unsupported.append(f"<exclude body1={n1!r} body2={n2!r}> (sodyn excludes whole weld bodies, so it also "
                               f"drops {len(wider)} geom pair(s) MuJoCo keeps, e.g. {wider[0]})")


def _wider_exclusion(mj, b1: int, b2: int, kept: dict[int, str], excluded) -> list[tuple[str, str]]:
    """Geom pairs that excluding the weld bodies of MuJoCo bodies ``b1``, ``b2`` drops but MuJoCo's
    exclusion of the two bodies does not (bitmask and other exclusions taken into account)."""
    weld, body = mj.body_weldid, mj.geom_bodyid
    on = lambda w: [g for g in kept if weld[body[g]] == weld[w]]  # noqa: E731
    out = []
    for x in on(b1):
        for y in on(b2):
            bx, by = int(body[x]), int(body[y])
            pair = (min(bx, by), max(bx, by))
            mask = (mj.geom_contype[x] & mj.geom_conaffinity[y]) | (mj.geom_contype[y] & mj.geom_conaffinity[x])
            if pair not in excluded and mask:
                out.append((kept[x], kept[y]))
    return out


_DYNAMICS = {0: "none", 1: "integrator", 2: "filter", 3: "filterexact"}


def _actuator_kind(gaintype: int, biastype: int, dynamics: str, gain: np.ndarray, bias: np.ndarray) -> str:
    """MuJoCo's shortcut an actuator was written with, as far as its parameters tell."""
    if gaintype == 1 and biastype == 0 and dynamics == "none" and gain[0] == 0 and gain[1] == 0 and gain[2] < 0:
        return "damper"
    if gaintype != 0:
        return "general"
    k = gain[0]
    if dynamics == "integrator" and bias[0] == 0 and bias[1] == -k and bias[2] <= 0:
        return "intvelocity"
    if dynamics != "none":
        return "general"
    if k == 1 and not np.any(bias):
        return "motor"
    if bias[0] == 0 and bias[1] == -k and bias[2] <= 0:
        return "position"
    if bias[0] == 0 and bias[1] == 0 and bias[2] == -k:
        return "velocity"
    return "general"


def add_actuators(mj, b: ModelBuilder, joint_names, nm, off, unsupported: list[str]) -> None:
    """MuJoCo's joint and fixed-tendon actuators with fixed or affine gain, no or affine bias and
    activation dynamics none, integrator, filter or filterexact (:class:`~sodyn.Actuators`; a
    tendon actuator is added on a joint of its tendon, and :func:`with_simulation_data` points it
    at the tendon)."""
    import mujoco

    from sodyn.simulate.tendons import fixed_tendon_wraps

    inf = np.array([-np.inf, np.inf])
    for i in range(mj.nu):
        aname = nm(mujoco.mjtObj.mjOBJ_ACTUATOR, i, f"actuator{i}")
        j = int(mj.actuator_trnid[i, 0])
        gaintype, biastype, dyntype = (int(mj.actuator_gaintype[i]), int(mj.actuator_biastype[i]),
                                       int(mj.actuator_dyntype[i]))
        trn = int(mj.actuator_trntype[i])
        wraps = fixed_tendon_wraps(mj, j) if trn == int(mujoco.mjtTrn.mjTRN_TENDON) else None
        if wraps:  # on a fixed tendon: registered on the joint it moves most (the tendon is set later)
            j = max(wraps, key=lambda w: abs(w[1]))[0]
        ok = ((trn == int(mujoco.mjtTrn.mjTRN_JOINT) and int(mj.jnt_type[j]) in (2, 3) or wraps)
              and dyntype in _DYNAMICS and gaintype in (0, 1) and biastype in (0, 1)
              and int(mj.actuator_actnum[i]) == (dyntype != 0))
        if not ok:
            what = ("muscle" if 2 in (gaintype, biastype) or dyntype == 4 else
                    "user-defined" if 3 in (gaintype, biastype) or dyntype == 5 else None)
            reason = (f"{what} actuators are not modelled" if what else
                      "only joint transmissions on a hinge or slide and fixed-tendon transmissions are modelled")
            unsupported.append(f"<actuator name={aname!r}> ({reason})")
            continue
        dynamics = _DYNAMICS[dyntype]
        gain = np.asarray(mj.actuator_gainprm[i, :3], float) * (1.0 if gaintype else np.array([1.0, 0.0, 0.0]))
        bias = np.asarray(mj.actuator_biasprm[i, :3], float) if biastype else np.zeros(3)
        ctrl = (np.asarray(mj.actuator_ctrlrange[i], float)
                if mj.actuator_ctrllimited[i] and "clampctrl" not in off else inf)
        force = np.asarray(mj.actuator_forcerange[i], float) if mj.actuator_forcelimited[i] else inf
        act = np.asarray(mj.actuator_actrange[i], float) if mj.actuator_actlimited[i] else inf
        b.add_actuator(aname, joint_names[j], kind=_actuator_kind(gaintype, biastype, dynamics, gain, bias),
                       gear=float(mj.actuator_gear[i, 0]), gain=float(gain[0]), bias=bias, ctrl_range=ctrl,
                       force_range=force, gain_slope=gain[1:], dynamics=dynamics,
                       time_constant=max(float(mj.actuator_dynprm[i, 0]), mujoco.mjMINVAL) if dyntype in (2, 3)
                       else 1.0, act_range=act, act_early=bool(mj.actuator_actearly[i]))


def unsupported_elements(mj, nm, off, with_constraints: bool, out: list[str]) -> None:
    import mujoco

    obj = mujoco.mjtObj
    for j in np.flatnonzero(getattr(mj, "jnt_actgravcomp", np.zeros(0))):
        out.append(f"<joint name={nm(obj.mjOBJ_JOINT, int(j), f'joint{j}')!r} actuatorgravcomp='true'> (gravity "
                   "compensation is applied as a passive force, not through the actuators)")
    if getattr(mj, "nflex", 0):
        out.append(f"{mj.nflex} <flex> element(s)")
    if mj.opt.enableflags & int(mujoco.mjtEnableBit.mjENBL_OVERRIDE) and "contact" not in off:
        out.append("<flag override='enable'> (contact parameter override)")
    if "equality" in off:
        return
    for e in range(mj.neq):
        kind = int(mj.eq_type[e])
        if not eq_supported(mj, e) and not tendon_eq_supported(mj, e):
            out.append(f"<equality><{EQ_NAMES.get(kind, kind)} name={nm(obj.mjOBJ_EQUALITY, e, f'equality{e}')!r}>")


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


def _on_tendons(mj, actuators, tendons):
    """``actuators`` with the static ``tendon`` index of each MuJoCo tendon actuator."""
    import mujoco

    obj = mujoco.mjtObj
    by_name = {mujoco.mj_id2name(mj, obj.mjOBJ_ACTUATOR, i) or f"actuator{i}": i for i in range(mj.nu)}
    index = []
    for name in actuators.names:
        i = by_name[name]
        t = int(mj.actuator_trnid[i, 0])
        on = int(mj.actuator_trntype[i]) == int(mujoco.mjtTrn.mjTRN_TENDON)
        index.append(tendons.index(mujoco.mj_id2name(mj, obj.mjOBJ_TENDON, t) or f"tendon{t}") if on else -1)
    return dataclasses.replace(actuators, tendon=tuple(index))


def tendon_eq_supported(mj, e: int) -> bool:
    """A tendon equality between fixed tendons of hinges and slides (a ``"tendon"`` row of
    :class:`~sodyn.io.EqualityConstraints` and a ``"tendon"`` coupling of the model's closures)."""
    from sodyn.simulate.tendons import fixed_tendon_wraps

    tendons = [t for t in (int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])) if t >= 0]
    return int(mj.eq_type[e]) == 3 and all(fixed_tendon_wraps(mj, t) is not None for t in tendons)


def with_simulation_data(mj, model: Model, equality, unsupported: list[str]) -> Model:
    """``model`` with what the steppers use by default: the file's fixed tendons (with its tendon
    actuators pointed at them), sensors, fluid and active equality constraints as
    :class:`~sodyn.LoopClosures` (hard constraints; MuJoCo's are soft; tendon equalities after
    the others); what is not modelled goes to ``unsupported``."""
    import mujoco

    from sodyn.constraints import LoopClosures
    from sodyn.io.mjcf_sensors import sensors_from_mujoco
    from sodyn.simulate.fluid import fluid_from_mujoco
    from sodyn.simulate.tendons import tendons_from_mujoco

    tendons, missing = tendons_from_mujoco(mj, model, switched_off(mj))
    unsupported.extend(missing)
    if tendons is not None:
        model = dataclasses.replace(model, tendons=tendons, actuators=_on_tendons(mj, model.actuators, tendons))
    sensors = None
    if mj.nsensor and not mj.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_SENSOR):
        sensors, missing = sensors_from_mujoco(mj, model)
        unsupported.extend(missing)
    fluid, missing = fluid_from_mujoco(mj, model)
    unsupported.extend(missing)
    closures = None
    if any(equality.active):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # inactive elements are left out by design
            closures = LoopClosures.from_equality(model, equality)
    return dataclasses.replace(model, sensors=sensors if sensors is not None and len(sensors) else None,
                               fluid=fluid, closures=closures)


__all__ = [
    "EQ_NAMES", "add_actuators", "add_contact", "add_geoms", "eq_supported", "mesh_hull", "qvel_to_v",
    "switched_off", "unsupported_elements", "with_simulation_data",
]
