"""Height fields: model data and loading (MJCF, programmatic), the narrow phase against MuJoCo,
a flat height field against a plane, one contact per local minimum, gradients, the window,
terrains, bad input, and physics on terrain.

Oracles (float64, MuJoCo with ``ccd_tolerance = 1e-12``, 10 000 iterations, margin 0): the
deepest contact of each pose, distance within 1e-6 m and normal within 1e-4 rad, and the same
poses in contact.  Sphere, capsule, ellipsoid and cylinder against MuJoCo's own height-field
collision (``mjc_ConvexHField``), for poses whose core (a sphere's centre, a capsule's axis) is
above the surface.  Box and mesh against MuJoCo's convex collision of the geom with each of the
field's prisms given as a mesh geom (multi-point CCD off): for boxes MuJoCo's native CCD on its
own height-field prisms disagrees with its mesh–box collision of the same prism (and with the
separating axes), and sodyn leaves out the prisms' internal walls, so poses whose deepest MuJoCo
contact is a wall (a horizontal normal) are not compared.

The physics tests step a :class:`sodyn.ContactModel`; they run once the height-field pairs are
registered in :func:`sodyn.collision.collide.pair_functions` (skipped before).
"""

from __future__ import annotations

import pathlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.collision.collide import geom_frames, pair_functions
from sodyn.collision.heightfield import grid, hfield_pair, model_grid
from sodyn.collision.primitives import PAIR_FUNCTIONS
from sodyn.collision.types import FAR, GeomFrame, MeshFrame

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")

REGISTERED = ("hfield", "sphere") in pair_functions()[1]
needs_registration = pytest.mark.skipif(not REGISTERED, reason="height-field pairs are not registered in "
                                        "sodyn.collision.collide.pair_functions yet")
G = 9.81
NROW, NCOL = 7, 8
SIZE = (0.4, 0.35, 0.12, 0.05)
GEOM_SIZE = {"sphere": "0.07", "capsule": "0.05 0.08", "ellipsoid": "0.06 0.05 0.04", "cylinder": "0.05 0.04",
             "box": "0.06 0.05 0.04"}
MESH_POINTS = np.random.default_rng(7).normal(size=(14, 3)) * [0.05, 0.04, 0.035]
MESH_ASSET = f'<mesh name="m" vertex="{" ".join(f"{v:.17g}" for v in MESH_POINTS.ravel())}"/>'
CCD = '<option ccd_tolerance="1e-12" ccd_iterations="10000"><flag gravity="disable"/></option>'


def _floats(x) -> str:
    return " ".join(f"{v:.17g}" for v in np.ravel(x))


def _geom(type_: str) -> str:
    shape = 'mesh="m"' if type_ == "mesh" else f'size="{GEOM_SIZE[type_]}"'
    return f'<body name="b"><freejoint/><geom name="g" type="{type_}" {shape}/></body>'


def _hfield_xml(type_: str, elevation: np.ndarray, pose: str = 'pos="0.1 -0.2 0.3" euler="10 -5 20"') -> str:
    nrow, ncol = elevation.shape
    asset = (f'<hfield name="h" nrow="{nrow}" ncol="{ncol}" size="{_floats(SIZE)}" elevation="{_floats(elevation)}"/>'
             + MESH_ASSET)
    return (f'<mujoco>{CCD}<asset>{asset}</asset><worldbody><geom name="terrain" type="hfield" hfield="h" {pose}/>'
            f'{_geom(type_)}</worldbody></mujoco>')


def _samples(mj) -> np.ndarray:
    """MuJoCo's height samples ``(nrow, ncol)`` in metres (its normalised float32 data)."""
    return np.asarray(mj.hfield_data, np.float64).reshape(mj.hfield_nrow[0], mj.hfield_ncol[0]) * SIZE[2]


def _height(h: np.ndarray, x: float, y: float) -> float:
    """The triangulated surface's height at ``(x, y)`` (MuJoCo's diagonal from ``(c, r)`` to ``(c+1, r+1)``)."""
    nrow, ncol = h.shape
    u, v = (x + SIZE[0]) / (2 * SIZE[0]) * (ncol - 1), (y + SIZE[1]) / (2 * SIZE[1]) * (nrow - 1)
    j, i = min(int(u), ncol - 2), min(int(v), nrow - 2)
    fu, fv = u - j, v - i
    if fv >= fu:
        return h[i, j] + fu * (h[i + 1, j + 1] - h[i + 1, j]) + fv * (h[i + 1, j] - h[i, j])
    return h[i, j] + fu * (h[i, j + 1] - h[i, j]) + fv * (h[i + 1, j + 1] - h[i, j + 1])


class _Pair:
    """A height field and one free geom, in MuJoCo and in sodyn; sodyn's contacts from the pair
    function itself (the frames of :func:`~sodyn.collision.collide.geom_frames`)."""

    def __init__(self, type_: str, xml: str):
        self.type = type_
        self.mj = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.mj)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sd.LoadWarning)
            self.model = sd.load_mjcf(xml, dtype=jnp.float64)
        g = self.model.geoms
        ih, ig = g.names.index("terrain"), g.names.index("g")
        fn = hfield_pair(type_, model_grid(self.model, ih, [ig]))
        elevation = g.hfield.field(g.hfield_id[ih])

        def contacts(q):
            fk = sd.forward_kinematics(self.model, q)
            fr = geom_frames(self.model, fk.body.rotation, fk.body.translation)
            geom = GeomFrame(*(x[ig] for x in fr[:3]))
            if type_ == "mesh":
                geom = MeshFrame(*geom, jax.tree.map(lambda a: a[ig], fr.hull))
            return fn(GeomFrame(*(x[ih] for x in fr[:3])), geom, elevation)

        self.contacts = jax.jit(contacts)
        mujoco.mj_kinematics(self.mj, self.data)
        self.pos, self.mat = self.data.geom_xpos[0].copy(), self.data.geom_xmat[0].reshape(3, 3).copy()
        self.heights = _samples(self.mj)

    def poses(self, n: int, seed: int, core_above: bool, lift=(0.1, 1.0)):
        """Random poses ``q`` near the surface (local ``(x, y)`` inside the field, the geom's centre
        ``lift`` bounding radii above the local top); with ``core_above``, only those whose core
        (centre, capsule axis) is above the surface."""
        rng = np.random.default_rng(seed)
        rb = float(self.mj.geom_rbound[-1])
        out = []
        while len(out) < n:
            x, y = rng.uniform(-SIZE[0] + rb, SIZE[0] - rb), rng.uniform(-SIZE[1] + rb, SIZE[1] - rb)
            quat = rng.normal(size=4)
            quat /= np.linalg.norm(quat)
            u, v = (x + SIZE[0]) / (2 * SIZE[0]) * (NCOL - 1), (y + SIZE[1]) / (2 * SIZE[1]) * (NROW - 1)
            top = self.heights[int(v): int(v) + 2, int(u): int(u) + 2].max()
            local = np.array([x, y, top + rng.uniform(*lift) * rb])
            rot = np.zeros(9)
            mujoco.mju_quat2Mat(rot, quat)
            axis = self.mat.T @ rot.reshape(3, 3)[:, 2]
            half = float(self.mj.geom_size[-1, 1]) if self.type == "capsule" else 0.0
            core = [local + t * half * axis for t in np.linspace(-1, 1, 41)]
            if core_above and not all(p[2] > _height(self.heights, p[0], p[1]) + 1e-4 for p in core):
                continue
            out.append(np.concatenate([self.pos + self.mat @ local, quat]))
        return out

    def mujoco_deepest(self, q, sign: float = 1.0):
        self.data.qpos[:] = q
        mujoco.mj_kinematics(self.mj, self.data)
        mujoco.mj_collision(self.mj, self.data)
        if self.data.ncon == 0:
            return None
        c = min((self.data.contact[i] for i in range(self.data.ncon)), key=lambda c: c.dist)
        return float(c.dist), sign * c.frame[:3].copy()


def _compare(pair: _Pair, poses, sign: float = 1.0, skip_walls: bool = False) -> tuple[int, int]:
    """Deepest distance and normal against MuJoCo's, and contact iff MuJoCo has one; returns the
    numbers of poses in contact and apart (module docstring)."""
    touching = apart = 0
    for q in poses:
        c = pair.contacts(jnp.asarray(q))
        d0, n0 = float(c.distance[0]), np.asarray(c.normal[0])
        ref = pair.mujoco_deepest(q, sign)
        if ref is None:
            assert d0 >= 0.0, f"MuJoCo has no contact at q={q.tolist()}, sodyn {d0}"
            apart += 1
            continue
        if skip_walls and abs(float(pair.mat[:, 2] @ ref[1])) < 1e-6:
            continue                                   # an internal prism wall (module docstring)
        assert d0 == pytest.approx(ref[0], abs=1e-6), f"q={q.tolist()}"
        assert np.arccos(np.clip(n0 @ ref[1], -1.0, 1.0)) < 1e-4, f"q={q.tolist()}"
        touching += 1
    return touching, apart


@pytest.mark.parametrize("type_", ["sphere", "capsule", "ellipsoid", "cylinder"])
def test_deepest_contact_matches_mujoco_height_field(type_):
    pair = _Pair(type_, _hfield_xml(type_, np.random.default_rng(1).uniform(size=(NROW, NCOL))))
    touching, apart = _compare(pair, pair.poses(120, seed=2, core_above=type_ in ("sphere", "capsule")))
    assert touching >= 30 and apart >= 20


def _prism_xml(type_: str, heights: np.ndarray) -> str:
    """The field's prisms (each triangle's column down to ``−z_base``) as mesh geoms, and the geom."""
    xs = np.linspace(-SIZE[0], SIZE[0], NCOL)
    ys = np.linspace(-SIZE[1], SIZE[1], NROW)
    assets, geoms = [MESH_ASSET], []
    for r in range(NROW - 1):
        for c in range(NCOL - 1):
            v = {(i, j): (xs[j], ys[i], heights[i, j]) for i in (r, r + 1) for j in (c, c + 1)}
            for k, tri in enumerate(([v[r, c], v[r + 1, c + 1], v[r + 1, c]], [v[r, c], v[r, c + 1], v[r + 1, c + 1]])):
                top = np.array(tri)
                prism = np.vstack([top * [1, 1, 0] - [0, 0, SIZE[3]], top])
                assets.append(f'<mesh name="p{r}_{c}_{k}" vertex="{_floats(prism)}"/>')
                geoms.append(f'<geom type="mesh" mesh="p{r}_{c}_{k}"/>')
    body = "".join(geoms) + _geom(type_)
    return f'<mujoco>{CCD}<asset>{"".join(assets)}</asset><worldbody>{body}</worldbody></mujoco>'


@pytest.mark.parametrize("type_", ["box", "mesh"])
def test_deepest_contact_matches_mujoco_on_the_prisms(type_):
    elevation = np.random.default_rng(1).uniform(size=(NROW, NCOL))
    pair = _Pair(type_, _hfield_xml(type_, elevation, pose=""))
    oracle = _Pair.__new__(_Pair)
    oracle.mj = mujoco.MjModel.from_xml_string(_prism_xml(type_, pair.heights))
    oracle.mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_MULTICCD)
    oracle.data, oracle.contacts, oracle.mat = mujoco.MjData(oracle.mj), pair.contacts, np.eye(3)
    # MuJoCo orders a pair by type (box < mesh: the box first) or, for two meshes, by index (prism first)
    poses = pair.poses(150, seed=3, core_above=False, lift=(0.0, 0.7))
    touching, apart = _compare(oracle, poses, sign=1.0 if type_ == "mesh" else -1.0, skip_walls=True)
    assert touching >= 30 and apart >= 20


# -- a flat height field is a plane; one contact per local minimum ----------------------------------


def _size(type_: str) -> jnp.ndarray:
    values = [float(v) for v in GEOM_SIZE[type_].split()]
    return jnp.asarray(values + [0.0] * (3 - len(values)))


def _flat_pair(type_: str, rot_world=None, level: float = 0.5):
    """A flat field (surface ``z = 0.2 · level`` in its frame, 0.1 m cells) and the plane
    through it: ``f(r, p) -> (field contacts, plane contacts)`` of a geom at rotation ``r`` and
    position ``p`` in the field's frame (jitted)."""
    hf_r = jnp.eye(3) if rot_world is None else jnp.asarray(rot_world)
    hf_p = jnp.array([0.3, -0.1, 0.2])
    e = jnp.full((9, 11), level)
    field = GeomFrame(hf_r, hf_p, jnp.array([0.5, 0.4, 0.2]))
    plane = GeomFrame(hf_r, hf_p + hf_r @ jnp.array([0.0, 0.0, 0.2 * level]), jnp.zeros(3))
    size = _size(type_)
    fn = hfield_pair(type_, grid(9, 11, (0.5, 0.4, 0.2, 0.1), float(jnp.linalg.norm(size))))

    @jax.jit
    def both(r, p):
        geom = GeomFrame(hf_r @ r, hf_p + hf_r @ p, size)
        return fn(field, geom, e), PAIR_FUNCTIONS[("plane", type_)](plane, geom)

    return both


def _rotation(rng, angle: float | None = None) -> np.ndarray:
    """A random rotation (uniform), or one by ``angle`` about a random horizontal axis then a
    random turn about ``z``."""
    if angle is None:
        q = rng.normal(size=4)
    else:
        axis = np.array([*rng.normal(size=2), 0.0])
        tilt = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis / np.linalg.norm(axis)])
        yaw = rng.uniform(0, 2 * np.pi)
        q = np.zeros(4)
        mujoco.mju_mulQuat(q, tilt, np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))
    r = np.zeros(9)
    mujoco.mju_quat2Mat(r, q / np.linalg.norm(q))
    return r.reshape(3, 3)


@pytest.mark.parametrize("type_", ["sphere", "capsule", "cylinder", "box"])
def test_flat_height_field_gives_the_plane_contacts(type_):
    """At random poses the deepest contact is the plane's; resting on the field (tilted by up to
    3°, 0 to 2 mm deep) every penetrating plane contact is one of the field's slots (same
    distance and position)."""
    rng = np.random.default_rng(4)
    both = _flat_pair(type_, _rotation(rng))
    for _ in range(20):
        r, p = _rotation(rng), np.array([*rng.uniform(-0.2, 0.2, 2), 0.1 + rng.uniform(-0.03, 0.08)])
        hf, pl = both(jnp.asarray(r), jnp.asarray(p))
        k, j = int(jnp.argmin(pl.distance)), int(jnp.argmin(hf.distance))
        assert float(hf.distance[j]) == pytest.approx(float(pl.distance[k]), abs=1e-12)
        np.testing.assert_allclose(hf.normal[j], pl.normal[k], atol=1e-12)
    lying = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]) if type_ == "capsule" else np.eye(3)
    for _ in range(20):
        r = _rotation(rng, np.radians(rng.uniform(0, 3))) @ lying
        p = np.array([*rng.uniform(-0.2, 0.2, 2), 0.5])
        _, pl = both(jnp.asarray(r), jnp.asarray(p))
        p[2] -= float(jnp.min(pl.distance)) + rng.uniform(0, 2e-3)
        hf, pl = both(jnp.asarray(r), jnp.asarray(p))
        for j in np.flatnonzero(np.asarray(pl.distance) < 0):
            gap = np.abs(np.asarray(hf.distance) - float(pl.distance[j])) + np.linalg.norm(
                np.asarray(hf.position) - np.asarray(pl.position[j]), axis=-1)
            assert gap.min() < 1e-9, f"plane contact {j} missing at r={r.tolist()}, p={p.tolist()}"


@pytest.mark.parametrize("where", [(0.0, 0.0), (0.05, 0.0), (0.03, 0.02), (0.03, 0.03)],
                         ids=["vertex", "edge", "cell", "diagonal"])
def test_a_sphere_on_a_flat_field_has_one_contact(where):
    """Above a sample, an edge, a cell or the diagonal, the six, two or one triangles that all
    reach the same nearest point report one contact."""
    hf, _ = _flat_pair("sphere")(jnp.eye(3), jnp.array([*where, 0.1 + 0.07 - 0.001]))
    d = np.asarray(hf.distance)
    assert d[0] == pytest.approx(-0.001, abs=1e-12) and np.all(d[1:] == FAR)


def test_a_sphere_in_a_groove_touches_both_faces():
    """A V-groove along y (slope 1/2 on each side): a sphere above its floor touches both faces,
    two contacts with mirrored normals."""
    x = np.linspace(-0.5, 0.5, 11)
    e = np.broadcast_to(np.abs(x)[None, :] / 0.5, (9, 11))        # heights |x|/2 (z_top 0.25)
    field = GeomFrame(jnp.eye(3), jnp.zeros(3), jnp.array([0.5, 0.4, 0.25]))
    r = 0.05
    c = jnp.array([0.0, 0.01, r * np.sqrt(1.25) / 1.0 - 0.001 * np.sqrt(1.25)])   # 1 mm into each face
    fn = hfield_pair("sphere", grid(9, 11, (0.5, 0.4, 0.25, 0.1), r))
    out = fn(field, GeomFrame(jnp.eye(3), c, jnp.array([r, 0.0, 0.0])), jnp.asarray(e))
    d, n = np.asarray(out.distance), np.asarray(out.normal)
    assert np.sum(d < 0) == 2
    np.testing.assert_allclose(d[d < 0], -0.001, atol=1e-12)
    m = n[d < 0]
    np.testing.assert_allclose(np.sort(m[:, 0]), [-1 / np.sqrt(5), 1 / np.sqrt(5)], atol=1e-12)


def test_a_geom_off_the_field_has_no_contact():
    hf, _ = _flat_pair("box")(jnp.eye(3), jnp.array([0.9, 0.0, 0.1]))
    assert np.all(np.asarray(hf.distance) == FAR)


# -- gradients -----------------------------------------------------------------------------------


@pytest.mark.parametrize("type_", ["sphere", "capsule", "box"])
def test_gradients_match_central_differences(type_):
    """The slots' distances against the geom's pose (translation, rotation vector) and the
    elevation samples, at a pose in contact with a random field (float64, 1e-5 relative)."""
    rng = np.random.default_rng(5)
    e = jnp.asarray(rng.uniform(size=(NROW, NCOL)))
    size = jnp.asarray([float(s) for s in GEOM_SIZE[type_].split()] + [0.0] * (3 - len(GEOM_SIZE[type_].split())))
    g = grid(NROW, NCOL, SIZE, float(jnp.linalg.norm(size)))
    fn = hfield_pair(type_, g)
    field = GeomFrame(jnp.asarray(_rotation(rng)), jnp.array([0.1, 0.0, -0.2]), jnp.array(SIZE[:3]))
    r0 = jnp.asarray(_rotation(rng))
    h = _samples_from(e)
    p0 = np.array([0.03, -0.05, _height(h, 0.03, -0.05) + 0.6 * float(size[0])])

    def total(pose, elev):
        rot = _rodrigues(pose[3:])
        at = field.position + field.rotation @ (jnp.asarray(p0) + pose[:3])
        geom = GeomFrame(field.rotation @ rot @ r0, at, size)
        c = fn(field, geom, elev)
        return jnp.sum(jnp.where(c.distance < FAR / 2, c.distance * jnp.arange(1, c.distance.shape[0] + 1), 0.0))

    pose = jnp.zeros(6)
    value, (gp, ge) = jax.jit(jax.value_and_grad(total, argnums=(0, 1)))(pose, e)
    total = jax.jit(total)
    assert value < 0
    eps = 1e-6
    for i in range(6):
        dp = jnp.zeros(6).at[i].set(eps)
        fd = (total(pose + dp, e) - total(pose - dp, e)) / (2 * eps)
        assert float(gp[i]) == pytest.approx(float(fd), rel=1e-5, abs=1e-8)
    touched = np.argwhere(np.abs(np.asarray(ge)) > 0)
    assert len(touched) >= 1
    for r, c in touched[:6]:
        de = jnp.zeros_like(e).at[r, c].set(eps)
        fd = (total(pose, e + de) - total(pose, e - de)) / (2 * eps)
        assert float(ge[r, c]) == pytest.approx(float(fd), rel=1e-5, abs=1e-8)


def _samples_from(e) -> np.ndarray:
    return np.asarray(e, np.float64) * SIZE[2]


def _rodrigues(w):
    """The rotation ``exp([w]×)``, smooth at ``w = 0`` (a second-order series there)."""
    t2 = jnp.dot(w, w)
    small = t2 < 1e-12
    t = jnp.sqrt(jnp.where(small, 1.0, t2))
    a = jnp.where(small, 1.0 - t2 / 6.0, jnp.sin(t) / t)
    b = jnp.where(small, 0.5 - t2 / 24.0, (1.0 - jnp.cos(t)) / jnp.where(small, 1.0, t2))
    k = jnp.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    return jnp.eye(3) + a * k + b * k @ k


@pytest.mark.parametrize("type_", ["sphere", "capsule", "box", "cylinder"])
def test_gradients_are_finite_touching_a_flat_field(type_):
    """Resting exactly on a flat field (touching, faces parallel, above a sample): finite
    gradients, and each used slot's distance moves with the geom's height one for one."""
    size = _size(type_)
    rest = {"sphere": size[0], "capsule": size[0], "box": size[2], "cylinder": size[1]}[type_]
    rot = jnp.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]) if type_ == "capsule" else jnp.eye(3)
    field = GeomFrame(jnp.eye(3), jnp.zeros(3), jnp.array([0.5, 0.4, 0.2]))
    fn = hfield_pair(type_, grid(9, 11, (0.5, 0.4, 0.2, 0.1), float(jnp.linalg.norm(size))))

    def slots(z, e):
        return fn(field, GeomFrame(rot, jnp.array([0.0, 0.0, 0.1 + rest]) + jnp.array([0.0, 0.0, z]), size), e).distance

    e = jnp.full((9, 11), 0.5)
    d, dz = jax.jit(lambda: jax.jvp(lambda z: slots(z, e), (0.0,), (1.0,)))()
    jac_e = jax.jit(jax.jacrev(lambda e: jnp.where(slots(0.0, e) < FAR / 2, slots(0.0, e), 0.0)))(e)
    used = np.asarray(d) < FAR / 2
    assert np.all(np.isfinite(dz)) and np.all(np.isfinite(jac_e))
    np.testing.assert_allclose(np.asarray(d)[used], 0.0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(dz)[used], 1.0, atol=1e-12)
    assert used.sum() == {"sphere": 1, "capsule": 2, "box": 4, "cylinder": 4}[type_]


# -- the window ----------------------------------------------------------------------------------


def test_window_covers_the_reach():
    g = grid(NROW, NCOL, SIZE, 0.06)
    dx, dy = 2 * SIZE[0] / (NCOL - 1), 2 * SIZE[1] / (NROW - 1)
    assert g.cols == min(NCOL - 1, int(np.floor(0.12 / dx)) + 2)
    assert g.rows == min(NROW - 1, int(np.floor(0.12 / dy)) + 2)
    assert grid(NROW, NCOL, SIZE, 10.0)[3:5] == (NROW - 1, NCOL - 1)
    with pytest.warns(UserWarning, match="triangles"):
        grid(200, 200, (1.0, 1.0, 0.1, 0.1), 0.5)
    with pytest.raises(ValueError, match="height-field grid"):
        grid(1, 5, SIZE, 0.1)
    pair = _Pair("capsule", _hfield_xml("capsule", np.zeros((NROW, NCOL))))
    model = pair.model                            # the window comes from static data: fine on a traced model
    cols = jax.jit(lambda m: jnp.asarray(model_grid(m, 0, [1]).cols))(model)
    assert int(cols) == model_grid(model, 0, [1]).cols == grid(NROW, NCOL, SIZE, 0.13).cols
    np.testing.assert_allclose(model.geoms.rbound[1], pair.mj.geom_rbound[1], rtol=1e-6)


# -- loading and building --------------------------------------------------------------------------


def _ball(**kw) -> sd.Model:
    b = sd.ModelBuilder(name="ball")
    b.add_body("ball", None, joint="free", mass=1.0, inertia=np.eye(3) * 1e-3)
    b.add_geom("ball", "ball", "sphere", (0.05, 0.0, 0.0), **kw)
    return b.build(dtype=jnp.float64)


def test_mjcf_height_fields_load_as_mujoco_compiles_them():
    """Inline elevation (MuJoCo flips its rows and normalises it), a PNG, an empty grid, and two
    geoms on one field; a field without cells is left out with a warning."""
    png = pathlib.Path(mujoco.__file__).parent / "mjx" / "test_data" / "barkour_v0" / "assets" / "hfield_240_280.png"
    e = np.arange(12.0).reshape(3, 4)
    assets = (f'<hfield name="a" nrow="3" ncol="4" size="1 2 0.5 0.3" elevation="{_floats(e)}"/>'
              '<hfield name="b" nrow="5" ncol="6" size="1 1 0.2 0.1"/>'
              '<hfield name="c" nrow="1" ncol="4" size="1 1 1 1"/>'
              + (f'<hfield name="d" file="{png}" size="2 2 0.1 0.1"/>' if png.is_file() else ""))
    geoms = ('<geom name="ga" type="hfield" hfield="a" pos="0 0 -1"/>'
             '<geom name="ga2" type="hfield" hfield="a" pos="5 0 0"/>'
             '<geom name="gb" type="hfield" hfield="b" euler="0 0 30"/><geom name="gc" type="hfield" hfield="c"/>'
             + ('<geom name="gd" type="hfield" hfield="d"/>' if png.is_file() else ""))
    body = '<body><freejoint/><geom size=".1"/></body>'
    xml = f'<mujoco><asset>{assets}</asset><worldbody>{geoms}{body}</worldbody></mujoco>'
    mj = mujoco.MjModel.from_xml_string(xml)
    with pytest.warns(sd.LoadWarning, match="'gc'.*fewer than 2 rows"):
        model = sd.load_mjcf(xml)
    g = model.geoms
    assert "gc" not in g.names and g.hfield_id[g.index("ga")] == g.hfield_id[g.index("ga2")]
    np.testing.assert_allclose(g.hfield.field(0), (e[::-1] - e.min()) / (e.max() - e.min()), atol=1e-7)
    for name, h in (("ga", 0), ("gb", 1)) + ((("gd", 3),) if png.is_file() else ()):
        k, adr, shape = g.hfield_id[g.index(name)], mj.hfield_adr[h], (mj.hfield_nrow[h], mj.hfield_ncol[h])
        np.testing.assert_array_equal(g.hfield.field(k), mj.hfield_data[adr: adr + shape[0] * shape[1]].reshape(shape))
        assert g.hfield.size[k] == tuple(mj.hfield_size[h])
        np.testing.assert_allclose(g.size[g.index(name)], [*mj.hfield_size[h][:2], max(mj.hfield_size[h][2:])])
    assert float(np.max(g.hfield.field(g.hfield_id[g.index("gb")]))) == 0.0


def test_programmatic_height_fields():
    hf = sd.terrain.bowl(nrow=5, ncol=6, half_x=1.0, half_y=0.5, depth=0.2)
    model = sd.with_height_field(_ball(), *hf, pos=(0, 0, -0.1), rotation=(1, 0, 0, 0), name="bowl")
    g = model.geoms
    assert g.type == ("sphere", "hfield") and g.hfield_id == (-1, 0) and g.hfield.size == ((1.0, 0.5, 0.2, 0.1),)
    np.testing.assert_allclose(g.hfield.field(0), hf.elevation)
    model = sd.with_ground_plane(sd.with_height_field(model, np.zeros((9, 3)), (1, 1, 1, 1), name="flat"))
    assert model.geoms.hfield_id == (-1, 0, 1, -1) and model.geoms.hfield.elevation.shape == (2, 9, 6)
    b = sd.ModelBuilder(name="b")
    b.add_body("base", None, joint="free", mass=1.0, inertia=np.eye(3))
    b.add_geom("t", None, "hfield", (1, 2, 0.3, 0.4), elevation=np.full((3, 3), 0.25))
    built = b.build()
    assert built.geoms.hfield.size == ((1.0, 2.0, 0.3, 0.4),) and np.allclose(built.geoms.size[0], [1, 2, 0.4])
    again = sd.ModelBuilder(name="again")
    again.add_body("base", None, joint="free", mass=1.0, inertia=np.eye(3))
    again.add_collision_from(built.geoms, built.body_names)
    np.testing.assert_array_equal(again.build().geoms.hfield.elevation, built.geoms.hfield.elevation)


def test_elevation_is_a_leaf_per_sample():
    """``set_elevation`` under ``vmap``: one terrain per sample, and a gradient through it."""
    model = sd.with_height_field(_ball(), np.zeros((5, 5)), (0.5, 0.5, 0.2, 0.1))
    amplitude = jnp.array([0.1, 0.5, 1.0])
    stacked = jax.vmap(lambda a: sd.set_elevation(model, jnp.full((5, 5), a)).geoms.hfield.elevation)(amplitude)
    np.testing.assert_allclose(stacked[:, 0, 2, 2], amplitude)
    grad = jax.grad(lambda e: jnp.sum(sd.set_elevation(model, e).geoms.hfield.elevation ** 2))(jnp.full((5, 5), 0.5))
    np.testing.assert_allclose(grad, 1.0)


@pytest.mark.parametrize("call, match", [
    (lambda m: sd.with_height_field(m, np.zeros(5), (1, 1, 1, 1)), "geom 'terrain'.*shape \\(5,\\)"),
    (lambda m: sd.with_height_field(m, np.zeros((1, 5)), (1, 1, 1, 1)), "nrow, ncol >= 2"),
    (lambda m: sd.with_height_field(m, np.full((3, 3), np.nan), (1, 1, 1, 1)), r"elevation\[0, 0\] = nan"),
    (lambda m: sd.with_height_field(m, np.full((3, 3), 2.0), (1, 1, 1, 1)), "must lie in \\[0, 1\\]"),
    (lambda m: sd.with_height_field(m, np.zeros((3, 3)), (1, 0, 1, 1)), "four finite positive numbers"),
    (lambda m: sd.with_height_field(m, np.zeros((3, 3)), (1, 1, 1)), "four finite positive numbers"),
    (lambda m: sd.with_height_field(m, np.zeros((3, 3)), (1, 1, 1, -1)), "four finite positive numbers"),
    (lambda m: sd.with_height_field(m, np.zeros((3, 3)), (1, 1, 1, 1), name="ball"), "already has a geom"),
    (lambda m: sd.set_elevation(m, np.zeros((3, 3)), "ball"), "'ball' is a sphere, not a height field"),
])
def test_bad_height_fields_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call(_ball())


def test_bad_builder_height_fields_are_named():
    b = sd.ModelBuilder(name="b")
    b.add_body("base", None, joint="free", mass=1.0, inertia=np.eye(3))
    with pytest.raises(ValueError, match="geom 'g': a height field geom needs elevation="):
        b.add_geom("g", None, "hfield", (1, 1, 1, 1))
    with pytest.raises(ValueError, match="geom 'g': only a height field geom takes elevation"):
        b.add_geom("g", None, "box", (1, 1, 1), elevation=np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"geom 'g': elevation\[1, 0\] = inf"):
        b.add_geom("g", None, "hfield", (1, 1, 1, 1), elevation=np.array([[0, 0], [np.inf, 0]]))
    with pytest.raises(ValueError, match="geom 'g': a height field's size"):
        b.add_geom("g", None, "hfield", (1, 1, 0, 1), elevation=np.zeros((2, 2)))
    model = sd.with_height_field(_ball(), np.zeros((3, 3)), (1, 1, 1, 1))
    with pytest.raises(ValueError, match="has a 3 × 3 grid"):
        sd.set_elevation(model, np.zeros((4, 3)))


# -- terrains --------------------------------------------------------------------------------------


def test_terrain_shapes():
    x = np.linspace(-1.0, 1.0, 41)
    s = sd.terrain.slope(nrow=5, ncol=41, half_x=1.0, half_y=0.5, angle=0.3)
    np.testing.assert_allclose(np.asarray(s.elevation) * s.size[2], np.broadcast_to(np.tan(0.3) * (x + 1), (5, 41)),
                               atol=1e-12)
    st = sd.terrain.stairs(nrow=3, ncol=41, half_x=1.0, half_y=0.5, step_height=0.1, step_depth=0.3, steps=3,
                           start=-0.5)
    h = np.asarray(st.elevation[0]) * st.size[2]
    assert st.size[2] == pytest.approx(0.3) and h[0] == 0 and h[-1] == pytest.approx(0.3)
    np.testing.assert_allclose(h[(x > -0.45) & (x < -0.25)], 0.1)
    b = sd.terrain.bowl(nrow=21, ncol=21, half_x=1.0, half_y=1.0, depth=0.2, radius=0.8)
    hb = np.asarray(b.elevation) * b.size[2]
    assert hb[10, 10] == 0.0 and hb.max() == pytest.approx(0.2) and np.unravel_index(hb.argmin(), hb.shape) == (10, 10)
    r = sd.terrain.rough(jax.random.PRNGKey(0), nrow=30, ncol=30, half_x=1.0, half_y=1.0, amplitude=0.05,
                         wavelength=0.4)
    hr = np.asarray(r.elevation) * r.size[2]
    assert hr.min() == pytest.approx(0.0, abs=1e-15) and hr.max() == pytest.approx(0.05)
    dev = hr - hr.mean()
    assert np.sum(dev[:, 1:] * dev[:, :-1]) > 0.5 * np.sum(dev * dev)     # correlated over a cell: smooth
    flat = sd.terrain.from_heights(np.full((3, 4), 0.2), 1.0, 1.0, z_top=0.4)
    np.testing.assert_allclose(flat.elevation, 0.5)


def test_terrains_per_monte_carlo_sample():
    """Terrain parameters drawn per sample: traced under vmap, with a static z_top."""
    def sample(key, amplitude, angle):
        rough = sd.terrain.rough(key, nrow=10, ncol=12, half_x=1.0, half_y=1.0, amplitude=amplitude, wavelength=0.5,
                                 z_top=0.2)
        ramp = sd.terrain.slope(nrow=10, ncol=12, half_x=1.0, half_y=1.0, angle=angle, z_top=1.0)
        return rough.elevation, ramp.elevation
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    rough, ramp = jax.vmap(sample)(keys, jnp.array([0.05, 0.1, 0.2]), jnp.array([0.1, 0.2, 0.3]))
    np.testing.assert_allclose(np.max(rough, axis=(1, 2)) * 0.2, [0.05, 0.1, 0.2])
    np.testing.assert_allclose(ramp[:, 0, -1], 2 * np.tan([0.1, 0.2, 0.3]))
    assert not np.allclose(rough[0] / 0.25, rough[1] / 0.5)
    with pytest.raises(ValueError, match="give z_top="):
        jax.vmap(lambda a: sd.terrain.bowl(nrow=5, ncol=5, half_x=1, half_y=1, depth=a).elevation)(jnp.ones(2))
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        sd.terrain.stairs(nrow=5, ncol=5, half_x=1, half_y=1, step_height=0.1, step_depth=0.2, steps=0)


# -- physics on terrain ----------------------------------------------------------------------------


@needs_registration
def test_a_ball_settles_at_the_bottom_of_a_bowl():
    """A ball released on the side of a height-field bowl comes to rest over its lowest sample.
    The ball's free joint has a small damping (air drag): sodyn's contact law has no rolling
    resistance, so a rolling ball would keep oscillating."""
    r = 0.05
    b = sd.ModelBuilder(name="ball")
    b.add_body("ball", None, joint="free", mass=1.0, inertia=np.eye(3) * 0.4 * r * r,
               damping=[r * r] * 3 + [1.0] * 3)
    b.add_geom("ball", "ball", "sphere", (r, 0.0, 0.0))
    bowl = sd.terrain.bowl(nrow=31, ncol=31, half_x=0.6, half_y=0.6, depth=0.15, radius=0.5)
    model = sd.with_height_field(b.build(dtype=jnp.float64), *bowl, pos=(0.2, -0.1, 0.0))
    contact = sd.ContactModel.from_model(model)
    start = jnp.array([0.4, 0.02, 0.15 * (0.2 ** 2 + 0.12 ** 2) / 0.25 + r + 0.01, 1.0, 0.0, 0.0, 0.0])
    traj = jax.jit(lambda s: sd.rollout(model, s, None, 2e-3, 4000, contact=contact))(
        sd.State.initial(model, start))
    p, v = np.asarray(traj.states.q[-1, :3]), np.asarray(traj.states.v[-1, 3:])
    assert np.linalg.norm(p[:2] - [0.2, -0.1]) < 2e-3
    assert p[2] == pytest.approx(r, abs=1e-3) and np.linalg.norm(v) < 1e-2


@needs_registration
def test_a_capsule_slides_down_a_height_field_slope():
    """A capsule lying along the fall line of a height-field slope of tan θ = 1.25 μ slides
    with the acceleration g (sin θ − μ cos θ), within 2 %."""
    mu, r, h, mass = 0.4, 0.05, 0.2, 2.0
    theta = np.arctan(1.25 * mu)
    b = sd.ModelBuilder(name="log")
    lateral = mass * (3 * r * r + 4 * h * h) / 12
    b.add_body("log", None, joint="free", mass=mass, inertia=np.diag([lateral, lateral, mass * r * r / 2]))
    b.add_geom("capsule", "log", "capsule", (r, h, 0.0), friction=(mu, 0.005, 0.0001))
    ramp = sd.terrain.slope(nrow=9, ncol=41, half_x=1.0, half_y=0.4, angle=theta)
    model = sd.with_height_field(b.build(dtype=jnp.float64), *ramp, friction=mu)
    normal = np.array([-np.sin(theta), 0.0, np.cos(theta)])
    p0 = np.array([0.5, 0.0, np.tan(theta) * 1.5]) + (r + 1e-4) * normal
    turn = np.pi / 2 - theta                                  # the capsule's axis along the slope
    start = jnp.asarray(np.concatenate([p0, [np.cos(turn / 2), 0.0, np.sin(turn / 2), 0.0]]))
    contact = sd.ContactModel.from_model(model)
    traj = jax.jit(lambda s: sd.rollout(model, s, None, 1e-3, 1500, contact=contact))(sd.State.initial(model, start))
    down = np.array([-np.cos(theta), 0.0, -np.sin(theta)])
    x = np.asarray(traj.states.q[:, :3]) @ down
    t = np.arange(1, 1501) * 1e-3
    late = t > 0.5
    acc = np.polyfit(t[late], x[late], 2)[0] * 2
    assert acc == pytest.approx(G * (np.sin(theta) - mu * np.cos(theta)), rel=2e-2)


@needs_registration
def test_a_box_rests_on_a_flat_height_field():
    """A box dropped 2 mm onto a flat height field stands on its four corners: no rocking, the
    field carries its weight."""
    half = np.array([0.1, 0.08, 0.05])
    mass = 2.0
    b = sd.ModelBuilder(name="box")
    b.add_body("box", None, joint="free", mass=mass,
               inertia=np.diag(mass * (np.sum(half ** 2) - half ** 2) / 3))
    b.add_geom("box", "box", "box", tuple(half))
    flat = sd.terrain.from_heights(np.full((21, 21), 0.1), 1.0, 1.0, z_top=0.2)
    model = sd.with_height_field(b.build(dtype=jnp.float64), *flat, pos=(0.013, -0.021, 0.0))
    contact = sd.ContactModel.from_model(model)
    start = jnp.array([0.0, 0.0, 0.1 + half[2] + 0.002, 1.0, 0.0, 0.0, 0.0])
    traj = jax.jit(lambda s: sd.rollout(model, s, None, 1e-3, 1500, contact=contact))(sd.State.initial(model, start))
    quat = np.asarray(traj.states.q[500:, 3:7])
    tilt = np.degrees(2 * np.arcsin(np.clip(np.linalg.norm(quat[:, 1:], axis=-1), 0.0, 1.0)))
    assert tilt.max() < 0.01
    force = np.asarray(traj.contact_force[-1])
    assert np.sum(force[:, 2]) == pytest.approx(mass * G, rel=1e-2)
    assert np.sum(np.abs(force[:, 2]) > 0.1 * mass * G / 4) == 4
