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


_EMITTERS_SCRIPT = r"""
import sys
if sys.argv[1] == "computed_first":
    import jax.numpy as jnp
    jnp.zeros(1).block_until_ready()
import sodyn
import jax, jax.numpy as jnp
from jax._src import compiler
from sodyn.runtime.xla import classic_emitters_in_place
x = jnp.ones(3)
plain = jax.jit(lambda x: jnp.sin(x).sum()).lower(x).compile()
print(plain(x))  # the program runs (XLA rejects an option it does not know)
print(b"xla_cpu_use_fusion_emitters" in plain.runtime_executable().serialize())
given = {"xla_cpu_use_fusion_emitters": True}
if classic_emitters_in_place():  # the fallback's wrapper
    options = compiler.get_compile_options(1, 1, env_options_overrides=given, backend=jax.devices("cpu")[0].client)
    print(dict(options.env_option_overrides) == given)
else:
    print("no fallback")
"""


@pytest.mark.fast
def test_import_gives_later_cpu_programs_the_classic_emitters():
    """On jaxlib before 0.11, a plain ``jax.jit`` program compiled after ``import sodyn`` carries
    the compile option ``xla_cpu_use_fusion_emitters=False``, whether or not JAX ran a computation
    first, unless ``SODYN_KEEP_XLA_DEFAULTS`` is set or ``XLA_FLAGS`` sets the option; an option
    the caller passes wins.  On newer jaxlib nothing is added.  Each child process runs its
    program."""
    import subprocess
    import sys

    from sodyn.runtime.xla import KEEP_XLA_DEFAULTS, _version

    base = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", KEEP_XLA_DEFAULTS)}
    base["JAX_PLATFORMS"] = "cpu"
    old = _version(jax.lib.__version__) < (0, 11)
    cases = {  # case: (extra environment, argument, whether the program carries the option)
        "fresh": ({}, "import_first", old),
        "computed_first": ({}, "computed_first", old),
        "kept": ({KEEP_XLA_DEFAULTS: "1"}, "computed_first", False),
    }
    if old:
        cases["given"] = ({"XLA_FLAGS": "--xla_cpu_use_fusion_emitters=true"}, "computed_first", False)
    children = {name: subprocess.Popen([sys.executable, "-c", _EMITTERS_SCRIPT, arg], env={**base, **extra},
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for name, (extra, arg, _) in cases.items()}
    for name, child in children.items():
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, (name, err[-2000:])
        value, carried, caller_wins = out.strip().splitlines()[-3:]
        assert float(value) == pytest.approx(3 * np.sin(1.0)), (name, out)
        assert carried == str(cases[name][2]), (name, out)
        assert caller_wins == ("True" if cases[name][2] else "no fallback"), (name, out)


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
def test_a_large_plain_vmap_of_the_dynamics_runs_in_chunks(monkeypatch):
    """Under a plain ``jax.vmap``, forward and inverse dynamics, ``M`` and ``M⁻¹`` run chunk by
    chunk once the batch holds ``VMAP_CHUNKS_FROM`` automatic chunks
    (:func:`~sodyn.runtime.batching.chunked_when_vmapped`; here 32-sample chunks, the last one
    padded), with the values and gradients of one sample at a time, batched model parameters
    included; smaller batches are not chunked.  Other backends (a GPU) run one plain vmap."""
    from sodyn.runtime import batching
    from sodyn.runtime.tuning import MIN_CHUNK, VMAP_CHUNKS_FROM

    sizes = []
    chunked_vmap = batching._chunked_vmap
    monkeypatch.setattr(batching, "_chunk_for_bytes", lambda per_sample: MIN_CHUNK)
    monkeypatch.setattr(batching, "_chunked_vmap", lambda f, axes, c: sizes.append(c) or chunked_vmap(f, axes, c))
    model = pendulum_chain(3)
    n = VMAP_CHUNKS_FROM * MIN_CHUNK + 9
    q, v, tau = (jax.random.normal(jax.random.PRNGKey(i), (n, 3)) for i in range(3))
    mass = model.mass * (1.0 + 0.1 * jax.random.uniform(jax.random.PRNGKey(3), (n, model.n_bodies)))
    ops = {
        "fd": lambda m, q, v, tau: sd.forward_dynamics(m, q, v, tau),
        "id": lambda m, q, v, tau: sd.inverse_dynamics(m, q, v, tau),
        "M": lambda m, q, v, tau: sd.mass_matrix(m, q) @ tau,
        "Minv": lambda m, q, v, tau: sd.inverse_mass_matrix(m, q) @ tau,
    }
    with_mass = {name: (lambda mass, q, v, tau, op=op: op(eqx.tree_at(lambda m: m.mass, model, mass), q, v, tau))
                 for name, op in ops.items()}

    def loss(f):
        return lambda q: jnp.sum(jnp.sin(jax.vmap(f)(mass, q, v, tau)))

    # every op's batch and gradient in one program; the chunks are chosen while it is traced
    chunks = {}

    def batch_and_gradient(q):
        out = {}
        for name, f in with_mass.items():
            before = len(sizes)
            out[name] = (jax.vmap(f)(mass, q, v, tau), jax.grad(loss(f))(q))
            chunks[name] = sizes[before:]
        return out

    got = jax.jit(batch_and_gradient)(q)
    small = q[: VMAP_CHUNKS_FROM * MIN_CHUNK - 1]
    for name in ops:
        if jax.default_backend() == "cpu":
            assert chunks[name] and set(chunks[name]) == {MIN_CHUNK}, name
        else:
            assert not chunks[name], name
        calls = len(sizes)
        jax.make_jaxpr(jax.vmap(ops[name], in_axes=(None, 0, 0, 0)))(model, small, small, small)
        assert len(sizes) == calls, name  # below VMAP_CHUNKS_FROM chunks: one plain vmap

    # against one sample at a time
    one = jax.jit(lambda m, x, v, t: {
        name: (f(m, x, v, t), jax.grad(lambda x, f=f: jnp.sum(jnp.sin(f(m, x, v, t))))(x))
        for name, f in with_mass.items()})
    for i in range(0, n, 17):
        expected = one(mass[i], q[i], v[i], tau[i])
        for name, (value, gradient) in expected.items():
            np.testing.assert_allclose(got[name][0][i], value, rtol=1e-11, atol=1e-12, err_msg=name)
            np.testing.assert_allclose(got[name][1][i], gradient, rtol=1e-10, atol=1e-12, err_msg=name)
