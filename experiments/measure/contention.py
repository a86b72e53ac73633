"""``contention``: CPU time per operation, one shared matcher vs one per thread."""

from __future__ import annotations

import threading
from time import perf_counter, thread_time
from typing import Any

from .. import registry, workloads
from ..env import Run
from ..progress import bar
from .rounds import HOT_WORDS, ROUND_TIMEOUT, Round, dialect_form, populated, store_cpu, timed_round

__all__ = ["CONTENTION_SHARING", "CONTENTION_THREADS", "run_contention"]

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
                probe: dict[str, Any] = {"sharing": sharing, "reads_per_thread": reads}
                store_cpu(probe, walls, cpus, n * reads)
                run.record("contention", algorithm, "-", sharing, probe, threads=n,
                           unit="us", values=[c / (n * reads) * 1e6 for c in cpus])
                continue
            dialect = "mqtt" if algorithm == "paho" else "nats"
            form = dialect_form(dialect)
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
                    fresh = [populated(algorithm, dialect, items, hot)[0]
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
            store_cpu(params, walls, cpus, n * ops)
            run.record("contention", algorithm, dialect, sharing, params, threads=n,
                       unit="us", values=[c / (n * ops) * 1e6 for c in cpus])
