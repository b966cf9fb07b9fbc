"""Static gathers and sums into static slots: moved to :mod:`sodyn.static_index` (the
algorithms use them too); re-exported here for the simulation modules."""

from sodyn.static_index import spread_sum, take

__all__ = ["spread_sum", "take"]
