"""ReplicatedTrie: one CS-trie per thread, kept current from a shared log of writes.

Why. On free-threaded CPython every read of a shared object writes its reference count, an
atomic on a cache line that the other cores then have to fetch back; in 3.13 a
``__slots__`` read of a value made by another thread may also lock the holder. A lookup in
a shared trie reads a dozen shared objects, so two threads looking up in one CS-trie run at
about 0.6x the rate of two threads with a trie each (``python -m experiments sharing``),
with no re-walk and no lost CAS to blame. Node replication (Calciu et al., ASPLOS 2017)
turns those reads into an owner's reads: each thread looks up in a replica only it reads,
and writes reach every replica through a shared, append-only log.

How.

- **The log** is a singly linked list of :class:`_Entry` (one write each, numbered ``seq``)
  whose links are ``AtomicRef``\\ s set once by compare-and-swap (Michael and Scott's queue
  without dequeue). ``_tail`` is a hint: an entry at or before the last, only ever moved
  forward.
- **A write** appends its entry (the CAS that links it is its linearization point), moves
  the hint up to its entry, marks every other thread's replica *dirty*, then brings its own
  replica up to its entry and answers from it: ``unsubscribe`` returns what applying its
  entry to a replica holding exactly the entries before it returned.
- **A lookup** reads its replica's dirty flag. Clean: it answers from the replica. Dirty: it
  clears the flag, applies the log up to the hint it reads next, and, if that applied
  anything, marks every other replica dirty before it answers.
- **A thread's first operation** builds its replica from the latest checkpoint (a read-only
  snapshot of some replica at a known entry), registers it for dirty marks, applies the log
  from there and marks every other replica dirty. Every ``checkpoint_every`` entries the
  first replica to apply an entry publishes such a snapshot (O(1), :meth:`CSTrie.
  read_only_snapshot`), so the log before it can be collected.

Why it is linearizable. Writes are ordered by their entries; a lookup that answers from a
replica holding exactly the entries up to ``e`` is placed after ``e`` and before the entry
that follows it. That order respects real time because:

1. A write completed before a lookup began is in the lookup's replica: the write marked the
   replica dirty after it moved the hint past its entry. Either the flag is still set when
   the lookup reads it (and the lookup applies up to a hint read after it cleared the flag),
   or an earlier catch-up of the same thread cleared it, and that catch-up read the hint
   after the mark, so it applied the write. (The flag is cleared before the hint is read,
   both with sequentially consistent atomics: a mark after the clear survives it.)
2. A lookup that began after another lookup ended holds at least what that one held: an
   operation that applies an entry marks every replica dirty before it returns (a write
   before it applies anything, a lookup or a join after), so a later lookup catches up to a
   hint at least as far.
3. A write that began after a lookup ended is not in that lookup's answer: its entry was
   linked after every hint the lookup read.

Progress. Appending and moving the hint are CAS loops in which a failure means another
thread succeeded (lock-free); marking replicas is bounded by the number of threads; a
catch-up is bounded by the hint it read, so a lookup does bounded work however fast others
write. No lock is taken.

Costs, with ``T`` the threads that have used the trie:

- ``lookup``: a CS-trie lookup on the thread's own replica, plus one flag read; when dirty,
  the writes since its last catch-up (each a CS-trie write) and ``T`` marks.
- ``subscribe`` / ``unsubscribe``: one append, ``T`` marks, and the CS-trie write on the own
  replica; every other replica pays the same CS-trie write once, at its next operation. So
  writes cost about ``T`` times a CS-trie write in all: replication trades write work for
  reads that share nothing.
- Memory: ``T`` replicas plus the log since the oldest replica's position and the last
  checkpoint (at most ``checkpoint_every`` entries while every thread keeps up).
- A thread's first operation: O(size) to copy the checkpoint.

A replica belongs to its thread (``threading.local``) and is dropped with it. Thread-safe on
both builds; every method is linearizable.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable
from typing import Any, Optional

from cereggii import AtomicRef

from .cstrie import CSTrie
from .topics import Dialect, DialectLike, pattern_validator, require_hashable

__all__ = ["CHECKPOINT_EVERY", "ReplicatedTrie"]

#: Entries between two checkpoints (see the module docstring).
CHECKPOINT_EVERY = 1024

_SUBSCRIBE, _UNSUBSCRIBE = True, False


class _Entry:
    """One write in the log: ``op`` (True: subscribe) on (pattern, subscriber), its number
    ``seq``, and the link to the next entry, set once by CAS."""

    __slots__ = ("seq", "op", "pattern", "subscriber", "next")

    def __init__(self, op: bool, pattern: Optional[str], subscriber: Hashable) -> None:
        self.seq = 0
        self.op = op
        self.pattern = pattern
        self.subscriber = subscriber
        self.next: AtomicRef = AtomicRef(None)


class _Checkpoint:
    """A read-only snapshot of a replica holding exactly the entries up to ``entry``
    (``snap`` is None at the log's head: the empty trie)."""

    __slots__ = ("entry", "snap")

    def __init__(self, entry: _Entry, snap: Optional[CSTrie]) -> None:
        self.entry, self.snap = entry, snap


class _Replica:
    """A thread's own CS-trie, the last entry applied to it, and its dirty flag (an
    AtomicRef holding True or False; other threads only ever set it)."""

    __slots__ = ("trie", "pos", "dirty", "__weakref__")

    def __init__(self, trie: CSTrie, pos: _Entry) -> None:
        self.trie, self.pos = trie, pos
        self.dirty: AtomicRef = AtomicRef(False)


class ReplicatedTrie:
    """A subscription trie replicated per thread (see the module docstring for the design,
    its linearizability argument and its costs).

    Answers the Matcher protocol like :class:`CSTrie`, for every dialect; reads share no
    object between threads, writes cost one CS-trie write per thread that uses the trie.

    >>> t = ReplicatedTrie()
    >>> t.subscribe("stock.*.ibm", "alice")
    >>> t.subscribe("stock.>", "bob")
    >>> sorted(t.lookup("stock.nyse.ibm"))
    ['alice', 'bob']
    >>> t.unsubscribe("stock.>", "bob"), t.unsubscribe("stock.>", "bob")
    (True, False)
    """

    __slots__ = ("dialect", "_validate_pattern", "_tail", "_base", "_local", "_replicas",
                 "_every")

    def __init__(self, dialect: DialectLike = Dialect.NATS, *,
                 checkpoint_every: int = CHECKPOINT_EVERY) -> None:
        if type(checkpoint_every) is not int or checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be a positive int, got {checkpoint_every!r}")
        self.dialect = Dialect.coerce(dialect)
        self._validate_pattern = pattern_validator(self.dialect)
        head = _Entry(_SUBSCRIBE, None, None)
        self._tail = AtomicRef(head)
        self._base = AtomicRef(_Checkpoint(head, None))
        self._local = threading.local()
        # Weak references to every live replica (a tuple, replaced by CAS).
        self._replicas = AtomicRef(())
        self._every = checkpoint_every

    # --- replicas ---------------------------------------------------------------------------

    def _mine(self) -> _Replica:
        """This thread's replica, made on its first use."""
        try:
            return self._local.r
        except AttributeError:
            pass
        cp = self._base.get()
        trie = CSTrie(self.dialect)
        if cp.snap is not None:
            sub = trie.subscribe
            for pattern, subs in cp.snap.subscriptions().items():
                for s in subs:
                    sub(pattern, s)
        r = _Replica(trie, cp.entry)
        # Register before catching up: a write either sees the registration and marks the
        # replica, or registered... after it read the list, which is after its append, so
        # the catch-up below applies it.
        ref = weakref.ref(r)
        while True:
            regs = self._replicas.get()
            if self._replicas.compare_and_set(regs, (*[w for w in regs if w() is not None],
                                                     ref)):
                break
        self._catch_up(r, self._tail.get())
        # What this replica holds from the checkpoint may not have been marked everywhere
        # yet (the publisher marks after its catch-up ends): mark (point 2).
        self._mark_others(r)
        self._local.r = r
        return r

    def _mark_others(self, me: _Replica) -> None:
        """Mark every other live replica dirty."""
        for ref in self._replicas.get():
            r = ref()
            if r is not None and r is not me:
                r.dirty.set(True)

    def _catch_up(self, r: _Replica, upto: _Entry) -> object:
        """Apply to ``r`` the entries after its position up to ``upto``; return the last
        result (None if nothing was applied). Only ``r``'s thread calls it."""
        trie = r.trie
        e = r.pos
        target = upto.seq
        res: object = None
        every = self._every
        while e.seq < target:
            e = e.next.get()
            # Both operations are idempotent, so an entry applied twice (after an exception
            # between the apply and the position update) leaves the same state.
            if e.op:
                res = trie.subscribe(e.pattern, e.subscriber)
            else:
                res = trie.unsubscribe(e.pattern, e.subscriber)
            r.pos = e
            if e.seq % every == 0:
                self._checkpoint(r, e)
        return res

    def _checkpoint(self, r: _Replica, e: _Entry) -> None:
        """Publish a snapshot of ``r`` (which holds exactly the entries up to ``e``) unless a
        checkpoint at or after ``e`` exists."""
        cp = self._base.get()
        if cp.entry.seq >= e.seq:
            return
        self._base.compare_and_set(cp, _Checkpoint(e, r.trie.read_only_snapshot()))

    def _refresh(self) -> _Replica:
        """This thread's replica, caught up if it was marked dirty."""
        try:
            r = self._local.r
        except AttributeError:
            return self._mine()
        if r.dirty.get():
            r.dirty.set(False)  # before the hint is read: a mark after this survives
            before = r.pos
            self._catch_up(r, self._tail.get())
            if r.pos is not before:
                self._mark_others(r)  # point 2: before answering
        return r

    # --- writes -----------------------------------------------------------------------------

    def _write(self, op: bool, pattern: str, subscriber: Hashable) -> object:
        r = self._mine()
        e = _Entry(op, pattern, subscriber)
        t = self._tail.get()
        while True:  # append: link e after the last entry
            nxt = t.next.get()
            if nxt is None:
                e.seq = t.seq + 1  # e is not visible yet: a plain write
                if t.next.compare_and_set(None, e):
                    break
                continue
            t = nxt
        while True:  # move the hint up to e, unless someone moved it past
            h = self._tail.get()
            if h.seq >= e.seq or self._tail.compare_and_set(h, e):
                break
        self._mark_others(r)
        # The entries before e, then e itself: the last result is e's.
        return self._catch_up(r, e)

    def subscribe(self, pattern: str, subscriber: Hashable) -> None:
        """Add ``subscriber`` to ``pattern`` (idempotent). Raises ``TypeError`` /
        :class:`~ctrie.InvalidTopicError` on bad input, before anything is logged."""
        self._validate_pattern(pattern)
        require_hashable(subscriber)
        self._write(_SUBSCRIBE, pattern, subscriber)

    def unsubscribe(self, pattern: str, subscriber: Hashable) -> bool:
        """Remove ``subscriber`` from ``pattern``; True if the pair was present."""
        self._validate_pattern(pattern)
        require_hashable(subscriber)
        return bool(self._write(_UNSUBSCRIBE, pattern, subscriber))

    # --- reads ------------------------------------------------------------------------------

    def lookup(self, topic: str) -> frozenset:
        """Every subscriber of every pattern matching the literal ``topic``, once each."""
        try:
            r = self._local.r
        except AttributeError:
            r = self._mine()
        else:
            if r.dirty.get():
                r = self._refresh()
        return r.trie.lookup(topic)

    def subscriptions(self) -> dict[str, frozenset]:
        """Pattern -> subscribers, as of one instant. O(size)."""
        return self._refresh().trie.subscriptions()

    def __len__(self) -> int:
        """Number of stored (pattern, subscriber) pairs, as of one instant."""
        return len(self._refresh().trie)

    def check(self) -> None:
        """Raise AssertionError if this thread's replica or the log is malformed."""
        r = self._refresh()
        r.trie.check()
        e, seq = r.pos, r.pos.seq
        while True:
            nxt = e.next.get()
            if nxt is None:
                break
            assert nxt.seq == seq + 1, f"log entry {nxt.seq} follows {seq}"
            e, seq = nxt, nxt.seq
        assert self._tail.get().seq <= seq, "the tail hint is past the last entry"

    def __repr__(self) -> str:
        return f"ReplicatedTrie(dialect={self.dialect.value!r}, log at {self._tail.get().seq})"

    def __getstate__(self) -> Any:
        raise TypeError("a ReplicatedTrie cannot be pickled: copy its subscriptions() instead")
