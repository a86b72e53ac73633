"""The CS-trie's size without a snapshot: a counter whose reads are linearizable.

A bare counter bumped after each write's GCAS commit is not linearizable: between a commit
and its bump, a lookup can already see the new pair while ``len()`` still reads the old
count, a size that no instant had once the lookup has returned. So every write that changes
the number of stored pairs runs a *window* around its GCAS (:func:`ctrie.gcas.GCAS`):

1. ``enters += 1``, before the new main node can be seen by anyone;
2. the GCAS; its commit (by the writer or by a helper) happens before GCAS returns;
3. ``pairs += delta`` if it committed;
4. ``exits += 1``.

Each write's commit and bump both lie inside its window. A read (:meth:`SizeCounter.read`)
takes ``x = exits``, then ``e = enters``, then ``n = pairs``, then ``enters`` again, and
is valid only if ``x == e`` and the second ``enters`` is still ``e``. Then no window was
open while ``n`` was read: ``enters >= exits`` at every instant (a write enters before it
exits) and both only grow, so at the first read ``enters`` was at least ``x`` and at most
``e == x``, i.e. every window opened so far had closed; and since ``enters`` did not move
until the last read, no window opened after. With no window open, every commit so far was
counted and every count came from a commit, so ``n`` was the number of pairs (less the
base) at the instant it was read: the read linearizes there.

A read fails while some window is open; ``len()`` retries a few times and then falls back to
counting a read-only snapshot, so a writer parked inside its window (or a steady stream of
writes) can delay it but never makes it wrong or stuck.

``base`` is the number of pairs of the frozen main node a writable snapshot started from
(its I-nodes all belong to an older generation, so no GCAS ever changes them); it is counted
once, on the first ``len()`` that needs it, which keeps ``snapshot()`` O(1).
"""

from __future__ import annotations

from typing import Optional

from cereggii import AtomicInt64

from .nodes import MainNode

__all__ = ["SizeCounter"]


class SizeCounter:
    """Counts a writable trie's pairs; see the module docstring for the protocol.

    Thread-safety: ``enter``/``leave`` may run in any number of threads at once, and so may
    ``read``; each is a few atomic operations, O(1)."""

    __slots__ = ("enters", "exits", "pairs", "base", "frozen")

    def __init__(self, frozen: Optional[MainNode] = None) -> None:
        self.enters = AtomicInt64(0)
        self.exits = AtomicInt64(0)
        self.pairs = AtomicInt64(0)  # committed pairs added less pairs removed
        # The pairs of ``frozen`` (None: nothing, base 0), counted on demand by the trie.
        self.frozen = frozen
        self.base: Optional[int] = 0 if frozen is None else None

    def read(self) -> Optional[int]:
        """``pairs`` as of one instant at which no write was inside its window, or None
        when a window may have been open (then the caller retries)."""
        x = self.exits.get()
        e = self.enters.get()
        if e != x:
            return None
        n = self.pairs.get()
        if self.enters.get() != e:
            return None
        return n

    def __repr__(self) -> str:
        return (f"<SizeCounter pairs={self.pairs.get()} enters={self.enters.get()} "
                f"exits={self.exits.get()} base={self.base}>")
