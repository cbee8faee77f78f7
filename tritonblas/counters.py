"""The dispatcher's counters (``tritonblas.dispatch.stats()``): one table, written by the modules that
launch, route or fall back, and read by tests and benchmarks to prove where a call went.

Counting costs ~80 ns a call on the CPU host (a ``defaultdict``'s ``+=``; a ``Counter``'s costs twice
that), so the hot paths write :data:`COUNTS` directly.
"""

from __future__ import annotations

from collections import defaultdict

__all__ = ["COUNTS", "NAMES", "count", "count_all", "stats", "reset"]

# the counters stats() reports, in its order (a name missing from COUNTS reads 0)
NAMES = ("launches", "plans", "empty", "fallbacks", "routed", "table_hits", "intercepted", "fast_hits", "ws",
         "triton_launches", "vendor")
COUNTS: defaultdict = defaultdict(int)


def count(name: str, n: int = 1) -> None:
    """Add ``n`` to the counter ``name``."""
    COUNTS[name] += n


def count_all(names: tuple) -> None:
    """Add one to each counter in ``names``."""
    for name in names:
        COUNTS[name] += 1


def stats() -> dict[str, int]:
    """Every counter of :data:`NAMES` since the last :func:`reset` (their meanings:
    ``tritonblas.dispatch.stats``)."""
    return {k: COUNTS.get(k, 0) for k in NAMES}


def reset() -> None:
    COUNTS.clear()
