"""The closed-form narrow phase (``sodyn.collision.primitives`` and ``.boxes``) against MuJoCo's
``mj_collision`` (``tests/collision_oracle.py``): for every pair, 200 random relative poses in
one jitted ``vmap`` give the same in-contact decision, the deepest distance within 1e-9 and
its normal within 1e-9 rad, with margin 0 and (separated pairs) margin 0.05; gradients of the
deepest distance against central differences; finite gradients at the degenerate poses
(coincident centres, parallel faces and axes, exact touching, zero-length capsules, zero
radii); a float32 run; and the resting manifolds (a box on a box or a plane: its four face
corners at distance 0)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from collision_oracle import PairOracle, deepest

from sodyn.collision.primitives import PAIR_FUNCTIONS, SLOTS
from sodyn.collision.types import FAR, GeomFrame
from sodyn.spatial import axis_angle_to_rotation

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")

PAIRS = list(PAIR_FUNCTIONS)
IDS = [f"{a}-{b}" for a, b in PAIRS]
N = 200            # random poses per pair (one batch)
NG = 25            # poses of the gradient checks (8 central differences each: one batch of N)
MARGIN = 0.05
TOUCH = 1e-7       # poses this close to touching are skipped by the in-contact comparison
SIZES = {"plane": [0.0, 0.0, 1.0], "sphere": [0.3, 0.0, 0.0], "capsule": [0.2, 0.4, 0.0],
         "ellipsoid": [0.2, 0.3, 0.4], "cylinder": [0.25, 0.35, 0.0], "box": [0.2, 0.3, 0.4]}


def random_rotations(rng, n):
    """Uniform random rotations (normalised Gaussian quaternions)."""
    q = rng.normal(size=(n, 4))
    w, x, y, z = (q / np.linalg.norm(q, axis=1, keepdims=True)).T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def rodrigues(axis, angle):
    """Rotation by ``angle`` about the unit ``axis`` (NumPy, batched)."""
    k = np.zeros(axis.shape[:-1] + (3, 3))
    k[..., 0, 1], k[..., 0, 2], k[..., 1, 2] = -axis[..., 2], axis[..., 1], -axis[..., 0]
    k = k - np.swapaxes(k, -1, -2)
    angle = np.asarray(angle)[..., None, None]
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


@functools.cache
def poses(pair):
    """``(R1, p1, s1, R2, p2, s2)`` for N random relative poses (the plane at the identity),
    about half of them penetrating."""
    t1, t2 = pair
    rng = np.random.default_rng(PAIRS.index(pair))
    r1, r2 = random_rotations(rng, N), random_rotations(rng, N)
    if t1 == "plane":
        r1[:] = np.eye(3)
        p1 = np.zeros((N, 3))
        p2 = np.concatenate([rng.normal(size=(N, 2)), rng.uniform(-0.2, 0.8, (N, 1))], axis=1)
    else:
        p1 = 0.1 * rng.normal(size=(N, 3))
        d = rng.normal(size=(N, 3))
        p2 = p1 + d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0.1, 1.2, (N, 1))
    s1 = np.broadcast_to(np.array(SIZES[t1]), (N, 3))
    s2 = np.broadcast_to(np.array(SIZES[t2]), (N, 3))
    return r1, p1, s1, r2, p2, s2


def frames(r1, p1, s1, r2, p2, s2, dtype=jnp.float64):
    return (GeomFrame(*(jnp.asarray(x, dtype) for x in (r1, p1, s1))),
            GeomFrame(*(jnp.asarray(x, dtype) for x in (r2, p2, s2))))


@functools.cache
def forward(pair):
    """The pair function as one jitted ``vmap`` (shared by every test of the pair)."""
    return jax.jit(jax.vmap(PAIR_FUNCTIONS[pair]))


@functools.cache
def contacts(pair):
    """Our contacts at the random poses, as NumPy ``(distance, position, normal)``."""
    return tuple(np.asarray(x) for x in forward(pair)(*frames(*poses(pair))))


@functools.cache
def oracle(pair, margin):
    """MuJoCo's deepest contact (or ``None``) at each random pose."""
    r1, p1, s1, r2, p2, s2 = poses(pair)
    o = PairOracle(pair[0], s1[0], pair[1], s2[0], margin)
    return [deepest(o((r1[k], p1[k]), (r2[k], p2[k]))) for k in range(N)]


def angle(a, b):
    """The angle between two unit vectors, accurate near 0."""
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), np.dot(a, b)))


@functools.cache
def gradient(pair):
    """``∂/∂(g1, g2, θ)`` of ``w₀ · min distance + w₁ · (Σ used distances, positions, Σ normals)``
    with geom 2 turned by ``θ`` about ``axis`` (a jitted ``vmap`` of ``jax.grad``)."""
    f = PAIR_FUNCTIONS[pair]

    def objective(g1, g2, theta, axis, w):
        g2 = g2._replace(rotation=g2.rotation @ axis_angle_to_rotation(axis, theta))
        c = f(g1, g2)
        used = c.distance < FAR / 2
        rest = jnp.sum(jnp.where(used, c.distance, 0.0)) + jnp.sum(jnp.where(used[:, None], c.position, 0.0))
        return w[0] * jnp.min(c.distance) + w[1] * (rest + jnp.sum(c.normal))

    return jax.jit(jax.vmap(jax.grad(objective, argnums=(0, 1, 2))))


# ---------------------------------------------------------------------------
# against MuJoCo
# ---------------------------------------------------------------------------


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_matches_mujoco(pair):
    distance, _, normal = contacts(pair)
    assert distance.shape == (N, SLOTS[pair])
    assert np.all(np.isfinite(distance)) and np.all(np.isfinite(normal))
    np.testing.assert_allclose(np.linalg.norm(normal, axis=-1), 1.0, atol=1e-12)
    ref = oracle(pair, 0.0)
    compared = 0
    for k in range(N):
        i = int(np.argmin(distance[k]))
        d = distance[k, i]
        if abs(d) < TOUCH:
            continue
        assert (d < 0) == (ref[k] is not None), (k, d, ref[k])
        if ref[k] is not None:
            compared += 1
            assert abs(d - ref[k].distance) < 1e-9, (k, d, ref[k].distance)
            assert angle(normal[k, i], ref[k].normal) < 1e-9, (k, normal[k, i], ref[k].normal)
    assert 0.3 * N < compared < 0.85 * N  # about half the poses penetrate


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_margin_matches_mujoco(pair):
    """With a margin MuJoCo also reports separated pairs: every pair function of the table
    handles its margin, so each separated pose within the margin must match its positive
    deepest distance and normal, and none beyond it be reported.  MuJoCo's pair margin is the
    sum of the two geoms' margins: the oracle gets half of MARGIN for each."""
    distance, _, normal = contacts(pair)
    ref = oracle(pair, MARGIN / 2)
    separated = 0
    for k in range(N):
        i = int(np.argmin(distance[k]))
        d = distance[k, i]
        if d < TOUCH or abs(d - MARGIN) < TOUCH:
            continue
        assert (d < MARGIN) == (ref[k] is not None), (k, d, ref[k])
        if ref[k] is not None:
            separated += 1
            assert abs(d - ref[k].distance) < 1e-9, (k, d, ref[k].distance)
            assert angle(normal[k, i], ref[k].normal) < 1e-9, (k, normal[k, i], ref[k].normal)
    assert separated >= 3


# ---------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_gradients_match_central_differences(pair):
    """``∂ min distance / ∂p₂`` and ``/∂θ`` (geom 2 turned about a random axis) at NG poses
    against central differences (step 1e-6), the 8 displaced poses of each in one batch."""
    r1, p1, s1, r2, p2, s2 = (x[:NG] for x in poses(pair))
    rng = np.random.default_rng(100)
    axis = rng.normal(size=(NG, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    g1, g2 = frames(r1, p1, s1, r2, p2, s2)
    w = jnp.tile(jnp.array([1.0, 0.0]), (NG, 1))
    _, grad2, grad_theta = gradient(pair)(g1, g2, jnp.zeros(NG), jnp.asarray(axis), w)

    h = 1e-6
    steps = [(k, s) for k in range(4) for s in (h, -h)]   # p₂ components 0–2, then θ
    dp = np.stack([np.eye(3)[k] * s if k < 3 else np.zeros(3) for k, s in steps])
    dr = np.stack([rodrigues(axis, s if k == 3 else 0.0) for k, s in steps])    # (8, NG, 3, 3)
    rep = lambda x: np.repeat(x[None], len(steps), axis=0).reshape(-1, *x.shape[1:])
    batch = frames(rep(r1), rep(p1), rep(s1), (r2[None] @ dr).reshape(-1, 3, 3),
                   (p2[None] + dp[:, None]).reshape(-1, 3), rep(s2))
    dmin = np.min(np.asarray(forward(pair)(*batch).distance), axis=-1).reshape(len(steps), NG)
    fd = (dmin[0::2] - dmin[1::2]).T / (2 * h)                                 # (NG, 4)
    ad = np.concatenate([np.asarray(grad2.position), np.asarray(grad_theta)[:, None]], axis=1)
    np.testing.assert_allclose(ad, fd, rtol=1e-6, atol=1e-8)


def half_height(t, s):
    """Half the extent of a geom along its own z axis."""
    return {"sphere": s[0], "capsule": s[0] + s[1], "ellipsoid": s[2], "cylinder": s[1], "box": s[2]}[t]


def degenerate_poses(pair):
    """``(label, (R1, p1, s1, R2, p2, s2))`` at the degenerate poses of the pair: coincident
    centres (same or tilted axes), touching exactly with parallel axes and faces (stacked along
    z, side by side along x), geom 2 on geom 1's axis, turned about z; for capsules also with
    zero length, for spheres with zero radius."""
    t1, t2 = pair
    s1, s2 = np.array(SIZES[t1]), np.array(SIZES[t2])
    tilt = rodrigues(np.array([0.6, 0.8, 0.0]), 0.3)
    lying = rodrigues(np.array([0.0, 1.0, 0.0]), np.pi / 2)
    turned = rodrigues(np.array([0.0, 0.0, 1.0]), 0.7)
    sizes = [(s1, s2)]
    if "capsule" in pair:
        sizes.append(tuple(s * np.array([1.0, 0.0 if t == "capsule" else 1.0, 1.0]) for t, s in ((t1, s1), (t2, s2))))
    if "sphere" in pair and t1 != "plane":
        sizes.append(tuple(s * np.array([0.0 if t == "sphere" else 1.0, 1.0, 1.0]) for t, s in ((t1, s1), (t2, s2))))
    out = []
    for j, (a, b) in enumerate(sizes):
        if t1 == "plane":
            cases = {"at the plane": (np.eye(3), np.zeros(3)), "tilted at the plane": (tilt, np.zeros(3)),
                     "resting": (np.eye(3), np.array([0.1, 0.2, half_height(t2, b)])),
                     "resting lying": (lying, np.array([0.0, 0.0, b[0]]))}
        else:
            cases = {"coincident": (np.eye(3), np.zeros(3)), "coincident tilted": (tilt, np.zeros(3)),
                     "touching above": (np.eye(3), np.array([0.0, 0.0, half_height(t1, a) + half_height(t2, b)])),
                     "touching beside": (np.eye(3), np.array([a[0] + b[0], 0.0, 0.0])),
                     "on the axis": (np.eye(3), np.array([0.0, 0.0, 0.05])),
                     "turned about z": (turned, np.array([0.05, 0.0, 0.1]))}
        for label, (r2, p2) in cases.items():
            out.append((label + (f" (sizes {j})" if j else ""), (np.eye(3), np.zeros(3), a, r2, p2, b)))
    return out


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_degenerate_poses_have_finite_gradients(pair):
    """Values and gradients (w.r.t. every rotation entry, position and size of both geoms, and
    a rotation angle) of the deepest distance and of every used slot's distance, position and
    normal are finite at the degenerate poses, and the normals unit."""
    cases = degenerate_poses(pair)
    assert len(cases) <= NG
    labels = [c[0] for c in cases] + [cases[0][0]] * (NG - len(cases))
    stacked = [np.stack(x) for x in zip(*([c[1] for c in cases] + [cases[0][1]] * (N - len(cases))))]
    c = forward(pair)(*frames(*stacked))   # the compiled batch of N (the first case repeated)
    assert np.all(np.isfinite(np.asarray(c.distance))) and np.all(np.isfinite(np.asarray(c.position)))
    np.testing.assert_allclose(np.linalg.norm(np.asarray(c.normal), axis=-1), 1.0, atol=1e-12)
    g1, g2 = frames(*(x[:NG] for x in stacked))
    axis = jnp.tile(jnp.array([0.0, 0.6, 0.8]), (NG, 1))
    grads = gradient(pair)(g1, g2, jnp.zeros(NG), axis, jnp.ones((NG, 2)))
    for leaf, path in zip(jax.tree.leaves(grads), ("R1", "p1", "s1", "R2", "p2", "s2", "theta")):
        bad = ~np.all(np.isfinite(np.asarray(leaf)).reshape(NG, -1), axis=1)
        assert not np.any(bad), f"non-finite d/d{path} at {[lab for lab, b in zip(labels, bad) if b]}"


@pytest.mark.fast
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_float32(pair):
    """Float32 inputs stay float32 (no float64 constants upcast them), values and gradients are
    finite, and the deepest distance agrees with float64 at float32 accuracy (but for the odd
    pose near a change of contact feature)."""
    g1, g2 = frames(*poses(pair), dtype=jnp.float32)
    c = forward(pair)(g1, g2)
    assert all(x.dtype == jnp.float32 for x in c)
    assert all(np.all(np.isfinite(np.asarray(x))) for x in c)
    d32 = np.min(np.asarray(c.distance), axis=-1)
    d64 = np.min(contacts(pair)[0], axis=-1)
    assert np.mean(np.abs(d32 - d64) < 1e-5) > 0.97
    sub = [x[:NG] for x in (*g1, *g2)]
    grads = gradient(pair)(GeomFrame(*sub[:3]), GeomFrame(*sub[3:]), jnp.zeros(NG, jnp.float32),
                           jnp.tile(jnp.array([0.0, 0.6, 0.8], jnp.float32), (NG, 1)), jnp.ones((NG, 2), jnp.float32))
    assert all(x.dtype == jnp.float32 and np.all(np.isfinite(np.asarray(x))) for x in jax.tree.leaves(grads))


# ---------------------------------------------------------------------------
# resting manifolds
# ---------------------------------------------------------------------------


def one(pair, *pose):
    """The contacts at one pose (through the compiled batch of N, the pose repeated)."""
    batch = [np.broadcast_to(np.asarray(x, float), (N, *np.shape(x))) for x in pose]
    return tuple(np.asarray(x[0]) for x in forward(pair)(*frames(*batch)))


def corners(r, p, s, normal):
    """The corners of the box face whose outward normal is ``normal`` (world)."""
    signs = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float)
    c = p + (signs * s) @ r.T
    return c[np.isclose((c - p) @ normal, np.max((c - p) @ normal))]


@pytest.mark.fast
@pytest.mark.parametrize("case", ["equal", "small on big", "big on small", "turned", "tilted stack"])
def test_box_rests_on_box(case):
    """A box resting on a box gets at least 4 slots at distance 0, at the corners of the
    contact face (the smaller face's, or the overlap polygon's vertices), normal ±z."""
    s1, s2 = {"equal": ([0.3, 0.2, 0.1], [0.3, 0.2, 0.1]), "small on big": ([0.5, 0.4, 0.1], [0.1, 0.15, 0.2]),
              "big on small": ([0.1, 0.15, 0.2], [0.5, 0.4, 0.1]), "turned": ([0.3, 0.3, 0.1], [0.2, 0.2, 0.1]),
              "tilted stack": ([0.3, 0.2, 0.1], [0.25, 0.2, 0.15])}[case]
    up = rodrigues(np.array([0.3, -0.5, 0.81]) / np.linalg.norm([0.3, -0.5, 0.81]), 0.4) if case == "tilted stack" \
        else np.eye(3)
    turn = rodrigues(np.array([0.0, 0.0, 1.0]), np.pi / 4 if case == "turned" else 0.0)
    r1, p1 = up, np.array([0.1, -0.2, 0.3])
    r2 = up @ turn
    shift = [0.0, 0.0] if case == "equal" else [0.01, 0.02]
    p2 = p1 + up @ np.array([*shift, s1[2] + s2[2]])
    d, pos, n = one(("box", "box"), r1, p1, s1, r2, p2, s2)
    touching = np.abs(d) < 1e-12
    assert np.sum(touching) >= 4, d
    np.testing.assert_allclose(n[touching], np.broadcast_to(up[:, 2], n[touching].shape), atol=1e-12)
    if case in ("equal", "small on big"):   # the upper box's bottom face lies within the lower box's top face
        expected = corners(r2, p2, np.asarray(s2), -up[:, 2])
        for c in expected:
            assert np.min(np.linalg.norm(pos[touching] - c, axis=1)) < 1e-12
    if case == "big on small":              # the lower box's top face lies within the upper box's
        for c in corners(r1, p1, np.asarray(s1), up[:, 2]):
            assert np.min(np.linalg.norm(pos[touching] - c, axis=1)) < 1e-12


@pytest.mark.fast
def test_box_rests_on_plane():
    """A box resting flat on a (tilted) plane: its 4 bottom corners at distance 0; on an edge:
    the 2 edge corners at 0, the other 2 above."""
    tilt = rodrigues(np.array([0.6, 0.8, 0.0]), 0.3)
    s = np.array([0.2, 0.3, 0.1])
    spin = rodrigues(np.array([0.0, 0.0, 1.0]), 0.9)
    r2, p2 = tilt @ spin, tilt @ np.array([0.5, -0.4, 0.1])
    d, pos, n = one(("plane", "box"), tilt, np.zeros(3), [0, 0, 1], r2, p2, s)
    np.testing.assert_allclose(d, 0.0, atol=1e-12)
    for c in corners(r2, p2, s, -tilt[:, 2]):
        assert np.min(np.linalg.norm(pos - c, axis=1)) < 1e-12
    np.testing.assert_allclose(n, np.broadcast_to(tilt[:, 2], n.shape), atol=1e-15)
    edge = rodrigues(np.array([1.0, 0.0, 0.0]), np.pi / 4)
    d, _, _ = one(("plane", "box"), np.eye(3), np.zeros(3), [0, 0, 1], edge, [0, 0, 0.2 * np.sqrt(2)],
                  [0.2, 0.2, 0.2])
    assert np.sum(np.abs(d) < 1e-12) == 2 and np.sum(d > 0.1) == 2


@pytest.mark.fast
def test_other_resting_manifolds():
    """A cylinder standing on a plane: three cap-rim points (a triangle) at 0; a capsule lying
    on a parallel capsule: two points at 0, at the ends of the overlap; a capsule crossing one
    at right angles: one point (the second slot unused)."""
    d, pos, _ = one(("plane", "cylinder"), np.eye(3), np.zeros(3), [0, 0, 1], np.eye(3), [0.1, 0.2, 0.35],
                    [0.25, 0.35, 0])
    assert np.sum(np.abs(d) < 1e-12) == 3
    area = np.cross(pos[2] - pos[0], pos[3] - pos[0])[2] / 2
    np.testing.assert_allclose(abs(area), 3 * np.sqrt(3) / 4 * 0.25**2, rtol=1e-12)
    lying = rodrigues(np.array([0.0, 1.0, 0.0]), np.pi / 2)
    d, pos, n = one(("capsule", "capsule"), lying, np.zeros(3), [0.1, 0.5, 0], lying, [0.2, 0.0, 0.2],
                    [0.1, 0.4, 0])
    np.testing.assert_allclose(d, 0.0, atol=1e-12)
    np.testing.assert_allclose(np.sort(pos[:, 0]), [-0.2, 0.5], atol=1e-12)
    np.testing.assert_allclose(n, [[0, 0, 1], [0, 0, 1]], atol=1e-12)
    crossing = rodrigues(np.array([0.0, 0.0, 1.0]), np.pi / 2) @ lying
    d, _, _ = one(("capsule", "capsule"), lying, np.zeros(3), [0.1, 0.5, 0], crossing, [0.0, 0.0, 0.19],
                  [0.1, 0.4, 0])
    np.testing.assert_allclose(d, [-0.01, FAR], atol=1e-12)


@pytest.mark.fast
def test_tables():
    """Every pair of the table, geom types in MuJoCo's order, with its slot count."""
    order = ["plane", "sphere", "capsule", "ellipsoid", "cylinder", "box"]
    assert set(PAIR_FUNCTIONS) == set(SLOTS)
    assert all(order.index(a) <= order.index(b) for a, b in PAIR_FUNCTIONS)
    for pair, f in PAIR_FUNCTIONS.items():
        out = jax.eval_shape(f, *frames(*(x[0] for x in poses(pair))))
        assert out.distance.shape == (SLOTS[pair],) and out.position.shape == out.normal.shape == (SLOTS[pair], 3)
