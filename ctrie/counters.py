"""Event counters: how often CS-trie operations redo work (for the contention experiments).

A lock-free structure loses throughput under sharing in ways a timer cannot tell apart: a
lookup whose validation failed walks again, a write whose GCAS lost retries, and both look
like "slower operations". :class:`Counters`, installed with :func:`counting`, counts them:

- ``"rewalk"``: a lookup (any dialect) walked the trie again: its validation failed, or it
  met a snapshot's RDCSS in progress, or a restart;
- ``"frozen"``: a lookup gave up on validated walks and walked a frozen root instead (not
  also counted as a ``"rewalk"``);
- ``"revalidate"``: a lookup re-read the I-nodes its walk had recorded, found one that
  had moved, and looked at what changed (which may repair the result without a new walk,
  or end in a ``"rewalk"``);
- ``"gcas_fail"``: a GCAS that did not commit (the I-node changed first, or a snapshot
  intervened);
- ``"write_retry"``: a subscribe or unsubscribe that started again from the root.

Every counting site is on a path the common case does not take (a failed check, a lost
CAS), and with no counters installed it costs one global load and an ``is None`` test: the
hot paths are unchanged. Counts are exact on both builds (each event is one
``AtomicInt64`` increment). Install counters before the threads under measurement start;
:func:`counting` is not meant to be entered by two threads at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cereggii import AtomicInt64

__all__ = ["EVENTS", "Counters", "counting", "installed"]

EVENTS = ("rewalk", "frozen", "revalidate", "gcas_fail", "write_retry")


class Counters:
    """One atomic count per event of :data:`EVENTS`; call it with an event name to count
    one. Thread-safe; O(1) per event."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts = {e: AtomicInt64(0) for e in EVENTS}

    def __call__(self, event: str) -> None:
        self._counts[event].increment_and_get(1)

    def snapshot(self) -> dict[str, int]:
        """The counts so far, by event."""
        return {e: c.get() for e, c in self._counts.items()}


def installed() -> Counters | None:
    """The counters in force, or None."""
    from . import cstrie

    return cstrie._count


@contextmanager
def counting(counters: Counters | None = None) -> Iterator[Counters]:
    """Count events in every CS-trie while the block runs; yields the :class:`Counters`
    (a fresh one unless given). The previous counters, if any, are put back on exit."""
    from . import cstrie, gcas

    c = Counters() if counters is None else counters
    before = (cstrie._count, gcas._count)
    cstrie._count = gcas._count = c
    try:
        yield c
    finally:
        cstrie._count, gcas._count = before
