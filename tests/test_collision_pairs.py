"""Collision geometry as model data and the static candidate pairs (``sodyn.collision.pairs``)
against MuJoCo's own filtering.

The oracle for the candidate set is MuJoCo's C collision driver: every geom and pair gets a
huge margin (so the broad phase and the bounding-sphere tests pass everything), the midphase
is switched off (so every geom pair of two bodies reaches ``filterCollisionPair``), and a
contact-filter callback records each dynamic pair it is asked about that passes MuJoCo's
``contype``/``conaffinity`` test (the callback replaces that test); explicit pairs are added as
the driver does.  MJX's static ``geom_pairs`` enumeration is a second oracle.  Pair parameters
are checked against the ``d.contact`` of overlapping geoms.
"""

from __future__ import annotations

import itertools
import pathlib
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import robots_dir

import sodyn as sd
from sodyn.collision.pairs import candidate_pairs, pair_parameters, restrict
from sodyn.model_data import GEOM_TYPES

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")
KEPT = {0, 1, 2, 3, 4, 5, 6}  # mjtGeom values sodyn models


def mujoco_candidates(m) -> set[frozenset[str]]:
    """Names of the geom pairs MuJoCo's driver would narrow-phase (module docstring)."""
    m = mujoco.MjModel.from_xml_string(m) if isinstance(m, str) else m
    m.geom_margin[:] = 1e4
    m.pair_margin[:] = 1e4
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)
    seen = set()

    def record(m_, d_, g1, g2):
        if (m_.geom_contype[g1] & m_.geom_conaffinity[g2]) or (m_.geom_contype[g2] & m_.geom_conaffinity[g1]):
            seen.add((int(g1), int(g2)))
        return 1  # reject: only the list is wanted

    mujoco.set_mjcb_contactfilter(record)
    try:
        mujoco.mj_forward(m, mujoco.MjData(m))
    finally:
        mujoco.set_mjcb_contactfilter(None)
    off = m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    if not off:
        seen |= {(int(a), int(b)) for a, b in zip(m.pair_geom1, m.pair_geom2) if m.geom_type[a] or m.geom_type[b]}
    return _named(m, seen)


def _named(m, pairs) -> set[frozenset[str]]:
    name = lambda g: mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"  # noqa: E731
    return {frozenset((name(a), name(b))) for a, b in pairs if m.geom_type[a] in KEPT and m.geom_type[b] in KEPT}


def ours(model, **kw) -> set[frozenset[str]]:
    return {frozenset(p) for p in candidate_pairs(model, **kw).names(model)}


def load(xml, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        return sd.load_mjcf(xml, **kw)


# -- the filtering rules on small models ---------------------------------------------------

BODY = '<body name="{n}" pos="{p}"><joint name="j{n}" type="hinge" axis="0 1 0"/>{g}{c}</body>'


def chain(extra_contact="", option="", geom_attrs=""):
    """A world with a floor and a static box; a chain a → b(welded c) → d with a multi-joint
    body; a free body e."""
    return f"""<mujoco><option>{option}</option><worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <geom name="wall" type="plane" size="1 1 1" pos="3 0 0" zaxis="-1 0 0"/>
    <body name="static" pos="0 2 0"><geom name="post" type="box" size=".1 .1 .5"/>
      <body name="static2"><geom name="post2" type="cylinder" size=".1 .5" pos="0 0 1"/></body></body>
    <body name="a" pos="0 0 1"><joint name="ja" type="hinge"/>
      <geom name="ga" type="capsule" size=".05 .2" {geom_attrs}/>
      <body name="b" pos="0 0 .5"><joint name="jb" type="hinge"/><geom name="gb" type="sphere" size=".1"/>
        <body name="c" pos=".2 0 0"><geom name="gc" type="ellipsoid" size=".1 .05 .07"/>
          <body name="d" pos=".2 0 0"><joint name="jd1" type="hinge"/><joint name="jd2" type="hinge" axis="1 0 0"/>
            <geom name="gd" type="box" size=".05 .05 .05"/><geom name="gd2" type="sphere" size=".03" pos="0 .1 0"/>
            <body name="f" pos=".2 0 0"><joint name="jf" type="slide"/><geom name="gf" type="cylinder" size=".03 .1"/>
            </body></body></body></body></body>
    <body name="e" pos="1 0 1"><freejoint/><geom name="ge" type="box" size=".1 .1 .1"/>
      <geom name="ge2" type="sphere" size=".1" pos="0 0 .2" contype="2" conaffinity="2"/></body>
    </worldbody><contact>{extra_contact}</contact></mujoco>"""


CASES = {
    "default": chain(),
    "filterparent_off": chain(option='<flag filterparent="disable"/>'),
    "exclude": chain('<exclude body1="a" body2="d"/><exclude body1="e" body2="a"/>'),
    "explicit_pairs": chain('<pair geom1="gb" geom2="ga" condim="1"/><pair geom1="floor" geom2="wall"/>'
                            '<pair geom1="ge" geom2="gd"/><pair geom1="post" geom2="post2"/>'),
    "masks": chain(geom_attrs='contype="4" conaffinity="2"'),
    "hidden_in_pair": chain('<pair geom1="ga" geom2="ge"/>', geom_attrs='contype="0" conaffinity="0"'),
}


@pytest.mark.fast
@pytest.mark.parametrize("case", CASES)
def test_rules_match_mujoco(case):
    """Weld bodies (c in b, static bodies in the world), the parent filter (multi-joint body d
    against b, not against a), world–world, excludes, explicit pairs, bitmasks."""
    xml = CASES[case]
    assert ours(load(xml)) == mujoco_candidates(xml)


@pytest.mark.fast
def test_rule_details():
    m = load(CASES["default"])
    got = ours(m)
    assert frozenset(("floor", "post")) not in got and frozenset(("post", "post2")) not in got  # world–world
    assert frozenset(("gb", "gc")) not in got  # one weld body
    assert frozenset(("gd", "gc")) not in got and frozenset(("gd", "ga")) in got  # multi-joint d's parent is b
    assert m.geoms.weld_parent[m.body_id("d")] == m.body_id("b")
    assert frozenset(("ge", "ge2")) not in got and frozenset(("floor", "ge2")) not in got  # same body; masks
    m2 = load(CASES["explicit_pairs"])
    pairs = candidate_pairs(m2)
    names = pairs.names(m2)
    # explicit first (in MuJoCo's compiled order); floor–wall (plane–plane) dropped; ordered by
    # type (sphere < capsule, cylinder < box; box–box: lower index first); the dynamic gd–ge is
    # replaced by its explicit pair, while gd2–ge (same two bodies) stays
    assert set(names[:3]) == {("gb", "ga"), ("gd", "ge"), ("post2", "post")}
    assert all(k >= 0 for k in pairs.pair[:3]) and all(k == -1 for k in pairs.pair[3:])
    assert names.count(("gd", "ge")) == 1 and ("gd2", "ge") in names
    p = m2.geoms.pairs
    assert {frozenset((m2.geoms.names[p.geom1[k]], m2.geoms.names[p.geom2[k]])) for k in pairs.pair[:3]} == {
        frozenset(x) for x in names[:3]}
    for p in candidate_pairs(m).names(m):
        t1, t2 = (GEOM_TYPES.index(m.geoms.type[m.geoms.index(n)]) for n in p)
        assert t1 <= t2


@pytest.mark.fast
def test_widened_exclude_warns():
    """MuJoCo excludes its own bodies; sodyn excludes weld bodies and says when that is wider."""
    xml = chain('<exclude body1="c" body2="e"/><exclude body1="world" body2="e"/>')
    with pytest.warns(sd.UnsupportedElementWarning) as rec:
        m = sd.load_mjcf(xml)
    (w,) = [r.message for r in rec]
    for body in ("'world' body2='e'", "'c' body2='e'"):
        assert f"<exclude body1={body}> (sodyn excludes whole weld bodies" in str(w)
    # gb shares c's weld body b; the static bodies' geoms are world geoms in sodyn
    assert mujoco_candidates(xml) - ours(m) == {frozenset(p) for p in (("gb", "ge"), ("post", "ge"), ("post2", "ge"))}
    assert ours(m) <= mujoco_candidates(xml)


@pytest.mark.fast
@pytest.mark.parametrize("bad, what", [('<pair geom1="ga" geom2="nope"/>', "geom 'nope'"),
                                       ('<exclude body1="a" body2="nope"/>', "body 'nope'")])
def test_unknown_names_in_contact(tmp_path, bad, what):
    xml = chain(bad)
    with pytest.raises(ValueError, match=f"<MJCF string>: MuJoCo could not compile the model: .*{what}"):
        sd.load_mjcf(xml)
    path = tmp_path / "bad_contact.xml"
    path.write_text(xml)
    with pytest.raises(ValueError, match=f"bad_contact.xml: MuJoCo could not compile the model: .*{what}"):
        sd.load_mjcf(path)


@pytest.mark.fast
def test_contact_flag_and_warnings():
    assert len(load(chain(option='<flag contact="disable"/>')).geoms) == 0
    xml = chain('<pair geom1="ga" geom2="gb" condim="6" solref="0.01 1"/>').replace(
        'name="gf" type="cylinder"', 'name="gf" type="cylinder" condim="4" solimp="0.8 0.9 0.01"')
    with pytest.warns(sd.UnsupportedElementWarning) as rec:
        m = sd.load_mjcf(xml)
    (w,) = [r.message for r in rec]
    for text in ("condim 4/6 of geom(s) 'gf'", "condim 4/6 of pair(s) 'pair0'", "solref/solimp/solmix of geom(s) 'gf'",
                 "solimp of pair(s) 'pair0'", "sodyn's contact law"):
        assert text in str(w), text
    assert m.geoms.condim[m.geoms.index("gf")] == 4 and m.geoms.pairs.condim == (6,)


# -- pair parameters against d.contact ---------------------------------------------------

PARAMS = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="0 0 1" friction="0.5 0.01 0.001" margin="0.01" gap="0.002" condim="1"/>
  <body name="a" pos="0 0 0.05"><freejoint/>
    <geom name="s1" type="sphere" size="0.1" friction="0.9 0.002 0.003" margin="0.02" gap="0.003" condim="4"/></body>
  <body name="b" pos="0.05 0 0.05"><freejoint/>
    <geom name="s2" type="sphere" size="0.1" friction="0.3 0.05 0.0001" priority="1" condim="1" margin="0.005"/></body>
  <body name="c" pos="0 0.05 0.05"><freejoint/>
    <geom name="s3" type="box" size="0.1 0.1 0.1" friction="0.7 0.004 0.0002" gap="0.01"/></body>
</worldbody><contact>
  <pair geom1="s3" geom2="s1" friction="0.4 0.4 0.02 0.003 0.003" margin="0.03" gap="0.004" condim="3"/>
</contact></mujoco>"""


@pytest.mark.fast
def test_pair_parameters_match_mujoco_contacts():
    """Priority wins, else per-component max friction and max condim; margins and gaps add up;
    explicit pairs use their own values (``includemargin`` is the margin)."""
    model = load(PARAMS)
    pairs = candidate_pairs(model)
    par = pair_parameters(model, pairs)
    mj = mujoco.MjModel.from_xml_string(PARAMS)
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    name = lambda g: mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g)  # noqa: E731
    index = {frozenset(p): i for i, p in enumerate(pairs.names(model))}
    checked = set()
    for c in d.contact[: d.ncon]:
        i = index[frozenset((name(c.geom[0]), name(c.geom[1])))]
        np.testing.assert_allclose(par.friction[i], c.friction[[0, 2, 3]], rtol=1e-12)
        np.testing.assert_allclose(par.margin[i], c.includemargin, rtol=1e-12)
        assert par.condim[i] == c.dim
        checked.add(i)
    assert checked == set(range(len(pairs)))  # every candidate pair touched
    # gap: detected below margin + gap, active below margin (the floor–sphere pair)
    i = index[frozenset(("floor", "s1"))]
    np.testing.assert_allclose([par.margin[i], par.gap[i], par.detection[i]], [0.03, 0.005, 0.035])
    j = index[frozenset(("s1", "s3"))]
    np.testing.assert_allclose([par.margin[j], par.gap[j]], [0.03, 0.004])


@pytest.mark.fast
def test_gap_is_detection_beyond_margin():
    """MuJoCo reports a contact between margin and margin + gap, inactive (``exclude``)."""
    xml = PARAMS.replace('pos="0 0 0.05"', 'pos="0 0 0.132"')  # s1 0.032 above the floor
    model = load(xml)
    par = pair_parameters(model, candidate_pairs(model, geoms=("floor", "s1")))
    mj = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    (c,) = [c for c in d.contact[: d.ncon] if set(c.geom) == {0, 1}]
    assert par.margin[0] < c.dist < par.detection[0] and c.exclude == 1


@pytest.mark.fast
def test_pair_parameters_jit_and_grad():
    model = load(PARAMS)
    pairs = candidate_pairs(model)

    def loss(m):
        p = pair_parameters(m, pairs)
        return jnp.sum(p.friction[:, 0]) + jnp.sum(p.margin) + jnp.sum(p.gap)

    g = jax.jit(jax.grad(loss))(model)
    assert np.all(np.isfinite(np.asarray(g.geoms.friction))) and float(jnp.sum(g.geoms.margin)) > 0
    assert float(jnp.sum(g.geoms.pairs.margin)) == 1.0  # the explicit pair's own margin
    assert pair_parameters(model, candidate_pairs(model, geoms=())).friction.shape == (0, 3)


@pytest.mark.fast
def test_restrict():
    m = load(CASES["default"])
    full = candidate_pairs(m)
    only = restrict(m, full, geoms=("floor", "gd", "gf"))
    assert ours(m, geoms=("floor", "gd", "gf")) == {frozenset(p) for p in only.names(m)}
    assert {frozenset(p) for p in only.names(m)} == {frozenset(("floor", "gd")), frozenset(("floor", "gf"))}
    feet = restrict(m, full, involving=("gf",))
    assert all("gf" in p for p in feet.names(m)) and len(feet) > 0
    on = restrict(m, full, bodies=("world", "c"))  # c is merged into b: b's geoms
    assert {tuple(sorted(p)) for p in on.names(m)} >= {("floor", "gb"), ("floor", "gc")}
    assert all(m.geoms.body[g] in (-1, m.body_id("b")) for g in on.geom1 + on.geom2)
    no_box = restrict(m, full, exclude_types=("box", ("plane", "sphere")))
    types = {(m.geoms.type[a], m.geoms.type[b]) for a, b in zip(no_box.geom1, no_box.geom2)}
    assert all("box" not in t and t != ("plane", "sphere") for t in types)
    groups = full.by_type(m)
    assert sum(len(v) for v in groups.values()) == len(full) and list(groups)[0][0] == "plane"
    with pytest.raises(ValueError, match="unknown geom 'nope'"):
        restrict(m, full, geoms=("nope",))
    with pytest.raises(ValueError, match="unknown body 'nope'"):
        restrict(m, full, bodies=("nope",))
    with pytest.raises(ValueError, match="'sdf' is not a type"):
        restrict(m, full, exclude_types=("sdf",))


# -- real MJCF models ---------------------------------------------------------------------

def _real_models() -> dict[str, pathlib.Path]:
    out = {}
    mj_root = pathlib.Path(mujoco.__file__).parent / "mjx" / "test_data" / "humanoid" / "humanoid.xml"
    if mj_root.is_file():
        out["mjx/humanoid"] = mj_root
    try:
        import dm_control

        suite = pathlib.Path(dm_control.__file__).parent / "suite"
        out.update({f"dm_control/{n}": suite / f"{n}.xml" for n in ("quadruped", "humanoid", "cheetah")})
    except ImportError:
        pass
    return out


REAL = _real_models()


@pytest.mark.fast
@pytest.mark.parametrize("key", list(REAL))
def test_real_models_match_mujoco(key):
    """MuJoCo's driver and MJX's enumeration agree with sodyn (pairs with a height field,
    which sodyn does not model, left out)."""
    from mujoco.mjx._src.collision_driver import geom_pairs

    mj = mujoco.MjModel.from_xml_path(str(REAL[key]))
    model = load(REAL[key])
    got = ours(model)
    assert got == mujoco_candidates(mj)
    assert got == _named(mj, [(a, b) for a, b, _ in geom_pairs(mj)])


# -- URDF -----------------------------------------------------------------------------------

def _erd(rel: str) -> pathlib.Path:
    d = robots_dir()
    if d is None:
        pytest.skip("example-robot-data is not installed")
    return d / rel


PANDA = "panda_description/urdf/panda_collision.urdf"
PANDA_SRDF = "panda_description/srdf/panda.srdf"


@pytest.mark.fast
def test_panda_collision_against_pinocchio():
    """Sizes and world poses of every geom equal Pinocchio's collision model; with
    self-collision and the SRDF the candidate pairs are Pinocchio's all-pairs minus the SRDF
    (which disables every parent–child pair of the Panda)."""
    pin = pytest.importorskip("pinocchio")
    path, srdf = _erd(PANDA), _erd(PANDA_SRDF)
    model = sd.load_urdf(path, self_collision=True, srdf=srdf)
    pm = pin.buildModelFromUrdf(str(path))
    cm = pin.buildGeomFromUrdf(pm, str(path), pin.GeometryType.COLLISION,
                               package_dirs=[str(robots_dir().parent.parent)])
    rename = {f"{link}:{i}": f"{link}_{i}" for link, i in (n.split(":") for n in model.geoms.names)}
    assert sorted(rename.values()) == sorted(o.name for o in cm.geometryObjects)
    q = np.random.default_rng(3).uniform(-1, 1, model.nq)
    pd, gd = pm.createData(), cm.createData()
    pin.forwardKinematics(pm, pd, np.asarray(sd.io.q_to_pinocchio(model, q)))
    pin.updateGeometryPlacements(pm, pd, cm, gd)
    fk = sd.forward_kinematics(model, q)
    g = model.geoms
    for i, name in enumerate(g.names):
        k = cm.getGeometryId(rename[name])
        b = g.body[i]
        rb, pb = (np.eye(3), np.zeros(3)) if b < 0 else (np.asarray(fk.body.rotation[b]),
                                                         np.asarray(fk.body.translation[b]))
        np.testing.assert_allclose(rb @ np.asarray(g.rotation[i]), gd.oMg[k].rotation, atol=1e-12)
        np.testing.assert_allclose(rb @ np.asarray(g.translation[i]) + pb, gd.oMg[k].translation, atol=1e-12)
        shape = cm.geometryObjects[k].geometry
        want = {"sphere": [shape.radius, 0, 0]}.get(g.type[i]) or [getattr(shape, "radius", 0),
                                                                      getattr(shape, "halfLength", 0), 0]
        np.testing.assert_allclose(g.size[i], want, rtol=1e-15)
    cm.addAllCollisionPairs()
    pin.removeCollisionPairs(pm, cm, str(srdf))
    name = lambda k: cm.geometryObjects[k].name  # noqa: E731
    theirs = {frozenset((name(p.first), name(p.second))) for p in cm.collisionPairs}
    assert {frozenset(rename[n] for n in p) for p in candidate_pairs(model).names(model)} == theirs


@pytest.mark.fast
def test_urdf_self_collision_switch():
    path = _erd(PANDA)
    off = sd.load_urdf(path)
    assert len(candidate_pairs(off)) == 0 and set(off.geoms.contype) == {2} and set(off.geoms.conaffinity) == {1}
    on = sd.load_urdf(path, self_collision=True)
    g, parent = on.geoms, np.asarray(on.parent)
    expect = set()
    for a, b in itertools.combinations(range(len(g)), 2):
        ba, bb = g.body[a], g.body[b]
        adjacent = (ba >= 0 and parent[ba] == bb) or (bb >= 0 and parent[bb] == ba)  # incl. world–child
        if ba != bb and not adjacent:
            expect.add(frozenset((g.names[a], g.names[b])))
    assert ours(on) == expect and on.geoms.exclude == ((-1, 0),)
    with_srdf = sd.load_urdf(path, self_collision=True, srdf=_erd(PANDA_SRDF))
    assert ours(with_srdf) < expect and len(with_srdf.geoms.exclude) == 28  # panda_hand → panda_link7


URDF = """<robot name="r">
  <link name="base"><collision><geometry><box size="1 2 0.2"/></geometry></collision></link>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision name="upper"><origin xyz="0 0 0.3" rpy="0.1 0.2 0.3"/><geometry><capsule radius="0.05" length="0.4"/>
    </geometry></collision>
    <collision><geometry><mesh filename="arm.stl"/></geometry></collision></link>
  <link name="tool"><collision><origin xyz="0 0 0.1"/><geometry><cylinder radius="0.02" length="0.1"/></geometry>
    </collision><collision name="upper"><geometry><sphere radius="0.03"/></geometry></collision></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="fix" type="fixed"><parent link="arm"/><child link="tool"/><origin xyz="0 0 0.6" rpy="0 0 1.5"/></joint>
</robot>"""


@pytest.mark.fast
def test_urdf_shapes_names_and_merged_links():
    with pytest.warns(sd.UnsupportedElementWarning, match=r"<link name='arm'><collision><mesh>") as rec:
        model = sd.load_urdf(URDF, meshes=False)
    (w,) = [r.message for r in rec if isinstance(r.message, sd.UnsupportedElementWarning)]
    assert w.elements == ("<link name='arm'><collision><mesh>",)
    g = model.geoms
    assert g.names == ("base:0", "upper", "tool:0", "tool:1") and g.type == ("box", "capsule", "cylinder", "sphere")
    assert g.body == (-1, 0, 0, 0)
    np.testing.assert_allclose(np.asarray(g.size), [[0.5, 1, 0.1], [0.05, 0.2, 0], [0.02, 0.05, 0], [0.03, 0, 0]])
    r_tool = sd.rotations.rpy_to_matrix(np.array([0, 0, 1.5]))
    np.testing.assert_allclose(g.translation[2], [0, 0, 0.6] + r_tool @ [0, 0, 0.1], atol=1e-15)
    np.testing.assert_allclose(g.rotation[2], r_tool, atol=1e-15)
    np.testing.assert_allclose(g.rotation[1], sd.rotations.rpy_to_matrix(np.array([0.1, 0.2, 0.3])), atol=1e-15)
    with pytest.raises(ValueError, match=r"<URDF string>, line 2, <box>: box size must be positive"):
        sd.load_urdf(URDF.replace('size="1 2 0.2"', 'size="1 0 0.2"'))


SRDF = """<robot name="r"><disable_collisions link1="tool" link2="{other}" reason="Never"/></robot>"""


@pytest.mark.fast
def test_srdf_excludes_and_errors(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = sd.load_urdf(URDF, floating_base=True, self_collision=True, srdf=SRDF.format(other="base"),
                             meshes=False)
        assert model.geoms.exclude == ((0, 1),)  # tool stands for arm (merged); base is body 0
        path = tmp_path / "r.srdf"
        path.write_text(SRDF.format(other="nope"))
        with pytest.raises(ValueError, match=r"r.srdf, line 1, <disable_collisions>: link2 'nope' is not a link"):
            sd.load_urdf(URDF, srdf=path, meshes=False)


# -- builder --------------------------------------------------------------------------------

def _builder():
    b = sd.ModelBuilder()
    b.add_body("base", None, "revolute")
    b.add_body("link", "base", "revolute", translation=(0, 0, 0.5))
    b.add_body("tip", "link", "fixed", translation=(0, 0, 0.5))
    return b


@pytest.mark.fast
@pytest.mark.parametrize("call, match", [
    (lambda b: b.add_geom("g", "base", "box", (1, -1, 1)), "geom 'g': size must be non-negative"),
    (lambda b: b.add_geom("g", "base", "capsule", (0.1, -0.2, 0)), "geom 'g': a capsule's half-length"),
    (lambda b: b.add_geom("g", "base", "cylinder", (0.1, -0.2, 0)), "geom 'g': a cylinder's half-length"),
    (lambda b: b.add_geom("g", "base", "sphere", (0, 0, 0)), r"geom 'g': sphere size\[:1\] must be positive"),
    (lambda b: b.add_geom("g", "base", "ellipsoid", (1, 1, 0)), r"geom 'g': ellipsoid size\[:3\] must be positive"),
    (lambda b: b.add_geom("g", "base", "sdf", (1, 1, 1)), "geom 'g': unknown geom type 'sdf'"),
    (lambda b: b.add_geom("g", "base", "hfield", (1, 1, 1)), "geom 'g': a height field geom needs elevation="),
    (lambda b: b.add_geom("g", "base", "mesh", (1, 1, 1)), "geom 'g': a mesh geom takes vertices="),
    (lambda b: b.add_geom("g", "base", "box", (1, 1, 1), condim=2), r"geom 'g': condim must be one of \(1, 3, 4, 6\)"),
    (lambda b: b.add_geom("g", "base", "box", (1, 1, 1), contype=-1), "geom 'g': contype must be a non-negative"),
    (lambda b: b.add_geom("g", "base", "box", (1, 1, 1), margin=-1), "geom 'g': margin must be finite and non-neg"),
    (lambda b: b.add_geom("g", "base", "box", (1, 1, 1), priority=0.5), "geom 'g': priority must be an integer"),
    (lambda b: b.add_geom("g", "nowhere", "box", (1, 1, 1)), "geom 'g': unknown body 'nowhere'"),
    (lambda b: b.add_geom("s", "base", "box", (1, 1, 1)), "geom 's': name already used"),
    (lambda b: b.add_contact_pair("s", "nope"), "contact pair .*unknown geom 'nope'"),
    (lambda b: b.add_contact_pair("s", "s"), "contact pair .*cannot be paired with itself"),
    (lambda b: b.add_contact_pair("s", "t", condim=5), "contact pair .*condim must be one of"),
    (lambda b: b.add_contact_exclude("base", "nope"), r"contact exclude \('base', 'nope'\): unknown body 'nope'"),
])
def test_builder_errors(call, match):
    b = _builder()
    b.add_geom("s", "base", "sphere", (0.1, 0, 0))
    b.add_geom("t", "tip", "sphere", (0.1, 0, 0))
    with pytest.raises(ValueError, match=match):
        call(b)


@pytest.mark.fast
def test_builder_collision_data():
    """Bitmasks compose (robot 2/1 against terrain 1/1), merged links and excludes map to weld
    bodies, explicit pairs and filter_parent."""
    b = _builder()
    b.add_body("obj", None, "free")
    b.add_geom("floor", None, "plane", (0, 0, 1))
    b.add_geom("g0", "base", "capsule", (0.05, 0.2, 0), contype=2, conaffinity=1)
    b.add_geom("g1", "link", "box", (0.1, 0.1, 0.1), contype=2, conaffinity=1, margin=0.01, priority=2)
    b.add_geom("g2", "tip", "cylinder", (0.02, 0.1, 0), translation=(0, 0, 0.1), contype=2, conaffinity=1)
    b.add_geom("ball", "base", "sphere", (0.1, 0, 0), translation=(1, 0, 0))
    b.add_contact_pair("g0", "g1", condim=1, friction=(0.3, 0, 0), margin=0.02)
    b.add_geom("o", "obj", "sphere", (0.1, 0, 0))
    b.add_contact_exclude("tip", "world")  # tip is merged into link
    m = b.build()
    g = m.geoms
    assert g.body == (-1, 0, 1, 1, 0, 2) and g.exclude == ((-1, 1),) and g.filter_parent
    np.testing.assert_allclose(g.translation[3], [0, 0, 0.6])
    robot_terrain = {("floor", "g0"), ("floor", "ball"), ("floor", "o")}
    robot_object = {("o", "g0"), ("o", "g1"), ("o", "g2"), ("o", "ball")}
    assert ours(m) == {frozenset(p) for p in robot_terrain | robot_object | {("g0", "g1")}}  # g0–g1: explicit
    par = pair_parameters(m, candidate_pairs(m, geoms=("g0", "g1", "o")))
    assert par.condim == (1, 3, 3)  # explicit g0–g1 first
    np.testing.assert_allclose(par.margin, [0.02, 0.0, 0.01])
    copy = _builder()  # what code that rebuilds a model (lock_joints) does
    copy.add_body("obj", None, "free")
    copy.add_collision_from(m.geoms, m.body_names)
    assert jax.tree_util.tree_structure(copy.build().geoms) == jax.tree_util.tree_structure(g)
    jax.tree_util.tree_map(np.testing.assert_array_equal, copy.build().geoms, g)
    free = _builder()
    free.filter_parent = False
    free.add_geom("a", "base", "sphere", (0.1, 0, 0))
    free.add_geom("b", "link", "sphere", (0.1, 0, 0))
    assert ours(free.build()) == {frozenset(("a", "b"))}
    assert ours(_builder().build()) == set()
    m = _builder().build()
    assert len(m.geoms) == 0 and m.geoms.pairs.friction.shape == (0, 3)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
