"""How sodyn's programs run, kept apart from what they compute.

Nothing here changes a result beyond floating-point rounding; each module tunes one thing:

* :mod:`~sodyn.runtime.xla`: :func:`jit`, ``jax.jit`` plus XLA:CPU compile options;
* :mod:`~sodyn.runtime.batching`: :func:`batch`, a function mapped over a batch in
  cache-sized chunks and split across devices;
* :mod:`~sodyn.runtime.devices`: :func:`use_cpu_cores`, one JAX CPU device per core;
* :mod:`~sodyn.runtime.clock`: :class:`~sodyn.runtime.clock.CompileClock`, the time JAX spends
  compiling (``sodyn.monte_carlo`` reports it);
* :mod:`~sodyn.runtime.allocator`: :func:`reuse_freed_memory`, glibc's ``malloc`` keeping large
  freed buffers (or the ``MALLOC_*`` environment variables it documents);
* :mod:`~sodyn.runtime.trig`: ``sincos``, sine and cosine that XLA:CPU vectorises;
* :mod:`~sodyn.runtime.precision`: ``full_precision``, matrix products at ``Precision.HIGHEST``
  (no TensorFloat-32 on GPUs);
* :mod:`~sodyn.runtime.tuning`: every threshold that picks how a program runs.

``jit``, ``batch`` and ``use_cpu_cores`` are also ``sodyn.jit``, ``sodyn.batch`` and
``sodyn.use_cpu_cores``.
"""

from sodyn.runtime.allocator import reuse_freed_memory
from sodyn.runtime.batching import batch
from sodyn.runtime.devices import use_cpu_cores
from sodyn.runtime.xla import jit

__all__ = ["batch", "jit", "reuse_freed_memory", "use_cpu_cores"]
