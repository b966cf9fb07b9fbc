"""The sweep engine (:mod:`sodyn.sweeps`) and the layout it runs on (:mod:`sodyn.topology`)
against plain Python loops over the bodies.

Sweeps are called as the algorithms call them (``inverse_dynamics``, ``kinematics``,
``articulated``): named compact-layout inputs from :func:`to_levels`, named per-kernel inputs
from :func:`dofs_to_levels`, what depends on the joint run per kernel by ``Level.each_kernel``,
per-kernel outputs joined by :func:`in_slots` / :func:`dofs_from_levels`,
results read back by :func:`from_levels`.  The trees cover one chain (one segment, identity maps),
parallel legs (identity maps, width two, a ``cross`` map), and two branching
floating-base trees with all four joint kernels cut into four segments (one-level segments
included, padding slots in many levels).  float64 (``tests/conftest.py``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sodyn.joints import KERNEL_OF, NQ, NV
from sodyn.models import pendulum_chain, random_tree
from sodyn.sweeps import Fields, gather, in_slots, scatter
from sodyn.topology import compile_topology, dofs_from_levels, dofs_to_levels, from_levels, to_levels

TREES = {
    "chain": lambda: pendulum_chain(6).topology,
    "legs": lambda: compile_topology(np.array([-1, 0, 0, 1, 2, 3, 4]), ("free",) + ("revolute",) * 6),
    "deep": lambda: random_tree(12, seed=0, floating_base=True).topology,
    "bushy": lambda: random_tree(15, seed=1, floating_base=True).topology,
}


@functools.cache
def tree(name):
    return TREES[name]()


def _inputs(topo, seed, batch=()):
    """Random per-body matrices ``A`` ``(n, 3, 3)``, offsets ``t`` and own values ``o`` ``(n, 3)``, a ``v``."""
    rng = np.random.default_rng(seed)
    n = topo.n_bodies
    return (np.eye(3) + 0.4 * rng.normal(size=batch + (n, 3, 3)), rng.normal(size=batch + (n, 3)),
            rng.normal(size=batch + (n, 3)), rng.normal(size=batch + (topo.nv,)))


def sweeps(topo, A, t, o, v, pad=0.0):
    """One scatter and one gather, body-ordered results.

    Scatter (base → tips): ``R(k) = R(℘k) A(k)``, ``p(k) = p(℘k) + R(℘k) t(k)`` (rigid composition),
    ``s(k) = sin s(℘k) + Σ v_k`` (the body's dofs through ``kernel_xs``), per dof ``v_j s(k)``.
    Gather (tips → base): ``f(k) = o(k) + Σ_c A(c)ᵀ f(c)``, ``g(k) = Σ v_k + Σ_c tanh g(c)``, per dof
    ``v_j g(k)``.  ``pad`` fills every padding slot of every input."""
    dt = A.dtype
    xa = to_levels(topo, A, jnp.full((3, 3), pad, dt))
    xt, xo = (to_levels(topo, x, jnp.full(3, pad, dt)) for x in (t, o))
    vb = tuple(dofs_to_levels(topo, v, pad))

    def down(parent, level):
        R, p, s = parent
        R1, p1 = R @ level.x.A, p + jnp.einsum("wij,wj->wi", R, level.x.t)

        def own_dofs(kernel, s, r, q):  # one kernel's slots: its bodies' dofs ``v_k``
            s1 = jnp.sin(s) + kernel.x.v.sum(-1)
            return s1, ((r, q, s1), kernel.x.v * s1[:, None])

        s1, outs = level.each_kernel(own_dofs, s, R1, p1)
        return (R1, p1, s1), outs

    def up(from_children, level):
        fc, gc = from_children
        f = level.x.o + fc

        def own_dofs(kernel, gc, f):
            g = kernel.x.v.sum(-1) + gc
            return g, ((f, g), kernel.x.v * g[:, None])

        g, outs = level.each_kernel(own_dofs, gc, f)
        return (jnp.einsum("wji,wj->wi", level.x.A, f), jnp.tanh(g)), outs

    root = (jnp.eye(3, dtype=dt), jnp.zeros(3, dt), jnp.zeros((), dt))
    outs = scatter(topo, down, root, Fields(A=xa, t=xt), Fields(v=vb))
    R, p, s = (from_levels(topo, x) for x in in_slots(tuple(x[0] for x in outs)))
    sd = dofs_from_levels(topo, [x[1] for x in outs])
    outs = gather(topo, up, (jnp.zeros(3, dt), jnp.zeros((), dt)), Fields(A=xa, o=xo), Fields(v=vb))
    f, g = (from_levels(topo, x) for x in in_slots(tuple(x[0] for x in outs)))
    return R, p, s, sd, f, g, dofs_from_levels(topo, [x[1] for x in outs])


def loops(topo, A, t, o, v):
    """:func:`sweeps` as plain NumPy loops: bodies in order (parents first), then in reverse."""
    n, par, db = topo.n_bodies, topo.parent, topo.dof_body
    own = [v[db == k].sum() for k in range(n)]
    R, p, s = np.zeros((n, 3, 3)), np.zeros((n, 3)), np.zeros(n)
    for k in range(n):
        R0, p0, s0 = (np.eye(3), np.zeros(3), 0.0) if par[k] < 0 else (R[par[k]], p[par[k]], s[par[k]])
        R[k], p[k], s[k] = R0 @ A[k], p0 + R0 @ t[k], np.sin(s0) + own[k]
    f, g = np.array(o), np.array(own)  # own values, children added before a body is reached
    for k in reversed(range(n)):
        if par[k] >= 0:
            f[par[k]] += A[k].T @ f[k]
            g[par[k]] += np.tanh(g[k])
    return R, p, s, v * s[db], f, g, v * g[db]


sweeps_jit = jax.jit(sweeps, static_argnums=0)


def _close(got, want, rtol=1e-11):
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=rtol)


@pytest.mark.fast
@pytest.mark.parametrize("name", TREES)
def test_sweeps_match_the_loops_whatever_the_padding(name):
    """Scatter (rigid composition, a nonlinear accumulation, per-dof outputs) and gather
    (transformed subtree sums) equal the loops over bodies, and padding slots filled with 0 or
    with 100 give the same real-body results."""
    topo = tree(name)
    args = _inputs(topo, 0)
    want = loops(topo, *args)
    _close(sweeps_jit(topo, *args, 0.0), want)
    _close(sweeps_jit(topo, *args, 100.0), want)


def _wiring(topo):
    """Per body: the parent id its scatter slot receives, its depth, the number and id-sum of
    the children its gather slot hears from, its subtree size; per kernel, the ids seen through
    ``level.x`` and the per-dof ids seen through ``level.kernels`` (padding: id −1)."""
    ids = to_levels(topo, jnp.arange(topo.n_bodies, dtype=float), -1.0)
    kid = tuple(dofs_to_levels(topo, jnp.asarray(topo.dof_body, float), -1.0))

    def down(parent, level):
        (pid, depth), (me,) = parent, level.x
        outs = zip(level.per_kernel(me), level.per_kernel(pid), level.per_kernel(depth + 1), level.kernels)
        return (me, depth + 1), tuple(((m, p, d), b) for m, p, d, b in outs)

    def up(from_children, level):
        (count, idsum, size), (me,) = from_children, level.x
        outs = zip(level.per_kernel(count), level.per_kernel(idsum), level.per_kernel(size + 1))
        return (jnp.ones_like(me), me, size + 1), tuple(outs)

    zero = jnp.zeros(())
    down_outs = scatter(topo, down, (-jnp.ones(()), -jnp.ones(())), (ids,), kid)
    me, pid, depth = in_slots(tuple(x[0] for x in down_outs))
    up_outs = in_slots(gather(topo, up, (zero, zero, zero), (ids,), kid))
    return me, [x[1] for x in down_outs], tuple(from_levels(topo, x) for x in (pid, depth) + up_outs)


@pytest.mark.fast
@pytest.mark.parametrize("name", TREES)
def test_levels_slots_and_kernels_wire_parents_and_children(name):
    """Each slot of a scatter sees its own parent's value (the world's at the roots) at the
    depth ``topo.body_level``; each gather slot hears exactly its children (padding slots send
    nothing); ``level.x`` and ``level.kernels`` hold the same bodies, of the slot range's kernel."""
    topo = tree(name)
    me, blocks, (pid, depth, count, idsum, size) = jax.jit(_wiring, static_argnums=0)(topo)
    par = topo.parent
    np.testing.assert_array_equal(pid, par)
    np.testing.assert_array_equal(depth, topo.body_level)
    np.testing.assert_array_equal(count, np.bincount(par[par >= 0], minlength=topo.n_bodies))
    np.testing.assert_array_equal(idsum, np.bincount(par[par >= 0], np.flatnonzero(par >= 0), topo.n_bodies))
    want_size = np.ones(topo.n_bodies)
    for k in reversed(range(topo.n_bodies)):
        if par[k] >= 0:
            want_size[par[k]] += want_size[k]
    np.testing.assert_array_equal(size, want_size)
    me = np.asarray(me)[0]
    np.testing.assert_array_equal(me, np.where(topo.mask[0], topo.body_slot[0], -1))
    for (kernel, a, b), block in zip(topo.kernel_slots, blocks, strict=True):
        assert block.shape == (1, b - a, NV[kernel])
        np.testing.assert_array_equal(np.asarray(block)[0], np.repeat(me[a:b, None], NV[kernel], axis=1))
        assert all(KERNEL_OF[topo.joint_type[int(k)]] == kernel for k in me[a:b] if k >= 0)


@functools.partial(jax.jit, static_argnums=0)
def _round_trips(topo, x, dofs):
    """Body values to slots (pad 7) and back; each dof vector (key ``"v…"``/``"q…"``) to kernel
    blocks (pad −3) and back."""
    lv = to_levels(topo, x, jnp.full(x.shape[1:], 7.0))
    blocks = {k: dofs_to_levels(topo, d, -3.0, k[0]) for k, d in dofs.items()}
    return lv, from_levels(topo, lv), blocks, {k: dofs_from_levels(topo, b, k[0]) for k, b in blocks.items()}


@pytest.mark.fast
@pytest.mark.parametrize("name", TREES)
def test_layout_round_trips(name):
    """bodies → slots → bodies and dofs (``v`` and ``q``, with trailing axes) → kernel blocks →
    dofs are identities; padding slots (``~topo.mask``) hold the pad value; the kernels' slot
    ranges tile the compact layout and each block has its kernel's ``nv``/``nq`` per slot."""
    topo = tree(name)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(topo.n_bodies, 2, 3))
    dofs = {"v": rng.normal(size=topo.nv), "v4": rng.normal(size=(topo.nv, 4)),
            "q": rng.normal(size=topo.nq), "q4": rng.normal(size=(topo.nq, 4))}
    lv, back, blocks, dofs_back = _round_trips(topo, x, dofs)
    assert lv.shape == (1, topo.width, 2, 3)
    np.testing.assert_array_equal(np.asarray(lv)[~topo.mask], 7.0)
    np.testing.assert_array_equal(np.asarray(lv)[topo.mask], x[topo.body_slot[topo.mask]])
    np.testing.assert_array_equal(back, x)
    bounds = [0] + [b for _, _, b in topo.kernel_slots]
    assert [(a, b) for _, a, b in topo.kernel_slots] == list(zip(bounds[:-1], bounds[1:]))
    assert bounds[-1] == topo.width
    for key, d in dofs.items():
        per = NV if key[0] == "v" else NQ
        for (kernel, a, b), blk in zip(topo.kernel_slots, blocks[key], strict=True):
            assert blk.shape == (1, b - a, per[kernel]) + d.shape[1:]
            np.testing.assert_array_equal(np.asarray(blk)[~topo.mask[:, a:b]], -3.0)
        np.testing.assert_array_equal(dofs_back[key], d)


def _loss(fn, w, topo, *args):
    return sum((wi * yi).sum() for wi, yi in zip(w, fn(topo, *args)))


@pytest.mark.fast
@pytest.mark.parametrize("name", ["legs", "bushy"])
def test_gradient_through_scatter_and_gather_matches_the_loops(name):
    """``jax.grad`` of a weighted sum of every output of both sweeps, with respect to every
    entry of all four inputs, equals the central differences of the NumPy loops (float64)."""
    topo = tree(name)
    args = _inputs(topo, 2)
    w = [np.random.default_rng(3).normal(size=y.shape) for y in loops(topo, *args)]
    got = jax.jit(jax.grad(functools.partial(_loss, sweeps, w), argnums=(1, 2, 3, 4)), static_argnums=0)(topo, *args)
    eps = 1e-6
    for i, (a, g) in enumerate(zip(args, got, strict=True)):
        fd = np.zeros(a.size)
        for j in range(a.size):
            d = np.zeros(a.size)
            d[j] = eps
            step = [x + (d.reshape(a.shape) if m == i else 0.0) for m, x in enumerate(args)]
            back = [x - (d.reshape(a.shape) if m == i else 0.0) for m, x in enumerate(args)]
            fd[j] = (_loss(loops, w, topo, *step) - _loss(loops, w, topo, *back)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g).ravel(), fd, rtol=1e-6, atol=1e-6)


@pytest.mark.fast
@pytest.mark.parametrize("name", ["bushy"])
def test_jit_of_vmap_gives_the_per_sample_results(name):
    """A batch of 3 inputs through ``jit(vmap(sweeps))`` gives each sample's loop result."""
    topo = tree(name)
    batch = _inputs(topo, 5, (3,))
    got = jax.jit(jax.vmap(functools.partial(sweeps, topo)))(*batch)
    for i in range(3):
        _close([y[i] for y in got], loops(topo, *(a[i] for a in batch)))


@pytest.mark.fast
def test_named_inputs_and_kernels():
    """``Fields``: a pytree read by name, split by kernel, with errors naming the input; each
    kernel sees its own name and inputs."""
    topo = tree("bushy")
    f = Fields(b=jnp.ones(2), a=None, c=(jnp.zeros(3),))
    leaves, tdef = jax.tree_util.tree_flatten(f)
    assert len(leaves) == 2 and jax.tree_util.tree_unflatten(tdef, leaves).c[0].shape == (3,)
    assert jax.jit(lambda f: f.replace(b=2 * f.b))(f).b.tolist() == [2.0, 2.0]
    with pytest.raises(AttributeError, match="no sweep input named 'd'.*inputs: a, b, c"):
        _ = f.d
    with pytest.raises(ValueError, match="kernel input 'v' has 1 entries for"):
        scatter(topo, lambda c, level: (c, ()), jnp.zeros(()), (), Fields(v=[jnp.zeros((1, 1, 1))]))
    kinds = [k for k, _, _ in topo.kernel_slots]
    sizes = tuple(dofs_to_levels(topo, jnp.arange(topo.nv, dtype=jnp.float64), 0.0))

    def step(parent, level):
        def kernel(k, parent):
            return parent, (jnp.full(k.x.v.shape[:1], kinds.index(k.kind)), k.x.v)
        return level.each_kernel(kernel, parent)

    outs = scatter(topo, step, jnp.zeros(()), (), Fields(v=sizes))
    for i, (index, v) in enumerate(outs):
        assert np.all(np.asarray(index) == i)
        np.testing.assert_array_equal(v, sizes[i])
