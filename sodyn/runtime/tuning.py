"""Every threshold that picks how a program runs, in one place.

A constant here may choose a chunk size, an unroll factor or which of two equivalent
formulations a program is compiled with; it never changes what is computed beyond floating-point
rounding.  Nothing else lives here: the modules that use a threshold import it from here, so
retuning for another machine touches this file only.
"""

from __future__ import annotations

# -- batching (sodyn.runtime.batching) -------------------------------------------------------

#: Largest chunk :func:`sodyn.batch` picks by itself, and the per-device batch from which it
#: splits a batch across devices when it picks the chunk size.  Larger chunks gain nothing:
#: their per-level working set no longer stays in cache.
MAX_CHUNK = 256

#: Smallest chunk :func:`sodyn.batch` picks by itself: smaller chunks pay a scan step per few
#: samples.
MIN_CHUNK = 32

#: Bytes of intermediates (:func:`sodyn.runtime.batching.intermediate_bytes`, summed over a
#: chunk's samples) that an automatically sized chunk may hold, calibrated on chunk-size sweeps
#: of forward dynamics, M⁻¹, M and inverse dynamics for small robots, humanoids and long chains.
#: The sum counts every intermediate as if XLA wrote it out; fusion keeps most of them in
#: registers, so the budget is a calibrated constant, not a cache size.
CHUNK_BYTES = 96 * 2**20
