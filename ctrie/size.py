"""The CS-trie's size without a snapshot, and its content version: counters with windows.

A bare counter bumped after each commit is not linearizable: between a commit and its bump,
a lookup can already see the new pair while ``len()`` still reads the old count, a size that
no instant had once the lookup has returned. So every write that changes the number of
stored pairs runs a *window* around its GCAS (:func:`ctrie.gcas.GCAS`), and one atomic
integer holds both the count and the number of open windows:
``state = pairs * WINDOWS + open``, with ``0 <= open < WINDOWS``.

1. ``state += 1``: the window opens, before the new main node can be seen by anyone;
2. the GCAS; its commit (by the writer or by a helper) happens before GCAS returns;
3. ``state += delta * WINDOWS - 1`` if it committed, else ``state -= 1``: the count and the
   closing of the window in one atomic step.

A read (:meth:`SizeCounter.read`) is one atomic load of ``state``, valid when ``open == 0``.
Every write's commit lies inside its window, so with no window open at the instant of the
load, every commit so far has been counted and every count came from a commit: ``pairs`` was
the number of stored pairs (less the base) at that instant, and the read linearizes there.
``open`` never reaches ``WINDOWS`` (2**20: more threads than can be inside a GCAS at once),
so the two fields never mix; Python's ``divmod`` decodes a negative ``pairs`` too (a writable
snapshot that removes pairs of its frozen start).

A read fails while some window is open; ``len()`` retries a few times and then falls back to
counting a read-only snapshot, so a writer parked inside its window (or a steady stream of
writes) can delay it but never makes it wrong or stuck.

``base`` is the number of pairs of the frozen main node a writable snapshot started from
(its I-nodes all belong to an older generation, so no GCAS ever changes them); it is counted
once, on the first ``len()`` that needs it, which keeps ``snapshot()`` O(1). Until then the
snapshot holds that frozen main node (and so the nodes below it) even if its own writes have
replaced them all.

**The content version** of a writable trie (``CSTrie._version``), kept by the same GCAS
beside the size: ``state = version * WINDOWS + open``, with the same field width. A writer
whose GCAS changes the stored pairs (``delta != 0`` in :func:`ctrie.gcas.GCAS`: every
subscribe or unsubscribe that changes something, and only those) adds 1 before its new
node can be seen by anyone and, once the GCAS has settled, ``WINDOWS - 1`` in one atomic
step if it committed (the version moves on and the window closes), or -1 if it did not (the
-1 only undoes its own +1). Every commit lies inside its window, and a commit moves the
version up for good, so:

    if two reads of ``state`` return the same value ``s`` and ``s % WINDOWS == 0``, no
    content-changing write committed between them: the trie stored the same pairs
    throughout.

(Between the two reads a commit would need a window opened after the first read, which
moves ``state`` up for good.) A GCAS that only moves pairs (an S-node's expansion, a split,
a contraction, a snapshot's renewal) runs no window: it leaves the stored pairs as they were.

Two readers rely on it:

- the result cache (:mod:`ctrie.cache`): an entry stored under ``s`` answers only while
  ``state`` still reads ``s``;
- a lookup's *unrecorded* walk (:meth:`ctrie.CSTrie.lookup`): a walk between two equal,
  window-free reads of ``state`` found the pairs stored throughout, so it needs none of the
  per-I-node records and re-reads of the recorded walk's validation.

A writer that dies inside its window leaves it open: both readers then take their slower
path for good (the cache misses, lookups record), never a wrong one. Costs: two atomic adds
per content-changing write, one atomic load per read.
"""

from __future__ import annotations

from typing import Optional

from cereggii import AtomicInt64

from .nodes import Main

__all__ = ["SizeCounter", "WINDOWS"]


WINDOWS = 1 << 20  # the ``state`` field width of the open windows


class SizeCounter:
    """Counts a writable trie's pairs; see the module docstring for the protocol.

    Thread-safety: writers update ``state`` with atomic adds from any number of threads and
    :meth:`read` is one atomic load; each is O(1)."""

    __slots__ = ("state", "base", "frozen")

    def __init__(self, frozen: Optional[Main] = None) -> None:
        self.state = AtomicInt64(0)  # pairs * WINDOWS + open windows
        # The pairs of ``frozen`` (None: nothing, base 0), counted on demand by the trie.
        self.frozen = frozen
        self.base: Optional[int] = 0 if frozen is None else None

    def read(self) -> Optional[int]:
        """The pairs counted, as of an instant at which no write was inside its window, or
        None when a window was open (then the caller retries)."""
        pairs, open_windows = divmod(self.state.get(), WINDOWS)
        return None if open_windows else pairs

    def __repr__(self) -> str:
        pairs, open_windows = divmod(self.state.get(), WINDOWS)
        return f"<SizeCounter pairs={pairs} open={open_windows} base={self.base}>"
