"""Running test workers: started together at a barrier, bounded in time, and re-raising.

``run_threads(workers, timeout)`` calls each ``worker(k)`` in its own thread once all are
ready, waits at most ``timeout`` seconds for all of them, and raises the first exception a
worker raised (a worker that hangs is a failure with a message, never a stuck CI run).
``switch_interval(s)`` sets ``sys.setswitchinterval`` for a block and restores it, so that
on the GIL build threads are interleaved as finely as the interpreter allows.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence


def run_threads(workers: Sequence[Callable[[int], object]], timeout: float = 60.0) -> list:
    """Run ``workers[k](k)`` concurrently, started at one barrier; return their results."""
    n = len(workers)
    barrier = threading.Barrier(n)
    results: list = [None] * n
    errors: list = [None] * n

    def body(k: int) -> None:
        try:
            barrier.wait(timeout)
            results[k] = workers[k](k)
        except BaseException as exc:  # re-raised in the caller
            errors[k] = exc
            barrier.abort()

    threads = [threading.Thread(target=body, args=(k,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [k for k, t in enumerate(threads) if t.is_alive()]
    if stuck:
        raise AssertionError(f"workers {stuck} still running after {timeout} s")
    for exc in errors:
        if exc is not None and not isinstance(exc, threading.BrokenBarrierError):
            raise exc
    for exc in errors:
        if exc is not None:
            raise exc
    return results


@contextlib.contextmanager
def switch_interval(seconds: float) -> Iterator[None]:
    """Set ``sys.setswitchinterval`` for the block (it matters with the GIL only)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def gil_enabled() -> bool:
    """True on a build with the GIL, or when the GIL was re-enabled at run time."""
    return getattr(sys, "_is_gil_enabled", lambda: True)()
