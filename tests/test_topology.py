"""The level schedule: segments cut where the tree's width changes, and the sweeps over them."""

import numpy as np
import pytest

from sodyn.joints import KERNEL_OF
from sodyn.models import humanoid_like, pendulum_chain, random_tree
from sodyn.topology import MAX_SEGMENTS, compile_topology


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
