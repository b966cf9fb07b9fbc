"""The mesh narrow phase (:mod:`sodyn.collision.hull_contacts`, :mod:`sodyn.collision.hull_curved`)
against MuJoCo's collision.

The hulls: random points on ellipsoids (all of them hull vertices) and a box given as a mesh,
rounded to float32 (MuJoCo stores mesh vertices in float32, so both sides see the same solid), given
to MuJoCo as MJCF mesh assets.  Per pair type, one jitted ``vmap`` evaluates the contacts and the
gradient of slot 0's distance (the deepest) with respect to the second geom's position and a
rotation of it, on one batch holding every pose the tests look at: random relative poses (half
against the box mesh), central-difference stencils and degenerate poses (exact touching, parallel
faces, coincident centres).

MuJoCo is the oracle: ``mj_collision`` (margin 0) for which poses are in contact, ``mj_geomDistance``
for the signed distance and normal (separated poses too, up to ``DISTMAX``).  The polytope pairs
(plane, sphere, capsule, box, mesh against a mesh) are exact on both sides and must agree at every
pose to 1e-6 m and 1e-4 rad.  Against an ellipsoid or a cylinder MuJoCo's GJK/EPA is iterative and
may stop short; a disagreement is accepted only with a certificate computed here with NumPy:
sodyn's distance is the exact gap along sodyn's normal (a lower bound of the signed distance), and
MuJoCo's normal gives a lower gap, or MuJoCo's distance is not the gap along its own normal.
"""

import functools
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sodyn.collision.hull_contacts import HULL_PAIRS
from sodyn.collision.hull_contacts import SLOTS as HULL_SLOTS
from sodyn.collision.hull_curved import CURVED_PAIRS
from sodyn.collision.hull_curved import SLOTS as CURVED_SLOTS
from sodyn.collision.hull_topology import hull_topology
from sodyn.collision.types import FAR, GeomFrame, Hull, MeshFrame
from sodyn.io.meshes import convex_hull
from sodyn.rotations import quat_to_matrix

jax.config.update("jax_enable_x64", True)

PAIRS = list(HULL_PAIRS) + list(CURVED_PAIRS)
IDS = ["-".join(p) for p in PAIRS]
POLYTOPE = {"plane", "sphere", "capsule", "box", "mesh"}
SIZE = {"plane": [0.0, 0.0, 0.0], "sphere": [0.12, 0, 0], "capsule": [0.08, 0.15, 0], "ellipsoid": [0.2, 0.12, 0.08],
        "cylinder": [0.1, 0.12, 0], "box": [0.15, 0.1, 0.07]}
BOX = np.array([0.1, 0.15, 0.05])
N = 100                   # random poses per pair type
DISTMAX = 0.05            # separated poses compared up to this distance
H = 1e-6                  # central-difference step (m, rad)
V_PAD, F_PAD = 32, 64     # common padded sizes of the test hulls


def _rotation(rng: np.random.Generator) -> np.ndarray:
    return quat_to_matrix(rng.normal(size=4))


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x)


@functools.cache
def _hulls() -> dict[str, dict]:
    """Test hulls (float32-exact vertices), padded to ``V_PAD``, ``F_PAD`` as the model pads them."""
    rng = np.random.default_rng(45)
    points = {}
    for name, count, axes in (("a", 20, [0.2, 0.25, 0.12]), ("b", 14, [0.3, 0.15, 0.2])):
        p = rng.normal(size=(count, 3))
        points[name] = p / np.linalg.norm(p, axis=1, keepdims=True) * axes
    points["box"] = np.array([[(i >> k & 1) * 2.0 - 1 for k in range(3)] for i in range(8)]) * BOX
    out = {}
    for name, p in points.items():
        h = convex_hull(p.astype(np.float32).astype(np.float64))
        v = np.concatenate([h.vertices, np.repeat(h.vertices[:1], V_PAD - len(h.vertices), 0)])
        f = np.concatenate([h.faces, np.repeat(h.faces[:1], F_PAD - len(h.faces), 0)])
        topo = jax.tree.map(np.asarray, hull_topology(jnp.asarray(v), jnp.asarray(f)))
        out[name] = {"vertices": h.vertices, "faces": h.faces, "hull": topo, "radius": np.linalg.norm(v, axis=1).max()}
    return out


def _h(type_: str, size, r: np.ndarray, p: np.ndarray, n: np.ndarray, hull: str | None = None) -> float:
    """NumPy support function ``max_{x ∈ K} n·x`` (independent of sodyn)."""
    m, s = r.T @ n, np.asarray(size, float)
    if type_ == "plane":      # the half-space below the plane z = 0 through p
        return float(p @ n) if np.allclose(m, [0, 0, 1]) else np.inf
    if type_ == "mesh":
        return float(np.max(_hulls()[hull]["vertices"] @ m) + p @ n)
    extra = {"sphere": s[0], "capsule": s[0] + s[1] * abs(m[2]), "ellipsoid": np.linalg.norm(s * m),
             "cylinder": s[0] * np.hypot(m[0], m[1]) + s[1] * abs(m[2]), "box": np.abs(s * m).sum()}[type_]
    return float(p @ n + extra)


class _Oracle:
    """Two geoms on free bodies (a plane on the world, at the identity) in one MuJoCo model, mesh
    geoms built from the test hulls' vertices."""

    def __init__(self, type1: str, hull1: str | None, hull2: str):
        import mujoco

        self.mujoco, self.plane = mujoco, type1 == "plane"
        vertex = {k: " ".join(repr(float(x)) for x in _hulls()[k]["vertices"].ravel()) for k in {hull1, hull2} - {None}}
        assets = "".join(f'<mesh name="{k}" vertex="{v}"/>' for k, v in vertex.items())
        first = (f'type="mesh" mesh="{hull1}"' if type1 == "mesh" else
                 'type="plane" size="0 0 1"' if self.plane else
                 f'type="{type1}" size="{" ".join(repr(float(x)) for x in SIZE[type1] if x)}"')
        first = f'<geom name="g1" {first}/>' if self.plane else f'<body><freejoint/><geom name="g1" {first}/></body>'
        xml = f"""<mujoco><option ccd_tolerance="1e-12" ccd_iterations="10000"><flag gravity="disable"/></option>
          <asset>{assets}</asset><worldbody>{first}<body><freejoint/><geom name="g2" type="mesh" mesh="{hull2}"/>
          </body></worldbody></mujoco>"""
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)

    def _place(self, pose1, pose2):
        qpos = []
        for r, p in ([] if self.plane else [pose1]) + [pose2]:
            quat = np.zeros(4)
            self.mujoco.mju_mat2Quat(quat, np.asarray(r, float).reshape(-1))
            qpos += [np.asarray(p, float), quat]
        self.data.qpos[:] = np.concatenate(qpos)
        self.mujoco.mj_kinematics(self.model, self.data)

    def in_contact(self, pose1, pose2) -> bool:
        self._place(pose1, pose2)
        self.mujoco.mj_collision(self.model, self.data)
        return self.data.ncon > 0

    def distance(self, pose1, pose2) -> tuple[float, np.ndarray]:
        """Signed distance and unit normal (from geom 1 to geom 2)."""
        self._place(pose1, pose2)
        fromto = np.zeros(6)
        d = self.mujoco.mj_geomDistance(self.model, self.data, 0, 1, DISTMAX, fromto)
        n = fromto[3:] - fromto[:3]
        return d, n / max(np.linalg.norm(n), 1e-300) * (1.0 if d >= 0 else -1.0)


class _Batch:
    """Poses of one pair type and sodyn's results on them (module docstring)."""

    def __init__(self, pair: tuple[str, str], n: int = N, seed: int = 0):
        t1, t2 = pair
        rng = np.random.default_rng(zlib.crc32("-".join(pair).encode()) + seed)
        s1 = np.array(SIZE.get(t1, [0.0, 0, 0]), float)
        rows = []    # (R1, p1, hull1, R2, p2, hull2, theta, axis)
        eye = np.eye(3)

        def add(r1, p1, r2, p2, h1, h2, theta=0.0, axis=(0.0, 0.0, 1.0)):
            rows.append((r1, np.asarray(p1, float), h1, r2, np.asarray(p2, float), h2, theta, np.asarray(axis, float)))
            return len(rows) - 1

        def reach(r1, r2, h1, h2, u):     # centre distance along u at which the two just touch
            return _h(t1, s1, r1, np.zeros(3), u, h1) + _h(t2, None, r2, np.zeros(3), -u, h2)

        self.random = []
        for k in range(n):
            h1 = ("b" if k % 2 else "box") if t1 == "mesh" else None
            h2 = "a" if k % 2 else "box"
            r2 = _rotation(rng)
            if t1 == "plane":
                p2 = np.array([*rng.normal(size=2) * 0.1, -_h("mesh", None, r2, np.zeros(3), -eye[2], h2)])
                self.random.append(add(eye, np.zeros(3), r2, p2 + eye[2] * rng.uniform(-0.08, 0.03), h1, h2))
                continue
            r1, u = _rotation(rng), _unit(rng.normal(size=3))
            p1 = rng.normal(size=3) * 0.05
            self.random.append(add(r1, p1, r2, p1 + u * (reach(r1, r2, h1, h2, u) + rng.uniform(-0.12, 0.03)), h1, h2))
        self.stencils = []                # base, ±h along x, y, z of p2, ±h of a rotation of g2
        for k in range(3):
            h1, h2 = ("b" if t1 == "mesh" else None), ("a" if k % 2 else "box")
            r1, r2 = (eye if t1 == "plane" else _rotation(rng)), _rotation(rng)
            u, axis = (eye[2] if t1 == "plane" else _unit(rng.normal(size=3))), _unit(rng.normal(size=3))
            p2 = u * (reach(r1, r2, h1, h2, u) - 0.01 * (k + 1)) + (rng.normal(size=3) * [1, 1, 0] * 0.02)
            base = add(r1, np.zeros(3), r2, p2, h1, h2, axis=axis)
            shifts = [add(r1, np.zeros(3), r2, p2 + sg * H * e, h1, h2, axis=axis) for e in eye for sg in (1, -1)]
            turns = [add(r1, np.zeros(3), r2, p2, h1, h2, theta=sg * H, axis=axis) for sg in (1, -1)]
            self.stencils.append((base, shifts, turns))
        h1 = "box" if t1 == "mesh" else None
        rr = _rotation(rng)
        self.touching = [add(eye, np.zeros(3), eye, e * reach(eye, eye, h1, "box", e), h1, "box")
                         for e in (eye[[2]] if t1 == "plane" else eye[[2, 0]])]
        self.degenerate = self.touching + [
            # parallel faces, overlapping and touching; coincident centres
            add(eye, np.zeros(3), eye, eye[2] * (reach(eye, eye, h1, "box", eye[2]) - 0.01), h1, "box"),
            add(eye, np.zeros(3), eye, np.array([0.03, 0.02, reach(eye, eye, h1, "box", eye[2])]), h1, "box"),
            add(rr, np.zeros(3), rr, np.zeros(3), h1, "box"),
            add(_rotation(rng), np.zeros(3), _rotation(rng), np.zeros(3), h1, "a"),
        ]
        self.rows, self.pair, self.s1 = rows, pair, s1
        self._evaluate()

    def frames(self, dtype=jnp.float64):
        t1, _ = self.pair
        cols = list(zip(*self.rows))
        hulls = _hulls()

        def hull_rows(keys):
            return Hull(*(np.stack([np.asarray(getattr(hulls[k]["hull"], f)) for k in keys]) for f in Hull._fields))

        def frame(r, p, keys, type_, size):
            r, p = jnp.asarray(np.stack(r), dtype), jnp.asarray(np.stack(p), dtype)
            if type_ != "mesh":
                return GeomFrame(r, p, jnp.asarray(np.tile(size, (len(keys), 1)), dtype))
            h = hull_rows(keys)
            h = h._replace(vertices=jnp.asarray(h.vertices, dtype), faces=jnp.asarray(h.faces, dtype))
            size = np.stack([[hulls[k]["radius"], 0, 0] for k in keys])
            return MeshFrame(r, p, jnp.asarray(size, dtype), h)

        g1 = frame(cols[0], cols[1], cols[2], t1, self.s1)
        g2 = frame(cols[3], cols[4], cols[5], "mesh", None)
        return g1, g2, jnp.asarray(np.array(cols[6]), dtype), jnp.asarray(np.stack(cols[7]), dtype)

    def _evaluate(self):
        f = {**HULL_PAIRS, **CURVED_PAIRS}[self.pair]
        g1, g2, theta, axis = self.frames()
        (_, c), grads = _value_and_grad(f)(g1, g2, theta, axis)
        self.distance, self.position, self.normal = (np.asarray(x) for x in c)
        self.grads = jax.tree.map(np.asarray, grads)

    def gap(self, i: int, n: np.ndarray) -> float:
        """The exact gap ``min_{x₂} n·x₂ − max_{x₁} n·x₁`` of pose ``i`` along the unit ``n`` (NumPy)."""
        r1, p1, h1, r2, p2, h2, theta, _ = self.rows[i]
        assert theta == 0.0
        return -_h(self.pair[0], self.s1, r1, p1, n, h1) - _h("mesh", None, r2, p2, -n, h2)


@functools.cache
def _value_and_grad(f):
    def dist(p1, p2, theta, g1, g2, axis):
        k = jnp.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
        turn = jnp.eye(3, dtype=p2.dtype) + jnp.sin(theta) * k + (1.0 - jnp.cos(theta)) * (k @ k)
        c = f(g1._replace(position=p1), g2._replace(position=p2, rotation=g2.rotation @ turn))
        return c.distance[0], c

    def evaluate(g1, g2, theta, axis):
        return jax.value_and_grad(dist, argnums=(0, 1, 2), has_aux=True)(g1.position, g2.position, theta, g1, g2, axis)

    return jax.jit(jax.vmap(evaluate))


@functools.cache
def _batch(pair: tuple[str, str], n: int = N, seed: int = 0) -> _Batch:
    return _Batch(pair, n, seed)


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), a @ b))


def test_table():
    assert set(PAIRS) == {(t, "mesh") for t in ("plane", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")}
    assert {**HULL_SLOTS, **CURVED_SLOTS} == {("plane", "mesh"): 8, ("sphere", "mesh"): 1, ("capsule", "mesh"): 2,
                                              ("box", "mesh"): 4, ("mesh", "mesh"): 4, ("ellipsoid", "mesh"): 1,
                                              ("cylinder", "mesh"): 1}


def test_hull_topology():
    """Each hull's edges: Euler's count, both ends on both faces, oriented ``m_owner × m_across``;
    each face polygon counter-clockwise seen from outside; padding rows left out."""
    for name, h in _hulls().items():
        topo, v, f = h["hull"], h["vertices"], h["faces"]
        assert int(topo.edge_valid.sum()) == len(v) + len(f) - 2, name
        assert int(topo.face_valid.sum()) == len(f) and np.all(topo.count[topo.face_valid] >= 3)
        for (a, b), (fa, fb) in zip(topo.edges[topo.edge_valid], topo.edge_faces[topo.edge_valid]):
            for face in (fa, fb):
                assert abs(f[face, :3] @ v[a] - f[face, 3]) < 1e-12 and abs(f[face, :3] @ v[b] - f[face, 3]) < 1e-12
            assert (v[b] - v[a]) @ np.cross(f[fa, :3], f[fb, :3]) > 0
        for face in np.flatnonzero(topo.face_valid):
            poly = v[topo.polygon[face, :topo.count[face]]]
            area = sum(np.cross(poly[k], poly[(k + 1) % len(poly)]) for k in range(len(poly)))
            assert area @ f[face, :3] > 0


def _against_mujoco(b: _Batch) -> None:
    """Compare every random pose of ``b`` with MuJoCo (module docstring)."""
    pair = b.pair
    t1 = pair[0]
    oracles = {}
    counts = dict(agree=0, apart=0, near_touching=0, mujoco_normal_worse=0, mujoco_distance_off=0)
    worst = np.zeros(2)
    for i in b.random:
        r1, p1, h1, r2, p2, h2, _, _ = b.rows[i]
        oracle = oracles.setdefault((h1, h2), _Oracle(t1, h1, h2))
        d, n = b.distance[i, 0], b.normal[i, 0]
        assert np.min(b.distance[i]) >= d - 1e-12 and abs(np.linalg.norm(n) - 1.0) < 1e-12   # slot 0 is the deepest
        if t1 != "plane":    # slot 0 is the exact gap along its normal: a lower bound of the signed distance
            assert abs(d - b.gap(i, n)) < 1e-9, (i, d, b.gap(i, n))
        if abs(d) < 1e-6:
            counts["near_touching"] += 1
            continue
        assert (d < 0) == oracle.in_contact((r1, p1), (r2, p2)), (i, d)
        if d > DISTMAX:
            counts["apart"] += 1
            continue
        dm, nm = oracle.distance((r1, p1), (r2, p2))
        errors = np.array([abs(d - dm), _angle(n, nm)])
        if errors[0] <= 1e-6 and errors[1] <= 1e-4:
            counts["agree"] += 1
            worst = np.maximum(worst, errors)
            continue
        assert t1 not in POLYTOPE, (i, d, dm, errors)
        gap_mj = b.gap(i, nm)
        assert d >= gap_mj - 1e-9, (i, d, gap_mj)                  # never worse than MuJoCo's normal
        if gap_mj < d - 1e-7:
            counts["mujoco_normal_worse"] += 1
        else:
            assert abs(dm - gap_mj) > 1e-7, (i, d, dm, gap_mj)      # MuJoCo's distance is not its normal's gap
            counts["mujoco_distance_off"] += 1
    print(f"\n{'-'.join(pair)}: {counts}; max |Δd| {worst[0]:.1e} m, angle {worst[1]:.1e} rad")
    compared = len(b.random) - counts["apart"] - counts["near_touching"]
    assert compared >= 0.5 * len(b.random) and counts["agree"] >= (1.0 if t1 in POLYTOPE else 0.9) * compared


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_matches_mujoco(pair):
    _against_mujoco(_batch(pair))


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_matches_mujoco_sweep(pair):
    """As :func:`test_matches_mujoco`, on 1000 other random poses per pair type."""
    _against_mujoco(_batch(pair, 1000, 1))


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_gradients_match_central_differences(pair):
    b = _batch(pair)
    for base, shifts, turns in b.stencils:
        g1, g2, g_theta = (x[base] for x in b.grads)
        fd_p = [(b.distance[shifts[2 * k], 0] - b.distance[shifts[2 * k + 1], 0]) / (2 * H) for k in range(3)]
        fd_theta = (b.distance[turns[0], 0] - b.distance[turns[1], 0]) / (2 * H)
        np.testing.assert_allclose(g2, fd_p, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(g_theta, fd_theta, rtol=1e-6, atol=1e-8)
        if pair[0] != "plane":    # moving both geoms together changes nothing
            np.testing.assert_allclose(g1, -g2, rtol=1e-9, atol=1e-12)


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_degenerate_poses_are_finite(pair):
    b = _batch(pair)
    for i in b.degenerate:
        assert np.all(np.isfinite(b.distance[i])) and np.all(np.isfinite(b.normal[i]))
        assert np.all(np.isfinite(b.position[i])), i
        assert all(np.all(np.isfinite(x[i])) for x in b.grads), i
    for i in b.touching:
        assert abs(b.distance[i, 0]) < 1e-9, b.distance[i]


def _resting(pair, top: float):
    """The contacts of a box (or box mesh) ``g2`` resting face-down at height ``top`` on ``g1`` (at
    the origin), both axis-aligned: float64, one pose."""
    hulls = _hulls()
    t1 = pair[0]
    box = hulls["box"]
    half = box["vertices"][:, 2].max()          # BOX[2] rounded to float32
    mesh = MeshFrame(jnp.eye(3), jnp.array([0.02, -0.03, top + half]), jnp.array([box["radius"], 0, 0]),
                     jax.tree.map(jnp.asarray, box["hull"]))
    if t1 == "mesh":
        g1 = mesh._replace(position=jnp.zeros(3))
    else:
        g1 = GeomFrame(jnp.eye(3), jnp.zeros(3), jnp.asarray(SIZE[t1] if t1 != "plane" else [0.0, 0, 0]))
    return jax.jit({**HULL_PAIRS, **CURVED_PAIRS}[pair])(g1, mesh)


@pytest.mark.parametrize("t1", ["plane", "box", "mesh"])
def test_resting_box_mesh_has_four_points(t1):
    """A box mesh resting face-down on a plane, a box or a box mesh: four distinct points at equal
    depth (slightly penetrating and exactly touching), the normal along the resting face's (the
    plane's extreme slots repeat the four deepest vertices and are unused)."""
    top = {"plane": 0.0, "box": SIZE["box"][2], "mesh": _hulls()["box"]["vertices"][:, 2].max()}[t1]
    for depth in (0.0, 1e-3):
        c = _resting((t1, "mesh"), top - depth)
        used = np.asarray(c.distance) < FAR
        assert used.sum() == 4, c.distance
        d, pos, n = (np.asarray(x)[used] for x in c)
        assert np.all(np.abs(d + depth) < 1e-12), d
        assert np.allclose(n, [0, 0, 1])
        spread = np.linalg.norm(pos[:, None, :2] - pos[None, :, :2], axis=-1)
        assert np.min(spread + np.eye(4)) > 0.05, pos


def test_a_resting_polygon_keeps_its_spread_slots_whichever_vertex_is_deepest():
    """A 12-gon prism (radius 0.1 m) resting on a plane, tilted by 1 µrad about 12 directions so
    that each bottom vertex in turn is the deepest: slots 0–3 are the four deepest vertices, in
    order, and the slots in use hold the same four rim points at every tilt (the extremes along the
    prism's diagonals, an extreme that is also among the deepest repeating it; a selection that
    starts from the deepest vertex moves them with it)."""
    angle = np.arange(12) * np.pi / 6 + 0.1
    rim = np.stack([0.1 * np.cos(angle), 0.1 * np.sin(angle)], axis=1)
    points = np.concatenate([np.c_[rim, np.full(12, -0.02)], np.c_[rim, np.full(12, 0.02)]])
    h = convex_hull(points)
    topo = hull_topology(jnp.asarray(h.vertices), jnp.asarray(h.faces))
    plane = GeomFrame(jnp.eye(3), jnp.zeros(3), jnp.zeros(3))
    pair = jax.jit(HULL_PAIRS[("plane", "mesh")])
    spread = []
    for a in angle:
        axis = np.array([-np.sin(a), np.cos(a), 0.0])                    # the rim point at a goes lowest
        r = np.asarray(quat_to_matrix(jnp.asarray(np.r_[np.cos(5e-7), np.sin(5e-7) * axis])))
        c = pair(plane, MeshFrame(jnp.asarray(r), jnp.array([0.0, 0.0, 0.0199]), jnp.array([0.15, 0, 0]), topo))
        world = h.vertices @ r.T + [0.0, 0.0, 0.0199]
        order = np.argsort(world[:, 2])[:4]
        d, pos = np.asarray(c.distance), np.asarray(c.position)
        assert np.allclose(d[:4], world[order, 2], atol=1e-12)
        assert np.allclose(pos[:4, :2], world[order, :2], atol=1e-12)
        spread.append({tuple(np.round(x, 6)) for x in pos[d < FAR, :2]})
    assert len(set.intersection(*spread)) == 4                           # the extremes, kept at every tilt


def test_capsule_lying_on_a_face_has_two_points():
    box = _hulls()["box"]
    mesh = MeshFrame(jnp.eye(3), jnp.zeros(3), jnp.array([box["radius"], 0, 0]), jax.tree.map(jnp.asarray, box["hull"]))
    r = jnp.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]])          # capsule axis along x
    top = box["vertices"][:, 2].max()
    cap = GeomFrame(r, jnp.array([0.01, 0.0, top + SIZE["capsule"][0] - 1e-3]), jnp.asarray(SIZE["capsule"]))
    c = jax.jit(HULL_PAIRS[("capsule", "mesh")])(cap, mesh)
    d, pos = np.asarray(c.distance), np.asarray(c.position)
    assert np.allclose(d, -1e-3, atol=1e-12) and abs(pos[0, 0] - pos[1, 0]) > 0.15, (d, pos)


@pytest.mark.fast
@pytest.mark.parametrize("pair", [("mesh", "mesh"), ("cylinder", "mesh")], ids=["mesh-mesh", "cylinder-mesh"])
def test_float32(pair):
    """Float32 frames stay float32, values and gradients are finite, and the deepest distance agrees
    with float64 to float32 accuracy."""
    b = _batch(pair)
    g1, g2, theta, axis = b.frames(jnp.float32)
    (_, c), grads = _value_and_grad({**HULL_PAIRS, **CURVED_PAIRS}[pair])(g1, g2, theta, axis)
    assert c.distance.dtype == c.normal.dtype == c.position.dtype == jnp.float32
    assert all(x.dtype == jnp.float32 and np.all(np.isfinite(x)) for x in jax.tree.leaves((c, grads)))
    close = np.abs(np.asarray(c.distance[:, 0]) - b.distance[:, 0]) < 1e-5
    assert np.mean(close[b.random]) > 0.98


def _model_xml() -> str:
    hulls = _hulls()
    mesh = "".join(f'<mesh name="{k}" vertex="{" ".join(repr(float(x)) for x in hulls[k]["vertices"].ravel())}"/>'
                   for k in ("a", "box"))
    geoms = ['type="mesh" mesh="a"', 'type="mesh" mesh="box"', 'type="sphere" size="0.06"',
             'type="capsule" size="0.05 0.08"', 'type="box" size="0.1 0.06 0.05"']
    bodies = "".join(f'<body name="b{k}"><freejoint/><geom name="g{k}" {g}/></body>' for k, g in enumerate(geoms))
    return f"""<mujoco><option ccd_tolerance="1e-12" ccd_iterations="10000"><flag gravity="disable"/></option>
      <asset>{mesh}</asset><worldbody><geom name="floor" type="plane" size="0 0 1"/>{bodies}</worldbody></mujoco>"""


@pytest.mark.fast
def test_collide_on_a_model_matches_mujoco():
    """:func:`sodyn.collision.collide` on an MJCF model with mesh geoms (hulls as MuJoCo compiles
    them: the wiring through ``geom_frames``) beside a plane, a sphere, a capsule and a box, at
    random configurations of crowded free bodies: the same geom pairs in contact as MuJoCo's
    ``mj_collision``, each pair's deepest distance within 1e-6 m of ``mj_geomDistance``."""
    import mujoco

    import sodyn as sd
    from sodyn.collision import collide

    xml = _model_xml()
    model = sd.load_mjcf(xml)
    mj = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(mj)
    names = model.geoms.names
    collide_q = jax.jit(lambda q: collide(model, q))
    rng = np.random.default_rng(7)
    checked = set()
    for _ in range(6):
        q = np.concatenate([np.concatenate([rng.uniform(-0.12, 0.12, 2), rng.uniform(0.0, 0.15, 1),
                                            _unit(rng.normal(size=4))]) for _ in range(5)])
        c = collide_q(jnp.asarray(q))
        ours: dict[tuple[str, str], float] = {}
        for i, d in enumerate(np.asarray(c.distance)):
            key = tuple(sorted((names[c.geom1[i]], names[c.geom2[i]])))
            ours[key] = min(ours.get(key, np.inf), float(d))
        data.qpos[:] = q
        mujoco.mj_kinematics(mj, data)
        mujoco.mj_collision(mj, data)
        touching = {tuple(sorted(mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g) for g in (con.geom1, con.geom2)))
                    for con in data.contact[:data.ncon]}
        for key, d in ours.items():
            if abs(d) < 1e-6:
                continue
            assert (d < 0) == (key in touching), (key, d)
            if d < DISTMAX:    # MuJoCo's signed distance (its contacts past the first may lie deeper)
                ids = [mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, k) for k in key]
                dm = mujoco.mj_geomDistance(mj, data, *ids, DISTMAX, None)
                assert abs(d - dm) < 1e-6, (key, d, dm)
                checked.add(key)
    assert len(checked) >= 8, checked


@pytest.mark.parametrize("pair", [("mesh", "mesh"), ("cylinder", "mesh")], ids=["mesh-mesh", "cylinder-mesh"])
def test_gradient_in_the_mesh_vertices(pair):
    """The deepest distance is differentiable in the model's hull vertices: ``d/ds`` of the mesh
    ``g2`` scaled by ``s`` about its origin (vertices and face offsets) against central
    differences, at the gradient stencils' base poses."""
    b = _batch(pair)
    f = {**HULL_PAIRS, **CURVED_PAIRS}[pair]
    g1, g2, _, _ = b.frames()

    def dist(s, g1, g2):
        hull = g2.hull._replace(vertices=g2.hull.vertices * s,
                                faces=g2.hull.faces * jnp.array([1.0, 1.0, 1.0, 1.0]).at[3].set(s))
        return f(g1, g2._replace(hull=hull)).distance[0]

    value_and_grad = jax.jit(jax.vmap(jax.value_and_grad(dist), in_axes=(None, 0, 0)))
    rows = np.array([base for base, _, _ in b.stencils])
    sub = [jax.tree.map(lambda x: x[rows], g) for g in (g1, g2)]
    d0, grad = value_and_grad(1.0, *sub)
    plus, _ = value_and_grad(1.0 + H, *sub)
    minus, _ = value_and_grad(1.0 - H, *sub)
    np.testing.assert_allclose(d0, b.distance[rows, 0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grad, (plus - minus) / (2 * H), rtol=1e-6, atol=1e-8)
