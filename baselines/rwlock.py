"""A small writer-preferring reader-writer lock.

:class:`RWLock` lets any number of readers hold the lock together, or one writer alone.
It is written in plain Python on top of one ``threading.Lock`` and two
``threading.Condition`` objects sharing it, so that its cost can be measured as a primitive
next to ``threading.Lock`` (the experiment harness does so, and the docstring of
:class:`~baselines.locked_trie.LockedTrie` gives the measurements that made it keep the
plain lock).

Policy: writer-preferring. A reader that arrives while a writer holds the lock *or waits for
it* waits, so a steady stream of readers cannot starve a writer; a steady stream of writers
can starve readers. A releasing writer hands the lock to the next waiting writer if there is
one, and otherwise wakes every waiting reader.

The lock is not reentrant: a thread that holds it (either side) and acquires it again
deadlocks, as with ``threading.Lock``. It is not upgradable either.

Thread-safety: every state change happens under the internal mutex, so the lock is correct
on CPython with and without the GIL.
"""

from __future__ import annotations

import threading
from types import TracebackType

__all__ = ["RWLock"]


class RWLock:
    """A writer-preferring reader-writer lock.

    Use the two context managers::

        rw = RWLock()
        with rw.read_lock:   # shared with other readers
            ...
        with rw.write_lock:  # exclusive
            ...

    or the four methods :meth:`acquire_read`, :meth:`release_read`, :meth:`acquire_write`
    and :meth:`release_write`. Uncontended, each acquire and each release is O(1): one
    acquire and release of the internal ``threading.Lock`` plus a few attribute updates.
    """

    __slots__ = (
        "_mutex",
        "_readers_ok",
        "_writers_ok",
        "_readers",
        "_writer",
        "_writers_waiting",
        "read_lock",
        "write_lock",
    )

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._readers_ok = threading.Condition(self._mutex)  # readers wait here
        self._writers_ok = threading.Condition(self._mutex)  # writers wait here
        self._readers = 0  # readers holding the lock
        self._writer = False  # whether a writer holds the lock
        self._writers_waiting = 0  # writers blocked in acquire
        #: Context manager for the shared (read) side.
        self.read_lock = _ReadSide(self)
        #: Context manager for the exclusive (write) side.
        self.write_lock = _WriteSide(self)

    # The mutex is taken with acquire()/try/finally rather than `with`: measurably cheaper
    # on CPython 3.11, and this is the lock's whole cost when uncontended.

    def acquire_read(self) -> None:
        """Block until no writer holds or waits for the lock, then join the readers."""
        mutex = self._mutex
        mutex.acquire()
        try:
            # Writer preference: also wait while a writer is queued.
            while self._writer or self._writers_waiting:
                self._readers_ok.wait()
            self._readers += 1
        finally:
            mutex.release()

    def release_read(self) -> None:
        """Leave the readers; raise ``RuntimeError`` if no reader holds the lock."""
        mutex = self._mutex
        mutex.acquire()
        try:
            if self._readers <= 0:
                raise RuntimeError("release_read of an RWLock that no reader holds")
            self._readers -= 1
            if self._readers == 0 and self._writers_waiting:
                self._writers_ok.notify()
        finally:
            mutex.release()

    def acquire_write(self) -> None:
        """Block until no reader and no writer holds the lock, then hold it alone."""
        mutex = self._mutex
        mutex.acquire()
        try:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._writers_ok.wait()
            except BaseException:
                # Interrupted inside wait(): withdraw, and let in the readers that waited
                # only for this writer, or they would wait for ever.
                self._writers_waiting -= 1
                if not self._writers_waiting and not self._writer:
                    self._readers_ok.notify_all()
                raise
            self._writers_waiting -= 1
            self._writer = True
        finally:
            mutex.release()

    def release_write(self) -> None:
        """Release the exclusive hold; raise ``RuntimeError`` if no writer holds the lock."""
        mutex = self._mutex
        mutex.acquire()
        try:
            if not self._writer:
                raise RuntimeError("release_write of an RWLock that no writer holds")
            self._writer = False
            # Hand over to the next writer, else let every waiting reader in.
            if self._writers_waiting:
                self._writers_ok.notify()
            else:
                self._readers_ok.notify_all()
        finally:
            mutex.release()

    def __repr__(self) -> str:
        # Read without the mutex: a diagnostic snapshot, not a synchronised one.
        return (
            f"<RWLock readers={self._readers} writer={self._writer} "
            f"writers_waiting={self._writers_waiting}>"
        )


class _ReadSide:
    """The shared side of an :class:`RWLock` (``rw.read_lock``)."""

    __slots__ = ("_rw",)

    def __init__(self, rw: RWLock) -> None:
        self._rw = rw

    def __enter__(self) -> None:
        self._rw.acquire_read()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._rw.release_read()


class _WriteSide:
    """The exclusive side of an :class:`RWLock` (``rw.write_lock``)."""

    __slots__ = ("_rw",)

    def __init__(self, rw: RWLock) -> None:
        self._rw = rw

    def __enter__(self) -> None:
        self._rw.acquire_write()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._rw.release_write()
