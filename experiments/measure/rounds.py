"""Timed concurrent rounds: what ``scaling``, ``lockfree``, ``contention`` and ``sharing``
share.

A *round* builds a fresh matcher, prepares it untimed, starts every worker thread at one
``threading.Barrier`` and waits for all of them; its figure is the wall time from the
first worker leaving the barrier to the last one finishing (each worker stamps its own
start and end). A worker that raises makes the cell ``failed`` with the error; a round that
does not finish within ``ROUND_TIMEOUT`` seconds too.

Every round also yields the CPU time its workers used; :func:`store_cpu` turns it into the
CPU time per operation (``params.cpu_per_op_us``) and the parallelism actually obtained
(``params.parallelism`` = CPU time / wall time): a throughput that does not scale is
contention when CPU per operation rises, and scheduling when parallelism stays below the
thread count while CPU per operation does not. A matcher with a result cache also records
the share of the round's lookups it answered from it (:func:`add_hit_share`,
``params.cache_hit_rate``, median over rounds).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from time import perf_counter, thread_time
from typing import Any, NamedTuple

from .. import registry, workloads

__all__ = ["HOT_WORDS", "ROUND_TIMEOUT", "Round", "add_hit_share", "dialect_form", "populated",
           "spread", "store_cpu", "timed_round"]

#: Seconds a round may take before it is declared hung.
ROUND_TIMEOUT = 600.0
HOT_WORDS = 5


class _Worker(threading.Thread):
    """Runs its operations after the barrier; keeps its exception for the caller."""

    def __init__(self, barrier: threading.Barrier, ops: list[tuple[bool, str]],
                 matcher: Any, subscriber: Hashable, warm: bool,
                 build: Callable[[], Any] | None = None,
                 ready: threading.Barrier | None = None) -> None:
        super().__init__(daemon=True)
        self.barrier, self.ops, self.matcher = barrier, ops, matcher
        self.subscriber, self.warm, self.build, self.ready = subscriber, warm, build, ready
        self.start_t = self.end_t = 0.0
        self.cpu_s = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        who = self.subscriber
        try:
            if self.build is not None:
                self.matcher = self.build()  # untimed, before the barrier: this thread owns it
            sub, look = self.matcher.subscribe, self.matcher.lookup
            if self.warm:
                first = next((item for write, item in self.ops if not write), None)
                if first is not None:
                    look(first)
            if self.ready is not None:
                self.ready.wait()  # built (and warm): the caller collects, then starts the clock
            self.barrier.wait()
            # The CPU-time interval nests inside the wall-time one, so that CPU / wall cannot
            # exceed the thread count by the cost of the clock reads (it did, in short rounds).
            self.start_t = perf_counter()
            cpu0 = thread_time()
            for write, item in self.ops:
                if write:
                    sub(item, who)
                else:
                    look(item)
            self.cpu_s = thread_time() - cpu0
            self.end_t = perf_counter()
        except BaseException as exc:  # re-raised by timed_round
            self.error = exc
            self.barrier.abort()
            if self.ready is not None:
                self.ready.abort()


class Round(NamedTuple):
    """What one round measured: its wall time and the CPU time its workers used.

    ``cpu_s`` sums each worker's ``time.thread_time`` over its operations. ``cpu_s / wall_s``
    is the parallelism the round actually got: on 2 cores it cannot exceed 2, and it falls
    below the thread count when the machine has no free core to give (scheduling). CPU time
    per operation rising with the thread count is contention (cache lines, locks, reference
    counts); separating the two is why both are recorded.
    """

    wall_s: float
    cpu_s: float


def timed_round(matcher: Any, plans: Sequence[tuple[list[tuple[bool, str]], Hashable]], *,
                per_thread: list[Any] | None = None, warm: bool = False,
                build: Callable[[], Any] | None = None) -> Round:
    """Run one round: one thread per ``(ops, subscriber)`` plan; return wall and CPU time.

    Every thread works on ``matcher``, unless ``per_thread`` gives each plan its own, or
    ``build`` makes each thread build its own, untimed, before the barrier (``matcher`` is
    then unused): one matcher per thread that nothing else touches, the limit of the same
    code on this machine (issue 19). The garbage of those builds is collected once they are
    all built, before the clock starts, as the main thread's is for a shared matcher. With
    ``warm``, each thread first looks up the first topic of its plan, untimed, before the
    barrier: a matcher's per-thread state (a ``ReplicatedTrie`` replica) is then made before
    timing, as a long-lived broker thread makes it once.
    """
    n = len(plans)
    # With ``build``, the caller also waits at the start barrier: after ``ready`` (every
    # matcher built) it collects, and only then lets the workers go.
    ready = threading.Barrier(n + 1) if build is not None else None
    barrier = threading.Barrier(n + 1 if build is not None else n)
    targets = per_thread if per_thread is not None else [matcher] * n
    workers = [_Worker(barrier, ops, m, who, warm, build, ready)
               for (ops, who), m in zip(plans, targets, strict=True)]
    gc.collect()
    # One deadline for the whole round: builds, warm-ups and operations together.
    deadline = perf_counter() + ROUND_TIMEOUT
    timed_out = False
    for w in workers:
        w.start()
    try:
        if ready is not None:
            try:
                ready.wait(max(deadline - perf_counter(), 0.0))
                gc.collect()
                barrier.wait(max(deadline - perf_counter(), 0.0))
            except threading.BrokenBarrierError:
                # A worker failed (it sets its error before breaking the barriers; raised
                # below), or this wait timed out, which broke the barrier for every worker.
                timed_out = not any(w.error is not None and not isinstance(
                    w.error, threading.BrokenBarrierError) for w in workers)
        for w in workers:
            w.join(max(deadline - perf_counter(), 0.0))
            if w.is_alive():
                raise TimeoutError(f"a worker did not finish within {ROUND_TIMEOUT:g} s "
                                   "(building, warming up and running its operations)")
    finally:
        if ready is not None:  # leaving early (an interrupt): release every waiting worker
            ready.abort()
            barrier.abort()
    errors = [w.error for w in workers if w.error is not None]
    if timed_out and all(isinstance(e, threading.BrokenBarrierError) for e in errors):
        raise TimeoutError(f"the workers did not build and warm their matchers within "
                           f"{ROUND_TIMEOUT:g} s")
    if errors:
        # The first worker to fail aborts the barrier; report its error, not the others'.
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)),
                   errors[0])
    return Round(max(w.end_t for w in workers) - min(w.start_t for w in workers),
                 sum(w.cpu_s for w in workers))


def dialect_form(dialect: str) -> Callable[[str], str]:
    return workloads.to_mqtt if dialect == "mqtt" else (lambda s: s)


def spread(values: list[float]) -> dict[str, float]:
    v = sorted(values)
    return {"median": v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2,
            "min": v[0], "max": v[-1]}


def add_hit_share(out: list[float], readings: Iterable[tuple[Any, int | None]],
                  lookups: int) -> None:
    """Append the share of a round's ``lookups`` that the result caches answered, from the
    ``(matcher, computed lookups before the round)`` of every matcher the round used (one,
    or one per thread); nothing for matchers without a cache (registry.computed_lookups)."""
    walked = 0
    for matcher, before in readings:
        after = registry.computed_lookups(matcher)
        if before is None or after is None:
            return
        walked += after - before
    if lookups > 0:
        out.append(registry.cache_hit_share(walked, lookups))


def populated(algorithm: str, dialect: str, items: list[str],
               hot: list[str]) -> tuple[Any, int]:
    """A fresh ``algorithm`` matcher holding the hot population (untimed preparation), and
    how many of the patterns it refused."""
    m = registry.make(algorithm, dialect, topic_space=[*items, *hot], max_words=HOT_WORDS)
    return m, registry.populate(m, hot, [f"h{i}" for i in range(len(hot))])


def store_cpu(params: dict[str, Any], walls: list[float], cpus: list[float],
                total_ops: int) -> None:
    """Store the rounds' wall and CPU times, CPU per operation and parallelism in ``params``."""
    params["wall_s"] = spread(walls)
    params["wall_s_values"] = walls
    params["cpu_s_values"] = cpus
    params["cpu_per_op_us"] = spread([c / total_ops * 1e6 for c in cpus])
    params["parallelism"] = spread([c / w for c, w in zip(cpus, walls) if w > 0])
