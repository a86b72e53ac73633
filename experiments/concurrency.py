"""Concurrent experiments: ``scaling`` (first article) and ``lockfree`` (second article).

A *round* builds a fresh matcher, prepares it untimed, starts every worker thread at one
``threading.Barrier`` and waits for all of them; its figure is the wall time from the
first worker leaving the barrier to the last one finishing (each worker stamps its own
start and end). A worker that raises makes the cell ``failed`` with the error; a round that
does not finish within ``ROUND_TIMEOUT`` seconds too.

``scaling``: every worker runs the same ``ops`` operations over the items
``f"{j % 10}.{j % 50}.{j}"`` with subscriber ``"abc"`` on a matcher populated with the
random 5-word hot subscriptions; workloads ``50/50``, ``90/10-faithful`` (the original's
per-worker split) and ``90/10-true`` (each operation a write with probability 0.1); the
real write share is recorded. Unit: operations per second (``params.wall_s`` holds the
round times).

``lockfree``: no pre-population; insert workers each subscribe the ``ops`` items (worker
``w`` as subscriber ``ins<w>``, so every insert stores a new pair), lookup workers each look
the ``ops`` items up; insert:lookup ratios 1:1 and 1:3 at growing worker counts. Unit:
seconds for the whole round (lower is better), as in the article.

paho's ``MQTTMatcher`` is not thread-safe: it is measured at one thread in ``scaling``
(MQTT form), and recorded as skipped elsewhere.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Hashable
from time import perf_counter
from typing import Any

from . import registry, workloads
from .env import Run
from .progress import bar

__all__ = ["run_lockfree", "run_scaling", "timed_round"]

#: Seconds a round may take before it is declared hung.
ROUND_TIMEOUT = 600.0
#: Largest worker count of the lockfree experiment (the articles went to 16).
MAX_WORKERS = 16
SCALING_WORKLOADS = ("50/50", "90/10-faithful", "90/10-true")
HOT_WORDS = 5


class _Worker(threading.Thread):
    """Runs its operations after the barrier; keeps its exception for the caller."""

    def __init__(self, barrier: threading.Barrier, ops: list[tuple[bool, str]],
                 sub: Callable, look: Callable, subscriber: Hashable) -> None:
        super().__init__(daemon=True)
        self.barrier, self.ops, self.sub, self.look = barrier, ops, sub, look
        self.subscriber = subscriber
        self.start_t = self.end_t = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        sub, look, who = self.sub, self.look, self.subscriber
        try:
            self.barrier.wait()
            self.start_t = perf_counter()
            for write, item in self.ops:
                if write:
                    sub(item, who)
                else:
                    look(item)
            self.end_t = perf_counter()
        except BaseException as exc:  # re-raised by timed_round
            self.error = exc
            self.barrier.abort()


def timed_round(matcher: Any, plans: list[tuple[list[tuple[bool, str]], Hashable]]) -> float:
    """Run one round: one thread per ``(ops, subscriber)`` plan; return the wall time."""
    barrier = threading.Barrier(len(plans))
    workers = [_Worker(barrier, ops, matcher.subscribe, matcher.lookup, who)
               for ops, who in plans]
    gc.collect()
    for w in workers:
        w.start()
    for w in workers:
        w.join(ROUND_TIMEOUT)
        if w.is_alive():
            raise TimeoutError(f"a worker did not finish within {ROUND_TIMEOUT:.0f} s")
    errors = [w.error for w in workers if w.error is not None]
    if errors:
        # The first worker to fail aborts the barrier; report its error, not the others'.
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)),
                   errors[0])
    return max(w.end_t for w in workers) - min(w.start_t for w in workers)


def _form(dialect: str) -> Callable[[str], str]:
    return workloads.to_mqtt if dialect == "mqtt" else (lambda s: s)


def _spread(values: list[float]) -> dict[str, float]:
    v = sorted(values)
    return {"median": v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2,
            "min": v[0], "max": v[-1]}


def run_scaling(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record operations per second per (algorithm, workload, threads)."""
    size = run.size
    ops = size.scaling_ops
    items_nats = workloads.scaling_items(ops)
    hot_nats = workloads.hot_population(run.seed, size.scaling_population, HOT_WORDS)
    cells = [(a, wl, n) for a in algorithms for wl in SCALING_WORKLOADS
             for n in size.scaling_threads]
    with bar(len(cells) * size.scaling_rounds, "scaling") as progress:
        for algorithm, workload, n in cells:
            progress.set_postfix_str(f"{algorithm} {workload} x{n}")
            dialect = "mqtt" if algorithm == "paho" else "nats"
            form = _form(dialect)
            items = [form(i) for i in items_nats]
            hot = [form(p) for p in hot_nats]
            plans = [workloads.scaling_plan(workload, w, ops, run.seed) for w in range(n)]
            writes = sum(sum(p) for p in plans)
            params: dict[str, Any] = {
                "ops_per_worker": ops, "total_ops": n * ops, "writes": writes,
                "write_share": writes / (n * ops), "population": len(hot),
                "population_words": HOT_WORDS, "subscriber": workloads.SCALING_SUBSCRIBER,
            }
            if algorithm == "inverted_bitmap":
                params["topic_space"] = "all items + the hot population"
            if algorithm == "optimized_bitmap":
                params["max_words"] = HOT_WORDS
            why = registry.unavailable(algorithm)
            if not why and n > 1 and not registry.thread_safe(algorithm):
                why = "not thread-safe: measured at one thread only"
            if why:
                run.record("scaling", algorithm, dialect, workload, params, threads=n,
                           unit="ops/s", status="skipped", note=why)
                progress.update(size.scaling_rounds)
                continue
            thread_plans = [(list(zip(p, items)), workloads.SCALING_SUBSCRIBER) for p in plans]
            walls: list[float] = []
            try:
                for _ in range(size.scaling_rounds):
                    m = registry.make(algorithm, dialect, topic_space=[*items, *hot],
                                      max_words=HOT_WORDS)
                    refused = registry.populate(m, hot, [f"h{i}" for i in range(len(hot))])
                    params["refused_patterns"] = refused
                    walls.append(timed_round(m, thread_plans))
                    progress.update(1)
            except Exception as exc:
                run.record("scaling", algorithm, dialect, workload, params, threads=n,
                           unit="ops/s", values=[n * ops / w for w in walls], status="failed",
                           note=f"{type(exc).__name__}: {exc}")
                progress.write(f"  scaling {algorithm} {workload} x{n}: FAILED {exc!r}")
                progress.update(size.scaling_rounds - len(walls))
                continue
            params["wall_s"] = _spread(walls)
            params["wall_s_values"] = walls
            run.record("scaling", algorithm, dialect, workload, params, threads=n,
                       unit="ops/s", values=[n * ops / w for w in walls])


def lockfree_configs(groups: tuple[int, ...]) -> list[tuple[str, int, int]]:
    """``(ratio, inserters, lookers)`` for each group count, at most ``MAX_WORKERS`` threads."""
    out = []
    for ratio, lookers_per in (("1:1", 1), ("1:3", 3)):
        for g in groups:
            if g * (1 + lookers_per) <= MAX_WORKERS:
                out.append((ratio, g, g * lookers_per))
    return out


def run_lockfree(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record the wall time of insert:lookup rounds per (algorithm, ratio, workers)."""
    size = run.size
    ops = size.lockfree_ops
    items = workloads.scaling_items(ops)
    configs = lockfree_configs(size.lockfree_groups)
    cells = [(a, c) for a in algorithms for c in configs]
    with bar(len(cells) * size.lockfree_rounds, "lockfree") as progress:
        for algorithm, (ratio, inserters, lookers) in cells:
            n = inserters + lookers
            progress.set_postfix_str(f"{algorithm} {ratio} x{n}")
            dialect = "mqtt" if algorithm == "paho" else "nats"
            form = _form(dialect)
            its = [form(i) for i in items]
            params: dict[str, Any] = {
                "inserters": inserters, "lookers": lookers, "ops_per_worker": ops,
                "total_ops": n * ops, "write_share": inserters / n, "population": 0,
            }
            if algorithm == "inverted_bitmap":
                params["topic_space"] = "all items"
            if algorithm == "optimized_bitmap":
                params["max_words"] = 3
            why = registry.unavailable(algorithm)
            if not why and not registry.thread_safe(algorithm):
                why = "not thread-safe: the comparison needs concurrent inserts and lookups"
            if why:
                run.record("lockfree", algorithm, dialect, ratio, params, threads=n, unit="s",
                           status="skipped", note=why)
                progress.update(size.lockfree_rounds)
                continue
            plans = [([(True, i) for i in its], f"ins{w}") for w in range(inserters)]
            plans += [([(False, i) for i in its], "-") for _ in range(lookers)]
            walls: list[float] = []
            try:
                for _ in range(size.lockfree_rounds):
                    m = registry.make(algorithm, dialect, topic_space=its, max_words=3)
                    walls.append(timed_round(m, plans))
                    # Every insert stored a new pair: a lost update would show here.
                    if len(m) != inserters * ops:
                        raise AssertionError(f"after the round len(matcher) = {len(m)}, "
                                             f"expected {inserters * ops} pairs")
                    expect = frozenset(f"ins{w}" for w in range(inserters))
                    got = m.lookup(its[-1])
                    if got != expect:
                        raise AssertionError(
                            f"after the round lookup({its[-1]!r}) = {sorted(got)}, "
                            f"expected {sorted(expect)}")
                    progress.update(1)
            except Exception as exc:
                run.record("lockfree", algorithm, dialect, ratio, params, threads=n, unit="s",
                           values=walls, status="failed", note=f"{type(exc).__name__}: {exc}")
                progress.write(f"  lockfree {algorithm} {ratio} x{n}: FAILED {exc!r}")
                progress.update(size.lockfree_rounds - len(walls))
                continue
            params["ops_per_s_median"] = n * ops / _spread(walls)["median"]
            run.record("lockfree", algorithm, dialect, ratio, params, threads=n, unit="s",
                       values=walls)
