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

A matcher with a result cache also records the share of the round's lookups it answered from
it (``params.cache_hit_rate``, median over rounds).

Both experiments also record, per round, the CPU time the workers used
(``params.cpu_s_values``), and from it the CPU time per operation (``params.cpu_per_op_us``)
and the parallelism actually obtained (``params.parallelism`` = CPU time / wall time): a
throughput that does not scale is contention when CPU per operation rises, and scheduling
when parallelism stays below the thread count while CPU per operation does not.

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
from time import perf_counter, thread_time
from typing import Any, NamedTuple

from . import registry, workloads
from .env import Run
from .progress import bar

__all__ = ["Round", "run_contention", "run_lockfree", "run_scaling", "timed_round"]

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
        self.cpu_s = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        sub, look, who = self.sub, self.look, self.subscriber
        try:
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


def timed_round(matcher: Any, plans: list[tuple[list[tuple[bool, str]], Hashable]], *,
                per_thread: list[Any] | None = None) -> Round:
    """Run one round: one thread per ``(ops, subscriber)`` plan; return wall and CPU time.

    Every thread works on ``matcher``, unless ``per_thread`` gives each plan its own.
    """
    barrier = threading.Barrier(len(plans))
    targets = per_thread if per_thread is not None else [matcher] * len(plans)
    workers = [_Worker(barrier, ops, m.subscribe, m.lookup, who)
               for (ops, who), m in zip(plans, targets, strict=True)]
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
    return Round(max(w.end_t for w in workers) - min(w.start_t for w in workers),
                 sum(w.cpu_s for w in workers))


def _form(dialect: str) -> Callable[[str], str]:
    return workloads.to_mqtt if dialect == "mqtt" else (lambda s: s)


def _spread(values: list[float]) -> dict[str, float]:
    v = sorted(values)
    return {"median": v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2,
            "min": v[0], "max": v[-1]}


def _hit_rate(out: list[float], matcher: Any, before: int | None, lookups: int) -> None:
    """Append the share of a round's ``lookups`` that ``matcher``'s result cache answered
    (nothing for a matcher without one; see registry.computed_lookups)."""
    if before is not None and lookups > 0:
        out.append(registry.cache_hit_share(registry.computed_lookups(matcher) - before,
                                            lookups))


def _populated(algorithm: str, dialect: str, items: list[str],
               hot: list[str]) -> tuple[Any, int]:
    """A fresh ``algorithm`` matcher holding the hot population (untimed preparation), and
    how many of the patterns it refused."""
    m = registry.make(algorithm, dialect, topic_space=[*items, *hot], max_words=HOT_WORDS)
    return m, registry.populate(m, hot, [f"h{i}" for i in range(len(hot))])


def _cpu_params(params: dict[str, Any], walls: list[float], cpus: list[float],
                total_ops: int) -> None:
    """Store the rounds' wall and CPU times, CPU per operation and parallelism in ``params``."""
    params["wall_s"] = _spread(walls)
    params["wall_s_values"] = walls
    params["cpu_s_values"] = cpus
    params["cpu_per_op_us"] = _spread([c / total_ops * 1e6 for c in cpus])
    params["parallelism"] = _spread([c / w for c, w in zip(cpus, walls) if w > 0])


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
            cpus: list[float] = []
            hit_rates: list[float] = []
            try:
                for _ in range(size.scaling_rounds):
                    m, params["refused_patterns"] = _populated(algorithm, dialect, items, hot)
                    before = registry.computed_lookups(m)
                    wall, cpu = timed_round(m, thread_plans)
                    _hit_rate(hit_rates, m, before, n * ops - writes)
                    walls.append(wall)
                    cpus.append(cpu)
                    progress.update(1)
            except Exception as exc:
                run.record("scaling", algorithm, dialect, workload, params, threads=n,
                           unit="ops/s", values=[n * ops / w for w in walls], status="failed",
                           note=f"{type(exc).__name__}: {exc}")
                progress.write(f"  scaling {algorithm} {workload} x{n}: FAILED {exc!r}")
                progress.update(size.scaling_rounds - len(walls))
                continue
            _cpu_params(params, walls, cpus, n * ops)
            if hit_rates:
                params["cache_hit_rate"] = _spread(hit_rates)["median"]
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
            cpus: list[float] = []
            hit_rates: list[float] = []
            try:
                for _ in range(size.lockfree_rounds):
                    m = registry.make(algorithm, dialect, topic_space=its, max_words=3)
                    before = registry.computed_lookups(m)
                    wall, cpu = timed_round(m, plans)
                    _hit_rate(hit_rates, m, before, lookers * ops)
                    walls.append(wall)
                    cpus.append(cpu)
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
            _cpu_params(params, walls, cpus, n * ops)
            if hit_rates:
                params["cache_hit_rate"] = _spread(hit_rates)["median"]
            run.record("lockfree", algorithm, dialect, ratio, params, threads=n, unit="s",
                       values=walls)


#: Thread counts of the contention experiment: one, and two (this study's machine has 2 cores).
CONTENTION_THREADS = (1, 2)
CONTENTION_SHARING = ("shared", "per-thread")


class _Holder:
    """One mortal attribute, read in a loop by the attribute-read probe."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = [0]  # a list: mortal, so every read changes its reference count


def _read_attribute(holder: _Holder, reads: int) -> None:
    for _ in range(reads):
        _ = holder.value  # one load, one reference-count increment and decrement


def _probe_round(n: int, shared: bool, reads: int) -> Round:
    """``n`` threads each read ``holder.value`` ``reads`` times, on one holder or one each."""
    one = _Holder()
    holders = [one] * n if shared else [_Holder() for _ in range(n)]
    barrier = threading.Barrier(n)
    spans: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)] * n

    def work(k: int) -> None:
        barrier.wait()
        t0 = perf_counter()
        cpu0 = thread_time()  # nested inside the wall-time interval, as in _Worker.run
        _read_attribute(holders[k], reads)
        cpu = thread_time() - cpu0
        spans[k] = (t0, perf_counter(), cpu)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(ROUND_TIMEOUT)
    return Round(max(s[1] for s in spans) - min(s[0] for s in spans), sum(s[2] for s in spans))


def run_contention(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record CPU time per operation with one shared matcher and with one matcher per thread.

    The scaling experiment shows whether throughput grows with threads; this one says why
    not. Each thread runs the true 90/10 workload (``contention_ops`` operations) at 1 and 2
    threads, either on one shared matcher or on a matcher of its own (same population, same
    operations). Both rounds do the same work per thread, so CPU time per operation that
    rises only when the matcher is shared is the cost of sharing objects between cores; a
    parallelism (CPU time / wall time) below the thread count is the scheduler's.

    A probe with no matcher in it isolates one cause: threads reading one attribute of one
    shared object (algorithm ``attribute-read``, CPU time per read). On a free-threaded
    build every such read writes the object's reference count, so two cores reading one
    object fight over its cache line; under the GIL only one thread runs at a time.
    """
    size = run.size
    ops = size.contention_ops
    items_nats = workloads.scaling_items(ops)
    hot_nats = workloads.hot_population(run.seed, size.scaling_population, HOT_WORDS)
    cells = [(a, sharing, n) for a in [*algorithms, "attribute-read"]
             for sharing in CONTENTION_SHARING for n in CONTENTION_THREADS]
    with bar(len(cells) * size.contention_rounds, "contention") as progress:
        for algorithm, sharing, n in cells:
            progress.set_postfix_str(f"{algorithm} {sharing} x{n}")
            if algorithm == "attribute-read":
                reads = ops * 20
                walls, cpus = [], []
                for _ in range(size.contention_rounds):
                    wall, cpu = _probe_round(n, sharing == "shared", reads)
                    walls.append(wall)
                    cpus.append(cpu)
                    progress.update(1)
                params = {"sharing": sharing, "reads_per_thread": reads}
                _cpu_params(params, walls, cpus, n * reads)
                run.record("contention", algorithm, "-", sharing, params, threads=n,
                           unit="us", values=[c / (n * reads) * 1e6 for c in cpus])
                continue
            dialect = "mqtt" if algorithm == "paho" else "nats"
            form = _form(dialect)
            items = [form(i) for i in items_nats]
            hot = [form(p) for p in hot_nats]
            plans = [workloads.scaling_plan("90/10-true", w, ops, run.seed) for w in range(n)]
            writes = sum(sum(p) for p in plans)
            params: dict[str, Any] = {
                "sharing": sharing, "workload": "90/10-true", "ops_per_worker": ops,
                "total_ops": n * ops, "writes": writes, "write_share": writes / (n * ops),
                "population": len(hot),
            }
            why = registry.unavailable(algorithm)
            if not why and n > 1 and sharing == "shared" and not registry.thread_safe(algorithm):
                why = "not thread-safe: it cannot be shared between threads"
            if why:
                run.record("contention", algorithm, dialect, sharing, params, threads=n,
                           unit="us", status="skipped", note=why)
                progress.update(size.contention_rounds)
                continue
            thread_plans = [(list(zip(p, items)), workloads.SCALING_SUBSCRIBER) for p in plans]

            walls, cpus = [], []
            try:
                for _ in range(size.contention_rounds):
                    fresh = [_populated(algorithm, dialect, items, hot)[0]
                             for _ in range(1 if sharing == "shared" else n)]
                    wall, cpu = timed_round(fresh[0], thread_plans,
                                            per_thread=None if sharing == "shared" else fresh)
                    walls.append(wall)
                    cpus.append(cpu)
                    progress.update(1)
            except Exception as exc:
                run.record("contention", algorithm, dialect, sharing, params, threads=n,
                           unit="us", status="failed", note=f"{type(exc).__name__}: {exc}")
                progress.write(f"  contention {algorithm} {sharing} x{n}: FAILED {exc!r}")
                progress.update(size.contention_rounds - len(walls))
                continue
            _cpu_params(params, walls, cpus, n * ops)
            run.record("contention", algorithm, dialect, sharing, params, threads=n,
                       unit="us", values=[c / (n * ops) * 1e6 for c in cpus])
