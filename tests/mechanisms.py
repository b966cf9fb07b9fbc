"""MJCF closed-loop mechanisms shared by the loop-closure tests and ``bench/closed_loops.py``: a
planar four-bar and a delta-like parallel robot, each closed by ``<equality connect>``."""

from __future__ import annotations

import math

# Both chains hang from one fixed body: Pinocchio's MJCF parser reads only the first body
# under <worldbody>.  No joint damping: Pinocchio's dynamics ignore it.
FOURBAR = """
<mujoco model="fourbar">
  <worldbody>
   <body name="base">
    <body name="crank">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.01" mass="0.3"/>
      <body name="coupler" pos="0.2 0 0">
        <joint name="j2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 0.45" size="0.01" mass="0.5"/>
      </body>
    </body>
    <body name="rocker" pos="0.5 0 0">
      <joint name="j3" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 -0.2 0 0.45" size="0.01" mass="0.4"/>
    </body>
   </body>
  </worldbody>
  <equality>
    <connect body1="coupler" body2="rocker" anchor="0.1 0 0.45"/>
  </equality>
</mujoco>
"""


def _delta_xml() -> str:
    """A delta-like parallel robot: three hinged upper arms, rods on universal joints (two
    hinges), a platform on rod 1 (ball joint) to which rods 2 and 3 are closed by <connect>:
    12 dofs, 6 rows."""
    legs, eqs = [], []
    for k in range(3):
        c, s = math.cos(2 * math.pi * k / 3), math.sin(2 * math.pi * k / 3)
        rod_end = f"{-0.35 * c:.6f} {-0.35 * s:.6f} -0.45"
        platform = ""
        if k == 0:
            platform = f"""
            <body name="platform" pos="{rod_end}">
            <joint name="pb" type="ball"/>
            <geom type="box" size="0.08 0.06 0.02" mass="0.6"/>
          </body>"""
        else:
            eqs.append(f'<connect body1="rod{k}" body2="platform" anchor="{rod_end}"/>')
        legs.append(f"""
      <body name="arm{k}" pos="{0.3 * c:.6f} {0.3 * s:.6f} 0">
        <joint name="h{k}" type="hinge" axis="{-s:.6f} {c:.6f} 0.1"/>
        <geom type="capsule" fromto="0 0 0 {0.25 * c:.6f} {0.25 * s:.6f} -0.1" size="0.02" mass="{0.4 + 0.1 * k}"/>
        <body name="cross{k}" pos="{0.25 * c:.6f} {0.25 * s:.6f} -0.1">
          <joint name="u{k}" type="hinge" axis="{-s:.6f} {c:.6f} 0"/>
          <geom type="sphere" size="0.03" mass="0.05"/>
          <body name="rod{k}">
            <joint name="w{k}" type="hinge" axis="{c:.6f} {s:.6f} 0"/>
            <geom type="capsule" fromto="0 0 0 {rod_end}" size="0.02" mass="{0.2 + 0.05 * k}"/>{platform}
          </body>
        </body>
      </body>""")
    return f"""
<mujoco model="delta">
  <worldbody>
    <body name="base">{"".join(legs)}
    </body>
  </worldbody>
  <equality>
    {" ".join(eqs)}
  </equality>
</mujoco>
"""


DELTA = _delta_xml()
