"""The level schedule: segments cut where the tree's width changes, and the sweeps over them."""

import numpy as np
import pytest

from sodyn.joints import KERNEL_OF
from sodyn.models import humanoid_like, pendulum_chain, random_tree
from sodyn.runtime.tuning import MAX_SEGMENTS
from sodyn.topology import compile_topology


def _layout(topo):
    return [(s.start, s.stop, s.kernel_width) for s in topo.segments]


def test_chain_is_one_segment_one_wide():
    topo = pendulum_chain(12).topology
    assert _layout(topo) == [(0, 12, (1,))]
    assert topo.segments[0].cross is None


def test_gripper_fingers_do_not_widen_the_arm():
    # seven arm links in a chain, two finger links on the last one (Panda's shape)
    parent = np.array([-1, 0, 1, 2, 3, 4, 5, 6, 6])
    topo = compile_topology(parent, ("revolute",) * 7 + ("prismatic",) * 2)
    assert topo.width == 9 and topo.mask.all()  # compact layout: one slot per body, no padding
    assert _layout(topo) == [(0, 7, (1,)), (7, 8, (2,))]
    cross = topo.segments[1].cross
    np.testing.assert_array_equal(cross, [[1.0], [1.0]])  # both fingers hang on the arm's slot


def test_floating_base_slot_stays_out_of_the_limbs():
    topo = humanoid_like(floating_base=True).topology
    first, rest = topo.segments[0], topo.segments[1:]
    kernels = [k for k, _, _ in topo.kernel_slots]
    assert kernels[0] == "free" and first.kernel_width[0] == 1 and sum(first.kernel_width) == 1
    assert all(s.kernel_width[0] == 0 for s in rest)


def test_segments_cover_the_levels_and_every_body_once():
    for seed in range(4):
        topo = random_tree(60, seed=seed, floating_base=bool(seed % 2)).topology
        segs = topo.segments
        assert 1 <= len(segs) <= MAX_SEGMENTS
        assert segs[0].start == 0 and segs[-1].stop == topo.n_levels
        assert all(a.stop == b.start for a, b in zip(segs, segs[1:]))
        # the compact layout holds every body exactly once
        real = topo.body_slot[topo.mask]
        assert sorted(real.tolist()) == list(range(topo.n_bodies))
        np.testing.assert_array_equal(topo.body_slot[0, topo.body_flat], np.arange(topo.n_bodies))
        kernel_of = np.array([KERNEL_OF[t] for t in topo.joint_type])
        for s in segs:
            # kernel k's slots of the segment hold exactly its kernel-k bodies, level by level
            for k, (kernel, a, b) in enumerate(topo.kernel_slots):
                o, w = s.kernel_offset[k], s.kernel_width[k]
                assert a <= o and o + s.n_levels * w <= b
                block = topo.body_slot[0, o:o + s.n_levels * w].reshape(s.n_levels, w)
                for i in range(s.n_levels):
                    got = sorted(x for x in block[i].tolist() if x < topo.n_bodies)
                    want = np.flatnonzero((topo.body_level == s.start + i) & (kernel_of == kernel)).tolist()
                    assert got == want
            assert s.onehot.shape == (s.stop - s.start, s.width, s.width)
            np.testing.assert_array_equal(s.onehot[0], np.eye(s.width))
            # each real child below the first level has exactly one parent slot
            rows = s.onehot[1:].sum(axis=-1)
            assert set(np.unique(rows)) <= {0.0, 1.0}


@pytest.mark.parametrize("depth", [64, 256])
def test_deep_chains_stay_one_segment(depth):
    assert len(pendulum_chain(depth).topology.segments) == 1


def test_ancestor_subtree_maps_slots_kernels_and_dofs():
    """The subtree of a few bodies' ancestors: its own topology, and index maps that take
    compact-layout, per-kernel and dof arrays between it and the full tree."""
    import jax.numpy as jnp

    from sodyn.topology import (
        ancestor_subtree,
        dofs_to_levels,
        extend_dofs,
        extend_slots,
        restrict_kernel,
        restrict_slots,
        to_levels,
    )

    topo = random_tree(30, seed=3, floating_base=True).topology
    leaves = [k for k in range(topo.n_bodies) if k not in set(topo.parent.tolist())]
    picked = (leaves[0], leaves[-1])
    sub = ancestor_subtree(topo, picked)
    want = set()
    for b in picked:
        while b >= 0:
            want.add(b)
            b = int(topo.parent[b])
    assert sorted(want) == sub.bodies.tolist() and not sub.is_whole_tree
    # parents are preserved, in the subtree's own numbering
    for k, b in enumerate(sub.bodies):
        p = topo.parent[b]
        assert sub.topo.parent[k] == (sub.local[p] if p >= 0 else -1)
    # slots: body ids survive restrict then extend (zero off the subtree)
    ids = to_levels(topo, jnp.arange(1.0, topo.n_bodies + 1.0), 0.0)
    small = restrict_slots(sub, ids)
    assert np.array_equal(np.asarray(small)[0][sub.topo.body_flat], sub.bodies + 1.0)
    back = np.asarray(extend_slots(sub, small))[0]
    np.testing.assert_array_equal(back[topo.body_flat], np.where(sub.local >= 0, np.arange(topo.n_bodies) + 1.0, 0.0))
    # kernels and dofs: a dof-numbered vector cut per kernel, restricted, comes back on the subtree's dofs
    v = jnp.arange(1.0, topo.nv + 1.0)
    blocks = dofs_to_levels(topo, v, 0.0)
    sub_v = np.concatenate(
        [np.asarray(restrict_kernel(sub, k, blocks[f])).reshape(-1) for k, f in enumerate(sub.full_kernel)]
    )
    sub_dofs = np.asarray(extend_dofs(sub, jnp.arange(1.0, sub.topo.nv + 1.0)))
    on_sub = sub_dofs > 0
    assert on_sub.sum() == sub.topo.nv == np.isin(topo.dof_body, sub.bodies).sum()
    assert sorted(sub_v[sub_v > 0].tolist()) == (np.flatnonzero(on_sub) + 1.0).tolist()
    for k, b in enumerate(sub.bodies):
        n_k = int(np.sum(topo.dof_body == b))
        np.testing.assert_array_equal(
            sub_dofs[topo.v_start[b]: topo.v_start[b] + n_k], sub.topo.v_start[k] + 1.0 + np.arange(n_k)
        )
    # the subtree of every leaf is the whole tree, and restricting to it changes nothing
    assert ancestor_subtree(topo, tuple(leaves)).is_whole_tree


def test_parallel_chains_need_no_parent_pick():
    """Where every slot's parent is in the same slot one level up (a serial arm, a quadruped's
    legs) the sweeps skip the one-hot pick; a branching level keeps it."""
    from sodyn.models import pendulum_chain

    assert pendulum_chain(5).topology.segments[0].identity_maps
    # a floating base with four three-link legs (Solo12's shape)
    parent = np.array([-1, 0, 1, 2, 0, 4, 5, 0, 7, 8, 0, 10, 11])
    topo = compile_topology(parent, ("free",) + ("revolute",) * 12)
    legs = topo.segments[-1]
    assert legs.width == 4 and legs.n_levels == 3 and legs.identity_maps
    # two branches whose second-level bodies come in the other order: slot 0's parent is slot 1
    tree = compile_topology(np.array([-1, 0, 0, 2, 1]), ("revolute",) * 5)
    seg = tree.segments[-1]
    assert seg.width == 2 and not seg.identity_maps



TAKE_CASES = {
    (2, 3, 4): 1,               # one run: a slice
    (4, 5, 0, 1, 2, 3): 2,      # two runs: slices and a concatenate
    (0, 2, 4, 1, 3, 5): 6,      # six runs of one
    (0, 1, 0, 1): 2,            # runs that overlap: the gather
    (5, 4, 3): 2,               # more runs than allowed: the gather
}


@pytest.mark.parametrize("index,max_runs", TAKE_CASES.items())
def test_static_take_by_runs_matches_the_gather(index, max_runs):
    import jax
    import jax.numpy as jnp

    from sodyn.topology import _take

    x = jnp.arange(24.0).reshape(6, 4)
    idx = np.array(index).reshape(-1, 1)
    np.testing.assert_array_equal(_take(x, idx, max_runs=max_runs), x[idx])
    # the transpose of the slices and the concatenate puts every cotangent back
    w = jnp.arange(idx.size * 4.0).reshape(idx.shape + (4,))
    grad = jax.grad(lambda x: jnp.sum(w * _take(x, idx, max_runs=max_runs)))(x)
    np.testing.assert_array_equal(grad, jax.grad(lambda x: jnp.sum(w * x[idx]))(x))


def test_static_take_reads_the_pad_value_past_the_end():
    import jax.numpy as jnp

    from sodyn.topology import _take

    x = jnp.arange(24.0).reshape(6, 4)
    np.testing.assert_array_equal(_take(x, np.array([6, 0]), pad_value=-1.0), jnp.stack([jnp.full(4, -1.0), x[0]]))


def _support_by_walking(parent, v_start, nv_b, nv):
    support = np.zeros((len(parent), nv), dtype=bool)
    for k in range(len(parent)):
        j = k
        while j >= 0:
            support[k, v_start[j]: v_start[j] + nv_b[j]] = True
            j = parent[j]
    return support


@pytest.mark.fast
def test_support_matches_the_walk_to_the_root():
    model = random_tree(40, seed=3)
    topo = model.topology
    nv_b = np.diff(np.append(topo.v_start, topo.nv))
    np.testing.assert_array_equal(topo.support, _support_by_walking(topo.parent, topo.v_start, nv_b, topo.nv))


def _comb(levels: int) -> np.ndarray:
    """A spine of ``levels`` bodies with a leaf beside it at every other level (its level
    widths alternate 1, 2, 1, 2, …: one run of equal width per level)."""
    parent, spine = [-1], [0]
    for lv in range(1, levels):
        parent.append(spine[-1])
        spine.append(len(parent) - 1)
        if lv % 2 == 0:
            parent.append(spine[-2])
    return np.array(parent)


@pytest.mark.fast
@pytest.mark.parametrize("shape", ["chain", "comb"])
def test_compile_of_a_long_tree_is_linear(shape):
    """5000 levels compile in well under a second (a chain took 18 s when each body walked to
    the root and each level scanned every body; a comb's 5000 runs made the segment choice
    quadratic); 3 s of this process's CPU time (not wall time, which a loaded machine stretches)
    leaves room for a slow machine."""
    import time

    n = 5000
    parent = np.arange(n) - 1 if shape == "chain" else _comb(n)
    t0 = time.process_time()
    topo = compile_topology(parent, ("revolute",) * len(parent))
    elapsed = time.process_time() - t0
    assert topo.n_levels == n and topo.support[:, 0].all() and topo.support[0].sum() == 1
    assert sum(seg.n_levels for seg in topo.segments) == n
    assert elapsed < 3.0, elapsed
