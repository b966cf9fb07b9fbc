"""Random trees for tests and benchmarks: random topology, placements, inertias, axes."""

from __future__ import annotations

import numpy as np

from sodyn.joints import JointSpec
from sodyn.model import Model
from sodyn.model_builder import ModelBuilder

ALL_JOINTS = ("revolute", "continuous", "prismatic", "helical", "spherical", "planar", "fixed")


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    """A random physical rotational inertia (triangle inequality holds) of the given mass."""
    a, b, c = rng.uniform(0.05, 0.3, size=3)
    principal = mass / 5.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    r = _rot(_random_rotation(rng))
    return r @ np.diag(principal) @ r.T


def _rot(q):
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def random_tree(
    n_bodies: int,
    seed: int = 0,
    joint_types: tuple[str, ...] = ALL_JOINTS,
    floating_base: bool = False,
    branching: float = 0.5,
    damping: float = 0.0,
    armature: float = 0.0,
) -> Model:
    """A random tree of ``n_bodies`` links (fixed joints included, then merged).

    Each link's parent is drawn among the previous links (``branching`` is the chance of
    not choosing the latest one).  With ``floating_base`` the first link has a free joint.
    """
    rng = np.random.default_rng(seed)
    b = ModelBuilder(name=f"random_tree_{n_bodies}_{seed}")
    for i in range(n_bodies):
        if i == 0:
            parent = None
            jt = "free" if floating_base else str(rng.choice([t for t in joint_types if t != "fixed"]))
        else:
            parent = i - 1 if rng.uniform() > branching else int(rng.integers(0, i))
            jt = str(rng.choice(joint_types))
        axis = rng.normal(size=3)
        joint = JointSpec(jt, tuple(axis / np.linalg.norm(axis)), float(rng.uniform(-0.2, 0.2)))
        mass = float(rng.uniform(0.5, 3.0))
        nv = {"spherical": 3, "planar": 3, "free": 6, "fixed": 0}.get(jt, 1)
        b.add_body(
            f"link{i}", parent, joint,
            rotation=_random_rotation(rng), translation=rng.uniform(-0.5, 0.5, size=3),
            mass=mass, com=rng.uniform(-0.2, 0.2, size=3), inertia=random_inertia(rng, mass),
            joint_name=f"joint{i}",
            damping=np.full(nv, damping), armature=np.full(nv, armature),
        )
    return b.build()
