# ruff: noqa: E501  (URDF snippets are clearer on one line)
"""Finding example-robot-data's robots (:mod:`sodyn.io.robot_data`) and reading SRDF
``<group_state>`` poses as keyframes (:func:`sodyn.io.urdf_collision.srdf_keyframes`)."""

import warnings

import numpy as np
import pytest
from robots import ROBOTS, robot_path

import sodyn as sd

SOLO_STANDING = {"FL_HAA": 0.1, "FL_HFE": 0.8, "FL_KFE": -1.6, "HL_HAA": 0.1, "HL_HFE": -0.8, "HL_KFE": 1.6,
                 "FR_HAA": -0.1, "FR_HFE": 0.8, "FR_KFE": -1.6, "HR_HAA": -0.1, "HR_HFE": -0.8, "HR_KFE": 1.6}


@pytest.fixture(scope="module")
def share():
    share = sd.io.robot_data.example_robot_data_share()
    if share is None:
        pytest.skip("example-robot-data is not installed")
    return share


def test_finder_lists_and_finds_robots_with_their_srdf(share):
    names = sd.example_robots()
    assert "solo12" in names and "panda" in names and "ur5_robot" in names
    assert "anymal_b_simple_description/anymal" in names and "anymal" not in names  # a stem two descriptions share
    solo = sd.example_robot("solo12")
    root = share / "example-robot-data" / "robots"
    assert solo.urdf == root / "solo_description" / "robots" / "solo12.urdf" and solo.urdf.is_file()
    assert solo.srdf == root / "solo_description" / "srdf" / "solo.srdf"    # the longest SRDF stem that begins it
    assert solo.package_dirs == (share,)
    assert sd.example_robot("solo_description/robots/solo12.urdf") == solo  # by path below robots/
    assert sd.example_robot("panda").srdf.name == "panda.srdf"              # same stem
    assert sd.example_robot("ur5_robot").srdf.name == "ur5.srdf"
    assert sd.example_robot("baxter").srdf.name == "baxter_manipulation.srdf"  # the only one it begins
    assert sd.example_robot("go1").srdf.name == "go1.srdf" and sd.example_robot("laikago").srdf is None
    with pytest.raises(ValueError, match=r"no robot 'ur5'; did you mean .*'ur5_robot'"):
        sd.example_robot("ur5")
    for name in ROBOTS:  # the test suites' robots come through the public finder
        assert robot_path(name).is_file()


def test_srdf_group_states_become_keyframes(share):
    solo = sd.example_robot("solo12")
    with pytest.warns(sd.UnsupportedElementWarning, match="meshes=False"):
        model = solo.load(floating_base=True, meshes=False)
    assert model.keyframes.names == ("standing", "straight_standing")
    q, v = model.keyframes["standing"]
    np.testing.assert_allclose(q[:7], [0, 0, 0.235, 1, 0, 0, 0])  # SRDF [x y z qx qy qz qw] → [p, w x y z]
    for joint, value in SOLO_STANDING.items():
        assert float(q[model.joint_q_slice(joint)][0]) == value, joint
    assert not np.any(v) and v.shape == (model.nv,)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sd.IgnoredElementWarning)  # the SRDF's root_joint of a fixed base: none
        warnings.simplefilter("ignore", sd.UnsupportedElementWarning)  # the meshes left out
        fixed = solo.load(meshes=False)
    q_fixed = fixed.keyframes["standing"][0]
    for joint, value in SOLO_STANDING.items():
        assert float(q_fixed[fixed.joint_q_slice(joint)][0]) == value, joint


URDF = """<robot name="r">
  <link name="base"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="wheel" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
  <joint name="slide" type="prismatic"><parent link="a"/><child link="b"/><limit lower="-1" upper="1"/></joint>
</robot>"""

SRDF = """<robot name="r">
  <group_state name="home" group="all">
    <joint name="root_joint" value="1 2 3 0 0 0 2"/>
    <joint name="wheel" value="{wheel}"/>
    <joint name="slide" value="0.5"/>
    <joint name="ghost" value="1"/>
  </group_state>
  <group_state name="home" group="other"><joint name="slide" value="0.7"/></group_state>
  <group_state name="zero" group="all"/>
</robot>"""


@pytest.mark.fast
def test_srdf_value_conventions_and_errors():
    with pytest.warns(sd.IgnoredElementWarning, match=r"line 6, <joint name='ghost'>.*\n.*second state") as rec:
        model = sd.load_urdf(URDF, floating_base=True, srdf=SRDF.format(wheel="0 1"))  # (cos, sin) of a wheel
    assert rec[0].message.elements[0].endswith("(not a movable joint of the model)")
    k = model.keyframes
    assert k.names == ("home", "zero")                                   # the first state of a name is kept
    np.testing.assert_allclose(k["home"][0], [1, 2, 3, 1, 0, 0, 0, np.pi / 2, 0.5])  # quaternion normalised
    np.testing.assert_allclose(k["zero"][0], model.q_neutral)
    with pytest.warns(sd.IgnoredElementWarning, match="second state"):
        plain = sd.load_urdf(URDF, floating_base=True, srdf=SRDF.format(wheel="0.3").replace('"ghost"', '"wheel"'))
    assert float(plain.keyframes["home"][0][7]) == 1  # the later value of a joint wins within a state
    with pytest.raises(ValueError, match=r"<SRDF string>, line 4, <joint name='wheel'>: a continuous joint takes 1 "
                                         r"value\(s\), got 3"):
        sd.load_urdf(URDF, floating_base=True, srdf=SRDF.format(wheel="1 2 3"))
    with pytest.raises(ValueError, match=r"<SRDF string>, line 6, <joint name='ghost'>: <group_state name='home'> "
                                         r"sets joint 'ghost', which is not a movable joint of the model"):
        sd.load_urdf(URDF, floating_base=True, srdf=SRDF.format(wheel="0 1"), strict=True)   # strict: an error


@pytest.mark.parametrize("name", ["solo12", "talos_reduced", "pr2"])  # pr2: continuous joints
def test_srdf_keyframes_match_pinocchios_reference_configurations(name):
    pin = pytest.importorskip("pinocchio")
    robot = sd.example_robot(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = robot.load(floating_base=True, meshes=False)
    pm = pin.buildModelFromUrdf(str(robot.urdf), pin.JointModelFreeFlyer())
    pin.loadReferenceConfigurations(pm, str(robot.srdf), False)
    assert set(model.keyframes.names) == {e.key() for e in pm.referenceConfigurations} != set()
    for key in model.keyframes.names:
        q_pin = np.asarray(pm.referenceConfigurations[key], np.float64)
        np.testing.assert_allclose(sd.io.q_from_pinocchio(model, q_pin), model.keyframes[key][0], atol=1e-12)
