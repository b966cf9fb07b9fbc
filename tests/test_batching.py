"""``sodyn.batch`` (chunked batching) equals ``jax.vmap``; ``sodyn.jit`` equals ``jax.jit``."""

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.models import pendulum_chain


def test_batch_matches_jax_vmap_with_padding():
    model = pendulum_chain(3)
    q = jax.random.normal(jax.random.PRNGKey(0), (10, 3))
    v = jax.random.normal(jax.random.PRNGKey(1), (10, 3))
    fd = lambda m, q, v: sd.forward_dynamics(m, q, v, v)  # noqa: E731
    expected = jax.jit(jax.vmap(fd, in_axes=(None, 0, 0)))(model, q, v)
    got = jax.jit(sd.batch(fd, in_axes=(None, 0, 0), chunk_size=4))(model, q, v)  # 3 chunks, 2 padded
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    small = jax.jit(sd.batch(fd, in_axes=(None, 0, 0), chunk_size=64))(model, q, v)
    np.testing.assert_allclose(small, expected, rtol=1e-12)


def test_batch_gradient_and_pytree_outputs_match_jax_vmap():
    # the chunks travel through a scan's carry: reverse mode must send each chunk's
    # cotangent back to its own samples, padding included
    model = pendulum_chain(3)
    q = jax.random.normal(jax.random.PRNGKey(2), (10, 3))
    v = jax.random.normal(jax.random.PRNGKey(3), (10, 3))

    def f(q, v):
        a = sd.forward_dynamics(model, q, v, v)
        return {"a": a, "ke": sd.kinetic_energy(model, q, v)}

    def loss(batched, q, v):
        out = batched(f)(q, v)
        return jax.numpy.sum(out["a"] ** 2) + jax.numpy.sum(jax.numpy.sin(out["ke"]))

    expected = jax.jit(jax.grad(lambda q, v: loss(jax.vmap, q, v), (0, 1)))(q, v)
    chunked = lambda g: sd.batch(g, chunk_size=4)  # noqa: E731
    got = jax.jit(jax.grad(lambda q, v: loss(chunked, q, v), (0, 1)))(q, v)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    out = jax.jit(sd.batch(f, chunk_size=4))(q, v)
    ref = jax.jit(jax.vmap(f))(q, v)
    np.testing.assert_allclose(out["ke"], ref["ke"], rtol=1e-12)
    np.testing.assert_allclose(out["a"], ref["a"], rtol=1e-12)


def test_batch_rejects_bad_arguments():
    f = lambda x, y: x + y  # noqa: E731
    with pytest.raises(ValueError, match="chunk_size"):
        sd.batch(f, chunk_size=0)
    with pytest.raises(ValueError, match="share one leading batch size"):
        sd.batch(f)(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="in_axes of 0 or None"):
        sd.batch(f, in_axes=(1, 0))(np.zeros((2, 3)), np.zeros(3))


@pytest.mark.fast
def test_sodyn_jit_compiles_with_its_options_and_matches_jax_jit():
    """``sodyn.jit`` only changes how XLA compiles: values and gradients match ``jax.jit``, with
    and without ``latency=True``; its options exist in this jaxlib (XLA rejects an unknown
    option or enum value); user options merge over them."""
    model = pendulum_chain(3)
    q = jax.random.normal(jax.random.PRNGKey(0), (8, 3))
    loss = lambda q: (sd.forward_dynamics(model, q, q, q) ** 2).sum()  # noqa: E731
    batched = jax.vmap(jax.value_and_grad(loss))
    expected = jax.jit(batched)(q)
    variants = ({}, {"compiler_options": {"xla_disable_hlo_passes": "cpu-parallel-task-assigner"}}, {"latency": True})
    for kwargs in variants:
        got = sd.jit(batched, **kwargs)(q)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    single = sd.jit(jax.value_and_grad(loss), latency=True)(q[0])
    for g, e in zip(single, expected):
        np.testing.assert_allclose(g, e[0], rtol=1e-5, atol=1e-6)
    scaled = sd.jit(lambda x, k: k * x, static_argnums=1)
    np.testing.assert_allclose(scaled(np.ones(2, np.float32), 3), 3.0)
    with pytest.raises(jax.errors.JaxRuntimeError, match="No such compile option"):
        sd.jit(lambda x: x + 1, compiler_options={"xla_cpu_not_an_option": ""})(np.ones(2))
    with pytest.raises(jax.errors.JaxRuntimeError, match="not a valid enum value"):
        sd.jit(lambda x: x + 1, compiler_options={"xla_cpu_scheduler_type": "NO_SUCH_SCHEDULER"})(np.ones(2))
    with pytest.raises(TypeError, match="latency must be True or False"):
        sd.jit(lambda x: x + 1, latency="yes")
    with pytest.raises(TypeError, match="callable"):
        sd.jit("forward_dynamics")


@pytest.mark.fast
def test_only_options_this_xla_knows_are_passed():
    """``sodyn.jit``'s candidate options are tried once on the installed XLA: an unknown name is
    dropped (XLA would reject it), known ones are kept, and every option ``sodyn.jit`` adds
    compiles here."""
    from sodyn.runtime.xla import COMPILER_OPTIONS, LATENCY_OPTIONS, supported_options

    assert supported_options({"xla_cpu_not_an_option": True}) == {}
    kept = supported_options({**COMPILER_OPTIONS, **LATENCY_OPTIONS})
    assert "xla_cpu_experimental_ynn_fusion_type" in kept and "xla_cpu_scheduler_type" in kept
    jax.jit(lambda x: x + 1, compiler_options=kept).lower(np.ones(2)).compile()


_IMPORT_SCRIPT = r"""
import json, os, re, sys
import jax, jax.numpy as jnp
from jax._src import compiler

def snapshot():
    x = jnp.ones(3)
    program = jax.jit(lambda x: jnp.sin(x).sum()).lower(x).compile()
    return {
        "environment": dict(os.environ),
        "config": {k: repr(v) for k, v in jax.config.values.items()},
        "compile_options": repr(compiler.get_compile_options),
        "jit": repr(jax.jit), "vmap": repr(jax.vmap), "grad": repr(jax.grad),
        "program": re.sub(r"metadata=\{[^}]*\}", "", program.as_text().split("FileNames")[0]),
        "value": float(program(x)),
    }

before = snapshot()
import sodyn
sodyn.forward_dynamics(sodyn.models.pendulum_chain(2), jnp.zeros(2), jnp.zeros(2), jnp.zeros(2))
after = snapshot()
print(json.dumps({k: before[k] == after[k] for k in before}))
"""


@pytest.mark.fast
def test_import_sodyn_changes_no_global_state_of_jax_or_xla():
    """In a fresh process, ``import sodyn`` and a call into it leave the environment
    (``XLA_FLAGS`` included), every ``jax.config`` value, JAX's compile-options function,
    ``jax.jit``/``jax.vmap``/``jax.grad`` and the program a plain ``jax.jit`` compiles as they
    were before it."""
    import json
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | {"JAX_PLATFORMS": "cpu"}
    child = subprocess.run([sys.executable, "-c", _IMPORT_SCRIPT], env=env, capture_output=True, text=True,
                           timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    unchanged = json.loads(child.stdout.strip().splitlines()[-1])
    assert unchanged and all(unchanged.values()), unchanged


@pytest.mark.fast
def test_sodyn_jit_passes_every_jax_jit_argument_on():
    """``sodyn.jit`` is a superset of ``jax.jit``: each of ``jax.jit``'s keywords gives the values
    ``jax.jit`` gives with it, in the object ``jax.jit`` returns; without a function it is a
    decorator; and ``latency=True`` traces the program ``jax.jit`` traces (only compile options
    differ)."""
    import inspect
    import warnings

    from jax.sharding import SingleDeviceSharding

    from sodyn.runtime.xla import UNPARTITIONED

    cpu = jax.devices("cpu")[0]
    one = SingleDeviceSharding(cpu)

    def f(x, y, k=2, *, scale=1.0):
        return k * scale * jax.numpy.sin(x) + y, jax.numpy.sum(x)

    def args():  # fresh arrays: a donated argument is consumed by the call
        return jax.numpy.linspace(0.0, 1.0, 5), jax.numpy.arange(5.0)

    cases = [
        ({"static_argnums": 2}, (3,), {}),
        ({"static_argnames": "scale"}, (), {"scale": 0.5}),
        ({"donate_argnums": 1}, (), {}),
        ({"donate_argnames": "y"}, (), {}),
        ({"in_shardings": (one, one), "out_shardings": one}, (), {}),
        ({"keep_unused": True}, (), {}),
        ({"device": cpu}, (), {}),  # device and backend: deprecated by JAX, still passed on
        ({"backend": "cpu"}, (), {}),
        ({"inline": True}, (), {}),
        ({"compiler_options": UNPARTITIONED}, (), {}),
    ]
    keywords = [n for n, p in inspect.signature(jax.jit).parameters.items() if p.kind is p.KEYWORD_ONLY]
    assert set(keywords) <= {k for kw, _, _ in cases for k in kw}, keywords
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for kw, extra, call_kw in cases:
            ours, theirs = sd.jit(f, **kw), jax.jit(f, **kw)
            assert type(ours) is type(theirs), kw
            got, expected = ours(*args(), *extra, **call_kw), theirs(*args(), *extra, **call_kw)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14, err_msg=str(kw))
    decorated = sd.jit(static_argnums=2, latency=True)(f)
    np.testing.assert_allclose(decorated(*args(), 3)[0], jax.jit(f, static_argnums=2)(*args(), 3)[0], rtol=1e-12)
    assert str(sd.jit(f, latency=True).trace(*args()).jaxpr) == str(jax.jit(f).trace(*args()).jaxpr)


@pytest.mark.fast
def test_top_level_names_do_not_shadow_jax_and_allocator_is_in_runtime():
    """``sodyn.vmap`` is gone (``sodyn.batch`` has other semantics than ``jax.vmap``), and the
    allocator setting lives in :mod:`sodyn.runtime` only."""
    assert not hasattr(sd, "vmap") and "vmap" not in sd.__all__
    assert not hasattr(sd, "reuse_freed_memory") and "reuse_freed_memory" not in sd.__all__
    assert callable(sd.runtime.reuse_freed_memory)
    assert sd.batch is sd.runtime.batch and sd.jit is sd.runtime.jit and sd.use_cpu_cores is sd.runtime.use_cpu_cores


def test_unpartitioned_options_compile_without_intra_op_partitions():
    """``sodyn.runtime.xla.UNPARTITIONED`` names an XLA pass this jaxlib has (XLA rejects unknown
    options, but ignores an unknown pass name): the program it compiles has no operation cut into
    pieces for the intra-op thread pool, where the default program has some on a machine with
    several cores, and both compute the same values."""
    import os

    from sodyn.runtime.xla import UNPARTITIONED

    model = pendulum_chain(8)
    q = jax.random.normal(jax.random.PRNGKey(0), (4096, 8))
    batched = sd.batch(lambda q: sd.mass_matrix(model, q), devices=None)  # B × 8 × 8 outputs: 2 MiB
    default = sd.jit(batched).lower(q).compile()
    unpartitioned = sd.jit(batched, compiler_options=UNPARTITIONED).lower(q).compile()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if cpus > 1:  # XLA:CPU partitions for as many threads as CPUs
        assert "outer_dimension_partitions" in default.as_text()
    assert "outer_dimension_partitions" not in unpartitioned.as_text()
    np.testing.assert_allclose(unpartitioned(q), default(q), rtol=1e-14, atol=1e-14)


_MULTI_DEVICE_SCRIPT = r"""
import jax
import sodyn as sd
assert sd.use_cpu_cores(2) == 2
jax.config.update("jax_enable_x64", True)
import numpy as np
import sodyn.models
from sodyn.models import random_tree

assert len(jax.local_devices()) == 2
model = random_tree(4, seed=1, floating_base=True)
keys = jax.random.split(jax.random.PRNGKey(0), 37)  # odd: one device gets a padded sample
q = jax.vmap(lambda k: sd.random_configuration(model, k))(keys)
v = jax.random.normal(jax.random.PRNGKey(1), (37, model.nv))
fd = lambda m, q, v: sd.forward_dynamics(m, q, v, v)
one = jax.jit(jax.vmap(fd, in_axes=(None, 0, 0)))(model, q, v)
split = jax.jit(sd.batch(fd, in_axes=(None, 0, 0), chunk_size=8))(model, q, v)
np.testing.assert_allclose(split, one, rtol=1e-12, atol=1e-12)
assert len(split.sharding.device_set) == 2, split.sharding  # 37 >= 2 devices x chunk 8: split
small = jax.jit(sd.batch(fd, in_axes=(None, 0, 0), chunk_size=32))(model, q, v)
assert len(small.sharding.device_set) == 1, small.sharding  # 37 < 2 x 32: kept on one device
np.testing.assert_allclose(small, one, rtol=1e-12, atol=1e-12)
# place: each device's share put on it; the split call's outputs come back placed alike, so a
# loop that feeds them back reads them where they are
bat = sd.batch(fd, in_axes=(None, 0, 0), chunk_size=8)
m_, q36, v36 = bat.place(model, q[:36], v[:36])
assert m_ is model and q36.sharding.shard_shape(q36.shape) == (18, model.nq), q36.sharding
out36 = jax.jit(bat)(model, q36, v36)
assert out36.sharding == v36.sharding, (out36.sharding, v36.sharding)
np.testing.assert_allclose(out36, one[:36], rtol=1e-12, atol=1e-12)
assert bat.place(model, q, v)[1] is q  # 37 samples do not split evenly: left where they are
kept36 = sd.batch(fd, in_axes=(None, 0, 0), chunk_size=32).place(model, q[:36], v[:36])[1]
assert len(kept36.sharding.device_set) == 1  # 36 < 2 x 32: the call stays on one device, so does the batch
# the gradient with respect to a replicated argument (the model) sums over both devices
chain = sd.models.pendulum_chain(2)
qc, vc = q[:, :2], v[:, :2]
loss = lambda vm: (lambda m: (vm(m, qc, vc) ** 2).sum())
g_one = jax.jit(jax.grad(loss(jax.vmap(fd, in_axes=(None, 0, 0)))))(chain).mass
g_split = jax.jit(jax.grad(loss(sd.batch(fd, in_axes=(None, 0, 0), chunk_size=8))))(chain).mass
np.testing.assert_allclose(g_split, g_one, rtol=1e-10)
# a function calling LAPACK stays on one device (split, jaxlib's batched kernels deadlock on XLA:CPU)
solve = lambda x: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(np.eye(3) + jax.numpy.outer(x, x)), x)
x = jax.random.normal(jax.random.PRNGKey(2), (64, 3))
kept = jax.jit(sd.batch(solve, chunk_size=8))(x)
assert len(kept.sharding.device_set) == 1, kept.sharding
assert sd.batch(solve, chunk_size=8).place(x)[0] is x  # not split, so not placed
np.testing.assert_allclose(kept, jax.vmap(solve)(x), rtol=1e-12)
# the single 6D task's Λ is closed-form (no LAPACK), so it is split
lam = lambda q: sd.operational_space_inertia(model, q, [model.frame_names[-1]])
lam_split = jax.jit(sd.batch(lam, chunk_size=8))(q)
assert len(lam_split.sharding.device_set) == 2, lam_split.sharding
np.testing.assert_allclose(lam_split, jax.vmap(lam)(q), rtol=1e-9)
try:
    sd.use_cpu_cores(3)
except RuntimeError as e:
    assert "before the first JAX computation" in str(e)
else:
    raise AssertionError("use_cpu_cores after a computation must raise")
print("OK")
"""


def test_batch_splits_the_batch_across_cpu_devices():
    """With two CPU devices, ``sodyn.batch`` shards the batch; values and gradients are unchanged."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    # keep the suite's compile flags (conftest.py), drop any device count of the caller's
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f)
    out = subprocess.run([sys.executable, "-c", _MULTI_DEVICE_SCRIPT], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("OK")


def test_batch_devices_argument():
    f = lambda x: 2.0 * x  # noqa: E731
    x = np.arange(6.0)
    np.testing.assert_allclose(sd.batch(f, devices=None)(x), 2.0 * x)
    np.testing.assert_allclose(sd.batch(f, devices=jax.local_devices()[:1])(x), 2.0 * x)
    with pytest.raises(ValueError, match="devices must be"):
        sd.batch(f, devices="all")(x)


def test_calls_lapack_finds_linear_algebra_inside_control_flow():
    from sodyn.runtime.batching import calls_lapack

    x = np.ones((5, 4))
    spd = lambda y: np.eye(4) + jax.numpy.outer(y, y)  # noqa: E731
    assert calls_lapack(lambda y: jax.numpy.linalg.cholesky(spd(y)), 0, x)
    assert calls_lapack(lambda y: jax.lax.map(lambda z: jax.numpy.linalg.solve(spd(z), z), y[None]), 0, x)
    assert not calls_lapack(lambda y: jax.numpy.sin(y) @ spd(y), 0, x)
    model = pendulum_chain(3)
    q = np.zeros((5, 3))
    assert not calls_lapack(lambda q: sd.forward_dynamics(model, q, q, q), 0, q)
    assert not calls_lapack(jax.grad(lambda q: sd.forward_dynamics(model, q, q, q).sum()), 0, q)


def test_automatic_chunk_size_follows_memory_per_sample():
    """``chunk_size=None`` gives small functions :data:`MAX_CHUNK`-sample chunks and shrinks them,
    by powers of two down to :data:`MIN_CHUNK`, as the traced intermediates per sample grow;
    values match ``jax.vmap`` with the chosen chunks (padding included)."""
    from sodyn.runtime.batching import auto_chunk_size, intermediate_bytes
    from sodyn.runtime.tuning import CHUNK_BYTES, MAX_CHUNK, MIN_CHUNK

    x = np.ones((300, 4))
    cheap = lambda y: 2.0 * y  # noqa: E731
    assert auto_chunk_size(cheap, 0, x) == MAX_CHUNK
    assert sd.batch(cheap).chunk_size(x) == MAX_CHUNK
    assert sd.batch(cheap, chunk_size=7).chunk_size(x) == 7

    def heavy(n):  # n × n float64 outer product: 8 n² bytes of intermediates, and its sum
        return lambda y: jax.numpy.sum(jax.numpy.outer(jax.numpy.tile(y, n // 4), jax.numpy.tile(y, n // 4)))

    jaxpr = jax.make_jaxpr(heavy(400))(np.ones(4)).jaxpr
    assert 8 * 400**2 <= intermediate_bytes(jaxpr) < 1.02 * 8 * 400**2  # the outer product dominates
    for n, chunk in ((400, 128), (800, MIN_CHUNK), (4000, MIN_CHUNK)):
        per_sample = intermediate_bytes(jax.make_jaxpr(heavy(n))(np.ones(4)).jaxpr)
        assert auto_chunk_size(heavy(n), 0, x) == chunk
        assert chunk == MIN_CHUNK or chunk * per_sample <= CHUNK_BYTES < 2 * chunk * per_sample
    # scan bodies count once, their stacked outputs in full
    scanned = lambda y: jax.lax.scan(lambda c, _: (c + 1.0, jax.numpy.outer(c, c)), y, None, length=1000)[1]  # noqa: E731
    assert intermediate_bytes(jax.make_jaxpr(scanned)(np.ones(4)).jaxpr) >= 8 * 16 * 1000
    batched = sd.batch(heavy(400))
    assert batched.chunk_size(x) == 128
    np.testing.assert_allclose(jax.jit(batched)(x), jax.vmap(heavy(400))(x), rtol=1e-12)
    # forward dynamics: a short chain keeps full chunks, a 128-link chain gets smaller ones
    short, long = pendulum_chain(4), pendulum_chain(128)
    fd = lambda m, q: sd.forward_dynamics(m, q, q, q)  # noqa: E731
    assert sd.batch(fd, in_axes=(None, 0)).chunk_size(short, np.zeros((8, 4))) == MAX_CHUNK
    assert sd.batch(fd, in_axes=(None, 0)).chunk_size(long, np.zeros((8, 128))) < MAX_CHUNK


@pytest.mark.fast
def test_a_plain_vmap_of_the_public_functions_is_a_plain_vmap():
    """Forward and inverse dynamics, ``M``, ``M⁻¹`` and a simulation step compute what
    ``jax.vmap`` asks and nothing else: the program of a batch of 4096 is that of a batch of 8
    with the batch size changed (no chunks, no scan over them); chunking is :func:`sodyn.batch`'s."""
    model = pendulum_chain(3)
    start = sd.State.initial(model, jnp.zeros(3))
    ops = {
        "fd": lambda q: sd.forward_dynamics(model, q, q, q),
        "id": lambda q: sd.inverse_dynamics(model, q, q, q),
        "M": lambda q: sd.mass_matrix(model, q),
        "Minv": lambda q: sd.inverse_mass_matrix(model, q),
        "step": lambda q: sd.simulate.step(model, eqx.tree_at(lambda s: s.q, start, q), q, 0.01).q,
    }
    from sodyn.runtime.batching import sub_jaxprs

    def program(jaxpr) -> list:  # the primitives in order, nested programs included
        return [(e.primitive.name, [program(j) for j in sub_jaxprs(e)]) for e in jaxpr.eqns]

    for name, op in ops.items():
        small, large = (program(jax.make_jaxpr(jax.vmap(op))(jnp.zeros((n, 3))).jaxpr) for n in (8, 4096))
        assert "custom_vmap_call" not in str(large), name
        assert large == small, name
