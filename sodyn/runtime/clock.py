"""How long JAX spends compiling: :class:`CompileClock`, the wall time of its tracing,
lowering and compiling spans (JAX's ``jax.monitoring`` events) while the clock is open.

:func:`sodyn.monte_carlo` uses it to split a run's wall time into compile time and run time
(``MonteCarloResult.compile_seconds``, ``.seconds``), as ``sodyn simulate`` prints them.
"""

from __future__ import annotations

import jax

#: The ``jax.monitoring`` duration events counted as compile time.
COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")


class CompileClock:
    """A context manager that records JAX's compile spans: ``with CompileClock() as clock: ...``
    then ``clock.seconds()`` is the wall time covered by at least one span (overlapping and
    nested spans count once).  Spans from other threads of the process count too."""

    def __init__(self):
        self.spans: list[tuple[float, float]] = []

    def __call__(self, event, start, end, **_):
        if event in COMPILE_EVENTS:
            self.spans.append((start, end))

    def __enter__(self) -> "CompileClock":
        jax.monitoring.register_event_time_span_listener(self)
        return self

    def __exit__(self, *exc) -> None:
        jax.monitoring.unregister_event_time_span_listener(self)

    def seconds(self) -> float:
        """Seconds covered by the union of the recorded spans."""
        total, reach = 0.0, float("-inf")
        for start, end in sorted(self.spans):
            if end > reach:
                total += end - max(start, reach)
                reach = end
        return total


__all__ = ["COMPILE_EVENTS", "CompileClock"]
