"""sodyn's recursions against the plain-NumPy loop-over-bodies reference (tests/reference_dynamics.py).

Random trees hold every joint kind (revolute, continuous, prismatic, helical, spherical, free,
planar, fixed), with armature and damping, float64.  Two sources of trees:

* trees drawn here (:func:`random_tree_spec`), given to :class:`sodyn.ModelBuilder` body by body
  and to the reference *unmerged*: fixed joints stay bodies without dofs there, free joints may
  sit inside the tree, and the reference numbers ``q``/``v`` itself in depth-first order
  (DESIGN.md §3), so the builder's merge and ordering are checked too;
* :func:`sodyn.models.random_tree` (the project's helper), read back from the public model
  fields (:func:`reference_dynamics.tree_from_model`), with external forces.

Checked at random ``q`` (:func:`sodyn.random_configuration`), ``v``, ``τ``, ``q̈``:
``forward_dynamics``, ``inverse_dynamics``, ``mass_matrix`` and ``inverse_mass_matrix`` against
the reference's ``FDab``, ``ID``, CRBA and ``inv(M)``; and the reference itself: ``FDab``
against the dense solve ``M⁻¹ (τ − h)``, CRBA against unit-column ``ID``.  Errors are measured
relative to the size of the reference value: ``max |x − x_ref| ≤ 1e-9 · max(1, max |x_ref|)``.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import numpy as np
import pytest
import reference_dynamics as ref

import sodyn as sd
from sodyn.joints import JointSpec
from sodyn.models import random_tree

jax.config.update("jax_enable_x64", True)

KINDS = ("revolute", "continuous", "prismatic", "helical", "spherical", "free", "planar", "fixed")
RTOL = 1e-9
N_STATES = 3  # random states per tree (through one compiled program)


# --------------------------------------------------------------------------------------
# trees
# --------------------------------------------------------------------------------------


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    return ref.quaternion_rotation(rng.normal(size=4))


def _random_inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    """A physical rotational inertia: a solid box's principal moments in random axes."""
    a, b, c = rng.uniform(0.05, 0.4, size=3)
    r = _random_rotation(rng)
    return r @ np.diag(mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])) @ r.T


def random_tree_spec(n_bodies: int, seed: int, floating_base: bool = False) -> ref.Tree:
    """A random tree in which every joint kind appears (once ``n_bodies ≥ 9``); parents are
    drawn among the earlier bodies, so ``parent[i] < i``.  The q/v numbering is the
    depth-first order of the bodies (children in the order they were added)."""
    rng = np.random.default_rng(seed)
    kinds = ["free" if floating_base else "revolute"]  # a movable root: never an all-fixed tree
    while len(kinds) < n_bodies:
        kinds.extend(rng.permutation(KINDS).tolist())
    kinds = kinds[:n_bodies]
    parent = [-1] + [i - 1 if rng.uniform() < 0.5 else int(rng.integers(0, i)) for i in range(1, n_bodies)]
    axis = rng.normal(size=(n_bodies, 3))
    mass = rng.uniform(0.5, 3.0, size=n_bodies)

    children: list[list[int]] = [[] for _ in range(n_bodies)]
    for i in range(1, n_bodies):
        children[parent[i]].append(i)
    order, stack = [], [0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children[i]))
    q_index, v_index = [np.zeros(0, int)] * n_bodies, [np.zeros(0, int)] * n_bodies
    nq = nv = 0
    for i in order:
        q_index[i] = np.arange(nq, nq + ref.NQ[kinds[i]])
        v_index[i] = np.arange(nv, nv + ref.NV[kinds[i]])
        nq, nv = nq + ref.NQ[kinds[i]], nv + ref.NV[kinds[i]]
    return ref.Tree(
        parent=parent, joint_type=kinds, axis=axis / np.linalg.norm(axis, axis=1, keepdims=True),
        pitch=rng.uniform(-0.2, 0.2, size=n_bodies),
        placement_rotation=np.stack([_random_rotation(rng) for _ in range(n_bodies)]),
        placement_translation=rng.uniform(-0.5, 0.5, size=(n_bodies, 3)),
        mass=mass, com=rng.uniform(-0.2, 0.2, size=(n_bodies, 3)),
        inertia=np.stack([_random_inertia(rng, m) for m in mass]),
        gravity=np.array([0.3, -0.2, -9.81]), q_index=q_index, v_index=v_index,
        armature=rng.uniform(0.0, 0.1, size=nv), damping=rng.uniform(0.0, 0.5, size=nv),
    )


def build_model(tree: ref.Tree) -> sd.Model:
    """The same tree through :class:`sodyn.ModelBuilder` (which merges the fixed joints)."""
    b = sd.ModelBuilder(gravity=tuple(tree.gravity))
    for i in range(tree.n):
        b.add_body(
            f"link{i}", None if tree.parent[i] < 0 else f"link{tree.parent[i]}",
            JointSpec(tree.joint_type[i], tuple(tree.axis[i]), float(tree.pitch[i])),
            rotation=tree.placement_rotation[i], translation=tree.placement_translation[i],
            mass=float(tree.mass[i]), com=tree.com[i], inertia=tree.inertia[i], joint_name=f"joint{i}",
            armature=tree.armature[tree.v_index[i]], damping=tree.damping[tree.v_index[i]],
        )
    return b.build()


# --------------------------------------------------------------------------------------
# cases: one compiled sodyn program per tree, N_STATES states through it
# --------------------------------------------------------------------------------------


@eqx.filter_jit
def sodyn_outputs(model: sd.Model, q, v, tau, a, f_ext) -> dict[str, jax.Array]:
    """sodyn's four results at one state (one compiled program per model)."""
    return dict(
        qdd=sd.forward_dynamics(model, q, v, tau, f_ext), tau=sd.inverse_dynamics(model, q, v, a, f_ext),
        M=sd.mass_matrix(model, q), Minv=sd.inverse_mass_matrix(model, q),
    )


@dataclasses.dataclass
class Case:
    model: sd.Model
    tree: ref.Tree
    states: dict[str, np.ndarray]  # q, v, tau, a, f_ext (sodyn's bodies) with a leading N_STATES axis
    out: dict[str, np.ndarray]  # sodyn's results, same leading axis
    body_of_link: np.ndarray  # the sodyn body of each reference body, −1 for a fixed (merged) link
    drawn: bool  # drawn by random_tree_spec (unmerged reference) rather than sodyn's random_tree

    def state(self, s: int) -> dict[str, np.ndarray]:
        """State ``s``; ``f_ext`` on the reference's bodies (none on merged fixed links, whose
        frames are not the sodyn body's)."""
        x = {k: v[s] for k, v in self.states.items()}
        f = np.where(self.body_of_link[:, None] >= 0, x["f_ext"][self.body_of_link], 0.0)
        return {**x, "f_ext": f}


def make_case(model: sd.Model, tree: ref.Tree, seed: int, drawn: bool) -> Case:
    keys = jax.random.split(jax.random.PRNGKey(seed), 5)
    q = jax.vmap(lambda k: sd.random_configuration(model, k))(jax.random.split(keys[0], N_STATES))
    v, tau, a = (jax.random.normal(k, (N_STATES, model.nv)) for k in keys[1:4])
    f_ext = jax.random.normal(keys[4], (N_STATES, model.n_bodies, 6))
    outs = [sodyn_outputs(model, q[s], v[s], tau[s], a[s], f_ext[s]) for s in range(N_STATES)]
    out = {k: np.stack([o[k] for o in outs]) for k in outs[0]}
    states = dict(q=q, v=v, tau=tau, a=a, f_ext=f_ext)
    body_of_link = (np.array([model.body_names.index(f"link{i}") if t != "fixed" else -1
                              for i, t in enumerate(tree.joint_type)]) if drawn else np.arange(model.n_bodies))
    return Case(model, tree, {k: np.asarray(x) for k, x in states.items()},
                {k: np.asarray(x) for k, x in out.items()}, body_of_link, drawn)


def drawn_case(n_bodies: int, seed: int, floating_base: bool = False) -> Case:
    tree = random_tree_spec(n_bodies, seed, floating_base)
    return make_case(build_model(tree), tree, seed, drawn=True)


def project_case(n_bodies: int, seed: int, floating_base: bool) -> Case:
    model = random_tree(n_bodies, seed=seed, floating_base=floating_base, armature=0.05, damping=0.1)
    return make_case(model, ref.tree_from_model(model), seed, drawn=False)


# The default run compiles one tree (sodyn's compile dominates its time): every joint kind, a
# free joint inside the tree, a fixed link and external forces.  The sweep adds fixed-base
# trees, sodyn's own random trees and up to 30 bodies.
FAST_CASES = {"drawn_floating_10": lambda: drawn_case(10, seed=1, floating_base=True)}
SLOW_CASES = {
    **{f"drawn_{n}_{s}": (lambda n=n, s=s: drawn_case(n, seed=s, floating_base=s % 2 == 1))
       for n, s in [(9, 0), (17, 3), (30, 5)]},
    **{f"project_{n}_{s}{'_floating' * fb}": (lambda n=n, s=s, fb=fb: project_case(n, s, fb))
       for n, s, fb in [(8, 8, False), (28, 2, True)]},
}


@pytest.fixture(scope="module", params=[
    *(pytest.param(k, marks=pytest.mark.fast) for k in FAST_CASES),
    *(pytest.param(k, marks=pytest.mark.slow) for k in SLOW_CASES),
])
def case(request) -> Case:
    return {**FAST_CASES, **SLOW_CASES}[request.param]()


def assert_close(actual: np.ndarray, expected: np.ndarray, what: str, rtol: float = RTOL) -> None:
    """``max |actual − expected| ≤ rtol · max(1, max |expected|)``."""
    err = float(np.max(np.abs(actual - expected), initial=0.0))
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    assert err <= rtol * scale, f"{what}: max error {err:.3e} (scale {scale:.3e}, rtol {rtol:.0e})"


def states(case: Case):
    """``(index, state)`` for every sampled state of the case."""
    for s in range(N_STATES):
        yield s, case.state(s)


# --------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------


def test_every_joint_kind_present(case):
    """Drawn trees hold every kind; the project's trees every kind that survives the merge
    (their free joint is the floating base)."""
    expected = set(KINDS) if case.drawn else set(KINDS) - {"fixed", "free"}
    assert expected <= set(case.tree.joint_type), case.tree.joint_type
    if case.drawn:
        assert any(t == "free" and case.tree.parent[i] >= 0 for i, t in enumerate(case.tree.joint_type))


def test_layout_matches_reference(case):
    """The q/v slices the reference assigns (depth-first) are those of the sodyn model."""
    tree, model = case.tree, case.model
    assert model.nv == tree.nv and model.nq == sum(ref.NQ[t] for t in tree.joint_type)
    movable = [i for i in range(tree.n) if tree.joint_type[i] != "fixed"]
    names = [f"joint{i}" for i in movable] if case.drawn else list(model.joint_names)
    for i, name in zip(movable, names):
        assert list(range(model.nq))[model.joint_q_slice(name)] == list(tree.q_index[i]), name
        assert list(range(model.nv))[model.joint_v_slice(name)] == list(tree.v_index[i]), name


def test_reference_self_consistent(case):
    """The reference's ``FDab`` equals its dense solve and its CRBA its unit-column ``ID``."""
    for s, x in states(case):
        m = ref.mass_matrix(case.tree, x["q"])
        assert_close(ref.mass_matrix_by_columns(case.tree, x["q"]), m, f"CRBA vs ID columns, state {s}")
        np.testing.assert_allclose(m, m.T, atol=1e-14)
        args = (case.tree, x["q"], x["v"], x["tau"], x["f_ext"])
        assert_close(ref.forward_dynamics(*args), ref.forward_dynamics_dense(*args), f"FDab vs dense, state {s}")


def test_mass_matrix(case):
    for s, x in states(case):
        assert_close(case.out["M"][s], ref.mass_matrix(case.tree, x["q"]), f"mass_matrix, state {s}")


def test_inverse_mass_matrix(case):
    for s, x in states(case):
        minv = np.linalg.inv(ref.mass_matrix(case.tree, x["q"]))
        assert_close(case.out["Minv"][s], minv, f"inverse_mass_matrix, state {s}")


def test_inverse_dynamics(case):
    for s, x in states(case):
        tau = ref.inverse_dynamics(case.tree, x["q"], x["v"], x["a"], x["f_ext"])
        assert_close(case.out["tau"][s], tau, f"inverse_dynamics, state {s}")


def test_forward_dynamics(case):
    for s, x in states(case):
        qdd = ref.forward_dynamics(case.tree, x["q"], x["v"], x["tau"], x["f_ext"])
        assert_close(case.out["qdd"][s], qdd, f"forward_dynamics, state {s}")


def test_free_joint_armature_is_a_carried_inertia_at_the_root(case):
    """The rotor model of a free joint's linear armature (its Euler–Poincaré velocity force, as
    sodyn documents it) equals a weightless translational inertia carried by the body when the
    joint hangs from the world (checked in the reference, gravity off, nested free joints'
    armature off)."""
    tree = dataclasses.replace(case.tree, gravity=np.zeros(3), armature=case.tree.armature.copy())
    for i, t in enumerate(tree.joint_type):
        if t == "free" and tree.parent[i] >= 0:
            tree.armature[tree.v_index[i]] = 0.0
    carried = dataclasses.replace(tree, carried_free_armature=True)
    _, x = next(states(case))
    assert_close(ref.mass_matrix(carried, x["q"]), ref.mass_matrix(tree, x["q"]), "M, carried armature")
    args = (x["q"], x["v"], x["a"], x["f_ext"])
    assert_close(ref.inverse_dynamics(carried, *args), ref.inverse_dynamics(tree, *args), "ID, carried armature")


def test_reference_conventions_on_a_pendulum():
    """Signs on a hand-solved case: a mass ``m`` at ``(l, 0, 0)`` (inertia ``J`` about its centre)
    on a revolute joint about ``+y``, gravity ``−g e_z``, at rest at ``θ = 0``.  Gravity's moment
    is ``(l e_x) × (−m g e_z) = m g l e_y``, so holding it takes ``τ = −m g l`` and released it
    accelerates by ``θ̈ = m g l / (m l² + J_yy)``."""
    m, length, g, j = 2.0, 0.5, 9.81, 0.01
    tree = ref.Tree(
        parent=[-1], joint_type=["revolute"], axis=np.array([[0.0, 1.0, 0.0]]), pitch=np.zeros(1),
        placement_rotation=np.eye(3)[None], placement_translation=np.zeros((1, 3)), mass=np.array([m]),
        com=np.array([[length, 0.0, 0.0]]), inertia=j * np.eye(3)[None], gravity=np.array([0.0, 0.0, -g]),
        q_index=[np.arange(1)], v_index=[np.arange(1)], armature=np.zeros(1), damping=np.zeros(1),
    )
    zero = np.zeros(1)
    assert ref.inverse_dynamics(tree, zero, zero, zero)[0] == pytest.approx(-m * g * length)
    assert ref.mass_matrix(tree, zero)[0, 0] == pytest.approx(m * length**2 + j)
    assert ref.forward_dynamics(tree, zero, zero, zero)[0] == pytest.approx(m * g * length / (m * length**2 + j))
