"""The ``primitives`` experiment's timed loops: the cost of the atomic and locking
primitives the matchers are built on (cereggii's ``AtomicRef``, ``threading.Lock``, the
baselines' RWLock, and the ``atomics`` package, measured here only: about 5 us per
operation and no free-threaded build, so it stays out of every hot path).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from time import perf_counter

from .bench import Bench, TimeFunc

__all__ = ["PRIMITIVES", "atomics_unavailable", "primitive_benches"]


def _loop_overhead() -> TimeFunc:
    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            pass
        return perf_counter() - t0
    return f


def _atomicref_get() -> TimeFunc:
    from cereggii import AtomicRef

    get = AtomicRef(object()).get

    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            get()
        return perf_counter() - t0
    return f


def _atomicref_cas_success() -> TimeFunc:
    from cereggii import AtomicRef

    a, b = object(), object()
    cas = AtomicRef(a).compare_and_set

    def f(loops: int) -> float:  # two successful CASes per loop (inner_loops=2)
        t0 = perf_counter()
        for _ in repeat(None, loops):
            cas(a, b)
            cas(b, a)
        return perf_counter() - t0
    return f


def _atomicref_cas_failure() -> TimeFunc:
    from cereggii import AtomicRef

    a, b = object(), object()
    cas = AtomicRef(a).compare_and_set

    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            cas(b, b)
        return perf_counter() - t0
    return f


def _lock_acquire_release() -> TimeFunc:
    import threading

    lock = threading.Lock()
    acquire, release = lock.acquire, lock.release

    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            acquire()
            release()
        return perf_counter() - t0
    return f


def _rwlock(side: str) -> Callable[[], TimeFunc]:
    def setup() -> TimeFunc:
        from baselines.rwlock import RWLock

        rw = RWLock()
        if side == "read":
            acquire, release = rw.acquire_read, rw.release_read
        else:
            acquire, release = rw.acquire_write, rw.release_write

        def f(loops: int) -> float:
            t0 = perf_counter()
            for _ in repeat(None, loops):
                acquire()
                release()
            return perf_counter() - t0
        return f
    return setup


def atomics_unavailable() -> str | None:
    """Why the ``atomics`` package cannot be used here, or None."""
    try:
        import atomics

        a = atomics.atomic(width=8, atype=atomics.INT)
        a.load()
    except Exception as exc:  # ImportError, or a build that imports but cannot run
        return f"not available: {type(exc).__name__}: {exc}"
    return None


def _atomics_load() -> TimeFunc:
    import atomics

    load = atomics.atomic(width=8, atype=atomics.INT).load

    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            load()
        return perf_counter() - t0
    return f


def _atomics_cas() -> TimeFunc:
    import atomics

    cas = atomics.atomic(width=8, atype=atomics.INT).cmpxchg_strong

    def f(loops: int) -> float:  # two successful compare-exchanges per loop
        t0 = perf_counter()
        for _ in repeat(None, loops):
            cas(0, 1)
            cas(1, 0)
        return perf_counter() - t0
    return f


#: The primitive benchmarks, in the order tables and figures list them.
PRIMITIVES = ("loop_overhead", "atomicref_get", "atomicref_cas_success",
              "atomicref_cas_failure", "lock_acquire_release", "rwlock_read", "rwlock_write",
              "atomics_load", "atomics_cas")


def primitive_benches() -> list[Bench]:
    """The primitive benchmarks: each times one operation (or one acquire+release pair)."""
    atomics_skip = atomics_unavailable()
    return [
        Bench("loop_overhead", _loop_overhead, params={"op": "empty loop iteration"}),
        Bench("atomicref_get", _atomicref_get, params={"op": "cereggii.AtomicRef.get"}),
        Bench("atomicref_cas_success", _atomicref_cas_success, inner_loops=2,
              params={"op": "cereggii.AtomicRef.compare_and_set, succeeding"}),
        Bench("atomicref_cas_failure", _atomicref_cas_failure,
              params={"op": "cereggii.AtomicRef.compare_and_set, failing"}),
        Bench("lock_acquire_release", _lock_acquire_release,
              params={"op": "threading.Lock acquire+release, uncontended"}),
        Bench("rwlock_read", _rwlock("read"),
              params={"op": "baselines.rwlock.RWLock acquire_read+release_read"}),
        Bench("rwlock_write", _rwlock("write"),
              params={"op": "baselines.rwlock.RWLock acquire_write+release_write"}),
        Bench("atomics_load", _atomics_load, params={"op": "atomics int load"},
              skip=atomics_skip),
        Bench("atomics_cas", _atomics_cas, inner_loops=2,
              params={"op": "atomics int cmpxchg_strong, succeeding"}, skip=atomics_skip),
    ]
