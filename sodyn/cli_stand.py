"""``sodyn simulate --stand``: servos holding a named pose, and the model hints of the command line.

A robot told to stand is put at its pose (a keyframe: an SRDF ``<group_state>`` beside a URDF
of example-robot-data, or an MJCF ``<key>``), a floating base lowered onto the ground, and
held there by :func:`~sodyn.simulate.standing.hold_pose`: PD servos on every one-dof joint with
gains from the joints' inertia at the pose and the pose's static feed-forward.
"""

from __future__ import annotations

import re

from sodyn.cli_outputs import CliError

#: Joint or link names that suggest legs (for the fixed-base hint).
LEGGED_PATTERN = re.compile(r"leg|knee|hip|ankle|foot|feet|calf|thigh|shank|sole|hfe|kfe|haa", re.IGNORECASE)


def looks_legged(model) -> bool:
    """Whether the model's joint or body names suggest legs (two or more matches)."""
    names = (*model.joint_names, *model.body_names)
    return sum(bool(LEGGED_PATTERN.search(n)) for n in names) >= 2


def fixed_base_hint(model, from_urdf: bool, floating_base: bool) -> str | None:
    """A hint for a URDF robot with legs loaded without ``--floating-base`` (it would hang from
    the world at its root link), else ``None``."""
    floating = any(t == "free" for t in model.joint_types)
    if floating or floating_base or not from_urdf or not looks_legged(model):
        return None
    return (f"hint: {model.name!r} looks like a legged robot but is fixed to the world at its root link; "
            "pass --floating-base to let it stand and walk on the ground")


def pose_of(model, name: str):
    """The configuration of keyframe ``name`` (``""``: the first keyframe, else the neutral
    configuration) and its description."""
    import numpy as np

    names = model.keyframes.names
    if name == "":
        if names:
            return np.asarray(model.keyframes.q[0], np.float64), f"keyframe {names[0]!r}"
        return np.asarray(model.q_neutral, np.float64), "the neutral configuration (the model has no keyframe)"
    if name not in names:
        listed = ", ".join(map(repr, names)) or "none"
        raise CliError(f"--stand: model {model.name!r} has no pose {name!r} (its keyframes: {listed})")
    return np.asarray(model.keyframes[name][0], np.float64), f"keyframe {name!r}"


def stand(model, pose_name: str):
    """``(q, actuators, control, description)``: the pose (a floating base lowered onto the
    ground, 0.5 mm deep) and the servos holding it."""
    from sodyn.simulate.standing import hold_pose, on_the_ground

    q, what = pose_of(model, pose_name)
    try:
        q = on_the_ground(model, q)
        servos, control = hold_pose(model, q)
    except ValueError as e:
        raise CliError(f"--stand: {e}") from None
    return q, servos, control, f"holding {what} (PD servos, static feed-forward)"


__all__ = ["LEGGED_PATTERN", "fixed_base_hint", "looks_legged", "pose_of", "stand"]
