# ruff: noqa: E501  (URDF snippets are clearer on one line)
"""URDF parsing (``sodyn.load_urdf``): conventions, structure, mimic joints, and bad input.

The numerical oracle suite on real robots lives in ``test_real_robots.py``; here one small
hand-written URDF is compared with Pinocchio (inertial origins with rpy, joint rpy, unnormalised
axes, damping), and every malformed input must raise one clear error naming the file, the
element and the line."""

import re
import warnings

import jax
import numpy as np
import pytest

import sodyn as sd
from sodyn.io import q_to_pinocchio, v_to_pinocchio
from sodyn.io.urdf import CoupledURDF, load_urdf
from sodyn.rotations import rpy_to_matrix as rpy_to_rotation

jax.config.update("jax_enable_x64", True)

INERTIAL = """<inertial><origin xyz="{c}" rpy="{rpy}"/><mass value="{m}"/>
  <inertia ixx="{i[0]}" iyy="{i[1]}" izz="{i[2]}" ixy="{i[3]}" ixz="{i[4]}" iyz="{i[5]}"/></inertial>"""


def inertial(m=1.0, c="0.01 0.02 0.03", rpy="0.3 -0.2 0.5", i=(0.02, 0.03, 0.04, 0.001, -0.002, 0.003)):
    return INERTIAL.format(m=m, c=c, rpy=rpy, i=i)


ROBOT = f"""<?xml version="1.0"?>
<robot name="toy">
  <link name="world"/>
  <link name="base">{inertial(2.0)}</link>
  <link name="a">{inertial(1.0, rpy="0 0 0")}</link>
  <link name="b">{inertial(0.5, c="0.1 0 0", rpy="1.0 0.4 -0.3")}</link>
  <link name="c">{inertial(0.3)}</link>
  <link name="tool"/>
  <link name="d">{inertial(0.7, c="0 0 0.1")}</link>
  <joint name="weld" type="fixed"><parent link="world"/><child link="base"/>
    <origin xyz="0 0 0.5" rpy="0 0 0.3"/></joint>
  <joint name="z_first" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0.1 0 0.2" rpy="0.1 0.2 0.3"/><axis xyz="0 0 2"/>
    <limit lower="-1.5" upper="1.5" effort="10" velocity="2"/><dynamics damping="0.4" friction="0.1"/></joint>
  <joint name="b_slide" type="prismatic"><parent link="a"/><child link="b"/>
    <origin xyz="0 0.3 0" rpy="-0.4 0 0.2"/><axis xyz="1 1 0"/><limit lower="-0.2" upper="0.3" effort="5" velocity="1"/></joint>
  <joint name="c_spin" type="continuous"><parent link="b"/><child link="c"/>
    <origin xyz="0.2 0 0" rpy="0 0.5 0"/><axis xyz="0 1 0"/></joint>
  <joint name="tool_fix" type="fixed"><parent link="c"/><child link="tool"/><origin xyz="0 0 0.1"/></joint>
  <joint name="a_second" type="revolute"><parent link="base"/><child link="d"/>
    <origin xyz="-0.1 0 0.2"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def test_rpy_convention():
    rpy = np.array([0.3, -0.7, 1.1])
    rx = np.array([[1, 0, 0], [0, np.cos(0.3), -np.sin(0.3)], [0, np.sin(0.3), np.cos(0.3)]])
    c, s = np.cos(-0.7), np.sin(-0.7)
    ry = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    c, s = np.cos(1.1), np.sin(1.1)
    rz = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    np.testing.assert_allclose(rpy_to_rotation(rpy), rz @ ry @ rx, atol=1e-15)


def test_structure():
    m = load_urdf(ROBOT)
    # children visited in byte order of joint names, as urdfdom/Pinocchio do
    assert m.joint_names == ("a_second", "z_first", "b_slide", "c_spin")
    assert m.body_names == ("d", "a", "b", "c")
    assert m.joint_types == ("revolute", "revolute", "prismatic", "continuous")
    assert (m.nq, m.nv) == (4, 4)
    for f in ("world", "base", "tool", "weld", "tool_fix", "a", "z_first"):
        m.frame_id(f)
    np.testing.assert_allclose(m.axis[1], [0, 0, 1])
    np.testing.assert_allclose(m.axis[2], [2 ** -0.5, 2 ** -0.5, 0])
    np.testing.assert_allclose(m.damping, [0, 0.4, 0, 0])
    np.testing.assert_allclose(m.friction, [0, 0.1, 0, 0])
    np.testing.assert_allclose(m.lower_limit[:3], [-1, -1.5, -0.2])
    assert np.isinf(m.upper_limit[3])
    np.testing.assert_allclose(m.velocity_limit[:3], [1, 2, 1])
    mf = load_urdf(ROBOT, floating_base=True)
    assert mf.joint_names[0] == "root_joint" and mf.joint_types[0] == "free" and mf.nv == 10


def test_against_pinocchio():
    pin = pytest.importorskip("pinocchio")
    for floating in (False, True):
        m = load_urdf(ROBOT, floating_base=floating)
        pm = pin.buildModelFromXML(ROBOT, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromXML(ROBOT)
        assert list(pm.names)[1:] == list(m.joint_names)
        rng = np.random.default_rng(1)
        q = sd.neutral_configuration(m) + 0.0
        q = q.at[-4:].set(rng.uniform(-0.2, 0.2, 4))
        if floating:
            quat = rng.normal(size=4)
            q = q.at[:7].set(np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)]))
        v = rng.normal(size=m.nv)
        qp, vp = np.asarray(q_to_pinocchio(m, q)), np.asarray(v_to_pinocchio(m, v))
        # one compiled program per model (evaluated eagerly, each operation would compile on its own)
        M, tau, fk = jax.jit(lambda q, v, m=m: (sd.mass_matrix(m, q), sd.inverse_dynamics(m, q, v, 0.0 * v),
                                                 sd.forward_kinematics(m, q)))(q, v)
        M = np.asarray(v_to_pinocchio(m, v_to_pinocchio(m, M).T))
        Mp = pin.crba(pm, pm.createData(), qp)
        np.testing.assert_allclose(M, np.triu(Mp) + np.triu(Mp, 1).T, atol=1e-12)
        taup = pin.rnea(pm, pm.createData(), qp, vp, np.zeros(m.nv)) + pm.damping * vp
        np.testing.assert_allclose(v_to_pinocchio(m, tau), taup, atol=1e-12)
        pd = pm.createData()
        pin.framesForwardKinematics(pm, pd, qp)
        for f in pm.frames[1:]:
            k = m.frame_id(f.name)
            np.testing.assert_allclose(fk.frame.translation[k], pd.oMf[pm.getFrameId(f.name)].translation, atol=1e-12)
            np.testing.assert_allclose(fk.frame.rotation[k], pd.oMf[pm.getFrameId(f.name)].rotation, atol=1e-12)


def test_planar_and_floating_joints():
    urdf = f"""<robot name="p"><link name="r">{inertial()}</link><link name="s">{inertial()}</link>
      <link name="t">{inertial()}</link>
      <joint name="pl" type="planar"><parent link="r"/><child link="s"/><axis xyz="1 0 0"/></joint>
      <joint name="fl" type="floating"><parent link="s"/><child link="t"/><origin xyz="0 0 1"/></joint></robot>"""
    m = load_urdf(urdf)
    assert m.joint_types == ("planar", "free") and m.body_names == ("s__planar", "t")
    q = np.array([0.3, -0.2, 0.7, 0, 0, 0, 1, 0, 0, 0])
    fk = sd.forward_kinematics(m, q)
    k = m.frame_id("s")
    # the plane is normal to x: s moves in y-z and turns about x, its axes stay those of r at θ=0
    np.testing.assert_allclose(fk.frame.translation[k][0], 0.0, atol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(fk.frame.translation[k]), np.hypot(0.3, 0.2), atol=1e-14)
    r = np.asarray(fk.frame.rotation[k])
    np.testing.assert_allclose(r @ [1, 0, 0], [1, 0, 0], atol=1e-14)
    np.testing.assert_allclose(np.arccos(r[1, 1]), 0.7, atol=1e-12)


MIMIC = f"""<robot name="g"><link name="r"/><link name="a">{inertial()}</link><link name="b">{inertial()}</link>
  <link name="c">{inertial()}</link>
  <joint name="j1" type="revolute"><parent link="r"/><child link="a"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="j1" multiplier="2" offset="0.1"/></joint>
  <joint name="j3" type="prismatic"><parent link="b"/><child link="c"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="j2" multiplier="-1"/></joint></robot>"""


def test_mimic_modes():
    m = load_urdf(MIMIC)
    assert m.nq == 3  # independent joints by default, like Pinocchio
    with pytest.raises(ValueError, match=r"line 8, <mimic>: joint 'j2' is a mimic joint"):
        load_urdf(MIMIC, mimic="reject")
    out = load_urdf(MIMIC, mimic="couple")
    assert isinstance(out, CoupledURDF)
    c = out.coupling
    assert c.independent_joints == ("j1",) and c.mimic_joints == ("j2", "j3")
    np.testing.assert_allclose(c.q_full(np.array([0.5])), [0.5, 1.1, -1.1])
    np.testing.assert_allclose(c.v_full(np.array([1.0])), [1.0, 2.0, -2.0])
    M = np.asarray(sd.mass_matrix(out.model, c.q_full(np.array([0.5]))))
    np.testing.assert_allclose(c.reduce_mass_matrix(M), c.G.T @ M @ c.G)


def test_panda_mimic_is_independent():
    from robots import robot_path

    m = load_urdf(robot_path("panda"))
    assert m.nq == 9
    with pytest.raises(ValueError, match="panda_finger_joint2.*mimic"):
        load_urdf(robot_path("panda"), mimic="reject")


def test_missing_inertia_default():
    urdf = MIMIC.replace(f'<link name="c">{inertial()}</link>', '<link name="c"><inertial><mass value="1"/></inertial></link>')
    with pytest.raises(ValueError, match=r"line 4, <inertial>: link 'c': <inertial> has no <inertia>"):
        load_urdf(urdf)
    m = load_urdf(urdf, missing_inertia="zero")
    assert float(m.mass[2]) == 1.0 and np.all(np.asarray(m.inertia[2]) == 0)


# ---------------------------------------------------------------------------
# bad input: one clear error naming the file, the element and the line
# ---------------------------------------------------------------------------

GOOD_LINKS = f'<link name="r">{inertial()}</link>\n<link name="a">{inertial()}</link>\n'
J = '<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/></joint>\n'

BAD = {
    "malformed": ('<robot name="x">\n<link name="r">\n</robot>', r"malformed XML at line 3"),
    "no_robot": ('<model>\n<link name="r"/></model>', r"line 1, <model>.*expected <robot>"),
    "missing_parent": ('<robot name="x">\n' + GOOD_LINKS + J.format(n="j", t="revolute", p="nope", c="a") + "</robot>",
                       r"line 6, <parent>.*parent link 'nope' does not exist"),
    "missing_child": ('<robot name="x">\n' + GOOD_LINKS + J.format(n="j", t="revolute", p="r", c="nope") + "</robot>",
                      r"line 6, <child>.*child link 'nope' does not exist"),
    "two_roots": ('<robot name="x">\n' + GOOD_LINKS + "</robot>", r"line 1, <robot name='x'>.*2 roots: 'r' \(line 2\), 'a' \(line 4\)"),
    "cycle": ('<robot name="x">\n' + GOOD_LINKS + f'<link name="b">{inertial()}</link>\n'
              + J.format(n="j1", t="revolute", p="a", c="b") + J.format(n="j2", t="revolute", p="b", c="a") + "</robot>",
              r"line [89], <joint name='j[12]'>.*cycle"),
    "full_cycle": ('<robot name="x">\n' + GOOD_LINKS + J.format(n="j1", t="revolute", p="a", c="r")
                   + J.format(n="j2", t="revolute", p="r", c="a") + "</robot>", r"line 6, <joint name='j1'>.*cycle"),
    "unknown_type": ('<robot name="x">\n' + GOOD_LINKS + J.format(n="j", t="screw", p="r", c="a") + "</robot>",
                     r"line 6, <joint name='j'>.*unknown joint type 'screw'"),
    "not_psd": ('<robot name="x">\n<link name="r">' + inertial(i=(1, 1, 1, 2, 0, 0)) + "</link></robot>",
                r"line 2, <inertial> of link 'r'.*clearly negative eigenvalue -1 .*not positive semi-definite"),
    "negative_mass": ('<robot name="x">\n<link name="r">' + inertial(m=-1) + "</link></robot>",
                      r"line 2, <mass> of link 'r'.*mass must be non-negative"),
    "duplicate_link": ('<robot name="x">\n' + GOOD_LINKS + '<link name="a"/>\n</robot>',
                       r"line 6, <link name='a'>.*duplicate link name 'a' \(first at line 4\)"),
    "child_is_parent": ('<robot name="x">\n' + GOOD_LINKS + J.format(n="j", t="revolute", p="a", c="a") + "</robot>",
                        r"line 6, <joint name='j'>.*connects link 'a' to itself"),
    "nan_mass": ('<robot name="x">\n<link name="r"><inertial><mass value="nan"/>\n<inertia ixx="1" iyy="1" izz="1"/></inertial></link></robot>',
                 r"line 2, <mass>.*value='nan' contains NaN"),
    "mimic_unknown_strict": ('<robot name="x">\n' + GOOD_LINKS + '<joint name="j" type="continuous"><parent link="r"/><child link="a"/>\n'
                             '<mimic joint="nowhere"/></joint></robot>', r"line 7, <mimic>: joint 'j' mimics unknown joint 'nowhere'"),
    "nan": ('<robot name="x">\n' + GOOD_LINKS + '<joint name="j" type="revolute"><parent link="r"/><child link="a"/>\n'
            '<origin xyz="0 nan 0"/></joint></robot>', r"line 7, <origin>.*xyz='0 nan 0'.*NaN"),
    "bad_number": ('<robot name="x">\n<link name="r"><inertial><mass value="heavy"/>\n<inertia ixx="1" iyy="1" izz="1"/></inertial></link></robot>',
                   r"line 2, <mass>.*value='heavy' is not a list of numbers"),
    "no_links": ('<robot name="x">\n</robot>', r"line 1, <robot name='x'>.*no <link>"),
    "zero_axis": ('<robot name="x">\n' + GOOD_LINKS + '<joint name="j" type="revolute"><parent link="r"/><child link="a"/>\n'
                  '<axis xyz="0 0 0"/></joint></robot>', r"line 7, <axis>.*axis is zero"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input(case, tmp_path):
    text, pattern = BAD[case]
    path = tmp_path / f"{case}.urdf"
    path.write_text(text)
    kw = dict(strict=True) if case.endswith("_strict") else {}
    with pytest.raises(ValueError) as info:
        load_urdf(path, **kw)
    msg = str(info.value)
    assert msg.startswith(str(path)), msg
    assert re.search(pattern, msg, re.S), msg
    with pytest.raises(ValueError, match=re.escape("<URDF string>")):  # strings are named too
        load_urdf(text, **kw)


def test_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.urdf"):
        load_urdf(tmp_path / "missing.urdf")
    with pytest.raises(FileNotFoundError, match="missing.urdf"):
        load_urdf(str(tmp_path / "missing.urdf"))


def test_bad_options():
    with pytest.raises(ValueError, match="mimic"):
        load_urdf(ROBOT, mimic="maybe")
    with pytest.raises(ValueError, match="missing_inertia"):
        load_urdf(ROBOT, missing_inertia="guess")


def test_mimic_of_unknown_joint(tmp_path):
    """Ignored with a warning naming the line while mimic tags do not enter the model
    (``mimic="independent"``, as Pinocchio); an error when they would (``"couple"``)."""
    text, pattern = BAD["mimic_unknown_strict"]
    path = tmp_path / "mimic.urdf"
    path.write_text(text)
    with pytest.warns(sd.IgnoredElementWarning, match=re.escape(str(path)) + ", " + pattern) as rec:
        model = load_urdf(path)
    assert model.nv == 1 and rec[0].message.elements == ("line 7",)
    with pytest.raises(ValueError, match=re.escape(str(path)) + ", " + pattern):
        load_urdf(path, mimic="couple")


# ---------------------------------------------------------------------------
# inertias: accept what is valid, repair round-off (one warning), reject the impossible
# ---------------------------------------------------------------------------


def two_links(i_b, m_b=1.0, rpy="0 0 0"):
    """A base with unit principal moments (the model's inertia scale) and a child link ``b``
    with rotational inertia ``i_b`` (ixx iyy izz ixy ixz iyz) on line 4."""
    return f"""<robot name="t">
<link name="a">{inertial(2.0, rpy="0 0 0", i=(1, 1, 1, 0, 0, 0))}</link>
<link name="b">{inertial(m_b, rpy=rpy, i=i_b)}</link>
<joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.1 0.2 0.3"/><axis xyz="0 1 1"/>
  <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def pin_matches(urdf_text, model, inertia_b=None):
    """M and inverse dynamics of the floating model equal Pinocchio's (optionally with link b's
    rotational inertia replaced by ``inertia_b``, in link axes)."""
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromXML(urdf_text, pin.JointModelFreeFlyer())
    if inertia_b is not None:
        old = pm.inertias[2]
        pm.inertias[2] = pin.Inertia(old.mass, old.lever, np.asarray(inertia_b))
    rng = np.random.default_rng(0)
    quat = rng.normal(size=4)
    q = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat), [0.4]])
    v, a = rng.normal(size=7), rng.normal(size=7)
    M, tau = jax.jit(lambda q, v, a: (sd.mass_matrix(model, q), sd.inverse_dynamics(model, q, v, a)))(q, v, a)
    qp, vp, ap = (np.asarray(f(model, x)) for f, x in ((q_to_pinocchio, q), (v_to_pinocchio, v), (v_to_pinocchio, a)))
    Mp = pin.crba(pm, pm.createData(), qp)
    np.testing.assert_allclose(v_to_pinocchio(model, v_to_pinocchio(model, M).T), np.triu(Mp) + np.triu(Mp, 1).T,
                               atol=1e-12)
    np.testing.assert_allclose(v_to_pinocchio(model, tau), pin.rnea(pm, pm.createData(), qp, vp, ap), atol=1e-12)


def test_massless_link_with_rotational_inertia():
    text = two_links((0.01, 0.02, 0.025, 0.001, 0, 0), m_b=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # valid: no warning
        model = load_urdf(text, floating_base=True)
    assert float(model.mass[1]) == 0.0 and np.any(np.asarray(model.inertia[1]))
    pin_matches(text, model)


def test_round_off_negative_eigenvalue_is_repaired():
    # principal moments (0.5, 0.5, -1e-8) about axes rotated by rpy: -1e-8 is round-off next to
    # the base's unit moments; the repair sets it to zero.
    text = two_links((0.5, 0.5, -1e-8, 0, 0, 0), rpy="0.3 0.2 0.1")
    with pytest.warns(sd.InertiaWarning, match=r"<URDF string>: 1 link inertia.*\n  line 4, <inertial> of link 'b': "
                      r"principal moments .* set to zero") as rec:
        model = load_urdf(text, floating_base=True)
    (repair,) = rec[0].message.repairs
    r = rpy_to_rotation([0.3, 0.2, 0.1])
    assert repair.link == "b" and repair.repaired
    np.testing.assert_allclose(repair.original, r @ np.diag([0.5, 0.5, -1e-8]) @ r.T, atol=1e-15)
    np.testing.assert_allclose(repair.inertia, r @ np.diag([0.5, 0.5, 0.0]) @ r.T, atol=1e-15)
    pin_matches(text, model, inertia_b=repair.inertia)
    with pytest.raises(ValueError, match=r"(?s)line 4, <inertial> of link 'b': .*set to zero.*\(strict=True\)"):
        load_urdf(text, floating_base=True, strict=True)


def test_round_off_triangle_violation_is_repaired():
    text = two_links((0.3, 0.4, 0.7 + 1e-9, 0, 0, 0))
    with pytest.warns(sd.InertiaWarning, match=r"link 'b': triangle inequality violated by 1e-09, moved onto it") as rec:
        load_urdf(text)
    (repair,) = rec[0].message.repairs
    lam = np.linalg.eigvalsh(repair.inertia)
    assert lam[0] + lam[1] >= lam[2] - 1e-15 and np.max(np.abs(repair.inertia - repair.original)) < 1e-9


def test_triangle_violation_kept_as_written():
    text = two_links((0.1, 0.1, 0.5, 0, 0, 0))
    with pytest.warns(sd.InertiaWarning, match=r"link 'b': principal moments .* violate the triangle inequality by 0.3 "
                      r"\(kept as written") as rec:
        model = load_urdf(text, floating_base=True)
    assert not rec[0].message.repairs[0].repaired
    pin_matches(text, model)  # the spatial inertia is positive semi-definite: loaded as Pinocchio loads it
    with pytest.raises(ValueError, match="triangle inequality"):
        load_urdf(text, strict=True)


def test_clearly_negative_eigenvalue():
    text = two_links((0.5, 0.5, -0.01, 0, 0, 0))
    with pytest.raises(ValueError, match=r"<URDF string>, line 4, <inertial> of link 'b': .*clearly negative eigenvalue "
                       r"-0.01 .*invalid_inertia='keep'"):
        load_urdf(text)
    with pytest.warns(sd.InertiaWarning, match=r"link 'b': negative principal moment -0.01 \(kept as written\)"):
        model = load_urdf(text, floating_base=True, invalid_inertia="keep")
    pin_matches(text, model)
    with pytest.raises(ValueError, match="invalid_inertia"):
        load_urdf(text, invalid_inertia="fix")


# ---------------------------------------------------------------------------
# singular models and locking joints
# ---------------------------------------------------------------------------

FINGERS = f"""<robot name="hand">
<link name="palm">{inertial(1.0)}</link><link name="f1"/><link name="f2"/><link name="tip"/>
<link name="slider"><inertial><mass value="0"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="arm">{inertial(0.5)}</link>
<joint name="a1" type="revolute"><parent link="palm"/><child link="arm"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
<joint name="k1" type="revolute"><parent link="palm"/><child link="f1"/><origin xyz="0.1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
<joint name="k2" type="continuous"><parent link="f1"/><child link="f2"/><origin xyz="0.1 0 0"/></joint>
<joint name="k3" type="fixed"><parent link="f2"/><child link="tip"/><origin xyz="0.05 0 0"/></joint>
<joint name="s" type="prismatic"><parent link="arm"/><child link="slider"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def test_singular_model_warns_and_locking_fixes_it():
    with pytest.warns(sd.SingularModelWarning, match=r"<URDF string>: the mass matrix is singular: .*'s', 'k1', 'k2' "
                      r".*armature.*sodyn.lock_joints") as rec:
        model = load_urdf(FINGERS, floating_base=True)
    assert rec[0].message.joints == ("s", "k1", "k2")  # s: a prismatic joint moving only rotational inertia
    q = np.asarray(sd.neutral_configuration(model))
    assert np.linalg.matrix_rank(np.asarray(jax.jit(lambda q: sd.mass_matrix(model, q))(q))) == model.nv - 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reduced = sd.lock_joints(model, rec[0].message.joints, q)
    assert reduced.joint_names == ("root_joint", "a1") and reduced.nv == 7
    for frame in ("k1", "k2", "tip", "slider"):  # locked joints and their links stay frames
        reduced.frame_id(frame)
    assert np.all(np.linalg.eigvalsh(np.asarray(sd.mass_matrix(reduced, sd.neutral_configuration(reduced)))) > 0)


def test_lock_joints_bad_input():
    model = load_urdf(ROBOT)
    with pytest.raises(ValueError, match="unknown joint 'nope'"):
        sd.lock_joints(model, ["nope"])
    with pytest.raises(ValueError, match=r"q must have shape \(4,\)"):
        sd.lock_joints(model, ["c_spin"], np.zeros(3))
    with pytest.raises(ValueError, match="cannot lock every joint"):
        sd.lock_joints(model, model.joint_names)
