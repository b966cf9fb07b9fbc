"""The general convex narrow phase (:mod:`sodyn.collision.convex`) against MuJoCo's GJK/EPA.

Per pair type, one jitted ``vmap`` evaluates (distance, contact, and the gradients of the
distance with respect to both geoms and a rotation of the second) on one batch holding every pose
the tests below look at: 200 random relative poses for margin 0 and 200 for margin 0.05, central
difference stencils, and degenerate poses (exact touching, coincident centres, parallel axes,
zero lengths).

MuJoCo is the oracle, and where it disagrees the disagreement must be MuJoCo's, shown by a
certificate computed here with an independent NumPy support function: sodyn's distance must be the
exact gap along sodyn's normal (so it is a lower bound of the true signed distance), never below
the gap along MuJoCo's normal, and a pose where sodyn and MuJoCo differ by more than 1e-6 m or
1e-4 rad is accepted only where MuJoCo's normal is measurably worse than sodyn's (its gap is lower
by > 1e-6 m), or MuJoCo's distance is not the gap along its own normal (its EPA stopped on a
polytope face short of the surface), or both normals give the same gap to 1e-9 m (a flat optimum
MuJoCo resolves to less than 1e-4 rad).  Such poses are a few per cent for pairs with a cylinder;
every other in-contact pose must agree to 1e-6 m, 1e-4 rad and 1e-5 m in position.
"""

import functools
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from collision_oracle import PairOracle, deepest

from sodyn.collision.convex import CONVEX_PAIRS, SLOTS
from sodyn.collision.support import CONVEX_TYPES, support
from sodyn.collision.types import GeomFrame
from sodyn.rotations import quat_to_matrix

jax.config.update("jax_enable_x64", True)

PAIRS = list(CONVEX_PAIRS)
SIZE1 = {"sphere": [0.3, 0, 0], "capsule": [0.15, 0.4, 0], "ellipsoid": [0.45, 0.2, 0.1], "cylinder": [0.25, 0.12, 0],
         "box": [0.4, 0.15, 0.08]}
SIZE2 = {"ellipsoid": [0.15, 0.35, 0.25], "cylinder": [0.1, 0.3, 0], "box": [0.2, 0.3, 0.1]}
N = 200                    # random poses per margin
MARGINS = (0.0, 0.05)
H = 1e-6                   # central-difference step (m, rad)


def _rotation(rng: np.random.Generator) -> np.ndarray:
    return quat_to_matrix(rng.normal(size=4))


def _h(type_: str, size, r: np.ndarray, p: np.ndarray, n: np.ndarray) -> float:
    """NumPy support function ``max_{x ∈ K} n·x`` (independent of sodyn)."""
    m = r.T @ n
    s = np.asarray(size, float)
    extra = {"sphere": s[0] * np.linalg.norm(n), "capsule": s[0] * np.linalg.norm(n) + s[1] * abs(m[2]),
             "ellipsoid": np.linalg.norm(s * m),
             "cylinder": s[0] * np.hypot(m[0], m[1]) + s[1] * abs(m[2]), "box": np.abs(s * m).sum()}[type_]
    return p @ n + extra


def _inside(type_: str, size, r: np.ndarray, p: np.ndarray, x: np.ndarray, tol: float = 1e-9) -> bool:
    """Whether the world point ``x`` lies in the geom (to ``tol``)."""
    y, s = r.T @ (x - p), np.asarray(size, float)
    if type_ == "sphere":
        return np.linalg.norm(y) <= s[0] + tol
    if type_ == "capsule":
        return np.linalg.norm(y - [0, 0, np.clip(y[2], -s[1], s[1])]) <= s[0] + tol
    if type_ == "ellipsoid":
        return np.linalg.norm(y / s) <= 1 + tol
    if type_ == "cylinder":
        return np.hypot(y[0], y[1]) <= s[0] + tol and abs(y[2]) <= s[1] + tol
    return bool(np.all(np.abs(y) <= s + tol))


class _Batch:
    """Poses of one pair type and sodyn's results on them (see the module docstring)."""

    def __init__(self, pair: tuple[str, str]):
        t1, t2 = pair
        s1, s2 = np.array(SIZE1[t1], float), np.array(SIZE2.get(t2, SIZE1[t2]), float)
        rng = np.random.default_rng(zlib.crc32("-".join(pair).encode()))
        rows = []           # (R1, p1, size1, R2, p2, size2, theta, axis)
        eye = np.eye(3)

        def add(r1, p1, r2, p2, z1=s1, z2=s2, theta=0.0, axis=(0.0, 0.0, 1.0)):
            rows.append((r1, p1, z1, r2, p2, z2, theta, np.asarray(axis, float)))
            return len(rows) - 1

        self.random = {}
        for margin in MARGINS:     # the gap along u is δ, so the signed distance is ≥ δ
            self.random[margin] = []
            for _ in range(N):
                r1, p1, r2, u = _rotation(rng), rng.normal(size=3) * 0.05, _rotation(rng), _unit(rng.normal(size=3))
                reach = _h(t1, s1, r1, np.zeros(3), u) + _h(t2, s2, r2, np.zeros(3), -u)
                delta = rng.uniform(-0.3, 0.05) if margin == 0 else rng.uniform(-0.15, 0.05)
                self.random[margin].append(add(r1, p1, r2, p1 + u * (reach + delta)))
        self.stencils = []  # base, ±h along x, y, z of p2, ±h of the rotation angle, ±h of each size of g2
        for _ in range(3):
            r1, p1, r2 = _rotation(rng), rng.normal(size=3) * 0.05, _rotation(rng)
            p2, axis = rng.uniform(0.2, 0.6) * _unit(rng.normal(size=3)), _unit(rng.normal(size=3))
            base = add(r1, p1, r2, p2, axis=axis)
            shifts = [add(r1, p1, r2, p2 + sg * H * e, axis=axis) for e in eye for sg in (1, -1)]
            turns = [add(r1, p1, r2, p2, theta=sg * H, axis=axis) for sg in (1, -1)]
            grows = [add(r1, p1, r2, p2, z2=s2 + sg * H * e, axis=axis) for e in eye for sg in (1, -1)]
            self.stencils.append((base, shifts, turns, grows))
        # degenerate: touching exactly (face to face, side to face), coincident centres, parallel axes,
        # zero-length capsules and cylinders
        o, rr = np.zeros(3), _rotation(rng)
        z1, z2 = (np.where(np.arange(3) == 1, 0.0, s) if t in ("capsule", "cylinder") else s
                  for t, s in ((t1, s1), (t2, s2)))
        self.touching = [add(eye, o, eye, e * (_h(t1, s1, eye, o, e) + _h(t2, s2, eye, o, -e))) for e in eye[[2, 0]]]
        self.degenerate = self.touching + [
            add(rr, o, rr, o),                                                   # coincident, aligned
            add(_rotation(rng), o, _rotation(rng), o),                           # coincident centres
            add(rr, o, rr, np.array([0.6, 0.0, 0.0])),                           # parallel axes, apart
            add(rr, o, rr, rr @ np.array([0.3, 0.0, 0.0])),                      # parallel axes, overlapping
            add(_rotation(rng), o, _rotation(rng), np.array([0.1, 0.2, 0.3]), z1, z2),   # zero lengths
            add(rr, o, rr, rr @ np.array([0.0, 0.0, 0.9]), z1, z2),                      # zero lengths, on axis
        ]
        cols = [np.stack([r[k] for r in rows]) for k in range(8)]
        self.rows = rows
        self.types, self.s1, self.s2 = pair, s1, s2
        f = CONVEX_PAIRS[pair]

        def dist(g1, g2, theta, axis):
            k = jnp.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
            turn = jnp.eye(3) + jnp.sin(theta) * k + (1.0 - jnp.cos(theta)) * (k @ k)
            c = f(g1, g2._replace(rotation=g2.rotation @ turn))
            return c.distance[0], c

        def evaluate(g1, g2, theta, axis):
            (_, c), grads = jax.value_and_grad(dist, argnums=(0, 1, 2), has_aux=True)(g1, g2, theta, axis)
            return c, grads

        g1 = GeomFrame(jnp.asarray(cols[0]), jnp.asarray(cols[1]), jnp.asarray(cols[2]))
        g2 = GeomFrame(jnp.asarray(cols[3]), jnp.asarray(cols[4]), jnp.asarray(cols[5]))
        c, grads = jax.jit(jax.vmap(evaluate))(g1, g2, jnp.asarray(cols[6]), jnp.asarray(cols[7]))
        self.distance = np.asarray(c.distance[:, 0])
        self.position = np.asarray(c.position[:, 0])
        self.normal = np.asarray(c.normal[:, 0])
        self.grads = jax.tree.map(np.asarray, grads)

    def gap(self, i: int, n: np.ndarray) -> float:
        """The exact gap ``−h₁(n) − h₂(−n)`` of pose ``i`` along the unit ``n`` (NumPy)."""
        r1, p1, z1, r2, p2, z2, theta, axis = self.rows[i]
        assert theta == 0.0
        return -_h(self.types[0], z1, r1, p1, n) - _h(self.types[1], z2, r2, p2, -n)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x)


@functools.cache
def _batch(pair: tuple[str, str]) -> _Batch:
    return _Batch(pair)


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), a @ b))


def test_table():
    assert set(CONVEX_PAIRS) == {("sphere", "ellipsoid"), ("capsule", "ellipsoid"), ("ellipsoid", "ellipsoid"),
                                 ("ellipsoid", "cylinder"), ("ellipsoid", "box"), ("capsule", "cylinder"),
                                 ("cylinder", "cylinder"), ("cylinder", "box")}
    assert all(SLOTS[k] == 1 for k in CONVEX_PAIRS)


@pytest.mark.fast
@pytest.mark.parametrize("margin", MARGINS)
@pytest.mark.parametrize("pair", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_matches_mujoco(pair, margin):
    b = _batch(pair)
    t1, t2 = pair
    oracle = PairOracle(t1, b.s1, t2, b.s2, margin)
    counts = dict(agree=0, apart=0, near_touching=0, within_margin=0, mujoco_normal_worse=0, mujoco_distance_off=0,
                  flat=0, mujoco_set_wrong=0)
    worst = np.zeros(3)
    for i in b.random[margin]:
        r1, p1, z1, r2, p2, z2, _, _ = b.rows[i]
        d, n, x = b.distance[i], b.normal[i], b.position[i]
        # sodyn's distance is the gap along its normal: a lower bound of the true signed distance
        assert abs(np.linalg.norm(n) - 1.0) < 1e-12
        assert abs(d - b.gap(i, n)) < 1e-9, (i, d, b.gap(i, n))
        if abs(d - margin) < 1e-6:
            counts["near_touching"] += 1
            continue
        mine = d < margin
        refs = [c for c in oracle((r1, p1), (r2, p2)) if c.distance < margin]   # by MuJoCo's own distance
        if mine != bool(refs):
            if not mine:       # MuJoCo reports a contact, but the lower bound d ≥ margin rules it out
                counts["mujoco_set_wrong"] += 1
                continue
            # a contact MuJoCo misses: the witness points lie in the geoms, at most d < margin apart
            x1, x2 = x - 0.5 * d * n, x + 0.5 * d * n
            assert _inside(t1, z1, r1, p1, x1) and _inside(t2, z2, r2, p2, x2), i
            counts["mujoco_set_wrong"] += 1
            continue
        if not mine:
            counts["apart"] += 1
            continue
        ref = deepest(refs)
        nm = ref.normal / np.linalg.norm(ref.normal)
        gap_mj = b.gap(i, nm)
        assert d >= gap_mj - 1e-9, (i, d, gap_mj)          # never worse than MuJoCo's normal
        errors = np.array([abs(d - ref.distance), _angle(n, nm), np.linalg.norm(x - ref.position)])
        if errors[0] <= 1e-6 and errors[1] <= 1e-4:
            assert errors[2] <= 1e-5, (i, errors)
            counts["agree"] += 1
            counts["within_margin"] += int(d > 0)
            worst = np.maximum(worst, errors)
        elif gap_mj < d - 1e-6:
            counts["mujoco_normal_worse"] += 1
        elif abs(ref.distance - gap_mj) > 1e-6:
            counts["mujoco_distance_off"] += 1
        else:
            assert abs(gap_mj - d) <= 1e-9 and errors[0] <= 1e-6, (i, d, ref.distance, gap_mj, errors)
            counts["flat"] += 1
    contact = N - counts["apart"] - counts["near_touching"]
    print(f"\n{t1}-{t2} margin {margin}: {counts}; max |Δd| {worst[0]:.1e} m, angle {worst[1]:.1e} rad, "
          f"position {worst[2]:.1e} m")
    assert counts["agree"] >= 0.85 * contact
    assert contact >= 0.4 * N


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_gradients_match_central_differences(pair):
    b = _batch(pair)
    for base, shifts, turns, grows in b.stencils:
        g1, g2, g_theta = (jax.tree.map(lambda x, k=base: x[k], g) for g in b.grads)
        fd_p = [(b.distance[shifts[2 * k]] - b.distance[shifts[2 * k + 1]]) / (2 * H) for k in range(3)]
        fd_theta = (b.distance[turns[0]] - b.distance[turns[1]]) / (2 * H)
        fd_size = [(b.distance[grows[2 * k]] - b.distance[grows[2 * k + 1]]) / (2 * H) for k in range(3)]
        np.testing.assert_allclose(g2.position, fd_p, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(g_theta, fd_theta, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(g2.size, fd_size, rtol=1e-6, atol=1e-8)
        # translation invariance: moving both geoms together changes nothing
        np.testing.assert_allclose(g1.position, -g2.position, rtol=1e-9, atol=1e-12)


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_degenerate_poses_are_finite(pair):
    b = _batch(pair)
    for i in b.degenerate:
        assert np.isfinite(b.distance[i]) and np.all(np.isfinite(b.normal[i])) and np.all(np.isfinite(b.position[i]))
        leaves = jax.tree.leaves(jax.tree.map(lambda x, k=i: x[k], b.grads))
        assert all(np.all(np.isfinite(x)) for x in leaves), i
        assert abs(b.distance[i] - b.gap(i, b.normal[i])) < 1e-9
    for i in b.touching:
        assert abs(b.distance[i]) < 1e-9, b.distance[i]


@pytest.mark.fast
def test_float32():
    pair = ("cylinder", "box")
    b = _batch(pair)
    idx = np.array(b.random[0.0][:64])
    cols = [np.stack([b.rows[i][k] for i in idx]) for k in range(6)]
    g1, g2 = (GeomFrame(*(jnp.asarray(c, jnp.float32) for c in cs)) for cs in (cols[:3], cols[3:]))
    def dist(a, b):
        c = CONVEX_PAIRS[pair](a, b)
        return c.distance[0], c

    (_, c), grad = jax.jit(jax.vmap(jax.value_and_grad(dist, argnums=(0, 1), has_aux=True)))(g1, g2)
    assert c.distance.dtype == c.normal.dtype == c.position.dtype == jnp.float32
    assert all(x.dtype == jnp.float32 and np.all(np.isfinite(x)) for x in jax.tree.leaves((c, grad)))
    np.testing.assert_allclose(c.distance[:, 0], b.distance[idx], atol=1e-4)


@pytest.mark.fast
def test_support_functions():
    rng = np.random.default_rng(7)
    dirs = np.concatenate([rng.normal(size=(20, 3)), np.eye(3), -np.eye(3), [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]])
    for type_ in CONVEX_TYPES:
        size = np.array(SIZE1[type_], float)
        r, p = _rotation(rng), rng.normal(size=3)
        g = GeomFrame(jnp.asarray(r), jnp.asarray(p), jnp.asarray(size))
        def point_and_jacobian(g, n, t=type_):
            return support(t, g, n), jax.jacobian(lambda g, n: support(t, g, n), argnums=(0, 1))(g, n)

        pts, jac = jax.jit(jax.vmap(point_and_jacobian, (None, 0)))(g, jnp.asarray(dirs))
        for n, x in zip(dirs, np.asarray(pts)):
            assert _inside(type_, size, r, p, x)
            if np.any(n):
                assert abs(n @ x - _h(type_, size, r, p, n)) < 1e-12
        assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(jac))


def test_capsule_cylinder_closed_forms_equal_the_general_search(monkeypatch):
    """The capsule–cylinder search by closed forms (:mod:`sodyn.collision.segment_disk`) finds the
    same maximum of the support gap as the general sampled search at 2000 random poses (deep
    overlaps, zero-length capsules and flat cylinders included), float64."""
    from sodyn.collision import convex
    from sodyn.collision.types import GeomFrame

    rng = np.random.default_rng(1)
    b = 2000
    from sodyn.spatial import quat_to_rotation

    quats = rng.normal(size=(2, b, 4))
    quats /= np.linalg.norm(quats, axis=-1, keepdims=True)
    rot = np.asarray(jax.vmap(jax.vmap(quat_to_rotation))(jnp.asarray(quats)))
    s1 = np.stack([rng.uniform(0.01, 0.2, b), rng.uniform(0, 0.3, b) * (np.arange(b) >= 50), np.zeros(b)], 1)
    s2 = np.stack([rng.uniform(0.01, 0.3, b), rng.uniform(0.005, 0.3, b), np.zeros(b)], 1)
    pos = rng.normal(size=(b, 3)) * rng.uniform(0.02, 0.3, (b, 1))
    f1 = GeomFrame(jnp.asarray(rot[0]), jnp.zeros((b, 3)), jnp.asarray(s1))
    f2 = GeomFrame(jnp.asarray(rot[1]), jnp.asarray(pos), jnp.asarray(s2))
    fast = jax.jit(jax.vmap(convex.convex_pair("capsule", "cylinder")))(f1, f2)
    general = convex._layout("capsule", "cylinder")._replace(segment_disk=False)
    monkeypatch.setattr(convex, "_layout", lambda *types: general)
    ref = jax.jit(jax.vmap(convex.convex_pair("capsule", "cylinder")))(f1, f2)
    np.testing.assert_allclose(np.asarray(fast.distance), np.asarray(ref.distance), atol=1e-12)
    cos = np.sum(np.asarray(fast.normal) * np.asarray(ref.normal), axis=-1)
    assert np.min(cos) > np.cos(1e-6)
