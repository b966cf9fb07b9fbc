"""Every threshold that picks how a program runs, in one place.

A constant here may choose a chunk size, an unroll factor or which of two equivalent
formulations a program is compiled with; it never changes what is computed beyond floating-point
rounding.  Nothing else lives here: the modules that use a threshold import it from here, so
retuning for another machine touches this file only.
"""

from __future__ import annotations

# -- batching (sodyn.runtime.batching) -------------------------------------------------------

#: Largest chunk :func:`sodyn.batch` picks by itself.  Each chunk runs the whole program once,
#: and XLA:CPU pays a fixed cost per operation of it, which a chunk of a few hundred samples of
#: a small robot's dynamics does not amortize.
MAX_CHUNK = 4096

#: Smallest chunk :func:`sodyn.batch` picks by itself: smaller chunks pay a scan step per few
#: samples.
MIN_CHUNK = 32

#: Per-device batch from which :func:`sodyn.batch` with automatic chunks splits a batch across
#: devices: below it, copying the inputs onto the other devices costs more than it saves.
SPLIT_FROM = 256

#: Bytes of intermediates (:func:`sodyn.runtime.batching.intermediate_bytes`, summed over a
#: chunk's samples) that an automatically sized chunk may hold, calibrated on chunk-size sweeps
#: of forward dynamics and M⁻¹ for small robots and humanoids in float64 and float32: beyond it
#: a chunk's per-level working set leaves the cache.  The sum counts every intermediate as if
#: XLA wrote it out; fusion keeps most of them in registers, so the budget is a calibrated
#: constant, not a cache size.
CHUNK_BYTES = 256 * 2**20

#: Host chunks of :func:`sodyn.simulate.monte_carlo` (``chunk=None``): samples per device on the
#: CPU, where :func:`sodyn.batch` then maps each chunk in cache-sized pieces.
MONTE_CARLO_CPU_CHUNK = 1024

#: On an accelerator, :func:`sodyn.simulate.monte_carlo`'s default chunk is as many samples per
#: device as fit this fraction of the device's memory at the rollout's
#: :func:`~sodyn.runtime.batching.intermediate_bytes` per sample (an overestimate: it counts
#: fused values too): a GPU runs a whole large batch faster in one program than in host chunks.
MONTE_CARLO_MEMORY_FRACTION = 0.25

# -- the sweeps (sodyn.topology, sodyn.sweeps) ----------------------------------------------

#: Upper bound on the number of segments (one ``lax.scan`` each) of a sweep, so program size
#: stays bounded whatever the tree.
MAX_SEGMENTS = 4

#: Cost model for choosing segments, in units of "one hinge slot at one level": a slot of each
#: kernel, the one-hot parent lookup per level of a segment wider than one (∝ W²), and a fixed
#: cost per segment (one more scan: launch overhead and program size).
SEGMENT_SLOT_COST = {"hinge": 6.0, "spherical": 9.0, "planar": 9.0, "free": 12.0}
SEGMENT_PICK_COST = 1.5
SEGMENT_COST = 60.0

#: Dof-ordered results are assembled from per-kernel blocks by slicing and concatenating when
#: dof order is at most this many runs of consecutive slots, by a gather beyond: a few slices
#: cost less than a gather, many slices (and their gradients) more.
DOF_ORDER_MAX_RUNS = 16

# -- the algorithms (sodyn.algorithms) -------------------------------------------------------

#: Levels per scan step of the forward dynamics sweeps (and of the ``𝓜⁻¹ x`` sweeps of its
#: derivative): fewer, longer loop steps pay off over a batch.
FORWARD_UNROLL = 2

#: Up to this many rows, the closed-chain forward dynamics' proximal solve forms the Cholesky
#: factor of ``A + ρI`` and its inverse entry by entry, unrolled (no LAPACK call, which XLA:CPU
#: makes once per sample of a batch; about twice as fast up to 18 rows); larger systems, whose
#: unrolled programs grow as the cube of the rows, call LAPACK.
SMALL_SOLVE = 12

#: Up to this many slots, world velocities are one masked sum over ancestor slots after the
#: poses' sweep (O(W²), no sweep of their own); wider trees carry them in the poses' sweep,
#: where the quadratic sum would cost more than the extra work per level.
MASKED_VELOCITY_SLOTS = 16

#: Above this many multiply-adds per sample, the per-slot block products of ``𝓜⁻¹`` and the
#: dof-pair products that assemble ``𝓜`` are one ``dot_general`` (``jnp.einsum``); below it,
#: one :func:`~sodyn.contraction.contract`, which is faster on small blocks on XLA:CPU while
#: ``dot_general`` wins on large ones.
BLOCK_PRODUCT_MATMUL_SIZE = 2048
