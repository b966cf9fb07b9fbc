"""The build step of :class:`~sodyn.model_builder.ModelBuilder`: from what the builder recorded
(:class:`BuilderRecords`) to a :class:`~sodyn.model.Model`.

* Bodies are ordered depth-first (the order of ``q``/``v`` in Pinocchio and MuJoCo).
* A fixed joint is merged into its movable ancestor ``a``: link ``i`` with parent ``p`` sits at
  ``(R_i, p_i) = (R_p R_tree,i, p_p + R_p t_tree,i)`` in ``a``'s frame, and ``a``'s inertia becomes
  the composite ``m = Σ m_i``, ``c = Σ m_i c_i / m`` and, about the centre of mass,
  ``I = Σ [R_i I_i R_iᵀ + m_i (|c_i|² 𝟙 − c_i c_iᵀ)] − m (|c|² 𝟙 − c cᵀ)`` (``c_i`` link ``i``'s
  centre of mass in ``a``'s frame); a massless body keeps the sum of the rotational inertias.
  Gravity compensation carries ``Σ gravcomp_i m_i (1, c_i)``.
* Frames: one per movable body, one per merged link, then the user frames, each placed in its
  movable body; geoms, contact pairs, excludes and actuators are moved onto the movable bodies
  the same way, and keyframes are reordered to the model's ``q``/``v`` layout.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from sodyn.joints import JointSpec, nq_of, nv_of
from sodyn.model import WORLD, Model, check_model_dtype
from sodyn.model_data import Actuators, ContactPairs, Geoms, HeightFields, Keyframes
from sodyn.topology import compile_topology


@dataclasses.dataclass
class BodyRecord:
    """A body as :meth:`~sodyn.model_builder.ModelBuilder.add_body` recorded it (builder indices)."""

    name: str
    parent: int
    joint: JointSpec
    joint_name: str
    rotation: np.ndarray
    translation: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    damping: np.ndarray
    armature: np.ndarray
    friction: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity_limit: np.ndarray
    effort_limit: np.ndarray
    stiffness: np.ndarray
    spring_reference: np.ndarray
    q_neutral: np.ndarray
    gravcomp: float = 0.0


@dataclasses.dataclass
class GeomRecord:
    """A geom as :meth:`~sodyn.model_builder.ModelBuilder.add_geom` recorded it."""

    name: str
    type: str
    body: int
    rotation: np.ndarray
    translation: np.ndarray
    size: np.ndarray
    friction: np.ndarray
    static: dict  # contype, conaffinity, condim, priority, margin, gap (check_geom)
    hull: object = None  # sodyn.io.meshes.Hull of a mesh geom
    hfield: tuple | None = None  # (elevation (nrow, ncol), (x, y, z_top, z_base)) of a height field geom


@dataclasses.dataclass
class ActuatorRecord:
    """An actuator as :meth:`~sodyn.model_builder.ModelBuilder.add_actuator` recorded it."""

    name: str
    joint: str
    kind: str
    gear: float
    gain: float
    bias: np.ndarray
    ctrl_range: np.ndarray
    force_range: np.ndarray
    extra: dict


@dataclasses.dataclass
class BuilderRecords:
    """Everything a :class:`~sodyn.model_builder.ModelBuilder` recorded, in insertion order
    (bodies by builder index, ``WORLD`` for the world)."""

    bodies: list[BodyRecord]
    frames: list[tuple[str, int, np.ndarray, np.ndarray]]  # name, body, rotation, translation
    geoms: list[GeomRecord]
    # contact pairs: name, geom1, geom2, condim, friction, margin, gap
    pairs: list[tuple[str, int, int, int, np.ndarray, float, float]]
    excludes: list[tuple[int, int]]  # body pairs
    weld_parent: dict[int, int]
    actuators: list[ActuatorRecord]
    keyframes: list[tuple[str, np.ndarray, np.ndarray]]  # name, q, v (joints in insertion order)
    gravity: np.ndarray
    name: str
    filter_parent: bool


# parameters that must be finite (the limits may be ±inf: unlimited)
_FINITE_FIELDS = ("mass", "com", "inertia", "tree_rotation", "tree_translation", "axis", "pitch", "frame_rotation",
                  "frame_translation", "gravity", "damping", "armature", "friction", "stiffness",
                  "spring_reference", "q_neutral", "gravcomp")


def _check_built_values(model: Model) -> None:
    """A parameter the builder accepted (finite in float64) that is not finite in the model's dtype
    overflowed it: raise naming the field (and the body for per-body fields)."""
    for name in _FINITE_FIELDS:
        x = np.asarray(getattr(model, name))
        if not np.all(np.isfinite(x)):
            at = np.argwhere(~np.isfinite(x))[0]
            where = f" of body {model.body_names[at[0]]!r}" if x.shape[:1] == (model.n_bodies,) else ""
            raise ValueError(f"model parameter {name}{where} overflows {x.dtype.name} (largest "
                             f"{float(np.finfo(x.dtype).max):.3g}); rescale it or build with dtype=float64")


def assemble_model(records: BuilderRecords, dtype=None) -> Model:
    """The model ``records`` describe (module doc), its parameters in ``dtype`` (float32 or float64,
    default JAX's).  Raises ``ValueError`` for no bodies, no movable joint, an actuator on a
    missing, fixed or multi-dof joint, a keyframe of the wrong size, or a parameter that
    overflows ``dtype``."""
    if not records.bodies:
        raise ValueError("cannot build a model without bodies")
    bodies = records.bodies
    n_all = len(bodies)
    children: list[list[int]] = [[] for _ in range(n_all)]
    roots = []
    for i, b in enumerate(bodies):
        (roots if b.parent == WORLD else children[b.parent]).append(i)

    # Depth-first order of all links (the order of q/v in Pinocchio and MuJoCo).
    order: list[int] = []
    stack = list(reversed(roots))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children[i]))

    # Merge fixed joints: each link maps to (movable body it belongs to, pose in it).
    owner: dict[int, int] = {}
    pose: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    new_index: dict[int, int] = {}
    kept: list[int] = []
    for i in order:
        b = bodies[i]
        if b.parent == WORLD:
            par_owner, pr, pp = WORLD, np.eye(3), np.zeros(3)
        else:
            par_owner = owner[b.parent]
            pr, pp = pose[b.parent]
        r = pr @ b.rotation
        p = pp + pr @ b.translation
        if b.joint.type == "fixed":
            owner[i], pose[i] = par_owner, (r, p)
        else:
            new_index[i] = len(kept)
            kept.append(i)
            owner[i], pose[i] = new_index[i], (np.eye(3), np.zeros(3))
    if not kept:
        raise ValueError("the model has no movable joint (every joint is fixed)")

    n = len(kept)
    parent = np.zeros(n, dtype=np.int64)
    tree_r = np.zeros((n, 3, 3))
    tree_p = np.zeros((n, 3))
    for i in kept:
        b = bodies[i]
        k = new_index[i]
        if b.parent == WORLD:
            parent[k], pr, pp = WORLD, np.eye(3), np.zeros(3)
        else:
            parent[k] = owner[b.parent]
            pr, pp = pose[b.parent]
        tree_r[k] = pr @ b.rotation
        tree_p[k] = pp + pr @ b.translation

    # Composite inertia of each movable body and the fixed links merged into it.
    mass = np.zeros(n)
    first_moment = np.zeros((n, 3))
    second = np.zeros((n, 3, 3))  # inertia about the body origin
    compensated = np.zeros((n, 4))  # gravity compensation's mass and first moment
    for i in order:
        k = owner[i]
        if k == WORLD:
            continue
        b = bodies[i]
        r, p = pose[i]
        c = r @ b.com + p
        mass[k] += b.mass
        first_moment[k] += b.mass * c
        compensated[k] += b.gravcomp * b.mass * np.concatenate([[1.0], c])
        second[k] += r @ b.inertia @ r.T + b.mass * (c @ c * np.eye(3) - np.outer(c, c))
    com = np.zeros((n, 3))
    inertia = np.zeros((n, 3, 3))
    for k in range(n):
        if mass[k] > 0:
            com[k] = first_moment[k] / mass[k]
            c = com[k]
            inertia[k] = second[k] - mass[k] * (c @ c * np.eye(3) - np.outer(c, c))
        else:  # massless: a rotational inertia is the same about every point
            inertia[k] = second[k]
        inertia[k] = 0.5 * (inertia[k] + inertia[k].T)

    joint_types = tuple(bodies[i].joint.type for i in kept)
    topo = compile_topology(parent, joint_types)
    cat = lambda attr: np.concatenate([getattr(bodies[i], attr) for i in kept])  # noqa: E731

    # Frames: one per movable body, one per merged fixed link, then user frames.
    f_names, f_body, f_r, f_p = [], [], [], []
    for i in order:
        f_names.append(bodies[i].name)
        f_body.append(owner[i])
        f_r.append(pose[i][0])
        f_p.append(pose[i][1])
    for name, b, r, p in records.frames:
        if b == WORLD:
            ob, pr, pp = WORLD, np.eye(3), np.zeros(3)
        else:
            ob = owner[b]
            pr, pp = pose[b]
        f_names.append(name)
        f_body.append(ob)
        f_r.append(pr @ r)
        f_p.append(pp + pr @ p)

    dtype = check_model_dtype(dtype or jnp.zeros(()).dtype)

    def arr(x):  # an overflow of the dtype is reported by _check_built_values, naming the field
        with np.errstate(over="ignore"):
            return jnp.asarray(np.asarray(x, dtype=np.float64), dtype=dtype)

    def placed(b, r, p):  # a placement in builder body b -> (movable body, R, p) in it
        if b == WORLD:
            return WORLD, r, p
        pr, pp = pose[b]
        return owner[b], pr @ r, pp + pr @ p

    geoms = _geoms_of(records, placed, owner, new_index, parent, arr)
    actuators = _actuators_of(records, kept, new_index, topo, arr)
    keyframes = _keyframes_of(records, kept, arr)
    model = Model(
        mass=arr(mass), com=arr(com), inertia=arr(inertia),
        tree_rotation=arr(tree_r), tree_translation=arr(tree_p),
        axis=arr([bodies[i].joint.axis for i in kept]),
        pitch=arr([bodies[i].joint.pitch for i in kept]),
        frame_rotation=arr(np.array(f_r).reshape(-1, 3, 3)),
        frame_translation=arr(np.array(f_p).reshape(-1, 3)),
        gravity=arr(records.gravity),
        damping=arr(cat("damping")), armature=arr(cat("armature")), friction=arr(cat("friction")),
        lower_limit=arr(cat("lower")), upper_limit=arr(cat("upper")),
        velocity_limit=arr(cat("velocity_limit")), effort_limit=arr(cat("effort_limit")),
        stiffness=arr(cat("stiffness")), spring_reference=arr(cat("spring_reference")),
        q_neutral=arr(cat("q_neutral")), gravcomp=arr(compensated), actuators=actuators, geoms=geoms,
        keyframes=keyframes,
        topology=topo,
        body_names=tuple(bodies[i].name for i in kept),
        joint_names=tuple(bodies[i].joint_name for i in kept),
        frame_names=tuple(f_names), frame_body=tuple(int(x) for x in f_body),
        name=records.name,
    )
    _check_built_values(model)
    return model


def _geoms_of(records: BuilderRecords, placed, owner, new_index, parent, arr) -> Geoms:
    """The :class:`Geoms` on the movable bodies (``placed`` moves a placement in a builder body
    onto its movable body; excludes and weld parents are mapped through ``owner``)."""
    g = [(x, *placed(x.body, x.rotation, x.translation)) for x in records.geoms]
    col = lambda key: tuple(x[0].static[key] for x in g)  # noqa: E731
    weld = lambda b: WORLD if b == WORLD else owner[b]  # noqa: E731
    exclude = sorted({(min(a, b), max(a, b)) for a, b in ((weld(a), weld(b)) for a, b in records.excludes) if a != b})
    weld_parent = [int(p) for p in parent]
    for b, p in records.weld_parent.items():
        if b in new_index:
            weld_parent[new_index[b]] = weld(p)
    pairs = records.pairs
    vertices, faces = _mesh_arrays([x[0].hull for x in g])
    hfield, hfield_id = _height_fields([x[0] for x in g], arr)
    return Geoms(
        rotation=arr(np.array([x[2] for x in g]).reshape(-1, 3, 3)),
        translation=arr(np.array([x[3] for x in g]).reshape(-1, 3)),
        size=arr(np.array([x[0].size for x in g]).reshape(-1, 3)),
        friction=arr(np.array([x[0].friction for x in g]).reshape(-1, 3)),
        margin=arr(np.array(col("margin"), dtype=np.float64)), gap=arr(np.array(col("gap"), dtype=np.float64)),
        vertices=arr(vertices), faces=arr(faces),
        pairs=ContactPairs(
            friction=arr(np.array([p[4] for p in pairs]).reshape(-1, 3)),
            margin=arr([p[5] for p in pairs]), gap=arr([p[6] for p in pairs]),
            geom1=tuple(p[1] for p in pairs), geom2=tuple(p[2] for p in pairs),
            condim=tuple(p[3] for p in pairs), names=tuple(p[0] for p in pairs)),
        names=tuple(x[0].name for x in g), type=tuple(x[0].type for x in g), body=tuple(int(x[1]) for x in g),
        contype=col("contype"), conaffinity=col("conaffinity"), condim=col("condim"), priority=col("priority"),
        exclude=tuple(exclude), filter_parent=records.filter_parent, weld_parent=tuple(weld_parent),
        hfield=hfield, hfield_id=hfield_id,
    )


def _actuators_of(records: BuilderRecords, kept, new_index, topo, arr) -> Actuators:
    """The :class:`Actuators`, each on the dof of its (movable, one-dof) joint."""
    by_joint = {records.bodies[i].joint_name: new_index[i] for i in kept}
    dofs = []
    for a in records.actuators:
        if a.joint not in by_joint:
            raise ValueError(f"actuator {a.name!r}: joint {a.joint!r} does not exist or is fixed")
        k = by_joint[a.joint]
        if nv_of(topo.joint_type[k]) != 1:
            raise ValueError(f"actuator {a.name!r}: joint {a.joint!r} is not a one-dof joint")
        dofs.append(int(topo.v_start[k]))
    acts = records.actuators

    def col(key, width=None):
        a = np.array([x.extra[key] for x in acts], dtype=np.float64)
        return arr(a if width is None else a.reshape(-1, width))

    return Actuators(
        gear=arr([a.gear for a in acts]), gain=arr([a.gain for a in acts]),
        bias=arr(np.array([a.bias for a in acts]).reshape(-1, 3)),
        ctrl_range=arr(np.array([a.ctrl_range for a in acts]).reshape(-1, 2)),
        force_range=arr(np.array([a.force_range for a in acts]).reshape(-1, 2)),
        names=tuple(a.name for a in acts), kind=tuple(a.kind for a in acts), dof=tuple(dofs),
        gain_slope=col("gain_slope", 2), time_constant=col("time_constant"), act_range=col("act_range", 2),
        stall_force=col("stall_force"), back_emf=col("back_emf"), power_limit=col("power_limit"),
        dynamics=tuple(a.extra["dynamics"] for a in acts), act_early=tuple(a.extra["act_early"] for a in acts),
    )


def _keyframes_of(records: BuilderRecords, kept, arr) -> Keyframes:
    """The :class:`Keyframes`, their ``q``/``v`` reordered from insertion order to the model's
    body order ``kept``."""
    movable = [i for i, b in enumerate(records.bodies) if b.joint.type != "fixed"]
    q_at, v_at, nq, nv = {}, {}, 0, 0
    for i in movable:
        t = records.bodies[i].joint.type
        q_at[i], v_at[i] = slice(nq, nq + nq_of(t)), slice(nv, nv + nv_of(t))
        nq, nv = nq + nq_of(t), nv + nv_of(t)
    qs, vs = [], []
    for name, q, v in records.keyframes:
        if q.shape != (nq,) or v.shape != (nv,):
            raise ValueError(f"keyframe {name!r}: q and v must have shapes ({nq},) and ({nv},), "
                             f"got {q.shape} and {v.shape}")
        qs.append(np.concatenate([q[q_at[i]] for i in kept]))
        vs.append(np.concatenate([v[v_at[i]] for i in kept]))
    return Keyframes(q=arr(np.array(qs).reshape(-1, nq)), v=arr(np.array(vs).reshape(-1, nv)),
                     names=tuple(k[0] for k in records.keyframes))


def _height_fields(geoms, arr) -> tuple[HeightFields, tuple[int, ...]]:
    """The :class:`HeightFields` of the height field geoms (one per geom, geoms given the same
    elevation array object sharing it) and each geom's ``hfield_id``."""
    fields, ids, seen = [], [], {}
    for x in geoms:
        if x.hfield is None:
            ids.append(-1)
            continue
        key = (id(x.hfield[0]), x.hfield[1])
        if key not in seen:
            seen[key] = len(fields)
            fields.append((x.name, *x.hfield))
        ids.append(seen[key])
    if not fields:
        return HeightFields(arr(np.zeros((0, 2, 2)))), tuple(ids)
    rows, cols = max(f[1].shape[0] for f in fields), max(f[1].shape[1] for f in fields)
    elevation = np.zeros((len(fields), rows, cols))
    for k, (_, e, _) in enumerate(fields):
        elevation[k, : e.shape[0], : e.shape[1]] = e
    return HeightFields(arr(elevation), names=tuple(f[0] for f in fields), nrow=tuple(f[1].shape[0] for f in fields),
                        ncol=tuple(f[1].shape[1] for f in fields), size=tuple(f[2] for f in fields)), tuple(ids)


def _mesh_arrays(hulls) -> tuple[np.ndarray, np.ndarray]:
    """``vertices (ng, V, 3)`` and ``faces (ng, F, 4)`` of :class:`Geoms` from each geom's hull
    (``None`` for a primitive): padded by repeating a hull's first row, zeros for primitives."""
    def pad(rows, width):
        n = max([1] + [len(r) for r in rows if r is not None])
        out = np.zeros((len(rows), n, width))
        for i, r in enumerate(rows):
            if r is not None:
                out[i] = np.concatenate([r, np.repeat(r[:1], n - len(r), axis=0)])
        return out

    return (pad([None if h is None else h.vertices for h in hulls], 3),
            pad([None if h is None else h.faces for h in hulls], 4))


__all__ = ["ActuatorRecord", "BodyRecord", "BuilderRecords", "GeomRecord", "assemble_model"]
