"""MJCF model features beyond actuators against MuJoCo, at MuJoCo's own states: body
``gravcomp`` in ``qfrc_passive`` (with springs and damping), a floating body compensated to
weightlessness."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.simulate.joint_forces import JointForces, joint_forces

jax.config.update("jax_enable_x64", True)
mujoco = pytest.importorskip("mujoco")

GRAVCOMP_XML = """
<mujoco>
  <worldbody>
    <body name="a" gravcomp="1">
      <joint name="j0" type="hinge" axis="0 1 0" stiffness="3" springref="0.2" damping="0.4"/>
      <geom type="capsule" fromto="0 0 0 0.1 0 -0.4" size="0.05" mass="1.3"/>
      <body name="b" pos="0.1 0 -0.4" gravcomp="0.5">
        <joint name="j1" type="hinge" axis="1 0.3 0" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0 0.1 -0.4" size="0.04" mass="0.7"/>
        <body name="tool" pos="0 0.1 -0.4" gravcomp="0.25">
          <geom type="box" size="0.05 0.02 0.03" pos="0.04 0 0" mass="0.4"/>
        </body>
        <body name="c" pos="0 0.1 -0.4" gravcomp="-0.3">
          <joint name="j2" type="slide" axis="0 0.6 0.8" stiffness="5"/>
          <geom type="sphere" size="0.05" pos="0.1 0 0" mass="0.3"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.mark.fast
def test_gravity_compensation_matches_mujocos_passive_force():
    """``qfrc_passive`` (springs, damping and ``gravcomp`` of 1, ½, ¼ on a welded body, −0.3)
    at 20 random states: sodyn's joint forces (limits and friction loss off: in MuJoCo those are
    constraints) minus the damping ``D v`` equal it to 1e-10."""
    mj = mujoco.MjModel.from_xml_string(GRAVCOMP_XML)
    model = sd.load_mjcf(GRAVCOMP_XML).astype(jnp.float64)
    assert float(model.gravcomp[:, 0].sum()) == pytest.approx(1.3 + 0.35 + 0.1 - 0.09)
    passive = jax.jit(lambda q, v: joint_forces(model, JointForces(limits=False, friction=False), q, v).force
                      - model.damping * v)
    rng = np.random.default_rng(0)
    for _ in range(20):
        d = mujoco.MjData(mj)
        d.qpos[:], d.qvel[:] = rng.uniform(-1, 1, mj.nq), rng.uniform(-2, 2, mj.nv)
        mujoco.mj_forward(mj, d)
        np.testing.assert_allclose(passive(d.qpos.copy(), d.qvel.copy()), d.qfrc_passive, rtol=1e-10, atol=1e-10)


def test_a_fully_compensated_floating_body_does_not_fall():
    """A free body with ``gravcomp="1"`` stays where it is for 1 s (its weight carried); with
    ``JointForces(gravcomp=False)`` it falls ``g t² / 2``."""
    xml = """<mujoco><worldbody><body name="f" pos="0 0 1" gravcomp="1"><freejoint/>
             <geom type="box" size="0.1 0.2 0.05" mass="2"/></body></worldbody></mujoco>"""
    model = sd.load_mjcf(xml).astype(jnp.float64)
    state = sd.State.initial(model)
    held = sd.rollout(model, state, None, 1e-3, 1000)
    np.testing.assert_allclose(held.states.q[-1], model.q_neutral, atol=1e-12)
    fell = sd.rollout(model, state, None, 1e-3, 1000, joint_forces=JointForces(gravcomp=False))
    assert float(model.q_neutral[2] - fell.states.q[-1, 2]) == pytest.approx(0.5 * 9.81, rel=2e-3)
