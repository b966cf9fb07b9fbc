"""``sodyn.jit``: ``jax.jit`` plus the XLA:CPU compile options that suit sodyn's programs.

sodyn is fast under plain ``jax.jit`` and ``equinox.filter_jit``: its small products are
:func:`~sodyn.contraction.contract` primitives, which compile to loops that XLA's default CPU
pipeline keeps for itself.  :func:`jit` adds, for one executable and only on the CPU, the
options that still help some programs there:

* ``xla_cpu_experimental_ynn_fusion_type=""``: no YNNPACK library fusions, which is what
  XLA:CPU makes of large plain-add reductions elsewhere in the program (a loss, say).

XLA rejects a compile option it does not know, and its set of options changes between
releases, so :func:`supported_options` tries each candidate once per process on a trivial
program and :func:`jit` passes only those the installed XLA accepts.  Compile options belong
to one executable: unlike ``XLA_FLAGS`` they leave the rest of the process alone, and nothing
in sodyn sets a process-wide option.

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

#: Candidate options :func:`jit` adds on the CPU (those the installed XLA knows).
COMPILER_OPTIONS: dict[str, Any] = {"xla_cpu_experimental_ynn_fusion_type": ""}

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
