"""The loaders' last mismatches (issue 46): what Pinocchio loads sodyn loads (inverted joint
limits, XML declarations, byte-order marks, encodings), errors that name the file, non-finite
MJCF numbers, MuJoCo's free-joint armature, and the load-time singular-mass-matrix check.

Oracles: Pinocchio for the URDF cases (``nq``, limits, ``M`` at a random ``q`` to 1e-9),
MuJoCo for the armature case."""

import warnings

import jax
import numpy as np
import pytest

import sodyn as sd
from sodyn.io import (
    a_from_mujoco,
    a_to_mujoco,
    diagnostics,
    load_mjcf,
    load_urdf,
    mass_matrix_from_mujoco,
    q_to_pinocchio,
    tau_from_mujoco,
    v_from_mujoco,
    v_to_pinocchio,
)

jax.config.update("jax_enable_x64", True)
pin = pytest.importorskip("pinocchio")
mujoco = pytest.importorskip("mujoco")

INERTIAL = ('<inertial><origin xyz="0.01 0.02 0.1"/><mass value="{m}"/>'
            '<inertia ixx="0.03" iyy="0.025" izz="0.02" ixy="0.001" ixz="0" iyz="0"/></inertial>')


def arm_urdf(name: str = "arm", limits: str = 'lower="-1" upper="1"') -> str:
    """Three links on revolute/prismatic joints; ``limits`` goes on the first joint."""
    return f"""<robot name="{name}">
<link name="base">{INERTIAL.format(m=2.0)}</link>
<link name="l1">{INERTIAL.format(m=1.0)}</link>
<link name="l2">{INERTIAL.format(m=0.5)}</link>
<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.2" rpy="0.1 0 0"/>
  <axis xyz="0 1 0"/><limit {limits} effort="7" velocity="3"/></joint>
<joint name="j2" type="prismatic"><parent link="l1"/><child link="l2"/><origin xyz="0 0.1 0.2"/>
  <axis xyz="1 0 0"/><limit lower="-0.5" upper="0.5" effort="4" velocity="2"/></joint>
</robot>"""


def pin_compare(model, pm, rng=None):
    """Same nq/nv and M at a random q (to 1e-9) as Pinocchio's model ``pm``."""
    assert (model.nq, model.nv) == (pm.nq, pm.nv)
    rng = rng or np.random.default_rng(0)
    q = rng.uniform(-1, 1, model.nq)
    qp = np.asarray(q_to_pinocchio(model, q))
    P = np.asarray(v_to_pinocchio(model, np.eye(model.nv)))
    M = np.asarray(jax.jit(lambda q: sd.mass_matrix(model, q))(q))
    Mp = pin.crba(pm, pm.createData(), qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    np.testing.assert_allclose(P @ M @ P.T, Mp, atol=1e-9 * max(1.0, np.abs(Mp).max()), rtol=0)


# ---------------------------------------------------------------------------
# URDF: load what Pinocchio loads
# ---------------------------------------------------------------------------


@pytest.mark.fast
def test_inverted_limit_loads_warns_and_is_left_out():
    xml = arm_urdf(limits='lower="1" upper="-1"')
    match = r"joint 'j1': lower limit 1 exceeds upper limit -1"
    with pytest.warns(diagnostics.InvalidLimitWarning, match=match) as rec:
        model = load_urdf(xml)
    warned = [r.message for r in rec if isinstance(r.message, diagnostics.InvalidLimitWarning)]
    assert len(warned) == 1 and warned[0].elements == ("j1",)
    assert isinstance(warned[0], sd.LoadWarning)
    pm = pin.buildModelFromXML(xml)
    pin_compare(model, pm)
    j1, j2 = model.joint_q_slice("j1"), model.joint_q_slice("j2")
    assert np.asarray(model.lower_limit)[j1] == -np.inf and np.asarray(model.upper_limit)[j1] == np.inf
    np.testing.assert_array_equal(np.asarray(model.lower_limit)[j2], pm.lowerPositionLimit[1:])  # the others kept
    np.testing.assert_array_equal(np.asarray(model.upper_limit)[j2], pm.upperPositionLimit[1:])
    np.testing.assert_array_equal(model.velocity_limit, pm.velocityLimit)
    np.testing.assert_array_equal(model.effort_limit, pm.effortLimit)
    with pytest.raises(ValueError, match=r"<URDF string>, line \d+, <limit>: joint 'j1': lower limit 1 exceeds"):
        load_urdf(xml, strict=True)


DECLARED = [
    ("leading blank lines", lambda x: ("\n\n   \n" + '<?xml version="1.0"?>\n' + x).encode()),
    ("leading spaces, no newline", lambda x: ('   <?xml version="1.0" encoding="utf-8"?>' + x).encode()),
    ("utf-8 BOM", lambda x: b"\xef\xbb\xbf" + ('<?xml version="1.0"?>\n' + x).encode()),
    ("BOM and whitespace", lambda x: b"\xef\xbb\xbf" + ('\n <?xml version="1.0"?>\n' + x).encode()),
    ("latin-1 declared", lambda x: ('<?xml version="1.0" encoding="ISO-8859-1"?>\n<!-- Öl, Straße -->\n'
                                    + x).encode("latin-1")),
    ("utf-16 declared", lambda x: ('<?xml version="1.0" encoding="UTF-16"?>\n' + x).encode("utf-16")),
    ("utf-16-le no BOM", lambda x: ('<?xml version="1.0" encoding="UTF-16"?>\n' + x).encode("utf-16-le")),
]


@pytest.mark.fast
@pytest.mark.parametrize("how", [d[0] for d in DECLARED])
def test_declarations_boms_and_encodings_load(how, tmp_path):
    xml = arm_urdf(name="brazo_ñ" if "latin" in how or "utf-16" in how else "arm")
    data = dict(DECLARED)[how](xml)
    path = tmp_path / "robot.urdf"
    path.write_bytes(data)
    pm = pin.buildModelFromXML(xml)
    for src in (path, str(path), data):
        model = load_urdf(src)
        pin_compare(model, pm)
        np.testing.assert_array_equal(model.lower_limit, pm.lowerPositionLimit)
        np.testing.assert_array_equal(model.upper_limit, pm.upperPositionLimit)
    if "latin" in how or "utf-16" in how:
        assert model.name == "brazo_ñ"
    if how == "leading blank lines":  # line numbers are those of the file
        bad = data.decode().replace('<axis xyz="1 0 0"/>', '<axis xyz="0 0 0"/>')
        line = bad.splitlines().index(next(ln for ln in bad.splitlines() if 'xyz="0 0 0"' in ln)) + 1
        with pytest.raises(ValueError, match=rf"line {line}, <axis>: joint 'j2': the axis is zero"):
            load_urdf(bad)


@pytest.mark.fast
def test_decode_errors_name_the_file(tmp_path):
    bad = ("<robot name='r\xe9'>" + arm_urdf()[len('<robot name="arm">'):]).encode("latin-1")  # no declaration
    path = tmp_path / "latin.urdf"
    path.write_bytes(bad)
    for src, name in ((path, str(path)), (bad, "<URDF string>")):
        with pytest.raises(ValueError, match=rf"{name}: cannot decode the file as utf-8") as e:
            load_urdf(src)
        assert not isinstance(e.value, UnicodeDecodeError)
    unknown = ('<?xml version="1.0" encoding="KLINGON-8"?>' + arm_urdf()).encode()
    with pytest.raises(ValueError, match=r"<URDF string>: the XML declaration names an unknown encoding 'KLINGON-8'"):
        load_urdf(unknown)
    mjcf = tmp_path / "latin.xml"
    mjcf.write_bytes("<mujoco model='m\xe9'><worldbody/></mujoco>".encode("latin-1"))
    for src, name in ((mjcf, str(mjcf)), (mjcf.read_bytes(), "<MJCF string>")):
        with pytest.raises(ValueError, match=rf"{name}: cannot decode the file as utf-8") as e:
            load_mjcf(src)
        assert not isinstance(e.value, UnicodeDecodeError)


@pytest.mark.fast
@pytest.mark.parametrize("loader,kind", [(load_urdf, "URDF"), (load_mjcf, "MJCF")])
def test_directory_is_a_directory(loader, kind, tmp_path):
    with pytest.raises(IsADirectoryError, match=rf"{kind} path '{tmp_path}' is a directory"):
        loader(tmp_path)
    with pytest.raises(FileNotFoundError, match="file not found"):
        loader(tmp_path / "missing.xml")


# ---------------------------------------------------------------------------
# MJCF: non-finite numbers
# ---------------------------------------------------------------------------

MJCF = """<mujoco model="nf">
  <worldbody>
    <body name="b" pos="{pos}">
      <joint name="j" type="hinge" damping="{damping}" armature="{armature}" stiffness="{stiffness}" ref="{ref}"/>
      <geom name="g" type="sphere" size="0.1" {geom}/>
      {inertial}
    </body>
  </worldbody>
</mujoco>"""
CLEAN = dict(pos="0 0 0", damping="0", armature="0", stiffness="0", ref="0", geom="", inertial="")
NON_FINITE = {  # attribute, element, what MuJoCo alone does with it
    "geom mass": (dict(geom='mass="nan"'), "geom", "g", "mass"),  # MuJoCo: silently the density's mass
    "geom fromto": (dict(geom='fromto="nan 0 0 0 0 1"'), "geom", "g", "fromto"),  # MuJoCo: ignored
    "inertial mass": (dict(inertial='<inertial pos="0 0 0" mass="nan" diaginertia="1 1 1"/>'), "inertial", None,
                      "mass"),
    "diaginertia": (dict(inertial='<inertial pos="0 0 0" mass="1" diaginertia="inf 1 1"/>'), "inertial", None,
                    "diaginertia"),
    "inertial pos": (dict(inertial='<inertial pos="nan 0 0" mass="1" diaginertia="1 1 1"/>'), "inertial", None,
                     "pos"),
    "body pos": (dict(pos="0 nan 0"), "body", "b", "pos"),
    "damping": (dict(damping="nan"), "joint", "j", "damping"),
    "armature": (dict(armature="inf"), "joint", "j", "armature"),
    "stiffness": (dict(stiffness="-inf"), "joint", "j", "stiffness"),
    "ref": (dict(ref="nan"), "joint", "j", "ref"),
}


@pytest.mark.fast
@pytest.mark.parametrize("case", list(NON_FINITE))
def test_mjcf_non_finite_attribute_names_element_and_attribute(case):
    change, tag, name, attr = NON_FINITE[case]
    xml = MJCF.format(**{**CLEAN, **change})
    named = rf"<{tag}{f' name={name!r}' if name else ''}>"
    with pytest.raises(ValueError, match=rf"<MJCF string>, line \d+, {named}: attribute {attr}=.* is not finite"):
        load_mjcf(xml)


@pytest.mark.fast
def test_mjcf_non_finite_in_an_include_and_in_a_compiled_model(tmp_path):
    """The XML scan sees the main file only; the compiled arrays catch what an include brings."""
    (tmp_path / "part.xml").write_text('<mujocoinclude><body name="b"><joint name="j" damping="nan"/>'
                                       '<geom size="0.1"/></body></mujocoinclude>')
    main = tmp_path / "main.xml"
    main.write_text('<mujoco><worldbody><include file="part.xml"/></worldbody></mujoco>')
    with pytest.raises(ValueError, match=rf"(?s){main}: numbers that are not finite .*<joint name='j'> attribute "
                                         r"damping = \[nan\]"):
        load_mjcf(main)
    mj = mujoco.MjModel.from_xml_string(MJCF.format(**CLEAN))
    mj.body_ipos[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"<body name='b'> attribute <inertial> pos = \[0.0, 0.0, inf\]"):
        sd.io.from_mujoco(mj)


# ---------------------------------------------------------------------------
# MJCF: free-joint armature (MuJoCo applies it to the world-frame linear velocity)
# ---------------------------------------------------------------------------

FREE_ARMATURE = """<mujoco model="free_armature">
  <option gravity="0.3 -0.2 -9.81"/>
  <worldbody>
    <body name="torso" pos="0 0 1" quat="0.9 0.1 0.2 0.3">
      <joint name="root" type="free" armature="{a}" damping="0.2"/>
      <geom type="box" size="0.2 0.1 0.3" mass="5"/>
      <body name="arm" pos="0.25 0 0.2">
        <joint name="elbow" type="hinge" axis="0 1 0.2" armature="0.1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.04" mass="1.2"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def _mujoco_state(mj, rng):
    d = mujoco.MjData(mj)
    d.qpos[:3] = rng.normal(size=3)
    quat = rng.normal(size=4)
    d.qpos[3:7] = quat / np.linalg.norm(quat)
    d.qpos[7] = 0.4
    d.qvel[:] = rng.normal(size=mj.nv)
    return d


@pytest.mark.fast
def test_free_joint_armature_against_mujoco():
    """Equal linear values (MJCF's one per joint) are exact: no warning, ``M`` is MuJoCo's, and
    inverse and forward dynamics are MuJoCo's to 1e-8 at a non-zero angular velocity (the
    armature's velocity force ``a ω × v_lin`` included; tests/test_free_joint_armature.py
    has the full check and the warning for unequal values)."""
    xml = FREE_ARMATURE.format(a=0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sd.LoadWarning)
        model = load_mjcf(xml)
    mj = mujoco.MjModel.from_xml_string(xml)
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    d = _mujoco_state(mj, np.random.default_rng(46))
    mujoco.mj_forward(mj, d)
    q = d.qpos.copy()
    v = np.asarray(v_from_mujoco(model, q, d.qvel))
    assert np.linalg.norm(0.25 * np.cross(v[:3], v[3:6])) > 0.1  # the armature's velocity force matters here
    M_mj = np.zeros((mj.nv, mj.nv))
    mujoco.mj_fullM(mj, d, M_mj)
    M = np.asarray(jax.jit(lambda q: sd.mass_matrix(model, q))(q))
    np.testing.assert_allclose(mass_matrix_from_mujoco(model, q, M_mj), M, atol=1e-10)
    # inverse dynamics at MuJoCo's qacc (mj_rne gives M qacc + bias without armature and damping)
    qacc = d.qacc.copy()
    a = np.asarray(a_from_mujoco(model, q, v, qacc))
    rne = np.zeros(mj.nv)
    mujoco.mj_rne(mj, d, 1, rne)
    rne += mj.dof_armature * qacc + mj.dof_damping * d.qvel
    tau = np.asarray(jax.jit(lambda q, v, a: sd.inverse_dynamics(model, q, v, a))(q, v, a))
    np.testing.assert_allclose(tau, tau_from_mujoco(model, q, rne), atol=1e-8)
    qdd = np.asarray(jax.jit(lambda q, v: sd.forward_dynamics(model, q, v, np.zeros(model.nv)))(q, v))
    np.testing.assert_allclose(a_to_mujoco(model, q, v, qdd), d.qacc, atol=1e-8)


@pytest.mark.fast
def test_free_joint_angular_armature_is_exact():
    """Armature and damping on the angular dofs (set in the compiled model): no warning, and
    bias forces and accelerations equal MuJoCo's to 1e-8."""
    mj = mujoco.MjModel.from_xml_string(FREE_ARMATURE.format(a=0))
    mj.dof_armature[3:6] = [0.3, 0.2, 0.1]
    mj.dof_damping[3:6] = [0.5, 0.4, 0.3]  # per-dof data follow the dofs ([v; ω] in MuJoCo, [ω; v] in sodyn)
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    with warnings.catch_warnings():
        warnings.simplefilter("error", sd.LoadWarning)
        model = sd.io.from_mujoco(mj)
    d = _mujoco_state(mj, np.random.default_rng(7))
    mujoco.mj_forward(mj, d)
    q = d.qpos.copy()
    v = np.asarray(v_from_mujoco(model, q, d.qvel))
    qdd = np.asarray(jax.jit(lambda q, v: sd.forward_dynamics(model, q, v, np.zeros(model.nv)))(q, v))
    np.testing.assert_allclose(a_to_mujoco(model, q, v, qdd), d.qacc, atol=1e-8)
    a0 = np.asarray(a_from_mujoco(model, q, v, np.zeros(mj.nv)))
    bias = np.asarray(jax.jit(lambda q, v, a: sd.inverse_dynamics(model, q, v, a))(q, v, a0))
    np.testing.assert_allclose(bias, tau_from_mujoco(model, q, d.qfrc_bias + mj.dof_damping * d.qvel), atol=1e-8)


# ---------------------------------------------------------------------------
# numerically singular models
# ---------------------------------------------------------------------------

ROD = """<robot name="rod">
<link name="rod"><inertial><mass value="1"/><inertia ixx="{i}" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
</inertial></link>
</robot>"""

SLIDER = f"""<robot name="slider">
<link name="carriage"/>
<link name="block">{INERTIAL.format(m=1.0)}</link>
<joint name="rail" type="prismatic"><parent link="carriage"/><child link="block"/><axis xyz="1 0 0"/>
  <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""

SPIN = f"""<robot name="spin">
<link name="base">{INERTIAL.format(m=1.0)}</link>
<link name="disk"><inertial><mass value="2"/><inertia ixx="0" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
</inertial></link>
<joint name="spin" type="continuous"><parent link="base"/><child link="disk"/><axis xyz="1 0 0"/></joint>
</robot>"""


def _pin_ratio(xml, floating):
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromXML(xml)
    lam = np.linalg.eigvalsh(pin.crba(pm, pm.createData(), pin.neutral(pm)))
    return lam[0] / lam[-1] if lam[-1] > 0 else 0.0


@pytest.mark.fast
@pytest.mark.parametrize("xml,floating,joints", [
    (ROD.format(i=0), True, ("root_joint",)),  # zero principal moment of a free body
    (SLIDER, True, ("root_joint",)),  # a free joint on a massless link duplicating the slider
    (SPIN, False, ("spin",)),  # a hinge about the zero principal axis through the centre of mass
], ids=["zero-moment-free", "free-duplicates-slider", "zero-moment-hinge"])
def test_numerically_singular_model_warns_naming_the_joint(xml, floating, joints):
    assert _pin_ratio(xml, floating) < 1e-12  # Pinocchio's M is singular too
    with pytest.warns(sd.SingularModelWarning, match=r"singular at the neutral configuration") as rec:
        model = load_urdf(xml, floating_base=floating)
    (w,) = [r.message for r in rec if isinstance(r.message, sd.SingularModelWarning)]
    assert w.joints == joints
    assert all(f"{j!r} (body " in str(w) for j in joints)
    assert diagnostics.singular_joints(model) == ()  # not a massless subtree: only the numerical check sees it


@pytest.mark.fast
def test_regular_models_do_not_warn():
    for xml, floating in ((ROD.format(i=0.05), True), (arm_urdf(), True), (arm_urdf(), False)):
        assert _pin_ratio(xml, floating) > 1e-12
        with warnings.catch_warnings():
            warnings.simplefilter("error", sd.LoadWarning)
            load_urdf(xml, floating_base=floating)


@pytest.mark.fast
def test_model_builder_runs_the_singularity_check():
    """``ModelBuilder.build`` warns like the loaders (the same check), pointing at the caller."""
    def spinner(moments):
        b = sd.ModelBuilder(name="spinner")
        b.add_body("disk", None, sd.JointSpec.revolute((1, 0, 0)), mass=2.0, inertia=np.diag(moments),
                   joint_name="spin")
        return b

    with pytest.warns(sd.SingularModelWarning, match=r"model 'spinner': .*'spin' \(body 'disk'\)") as rec:
        spinner([0.0, 0.1, 0.1]).build()  # zero principal moment about the hinge axis
    (w,) = [r for r in rec if isinstance(r.message, sd.SingularModelWarning)]
    assert w.message.joints == ("spin",) and w.filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error", sd.LoadWarning)
        spinner([0.1, 0.1, 0.1]).build()


def test_top_level_exports():
    assert (sd.StoreMismatchError, sd.InvalidLimitWarning, sd.ApproximatedElementWarning) == (
        sd.simulate.store.StoreMismatchError, diagnostics.InvalidLimitWarning, diagnostics.ApproximatedElementWarning)


@pytest.mark.fast
def test_mjcf_duplicated_hinges_warn():
    xml = """<mujoco><worldbody><body name="b" pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 0 1"/><joint name="h2" type="hinge" axis="0 0 1"/>
      <geom type="box" size="0.1 0.2 0.3" mass="1"/></body></worldbody></mujoco>"""
    mj = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    M = np.zeros((2, 2))
    mujoco.mj_fullM(mj, d, M)
    assert np.linalg.eigvalsh(M)[0] < 1e-12 * np.linalg.eigvalsh(M)[-1]
    with pytest.warns(sd.SingularModelWarning) as rec:
        load_mjcf(xml)
    (w,) = [r.message for r in rec if isinstance(r.message, sd.SingularModelWarning)]
    assert w.joints == ("h1",)  # the recursion meets the duplicate at the outer of the two


@pytest.mark.fast
def test_kinematic_singularity_at_the_neutral_pose_is_not_reported():
    """A z-y-z gimbal: at q = 0 the first and last axes line up (a pose, not a defect of the
    model), so ``M`` is singular there but not at a generic ``q``: no warning."""
    ball = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>'
    xml = f"""<robot name="gimbal"><link name="a">{INERTIAL.format(m=1.0)}</link><link name="b"/><link name="c"/>
<link name="d">{ball}</link>
<joint name="j1" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint>
<joint name="j2" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/></joint>
<joint name="j3" type="continuous"><parent link="c"/><child link="d"/><axis xyz="0 0 1"/></joint>
</robot>"""
    assert _pin_ratio(xml, False) < 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("error", sd.LoadWarning)
        model = load_urdf(xml)
    assert diagnostics.numerically_singular_joints(model)[0] == ("j1",)  # singular at q = 0 only
    assert diagnostics.numerically_singular_joints(model, np.array([0.0, 0.5, 0.0]))[0] == ()
