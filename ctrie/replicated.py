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
  sets the flag to *busy*, reads the hint, marks every other replica dirty if the hint is
  past its replica, applies the log up to that hint, then clears the flag unless a mark came
  meanwhile.
- **A thread's first operation** builds its replica from the latest checkpoint (a read-only
  snapshot of some replica at a known entry), registers it for dirty marks, reads the hint,
  marks every other replica dirty and applies the log up to that hint. Every ``checkpoint_every`` entries the
  first replica to apply an entry publishes such a snapshot (O(1), :meth:`CSTrie.
  read_only_snapshot`). A replica holds its place in the log by a weak reference, so the
  log before the latest checkpoint is freed whatever the threads do; a replica whose place
  was freed (its thread was idle for more than ``checkpoint_every`` writes) is rebuilt from
  the checkpoint at its next operation.
- **Subscribers must compare without raising** (``==`` between any two of them, as dict
  keys must): replicas never skip an entry, so a comparison that raises inside a catch-up
  is raised by the operation that met it, and that thread's next operation tries again.
  (A plain :class:`CSTrie` raises such an error to the writer alone; here every thread
  meets the entry. Skipping it instead would let replicas disagree: two replicas may
  store one set differently, and so compare different members.)

Why it is linearizable. Writes are ordered by their entries; a lookup that answers from a
replica holding exactly the entries up to ``e`` is placed after ``e`` and before the entry
that follows it. That order respects real time because:

1. A write completed before a lookup began is in the lookup's replica: the write marked the
   replica dirty after it moved the hint past its entry. Either the flag is still set when
   the lookup reads it (and the lookup applies up to a hint read after that), or an
   earlier catch-up of the same thread took the mark away, and that catch-up read the hint
   after the mark, so it applied the write. (A catch-up sets the flag to busy before it
   reads the hint and ends with a compare-and-set from busy to clean, all sequentially
   consistent atomics: a mark that lands after the busy survives the catch-up.)
2. A lookup that began after another lookup ended holds at least what that one held: an
   operation marks every replica dirty before it applies anything (a write after its
   append, a lookup or a join after it read the hint), so every state a replica or a
   checkpoint reaches was marked for beforehand, and a later lookup catches up to a hint at
   least as far. (A replica rebuilt from a checkpoint reaches a state its publisher marked
   for.)
3. A write that began after a lookup ended is not in that lookup's answer: its entry was
   linked after every hint the lookup read.

An exception inside an operation (a signal handler's, say) leaves the flag dirty, so the
next operation of that thread finishes the catch-up; an entry applied twice that way is
applied at the same place in the log, where both operations are idempotent. Calls made on
the same thread *during* an operation that applies entries (a finalizer run by a garbage
collection there, which would apply entries out of order) raise ``RuntimeError`` instead,
except a lookup of a clean replica, which reads a prefix of the log that every replica has
been marked for. An exception leaves no reference to the log behind it (the frames it
carries drop theirs), so keeping it does not keep the log.

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
- Memory: ``T`` replicas, the last checkpoint, and the log since it (about
  ``checkpoint_every`` entries, each holding its pattern's words and subscriber), whatever the
  threads do between operations. (A thread stopped in the middle of a write keeps the log
  from its place until it goes on, as a CS-trie writer stopped in a GCAS keeps what it
  read.)
- A thread's first operation, and the next operation of a thread idle for more than
  ``checkpoint_every`` writes: O(size) to copy the checkpoint.

A replica belongs to its thread (``threading.local``) and is dropped with it. Thread-safe on
both builds; every method is linearizable.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable
from typing import Any, Generic, Optional, Union

from cereggii import AtomicRef

from ._atomic import read
from .cstrie import _RESTART, CSTrie
from .protocol import S
from .topics import Dialect, DialectLike, pattern_validator, require_hashable

__all__ = ["CHECKPOINT_EVERY", "ReplicatedTrie"]

#: Entries between two checkpoints (see the module docstring).
CHECKPOINT_EVERY = 1024

_SUBSCRIBE, _UNSUBSCRIBE = True, False


class _Entry:
    """One write in the log: ``op`` (True: subscribe) on the pattern's validated ``words``
    and ``subscriber``, its number ``seq``, the link to the next entry, set once by CAS, and
    ``ref``, a weak reference to the entry itself (replicas hold their place by it, without
    making one per replica)."""

    __slots__ = ("seq", "op", "words", "subscriber", "next", "ref", "__weakref__")

    def __init__(self, op: bool, words: list[str], subscriber: Hashable) -> None:
        self.seq = 0
        self.op = op
        self.words = words  # never changed: every replica reads the same list
        self.subscriber = subscriber
        self.next: AtomicRef[Optional[_Entry]] = AtomicRef(None)
        self.ref = weakref.ref(self)


class _Checkpoint:
    """A read-only snapshot of a replica holding exactly the entries up to ``entry``
    (``snap`` is None at the log's head: the empty trie)."""

    __slots__ = ("entry", "snap")

    def __init__(self, entry: _Entry, snap: Optional[CSTrie[Any]]) -> None:
        self.entry, self.snap = entry, snap


# The dirty flag's third value: a catch-up is under way (truthy, so that a lookup made on the
# same thread meanwhile takes the slow path, where ``busy`` refuses it).
_BUSY = "busy"


class _Replica:
    """A thread's own CS-trie and its place in the log: ``at``, a weak reference to the last
    entry applied, and that entry's ``seq``. ``dirty`` is an AtomicRef holding False, True
    or ``_BUSY``; other threads only ever set it to True. ``busy`` (this thread only) says
    that one of its operations is applying entries."""

    __slots__ = ("trie", "at", "seq", "dirty", "busy", "__weakref__")

    def __init__(self, trie: CSTrie[Any], entry: _Entry) -> None:
        self.trie = trie
        self.at = entry.ref
        self.seq = entry.seq
        self.dirty: AtomicRef[Union[bool, str]] = AtomicRef(False)
        self.busy = False


def _reentered() -> RuntimeError:
    return RuntimeError("ReplicatedTrie called on a thread while one of its own operations "
                        "was applying the log (from a finalizer or a signal handler?): refused, "
                        "since it would apply entries out of order")


class ReplicatedTrie(Generic[S]):
    """A subscription trie replicated per thread (see the module docstring for the design,
    its linearizability argument and its costs); generic in the subscriber type, as
    :class:`CSTrie` is.

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
        if type(checkpoint_every) is not int:
            raise TypeError(f"checkpoint_every must be an int, got {checkpoint_every!r}")
        if checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be at least 1, got {checkpoint_every}")
        self.dialect = Dialect.coerce(dialect)
        self._validate_pattern = pattern_validator(self.dialect)
        head = _Entry(_SUBSCRIBE, [], None)
        self._tail = AtomicRef(head)
        self._base = AtomicRef(_Checkpoint(head, None))
        self._local = threading.local()
        # Weak references to every live replica (a tuple, replaced by CAS).
        self._replicas: AtomicRef[tuple[weakref.ref[_Replica], ...]] = AtomicRef(())
        self._every = checkpoint_every

    # --- replicas ---------------------------------------------------------------------------

    def _from_checkpoint(self) -> tuple[CSTrie[Any], _Entry]:
        """A new trie holding the latest checkpoint, and its entry. O(size)."""
        cp = read(self._base)
        trie = CSTrie(self.dialect)
        if cp.snap is not None:
            sub = trie.subscribe
            for pattern, subs in cp.snap.subscriptions().items():
                for s in subs:
                    sub(pattern, s)
        return trie, cp.entry

    def _mine(self) -> _Replica:
        """This thread's replica, made on its first use."""
        try:
            mine: _Replica = self._local.r  # (threading.local's attributes are Any)
            return mine
        except AttributeError:
            pass
        entry: Optional[_Entry]  # (these two are None at the end: see below)
        upto: Optional[_Entry]
        trie, entry = self._from_checkpoint()
        r = _Replica(trie, entry)
        # Register before catching up: a write either sees the registration and marks the
        # replica, or read the list before it, which is after its append, so the catch-up
        # below applies it.
        ref = weakref.ref(r)
        while True:
            regs = read(self._replicas)
            if self._replicas.compare_and_set(regs, (*[w for w in regs if w() is not None],
                                                     ref)):
                break
        r.busy = True
        try:
            upto = read(self._tail)
            self._mark_others(r)  # point 2: before the catch-up applies anything
            self._catch_up(r, entry, upto)
        finally:
            r.busy = False
            entry = upto = None  # a kept exception must not keep the log
        self._local.r = r
        return r

    def _mark_others(self, me: _Replica) -> None:
        """Mark every other live replica dirty."""
        for ref in read(self._replicas):
            r = ref()
            if r is not None and r is not me:
                r.dirty.set(True)

    def _place(self, r: _Replica) -> _Entry:
        """The last entry applied to ``r`` (held strongly by the caller from here on); if it
        was freed (the log moved past it), ``r`` is rebuilt from the latest checkpoint."""
        e = r.at()
        if e is None:
            r.trie, e = self._from_checkpoint()
            r.at, r.seq = e.ref, e.seq
        return e

    def _catch_up(self, r: _Replica, e: _Entry, upto: _Entry) -> object:
        """Apply to ``r``, whose last applied entry is ``e``, the entries up to ``upto``;
        return the last result (None if nothing was applied). Only ``r``'s thread calls
        it, with ``r.busy`` set. An exception leaves ``r`` at the last entry applied."""
        trie = r.trie
        # The entries were validated by their writers: apply them as CSTrie.subscribe and
        # CSTrie.unsubscribe do after validating.
        insert, remove, root = trie._insert, trie._remove, trie._read_root
        target = upto.seq
        res: object = None
        every = self._every
        try:
            while e.seq < target:
                # (Linked: every entry before the last, ``upto`` or later, has a next.)
                e = e.next.get()  # type: ignore[assignment]
                # An exception before the place is updated re-applies e at the next
                # operation: at the same place in the log, where both are idempotent.
                if e.op:
                    while insert(root(), e.words, e.subscriber) is _RESTART:
                        pass
                    res = None
                else:
                    while (res := remove(root(), e.words, e.subscriber)) is _RESTART:
                        pass
                r.at, r.seq = e.ref, e.seq
                if e.seq % every == 0:
                    self._checkpoint(r, e)
        finally:
            del e, upto  # a kept exception must not keep the log
        return res

    def _checkpoint(self, r: _Replica, e: _Entry) -> None:
        """Publish a snapshot of ``r`` (which holds exactly the entries up to ``e``) unless a
        checkpoint at or after ``e`` exists."""
        cp = read(self._base)
        if cp.entry.seq >= e.seq:
            return
        self._base.compare_and_set(cp, _Checkpoint(e, r.trie.read_only_snapshot()))

    def _refresh(self) -> _Replica:
        """This thread's replica, caught up if it was marked dirty."""
        try:
            r: _Replica = self._local.r
        except AttributeError:
            return self._mine()
        if r.dirty.get():
            if r.busy:
                raise _reentered()
            r.busy = True
            r.dirty.set(_BUSY)  # before the hint is read: a mark after this survives
            upto: Optional[_Entry]  # (None at the end: see below)
            try:
                upto = read(self._tail)
                if upto.seq > r.seq:
                    # Point 2: mark before anything new can be seen (a rebuild reaches a
                    # state its checkpoint's publisher marked for).
                    self._mark_others(r)
                    self._catch_up(r, self._place(r), upto)
            except BaseException:
                r.dirty.set(True)  # the next operation finishes the catch-up and the marks
                raise
            finally:
                r.busy = False
                upto = None  # a kept exception must not keep the log
            r.dirty.compare_and_set(_BUSY, False)  # unless a mark came meanwhile
        return r

    # --- writes -----------------------------------------------------------------------------

    def _append(self, e: _Entry) -> _Entry:
        """Link ``e`` after the last entry (its linearization point), then move the hint up
        to it. Lock-free: a failed CAS means another append succeeded."""
        t = read(self._tail)
        while True:
            nxt = t.next.get()
            if nxt is None:
                e.seq = t.seq + 1  # e is not visible yet: a plain write
                if t.next.compare_and_set(None, e):
                    break
                continue
            t = nxt
        while True:  # move the hint up to e, unless someone moved it past
            h = read(self._tail)
            if h.seq >= e.seq or self._tail.compare_and_set(h, e):
                return e

    def _write(self, op: bool, words: list[str], subscriber: Hashable) -> object:
        r = self._mine()
        if r.busy:
            raise _reentered()
        r.busy = True  # from here: a call made on this thread meanwhile is refused
        start: Optional[_Entry]  # (these two are None at the end: see below)
        e: Optional[_Entry]
        try:
            # Held: the log from here stays until this write is applied.
            start = self._place(r)
            e = self._append(_Entry(op, words, subscriber))
            self._mark_others(r)
            # The entries before e, then e itself: the last result is e's.
            return self._catch_up(r, start, e)
        except BaseException:
            # Not caught up to the log (maybe not to e): the next lookup of this thread
            # catches up first.
            r.dirty.set(True)
            raise
        finally:
            r.busy = False
            start = e = None  # a kept exception must not keep the log

    def subscribe(self, pattern: str, subscriber: S) -> None:
        """Add ``subscriber`` to ``pattern`` (idempotent). Raises ``TypeError`` /
        :class:`~ctrie.InvalidTopicError` on bad input, before anything is logged."""
        words = self._validate_pattern(pattern)
        require_hashable(subscriber)
        self._write(_SUBSCRIBE, words, subscriber)

    def unsubscribe(self, pattern: str, subscriber: S) -> bool:
        """Remove ``subscriber`` from ``pattern``; True if the pair was present."""
        words = self._validate_pattern(pattern)
        require_hashable(subscriber)
        return bool(self._write(_UNSUBSCRIBE, words, subscriber))

    # --- reads ------------------------------------------------------------------------------

    def lookup(self, topic: str) -> frozenset[S]:
        """Every subscriber of every pattern matching the literal ``topic``, once each."""
        try:
            r: _Replica = self._local.r
        except AttributeError:
            r = self._mine()
        else:
            if r.dirty.get():
                r = self._refresh()
        return r.trie.lookup(topic)

    def subscriptions(self) -> dict[str, frozenset[S]]:
        """Pattern -> subscribers, as of one instant. O(size)."""
        return self._refresh().trie.subscriptions()

    def __len__(self) -> int:
        """Number of stored (pattern, subscriber) pairs, as of one instant."""
        return len(self._refresh().trie)

    def check(self) -> None:
        """Raise AssertionError if this thread's replica or the log is malformed. Call it
        when no operation runs (a write landing meanwhile may move the hint past the end
        this check read)."""
        r = self._refresh()
        r.trie.check()
        e = self._place(r)
        seq = e.seq
        assert seq == r.seq, f"the replica is at {r.seq}, its entry says {seq}"
        while True:
            nxt = e.next.get()
            if nxt is None:
                break
            assert nxt.seq == seq + 1, f"log entry {nxt.seq} follows {seq}"
            e, seq = nxt, nxt.seq
        assert read(self._tail).seq <= seq, "the tail hint is past the last entry"

    def __repr__(self) -> str:
        return f"ReplicatedTrie(dialect={self.dialect.value!r}, log at {read(self._tail).seq})"

    def __getstate__(self) -> Any:
        raise TypeError("a ReplicatedTrie cannot be pickled: copy its subscriptions() instead")
