"""A CAS-granular scheduler: deterministic interleavings driven through the fault hook.

Every thread spawned on a :class:`StepScheduler` parks at each CAS site of the trie (the
hook of :mod:`ctrie.faults`, called before and after every CAS) and runs on only when the
test says so. One *step* runs one thread from the site where it is parked to the next site
it reaches, or to its end; only one spawned thread runs at a time, so a schedule is a
sequence of steps and replays exactly, on either build.

    with StepScheduler() as sched:
        sched.spawn("S", trie.read_only_snapshot)
        sched.step("S")                        # S runs to its first CAS site
        sched.run_until("S", lambda: ...)      # steps S until the predicate holds
        sched.finish()                         # steps everyone in turn until all have ended

A thread's ``trace`` lists the ``(site, phase)`` pairs it has reached, its ``at`` the last
one. Every wait is bounded (``timeout`` seconds per step, ``max_steps`` per loop): a thread
that never comes back is a failure with a message, never a hang. On leaving the ``with``
block the hook is removed and every thread left parked runs free to its end. Threads not
spawned here pass the hook untouched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Optional

from ctrie import faults


class _Thread:
    __slots__ = ("name", "thread", "go", "trace", "done", "result", "error")

    def __init__(self, name: str) -> None:
        self.name = name
        self.thread: Optional[threading.Thread] = None
        self.go = threading.Semaphore(0)
        self.trace: list[tuple[str, str]] = []
        self.done = False
        self.result: Any = None
        self.error: Optional[BaseException] = None


class StepScheduler:
    """Runs spawned threads one CAS site at a time (see the module docstring)."""

    def __init__(self, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self.steps = 0
        self._threads: dict[str, _Thread] = {}
        self._by_ident: dict[int, _Thread] = {}
        self._back = threading.Semaphore(0)  # released when the running thread parks or ends
        self._free = False

    def __enter__(self) -> StepScheduler:
        faults.set_fault_hook(self._hook)
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(raise_errors=exc_type is None)

    # --- the hook, in the spawned threads -------------------------------------------------

    def _hook(self, site: str, phase: str) -> None:
        me = threading.get_ident()
        t = self._by_ident[me] if me in self._by_ident else None
        if t is None or self._free:
            return None
        t.trace.append((site, phase))
        self._back.release()
        if not t.go.acquire(timeout=self.timeout):
            raise AssertionError(f"{t.name} parked at {site}/{phase} and never resumed")
        return None

    # --- the driver, in the test's thread --------------------------------------------------

    def spawn(self, name: str, fn: Callable[[], Any]) -> None:
        """Start ``fn`` in a thread called ``name``, parked until its first step."""
        t = _Thread(name)

        def body() -> None:
            self._by_ident[threading.get_ident()] = t
            try:
                if not t.go.acquire(timeout=self.timeout):
                    raise AssertionError(f"{name} was never started")
                t.result = fn()
            except BaseException as exc:  # re-raised by the driver
                t.error = exc
            finally:
                t.done = True
                self._back.release()

        t.thread = threading.Thread(target=body, name=name, daemon=True)
        self._threads[name] = t
        t.thread.start()

    def __getitem__(self, name: str) -> _Thread:
        return self._threads[name]

    def at(self, name: str) -> Optional[tuple[str, str]]:
        """The CAS site where ``name`` is parked (None before its first step or once done)."""
        t = self._threads[name]
        return None if t.done or not t.trace else t.trace[-1]

    def step(self, name: str) -> Optional[tuple[str, str]]:
        """Run ``name`` to its next CAS site (returned) or to its end (None)."""
        t = self._threads[name]
        assert not t.done, f"{name} has already ended"
        self.steps += 1
        t.go.release()
        if not self._back.acquire(timeout=self.timeout):
            raise AssertionError(f"{name} reached no CAS site and did not end in {self.timeout} s")
        if t.error is not None:
            raise t.error
        return self.at(name)

    def run_until(self, name: str, pred: Callable[[], bool], max_steps: int = 50) -> bool:
        """Step ``name`` until ``pred()`` holds (True) or the thread ends (False)."""
        for _ in range(max_steps):
            if self.step(name) is None:
                return False
            if pred():
                return True
        raise AssertionError(f"{name}: no state satisfying {pred} within {max_steps} steps "
                             f"(parked at {self.at(name)})")

    def finish(self, max_steps: int = 500) -> None:
        """Step every live thread in turn, in spawn order, until all have ended."""
        for _ in range(max_steps):
            live = [n for n, t in self._threads.items() if not t.done]
            if not live:
                return
            for n in live:
                self.step(n)
        live = {n: t.trace[-4:] for n, t in self._threads.items() if not t.done}
        raise AssertionError(f"still running after {max_steps} rounds of steps: {live}")

    def close(self, raise_errors: bool = True) -> None:
        """Let every thread still parked run free to its end; remove the hook; re-raise the
        first exception a thread raised (unless ``raise_errors`` is False)."""
        self._free = True
        for t in self._threads.values():
            t.go.release()
        stuck = []
        for t in self._threads.values():
            assert t.thread is not None
            t.thread.join(self.timeout)
            if t.thread.is_alive():
                stuck.append(t.name)
        faults.set_fault_hook(None)
        if stuck:
            raise AssertionError(f"threads {stuck} still running {self.timeout} s after release")
        for t in self._threads.values():
            if raise_errors and t.error is not None:
                raise t.error
