"""A lock-free, linearizable result cache for the CS-trie (``CSTrie(cache=True)``).

It answers a lookup of a topic seen before without walking the trie, as NATS's sublist cache
does, bounded the same way (``max_entries``, swept to ``sweep_to`` of the newest valid
entries), and takes no lock.

The protocol. The cache keys its entries by the trie's content version
(:mod:`ctrie.size`), ``state = version * WINDOWS + open``: every content-changing write
opens a window before its new node can be seen and closes it, moving the version on, after
its commit, so no two instants with different contents share a ``state`` whose ``open``
is 0.

- **A hit** (in ``ctrie.cstrie._CachedCSTrie.lookup``, the whole of a hit's cost, so not
  behind another call) reads ``state`` first, then the entry of the topic: an entry
  ``(s, result)`` with ``s == state`` answers ``result``. It linearizes at the read of ``state``: no window
  was open then (``s`` has none), so every commit so far had moved the version and the
  content was that of version ``s``, which is what ``result`` holds.
- **A miss** reads ``state`` (``s0``), walks the trie, reads ``state`` again, and stores
  ``(s0, result)`` only if nothing changed and no window was open: then the content was
  constant through the walk, and ``result`` is the content of version ``s0``. A write that
  commits between the second read and the store leaves an entry whose ``s0`` is old: never
  served.

The two naive designs fail exactly here: bumping a version after the commit lets a hit
serve the old set after the write took effect (another reader saw it), and storing what a
walk found under the version read after it can publish a set some write had already
replaced. Tests drive both windows through the fault hook.

A snapshot and its origin each have their own cache and counter, so neither serves the
other's answers. A writer that dies inside its window leaves it open: the cache then misses
for good (every lookup walks), slower but never wrong.

Only plain ``str`` topics are cached: a key compares and hashes as its own type says, so a
``str`` subclass could answer for another topic (or another type for a topic); those
lookups always walk, and the walk validates them.

Storage: a plain ``dict`` probed with ``in`` and ``[]`` (on free-threaded 3.13 ``dict.get``
of a topic string the reader made costs 100x, see ``ctrie/_ftdict.py``), replaced whole when
it is swept; entries lost to a concurrent sweep are only misses. Costs: a hit is one atomic
load and one dict probe, O(len(topic)) to hash the topic; a miss adds two atomic loads and a
store; a sweep is O(max_entries), once per ``max_entries - sweep_to`` stores. Memory is
bounded by ``max_entries`` entries plus what concurrent stores add during one sweep; each
entry holds its topic and its answer, so a stale entry keeps the subscribers it names (an
unsubscribed one too) until it is overwritten or swept.
"""

from __future__ import annotations

from typing import Any

from cereggii import AtomicInt64

from .size import WINDOWS

__all__ = ["CACHE_MAX_ENTRIES", "CACHE_SWEEP_TO", "ResultCache"]

#: NATS's defaults: at most 1,024 entries, swept to 256.
CACHE_MAX_ENTRIES = 1024
CACHE_SWEEP_TO = 256


class ResultCache:
    """Topic -> (state, result) under the content version ``state`` of one trie (the
    trie's own counter, :mod:`ctrie.size`). Thread-safe; see the module docstring for
    the protocol and its costs."""

    __slots__ = ("state", "entries", "max_entries", "sweep_to", "misses")

    def __init__(self, state: AtomicInt64, max_entries: int = CACHE_MAX_ENTRIES,
                 sweep_to: int = CACHE_SWEEP_TO) -> None:
        for name, value in (("cache_max", max_entries), ("cache_sweep_to", sweep_to)):
            if type(value) is not int:
                raise TypeError(f"{name} must be an int, got {value!r}")
        if max_entries < 1 or not 0 <= sweep_to < max_entries:
            raise ValueError(f"need cache_max >= 1 and 0 <= cache_sweep_to < cache_max (a "
                             f"sweep must make room), got cache_max={max_entries}, "
                             f"cache_sweep_to={sweep_to}")
        self.state = state  # the trie's: version * WINDOWS + open windows
        self.entries: dict[str, tuple[int, frozenset[Any]]] = {}
        self.max_entries = max_entries
        self.sweep_to = sweep_to
        # Lookups that missed (walked): the hit rate is 1 - misses / lookups.
        self.misses = AtomicInt64(0)

    def store(self, topic: str, s0: int, result: frozenset[Any]) -> None:
        """Keep ``result`` for the plain ``str`` ``topic``, walked between two reads of the
        state, the first ``s0``. The entry moves to the end: a sweep keeps the newest."""
        if s0 % WINDOWS or self.state.get() != s0:
            return  # a write was inside its window during the walk: not the content of s0
        d = self.entries
        d.pop(topic, None)
        d[topic] = (s0, result)
        if len(d) > self.max_entries:
            self._sweep(d)

    def _sweep(self, d: dict[str, tuple[int, frozenset[Any]]]) -> None:
        """Replace the entries by the newest ``sweep_to`` still valid ones."""
        s = self.state.get()
        # Iterate a copy, made in one C step: iterating ``d`` itself allocates a tuple per
        # entry, and on 3.11 a garbage collection there can run a finalizer, switch
        # threads, and let another store change ``d`` (RuntimeError out of lookup).
        keep = [kv for kv in d.copy().items() if kv[1][0] == s]
        self.entries = dict(keep[len(keep) - self.sweep_to:] if self.sweep_to else ())

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        version, open_windows = divmod(self.state.get(), WINDOWS)
        return (f"<ResultCache {len(self.entries)}/{self.max_entries} entries, version "
                f"{version}, {open_windows} open, {self.misses.get()} misses>")

