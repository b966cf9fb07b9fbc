"""Mesh collision geometry (:mod:`sodyn.io.meshes`): reading files, the search path, convex
hulls as model data (``Geoms.vertices``/``faces``), URDF ``<mesh>`` and MJCF mesh geoms
against MuJoCo's compiled hulls, and the errors for bad mesh input."""

import pathlib
import warnings
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import robot_path

import sodyn as sd
from sodyn.io import meshes

CUBE = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
#: A mesh file's triangles (any closed surface will do: the hull reads only the vertices).
TETRA_FACES = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
TETRA = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])


def _gaps(v, f):
    """``n·v − d`` for every vertex (rows) and face plane (columns)."""
    return np.einsum("vk,fk->vf", v, f[:, :3]) - f[:, 3]


def _check_hull_rows(g, i, n_hull=None):
    """Padding, unit normals, planes that hold every vertex, and ρ of mesh geom ``i``."""
    v, f = np.asarray(g.vertices[i]), np.asarray(g.faces[i])
    distinct = np.unique(v, axis=0)
    if n_hull is not None:
        assert len(distinct) == n_hull
    assert np.all(v[len(distinct):] == v[0]) and np.all(f[len(np.unique(f, axis=0)):] == f[0])  # padding repeats
    f = np.unique(f, axis=0)
    np.testing.assert_allclose(np.linalg.norm(f[:, :3], axis=1), 1.0, atol=1e-12)
    gaps = _gaps(distinct, f)
    assert np.max(gaps) <= 1e-9                                   # n·v ≤ d for every vertex
    assert np.all(np.min(np.abs(gaps), axis=0) <= 1e-9)           # every plane touches the hull
    np.testing.assert_allclose(g.size[i], [np.max(np.linalg.norm(v, axis=1)), 0, 0], rtol=1e-12)


# -- hulls ----------------------------------------------------------------------------------

@pytest.mark.fast
def test_hull_of_a_box_merges_coplanar_triangles_and_drops_interior_points():
    rng = np.random.default_rng(0)
    pts = np.vstack([CUBE * [0.1, 0.2, 0.3], rng.uniform(-0.09, 0.09, (50, 3)), [[0.1, 0.0, 0.0]]])  # one on a face
    h = meshes.convex_hull(pts)
    assert sorted(map(tuple, h.vertices)) == sorted(map(tuple, CUBE * [0.1, 0.2, 0.3]))
    assert h.faces.shape == (6, 4)  # 12 triangles, 6 faces
    expect = {(*n, d) for n, d in zip(np.vstack([np.eye(3), -np.eye(3)]), [0.1, 0.2, 0.3] * 2)}
    assert {tuple(np.round(f, 12) + 0.0) for f in h.faces} == expect
    a, b, c = (h.vertices[h.triangles[:, k]] for k in range(3))  # wound counter-clockwise from outside
    assert np.all(np.einsum("ij,ij->i", np.cross(b - a, c - a), a) > 0)
    assert h.radius == pytest.approx(np.linalg.norm([0.1, 0.2, 0.3]))


def test_vertex_cap_keeps_a_farthest_point_subset_inside_the_hull():
    rng = np.random.default_rng(1)
    sphere = rng.normal(size=(400, 3))
    sphere /= np.linalg.norm(sphere, axis=1, keepdims=True)
    full, capped = meshes.convex_hull(sphere), meshes.convex_hull(sphere, max_vertices=20)
    assert len(full.vertices) == 400 and len(capped.vertices) == 20 and full.cap_error == 0
    assert all(any(np.array_equal(v, w) for w in full.vertices) for v in capped.vertices)  # a subset
    outside = np.max(_gaps(full.vertices, capped.faces), axis=1)
    assert 0 < np.max(outside) <= capped.cap_error < 1.0
    with pytest.raises(ValueError, match="max_vertices must be an integer ≥ 4"):
        meshes.convex_hull(sphere, max_vertices=3)


@pytest.mark.parametrize("points, match", [
    (np.c_[np.random.default_rng(2).normal(size=(9, 2)), np.zeros(9)] @ np.linalg.qr(
        np.random.default_rng(3).normal(size=(3, 3)))[0], "coplanar vertices .* thin box or a plane geom"),
    (TETRA[:3], "coplanar"),
    (TETRA[:2], "has 2 vertices; a convex hull needs at least 4"),
    (np.vstack([TETRA, [[np.nan, 0, 0]]]), "vertices must be finite"),
    (TETRA[:, :2], r"shape \(n, 3\)"),
])
def test_degenerate_point_sets_raise(points, match):
    with pytest.raises(ValueError, match=match):
        meshes.convex_hull(points, what="mesh 'm'")


# -- files and the search path ---------------------------------------------------------------

def _write_tetra(path, scale=1.0):
    import trimesh

    trimesh.Trimesh(TETRA * scale, TETRA_FACES, process=False).export(path)
    return path


@pytest.mark.parametrize("ext", ["stl", "obj", "dae"])
def test_files_are_read_with_scale_and_collada_units(tmp_path, ext):
    path = _write_tetra(tmp_path / f"t.{ext}")
    mesh = meshes.load_mesh(path, scale=[1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.unique(mesh.vertices, axis=0), np.unique(TETRA * [1, 2, 3], axis=0), atol=1e-6)
    if ext == "dae":  # <unit meter="0.001">: coordinates in millimetres
        mm = tmp_path / "mm.dae"
        mm.write_text(path.read_text().replace("<asset>", '<asset><unit meter="0.001" name="millimeter"/>', 1))
        np.testing.assert_allclose(np.max(meshes.load_mesh(mm).vertices), 1e-3, rtol=1e-6)


def test_search_path_rules(tmp_path, monkeypatch):
    (tmp_path / "ws" / "pkg_a" / "meshes").mkdir(parents=True)
    (tmp_path / "ws" / "pkg_a" / "urdf").mkdir()
    (tmp_path / "other" / "pkg_b").mkdir(parents=True)
    a = _write_tetra(tmp_path / "ws" / "pkg_a" / "meshes" / "a.stl")
    b = _write_tetra(tmp_path / "other" / "pkg_b" / "b.stl")
    urdf_dir = tmp_path / "ws" / "pkg_a" / "urdf"
    resolve = meshes.resolve_mesh_path
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    assert resolve("package://pkg_a/meshes/a.stl", urdf_dir) == a                    # an ancestor is the package
    assert resolve("package:///pkg_a/meshes/a.stl", urdf_dir) == a                   # extra slash
    assert resolve("package://pkg_b/b.stl", urdf_dir, tmp_path / "other") == b       # package_dirs
    assert resolve("package://pkg_b/b.stl", urdf_dir, [tmp_path / "other" / "pkg_b"]) == b  # the package itself
    assert resolve("../meshes/a.stl", urdf_dir) == urdf_dir / "../meshes/a.stl"       # relative to the URDF
    assert resolve(f"file://{a}", None) == a
    with pytest.raises(FileNotFoundError, match=r"package 'pkg_b' not found in the search path") as e:
        resolve("package://pkg_b/b.stl", urdf_dir)
    assert "example-robot-data" in str(e.value) and str(urdf_dir) in str(e.value)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "other"))
    assert resolve("package://pkg_b/b.stl", urdf_dir) == b
    with pytest.raises(FileNotFoundError, match=r"package 'pkg_b' found, but the file is missing: .*nope.stl"):
        resolve("package://pkg_b/nope.stl", urdf_dir)
    erd = resolve("package://example-robot-data/robots/solo_description/meshes/cube.obj")  # the installed share
    assert erd.is_file() and erd.parent.name == "meshes"


MESH_URDF = """<robot name="r">
  <link name="base"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.1 0 0" rpy="0 0 0.5"/><geometry><mesh filename="{file}" scale="{scale}"/></geometry>
    </collision></link>
</robot>"""


def test_urdf_mesh_geom_and_its_errors(tmp_path):
    _write_tetra(tmp_path / "t.stl")
    (tmp_path / "r.urdf").write_text(MESH_URDF.format(file="t.stl", scale="2 2 2"))
    model = sd.load_urdf(tmp_path / "r.urdf", floating_base=True)
    g = model.geoms
    assert g.type == ("mesh",) and g.names == ("base:0",) and g.body == (0,)
    np.testing.assert_allclose(np.unique(np.asarray(g.vertices[0]), axis=0), np.unique(2 * TETRA, axis=0))
    np.testing.assert_allclose(g.translation[0], [0.1, 0, 0])
    np.testing.assert_allclose(g.rotation[0], sd.rotations.rpy_to_matrix(np.array([0, 0, 0.5])), atol=1e-15)
    _check_hull_rows(g, 0, 4)
    capped = sd.load_urdf(tmp_path / "r.urdf", floating_base=True, max_hull_vertices=4)
    np.testing.assert_array_equal(capped.geoms.vertices, g.vertices)
    with pytest.warns(sd.UnsupportedElementWarning, match="meshes=False"):
        assert len(sd.load_urdf(tmp_path / "r.urdf", floating_base=True, meshes=False).geoms) == 0

    def fails(exc, match, file="t.stl", scale="1 1 1", **kw):
        (tmp_path / "bad.urdf").write_text(MESH_URDF.format(file=file, scale=scale))
        with pytest.raises(exc, match=match):
            sd.load_urdf(tmp_path / "bad.urdf", floating_base=True, **kw)

    fails(FileNotFoundError, r"bad.urdf, line 3, <mesh>: mesh file not found: '.*missing.stl'", file="missing.stl")
    fails(FileNotFoundError, r"package 'no_such_pkg' not found in the search path.*\n.*example-robot-data",
          file="package://no_such_pkg/m.stl")
    (tmp_path / "empty.stl").write_bytes(b"")
    fails(ValueError, r"line 3, <mesh>: mesh file '.*empty.stl' (cannot be read|holds no triangles)", file="empty.stl")
    (tmp_path / "junk.obj").write_text("this is not a mesh\n")
    fails(ValueError, r"mesh file '.*junk.obj' (cannot be read|holds no triangles)", file="junk.obj")
    fails(ValueError, r"coplanar vertices.*meshes=False", scale="1 1 0")
    fails(ValueError, r"attribute scale='1 1' must have 3 numbers", scale="1 1")


# -- model data ------------------------------------------------------------------------------

def test_geoms_mesh_rows_through_astype_vmap_ground_plane_and_lock_joints():
    b = sd.ModelBuilder()
    b.add_body("base", None, sd.JointSpec.free(), mass=1.0, inertia=np.eye(3))
    b.add_body("arm", "base", sd.JointSpec.revolute([0, 0, 1]), mass=1.0, inertia=np.eye(3), translation=(0, 0, 0.5))
    b.add_geom("s", "base", "sphere", (0.1, 0, 0))
    b.add_geom("box", "base", "mesh", vertices=np.vstack([CUBE * [0.1, 0.2, 0.3], [[0, 0, 0]]]))
    b.add_geom("tet", "arm", "mesh", vertices=TETRA, translation=(0, 0, 0.1))
    model = b.build()
    g = model.geoms
    assert g.vertices.shape == (3, 8, 3) and g.faces.shape == (3, 6, 4)
    assert not np.any(g.vertices[0]) and not np.any(g.faces[0])      # zero rows for a primitive
    _check_hull_rows(g, 1, 8)
    _check_hull_rows(g, 2, 4)
    assert model.astype(jnp.float32).geoms.vertices.dtype == jnp.float32
    batched = jax.tree_util.tree_map(lambda x: jnp.stack([x, 2 * x]), model)
    radius = jax.vmap(lambda m: jnp.max(jnp.linalg.norm(m.geoms.vertices, axis=-1), axis=-1))(batched)
    np.testing.assert_allclose(radius[1], 2 * radius[0])
    grounded = sd.with_ground_plane(model)
    assert grounded.geoms.vertices.shape == (4, 8, 3) and not np.any(grounded.geoms.vertices[3])
    locked = sd.lock_joints(model, ["joint1"] if "joint1" in model.joint_names else [model.joint_names[1]])
    assert locked.geoms.type == g.type
    for i in (1, 2):
        assert {tuple(v) for v in np.asarray(locked.geoms.vertices[i])} == {tuple(v) for v in np.asarray(g.vertices[i])}
    empty = sd.ModelBuilder()
    empty.add_body("b", None, sd.JointSpec.free(), mass=1.0, inertia=np.eye(3))
    empty.add_geom("s", "b", "sphere", (0.1, 0, 0))
    assert empty.build().geoms.vertices.shape == (1, 1, 3) and empty.build().geoms.faces.shape == (1, 1, 4)


# -- real robots -------------------------------------------------------------------------------

def _mesh_sources(urdf: pathlib.Path) -> dict[str, tuple[str, np.ndarray]]:
    """Geom name → (mesh filename, scale), by the loader's naming rule (``<collision name>``
    when unique, else ``<link>:<i>``)."""
    out, used = {}, set()
    for link in ET.parse(urdf).getroot().findall("link"):
        for i, col in enumerate(link.findall("collision")):
            name = col.get("name")
            name = name if name and name not in used else f"{link.get('name')}:{i}"
            used.add(name)
            mesh = col.find("geometry/mesh")
            if mesh is not None:
                out[name] = (mesh.get("filename"), np.array([float(s) for s in mesh.get("scale", "1 1 1").split()]))
    return out


@pytest.mark.parametrize("name", ["solo12", "panda", "ur5", "talos_full"])
def test_example_robot_data_meshes_become_hull_geoms(name):
    path = robot_path(name)
    robot = sd.example_robot(str(path.relative_to(path.parents[2])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = robot.load()
    g, sources = model.geoms, _mesh_sources(path)
    kinds = [i for i, t in enumerate(g.type) if t == "mesh"]
    assert len(kinds) == len(sources) > 0
    for i in kinds:
        filename, scale = sources[g.names[i]]
        file = meshes.resolve_mesh_path(filename, path.parent, robot.package_dirs)
        original = meshes.load_mesh(file).vertices * scale
        lo, hi = np.min(original, axis=0), np.max(original, axis=0)
        v = np.asarray(g.vertices[i])
        assert np.all(v >= lo - 1e-12) and np.all(v <= hi + 1e-12), g.names[i]
        _check_hull_rows(g, i)


# -- MJCF ------------------------------------------------------------------------------------

MJCF = """<mujoco><asset>
  <mesh name="cloud" vertex="{cloud}"/>
  <mesh name="capped" maxhullvert="6" vertex="{cloud}"/>
</asset><worldbody>
  <body name="b" pos="0 0 1"><freejoint/>
    <geom name="m" type="mesh" mesh="cloud" pos="0.1 0.2 0.3" quat="0.9 0.1 0.3 -0.2"/>
    <geom name="c" type="mesh" mesh="capped" pos="0 0 0.5"/>
    <geom name="s" type="sphere" size="0.05"/>
  </body></worldbody></mujoco>"""


def _mujoco_hulls(mj, gid):
    """MuJoCo's collision-hull vertices (``mesh_graph``) and all of ``mesh_vert`` of a mesh geom."""
    mid = int(mj.geom_dataid[gid])
    adr, num = int(mj.mesh_vertadr[mid]), int(mj.mesh_vertnum[mid])
    vert = np.asarray(mj.mesh_vert[adr: adr + num], float)
    ga = int(mj.mesh_graphadr[mid])
    nv = int(mj.mesh_graph[ga])
    return vert[mj.mesh_graph[ga + 2 + nv: ga + 2 + 2 * nv]], vert


def _same_set(a, b, tol=1e-9):
    """The two point sets (repeats ignored) are equal within ``tol``."""
    from scipy.spatial import cKDTree

    a, b = np.unique(a, axis=0), np.unique(b, axis=0)
    return len(a) == len(b) and max(cKDTree(b).query(a)[0].max(), cKDTree(a).query(b)[0].max()) <= tol


@pytest.mark.fast
def test_mjcf_mesh_geoms_are_mujocos_hulls_in_the_geom_frame():
    import mujoco
    from scipy.spatial import ConvexHull

    rng = np.random.default_rng(4)
    cloud = np.vstack([rng.normal(size=(40, 3)) * [0.1, 0.05, 0.2], [[0.3, 0.3, 0.3]]])
    xml = MJCF.format(cloud=" ".join(f"{x:.6f}" for x in cloud.ravel()))
    mj = mujoco.MjModel.from_xml_string(xml)
    model = sd.load_mjcf(xml)
    g = model.geoms
    assert g.type == ("mesh", "mesh", "sphere")
    for name in ("m", "c"):
        gid, i = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, name), g.names.index(name)
        graph, vert = _mujoco_hulls(mj, gid)
        assert _same_set(np.asarray(g.vertices[i]), graph)
        np.testing.assert_allclose(g.translation[i], mj.geom_pos[gid], atol=1e-15)
        np.testing.assert_allclose(g.rotation[i], sd.rotations.quat_to_matrix(mj.geom_quat[gid]), atol=1e-15)
        _check_hull_rows(g, i, len(graph))
    assert _same_set(np.asarray(g.vertices[0]), _mujoco_hulls(mj, 0)[1][ConvexHull(_mujoco_hulls(mj, 0)[1]).vertices])
    assert len(np.unique(np.asarray(g.vertices[1]), axis=0)) == 6   # maxhullvert
    assert not np.any(g.vertices[2])


@pytest.mark.fast
def test_dm_control_mesh_geoms_match_mujoco():
    """The Jaco arm of dm_control: every collision mesh is MuJoCo's hull (its convex graph);
    the hull of MuJoCo's float32 ``mesh_vert`` differs from it only by vertices within float32
    rounding of its faces."""
    pytest.importorskip("dm_control")
    import dm_control
    import mujoco
    from scipy.spatial import ConvexHull

    path = pathlib.Path(dm_control.__file__).parent / "third_party" / "kinova" / "jaco_arm.xml"
    mj = mujoco.MjModel.from_xml_path(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        g = sd.load_mjcf(path).geoms
    meshes_seen = 0
    for i, name in enumerate(g.names):
        if g.type[i] != "mesh":
            continue
        meshes_seen += 1
        gid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, name)
        graph, vert = _mujoco_hulls(mj, gid)
        v, f = np.asarray(g.vertices[i]), np.asarray(g.faces[i])
        assert _same_set(v, graph), name
        qhull = vert[ConvexHull(vert).vertices]
        assert np.max(_gaps(qhull, f)) <= 1e-7 * float(g.size[i, 0]), name
        _check_hull_rows(g, i)
    assert meshes_seen == 6


@pytest.mark.parametrize("name", ["solo12", "icub_reduced"])  # STL meshes; COLLADA meshes with up_axis Y_UP
def test_mesh_geoms_match_pinocchios_collision_meshes(name):
    """Pinocchio (coal, through assimp) reads the same vertices from each file: the hulls of its
    collision meshes are ours, placed alike on the same moving body."""
    pin = pytest.importorskip("pinocchio")
    robot = sd.example_robot(name)
    pm = pin.buildModelFromUrdf(str(robot.urdf), pin.JointModelFreeFlyer())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pinocchio's note on package_dirs; sodyn's mesh-free warnings
        gm = pin.buildGeomFromUrdf(pm, str(robot.urdf), pin.GeometryType.COLLISION,
                                   [str(d) for d in robot.package_dirs])
        model = robot.load(floating_base=True, max_hull_vertices=None)
    g = model.geoms
    ours = {}
    for i in (i for i, t in enumerate(g.type) if t == "mesh"):
        ours.setdefault(g.body[i], []).append(i)
    matched = 0
    for go in gm.geometryObjects:
        if not go.meshPath:
            continue
        hull = meshes.convex_hull(np.asarray(go.geometry.vertices()))
        body = model.joint_names.index(pm.names[go.parentJoint])
        same = [i for i in ours[body] if _same_set(np.asarray(g.vertices[i]), hull.vertices)]
        assert any(np.allclose(g.rotation[i], go.placement.rotation, atol=1e-12)
                   and np.allclose(g.translation[i], go.placement.translation, atol=1e-12) for i in same), go.name
        matched += 1
    assert matched == len([t for t in g.type if t == "mesh"])
