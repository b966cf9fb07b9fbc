"""The sweep of all unit vectors with columns shared between subtrees (sodyn.unit_columns),
checked through 𝓜⁻¹ 𝓜 = I on trees that exercise every case of its layout."""

import jax
import numpy as np
import pytest

import sodyn as sd
from sodyn.models import pendulum_chain, random_tree
from sodyn.topology import compile_topology
from sodyn.unit_columns import unit_columns

jax.config.update("jax_enable_x64", True)

# Solo12's shape: a free base (6 dofs) and four three-hinge legs
SOLO_PARENTS = np.array([-1, 0, 1, 2, 0, 4, 5, 0, 7, 8, 0, 10, 11])


def test_columns_per_segment_follow_the_subtrees():
    # the legs need 3 columns
    solo = compile_topology(SOLO_PARENTS, ("free",) + ("revolute",) * 12)
    assert unit_columns(solo).counts == (18, 3)
    # Panda's shape: the fingers' segment needs one column, the arm all nine
    panda = compile_topology(np.array([-1, 0, 1, 2, 3, 4, 5, 6, 6]), ("revolute",) * 7 + ("prismatic",) * 2)
    assert unit_columns(panda).counts == (9, 1)
    assert unit_columns(pendulum_chain(5).topology).counts == (5,)


def test_solo_leg_columns_are_renamed_into_the_base():
    solo = compile_topology(SOLO_PARENTS, ("free",) + ("revolute",) * 12)
    layout = unit_columns(solo)
    cross = layout.cross[0]  # (1 base slot, 18 columns) into the legs' (4 slots × 3 columns)
    # base columns 0–5 are the base's own dofs: nothing comes from the legs
    assert np.all(cross[0, :6] == 4 * 3)
    # leg l's dofs 6 + 3l + i are leg slot l's column i
    legs = solo.segments[1]
    for leg in range(4):
        body = 1 + 3 * leg
        slot = legs.kernel_slices[1].start + int(solo.body_flat[body] - legs.kernel_offset[1])
        np.testing.assert_array_equal(cross[0, 6 + 3 * leg: 9 + 3 * leg], slot * 3 + np.arange(3))


TREES = [dict(n_bodies=n, seed=s, floating_base=f) for n, s, f in
         [(9, 0, False), (15, 1, True), (18, 2, False), (13, 4, True), (20, 6, True)]]


@pytest.mark.parametrize("spec", TREES, ids=[f"n{t['n_bodies']}_s{t['seed']}" for t in TREES])
def test_inverse_mass_matrix_inverts_mass_matrix(spec):
    model = random_tree(**spec)
    q = sd.random_configuration(model, jax.random.PRNGKey(spec["seed"]))
    m, minv = jax.jit(lambda q: (sd.mass_matrix(model, q), sd.inverse_mass_matrix(model, q)))(q)
    np.testing.assert_allclose(np.asarray(minv) @ np.asarray(m), np.eye(model.nv), atol=1e-9)
    np.testing.assert_array_equal(minv, minv.T)


def test_the_trees_cover_branching_segments_and_several_segments():
    topos = [random_tree(**spec).topology for spec in TREES]
    assert any(not s.identity_maps for t in topos for s in t.segments)
    assert any(len(t.segments) > 2 for t in topos)
    kernels = {k for t in topos for k, _, _ in t.kernel_slots}
    assert kernels == {"free", "spherical", "planar", "hinge"}



def test_placed_blocks_match_the_gathered_sum(monkeypatch):
    # Depth-first numbering (every built model's) places each slot's block in one piece; the
    # static gather it replaced must give the same sum on any outputs of the sweep.
    import dataclasses

    import sodyn.unit_columns as uc

    solo = compile_topology(SOLO_PARENTS, ("free",) + ("revolute",) * 12)
    layout = unit_columns(solo)
    assert layout.block_placement is not None and layout.block_index is None
    rng = np.random.default_rng(0)
    a = [tuple(rng.normal(size=u.shape) for u in seg) for seg in layout.units]
    b = [tuple(rng.normal(size=u.shape) for u in seg) for seg in layout.units]
    placed = uc.sum_of_column_products(solo, a, b)
    where, sub = uc._slots(solo), uc._subtree_dofs(solo)
    column = uc._columns(solo, where, sub)
    gathered_layout = dataclasses.replace(
        layout, block_placement=None, block_index=uc._block_index(solo, where, sub, column, layout.counts)
    )
    monkeypatch.setattr(uc, "unit_columns", lambda topo: gathered_layout)
    np.testing.assert_allclose(placed, uc.sum_of_column_products(solo, a, b), rtol=1e-13, atol=1e-13)


def test_breadth_first_numbering_falls_back_to_the_gather():
    # two three-link branches numbered level by level: a branch's dofs are not contiguous
    topo = compile_topology(np.array([-1, 0, 0, 1, 2, 3, 4]), ("free",) + ("revolute",) * 6)
    layout = unit_columns(topo)
    assert layout.block_placement is None
    assert layout.block_index is not None
