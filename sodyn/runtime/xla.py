"""``sodyn.jit``: ``jax.jit`` plus the XLA:CPU compile options that suit sodyn's programs.

sodyn is fast under plain ``jax.jit`` and ``equinox.filter_jit``: its small products are
:func:`~sodyn.contraction.contract` primitives, which compile to loops that XLA's default CPU
pipeline keeps for itself.  :func:`jit` adds, for one executable and only on the CPU, the
options that still help some programs there:

* ``xla_cpu_experimental_ynn_fusion_type=""``: no YNNPACK library fusions, which is what
  XLA:CPU makes of large plain-add reductions elsewhere in the program (a loss, say);
* ``xla_cpu_use_fusion_emitters=False`` (XLA versions that have the switch): the classic loop
  emitters, which generate faster loops than the fusion emitters for these shapes.

XLA rejects a compile option it does not know, and its set of options changes between
releases, so :func:`supported_options` tries each candidate once per process on a trivial
program and :func:`jit` passes only those the installed XLA accepts.  Compile options belong
to one executable: unlike ``XLA_FLAGS`` they leave the rest of the process alone.

The one process-wide setting is a documented fallback, for the XLA versions whose default
emitters are the slower ones for these programs: :func:`prefer_classic_emitters`, run by
``import sodyn``, gives the CPU programs compiled after it (plain ``jax.jit`` included) the
classic emitters as well (``SODYN_KEEP_XLA_DEFAULTS=1`` opts out).

``jit(fun, latency=True)`` is for single-sample calls (a control loop): it adds XLA's
memory-optimised schedule, under which a program's few hundred tiny operations run one after
another on the calling thread instead of being handed to XLA's thread pool.  Compile options
are all :func:`jit` changes: the traced program is the one ``jax.jit`` traces.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

#: The classic loop emitters as one compile option (XLA:CPU before jaxlib 0.11).
CLASSIC_EMITTERS: dict[str, Any] = {"xla_cpu_use_fusion_emitters": False}

#: Candidate options :func:`jit` adds on the CPU (those the installed XLA knows).
COMPILER_OPTIONS: dict[str, Any] = {"xla_cpu_experimental_ynn_fusion_type": "", **CLASSIC_EMITTERS}

#: Candidate options ``jit(..., latency=True)`` adds on top, for single-sample calls.
LATENCY_OPTIONS: dict[str, Any] = {
    "xla_cpu_scheduler_type": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED",
}

#: Options that compile a program without XLA:CPU's intra-op partitions, for a batch that
#: :func:`sodyn.batch` already splits across every core:
#: ``sodyn.jit(batched, compiler_options=UNPARTITIONED)``.  Whether it helps depends on the
#: model and the function, so it is an option to measure, not a default.
UNPARTITIONED: dict[str, Any] = {
    "xla_disable_hlo_passes": "cpu-parallel-task-assigner",
}


@functools.cache
def _accepts(name: str, value: Any) -> bool:
    """Whether the installed XLA:CPU compiles with ``{name: value}`` (it rejects unknown names)."""
    probe = jax.jit(lambda x: x + 1, compiler_options={name: value})
    try:
        probe.lower(jax.device_put(jnp.zeros((), jnp.float32), jax.devices("cpu")[0])).compile()
    except Exception as err:  # noqa: BLE001 - XLA raises its own error types across versions
        if "compile option" in str(err) or "No such" in str(err):
            return False
        raise
    return True


def supported_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``options`` that the installed XLA:CPU accepts as compile options."""
    return {k: v for k, v in options.items() if _accepts(k, v)}


def accepted_xla_flags(flags: Sequence[str]) -> list[str]:
    """The ``XLA_FLAGS`` entries a new process with this JAX starts with.

    XLA parses ``XLA_FLAGS`` once, when JAX creates its first client, and aborts the process on
    a flag it does not know; so each flag is tried in a child process (for the test suite's and
    the benchmarks' flags, which must be set before JAX starts).
    """
    accepted = []
    for flag in flags:
        env = dict(os.environ, XLA_FLAGS=flag, JAX_PLATFORMS="cpu")
        child = subprocess.run([sys.executable, "-c", "import jax.numpy as j; j.zeros(1).block_until_ready()"],
                               env=env, capture_output=True, timeout=300)
        if child.returncode == 0:
            accepted.append(flag)
    return accepted


#: The same as an ``XLA_FLAGS`` entry, for a process that sets its flags before JAX starts (the
#: test suite's and the benchmarks' own settings).
CLASSIC_EMITTERS_FLAG = "--xla_cpu_use_fusion_emitters=false"

#: Set this environment variable (to anything non-empty) before ``import sodyn`` to keep XLA's
#: defaults for the programs sodyn does not compile itself.
KEEP_XLA_DEFAULTS = "SODYN_KEEP_XLA_DEFAULTS"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(".")[:2] if x.isdigit())


def prefer_classic_emitters() -> bool:
    """The fallback behind plain ``jax.jit``, run once by ``import sodyn``: where the installed
    XLA:CPU still has the classic loop emitters (jaxlib before 0.11), every later CPU compilation
    of the process gets :data:`CLASSIC_EMITTERS` as a compile option.

    :func:`jit` selects those emitters per executable; this gives the programs a user compiles
    with ``jax.jit`` or ``equinox.filter_jit`` the same, whether or not JAX has already run a
    computation.  They generate faster loops for the dynamics functions, while a simulation step
    with contact runs somewhat slower under them: a program that mostly steps may opt out.

    JAX has no public setting for default compile options, so the fallback wraps
    ``jax._src.compiler.get_compile_options`` of those JAX releases, which pass a program's
    options to it; an option the caller gives (``jax.jit(..., compiler_options=...)``) wins.
    It does nothing on jaxlib 0.11 and later (no such option), when ``XLA_FLAGS`` sets the
    option, when the environment variable :data:`KEEP_XLA_DEFAULTS` is set, or when that
    function does not take ``env_options_overrides`` and ``backend``.  Returns whether the
    fallback is in place.
    """
    import inspect

    from jax._src import compiler

    if classic_emitters_in_place():
        return True
    original = compiler.get_compile_options
    if (os.environ.get(KEEP_XLA_DEFAULTS) or _version(jax.lib.__version__) >= (0, 11)
            or "xla_cpu_use_fusion_emitters" in os.environ.get("XLA_FLAGS", "")
            or not {"env_options_overrides", "backend"} <= set(inspect.signature(original).parameters)):
        return False

    @functools.wraps(original)
    def get_compile_options(*args: Any, env_options_overrides: Mapping[str, Any] | None = None,
                            backend: Any = None, **kwargs: Any) -> Any:
        if getattr(backend, "platform", None) == "cpu":
            env_options_overrides = {**CLASSIC_EMITTERS, **(env_options_overrides or {})}
        return original(*args, env_options_overrides=env_options_overrides, backend=backend, **kwargs)

    get_compile_options.__sodyn_classic_emitters__ = True  # type: ignore[attr-defined]
    compiler.get_compile_options = get_compile_options
    return True


def classic_emitters_in_place() -> bool:
    """Whether :func:`prefer_classic_emitters`' fallback is in place in this process."""
    from jax._src import compiler

    return getattr(compiler.get_compile_options, "__sodyn_classic_emitters__", False)


class _Unset:
    """Marks ``fun`` as not given: ``jit(**options)`` returns a decorator, as ``jax.jit`` does."""


_UNSET = _Unset()


def _platform(jit_kwargs: Mapping[str, Any]) -> str:
    """The platform ``jax.jit(**jit_kwargs)`` compiles for: its ``backend``, else its ``device``'s,
    else JAX's default backend."""
    if jit_kwargs.get("backend") is not None:
        return jit_kwargs["backend"]
    if jit_kwargs.get("device") is not None:
        return jit_kwargs["device"].platform
    return jax.default_backend()


def jit(fun: Callable | _Unset = _UNSET, /, *, latency: bool = False, **jit_kwargs: Any) -> Any:
    """``jax.jit(fun, **jit_kwargs)``, compiled with the supported :data:`COMPILER_OPTIONS`.

    A superset of ``jax.jit``: every argument of ``jax.jit`` is accepted and passed on unchanged,
    the result is the object ``jax.jit`` returns (``lower``, ``trace``, ``eval_shape`` included),
    and without ``fun`` it returns a decorator, as ``jax.jit`` does.  The only differences are
    compile options, which change how XLA compiles the traced program, not what it computes
    (beyond floating-point rounding):

    * on the CPU, the supported :data:`COMPILER_OPTIONS`, and with ``latency=True`` also
      :data:`LATENCY_OPTIONS`, for functions called on one sample at a time (a control loop)
      rather than on a batch;
    * a ``compiler_options`` dictionary is merged over both and passed as given.

    When the program compiles for another platform (a GPU: JAX's default backend, or the one that
    ``backend`` or ``device`` names), only the caller's options are passed.  Use it like
    ``jax.jit``, e.g.
    ``sodyn.jit(sodyn.batch(lambda q, v, t: sodyn.forward_dynamics(model, q, v, t)))``.
    """
    if not isinstance(latency, bool):
        raise TypeError(f"sodyn.jit: latency must be True or False, got {latency!r}")
    if isinstance(fun, _Unset):
        return lambda f: jit(f, latency=latency, **jit_kwargs)
    if not callable(fun):
        raise TypeError(f"sodyn.jit expects a callable, got {type(fun).__name__}")
    options: dict[str, Any] = {}
    if _platform(jit_kwargs) == "cpu":
        options = supported_options({**COMPILER_OPTIONS, **(LATENCY_OPTIONS if latency else {})})
    options.update(jit_kwargs.pop("compiler_options", None) or {})
    return jax.jit(fun, compiler_options=options, **jit_kwargs)
