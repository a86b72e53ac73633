"""``scaling`` (first article): operations per second at growing thread counts.

Every worker runs the same ``ops`` operations over the items ``f"{j % 10}.{j % 50}.{j}"``
with subscriber ``"abc"`` on a matcher populated with the random 5-word hot subscriptions
(see :mod:`experiments.measure.rounds` for how a round is timed); workloads ``50/50``,
``90/10-faithful`` (the original's per-worker split) and ``90/10-true`` (each operation a
write with probability 0.1); the real write share is recorded. Unit: operations per second
(``params.wall_s`` holds the round times).

Beside every shared cell, the limit of the same code here (issue 19): workload
``<workload>/own``, the same rounds with one matcher per thread, each built and populated by
the thread that then runs its operations on it, so nothing is shared and every object is
its reader's own. A shared result is read as a fraction of it.

paho's ``MQTTMatcher`` is not thread-safe: it is measured at one thread (MQTT form).
"""

from __future__ import annotations

from typing import Any

from .. import registry, workloads
from ..env import Run
from ..progress import bar
from .rounds import (HOT_WORDS, add_hit_share, dialect_form, populated, spread, store_cpu,
                     timed_round)

__all__ = ["SCALING_WORKLOADS", "run_scaling"]

SCALING_WORKLOADS = ("50/50", "90/10-faithful", "90/10-true")


def run_scaling(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record operations per second per (algorithm, workload, threads)."""
    size = run.size
    ops = size.scaling_ops
    items_nats = workloads.scaling_items(ops)
    hot_nats = workloads.hot_population(run.seed, size.scaling_population, HOT_WORDS)
    cells = [(a, wl, n, own) for a in algorithms for wl in SCALING_WORKLOADS
             for n in size.scaling_threads for own in (False, True)]
    with bar(len(cells) * size.scaling_rounds, "scaling") as progress:
        for algorithm, workload, n, own in cells:
            name = f"{workload}/own" if own else workload
            progress.set_postfix_str(f"{algorithm} {name} x{n}")
            dialect = "mqtt" if algorithm == "paho" else "nats"
            form = dialect_form(dialect)
            items = [form(i) for i in items_nats]
            hot = [form(p) for p in hot_nats]
            plans = [workloads.scaling_plan(workload, w, ops, run.seed) for w in range(n)]
            writes = sum(sum(p) for p in plans)
            params: dict[str, Any] = {
                "sharing": "own" if own else "shared",
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
                run.record("scaling", algorithm, dialect, name, params, threads=n,
                           unit="ops/s", status="skipped", note=why)
                progress.update(size.scaling_rounds)
                continue
            thread_plans = [(list(zip(p, items)), workloads.SCALING_SUBSCRIBER) for p in plans]
            # Each worker looks up its first topic once, untimed, before the barrier (as
            # sharing does): a per-thread replica is then made before the clock starts, in
            # both cells alike (the owner-built worker makes its matcher untimed anyway).
            # Those lookups are counted with the round's for a cache's hit rate.
            lookups = n * ops - writes + sum(1 for p in plans if not all(p))
            walls: list[float] = []
            cpus: list[float] = []
            hit_rates: list[float] = []
            try:
                for _ in range(size.scaling_rounds):
                    if own:
                        built: list[tuple[Any, int | None]] = []  # (matcher, before)
                        refusals: list[int] = []

                        def build() -> Any:  # in each worker, untimed
                            mine, refused = populated(algorithm, dialect, items, hot)
                            refusals.append(refused)
                            built.append((mine, registry.computed_lookups(mine)))
                            return mine

                        wall, cpu = timed_round(None, thread_plans, build=build, warm=True)
                        params["refused_patterns"] = max(refusals)
                        add_hit_share(hit_rates, built, lookups)  # all the threads' caches
                    else:
                        m, params["refused_patterns"] = populated(algorithm, dialect, items, hot)
                        before = registry.computed_lookups(m)
                        wall, cpu = timed_round(m, thread_plans, warm=True)
                        add_hit_share(hit_rates, [(m, before)], lookups)
                    walls.append(wall)
                    cpus.append(cpu)
                    progress.update(1)
            except Exception as exc:
                run.record("scaling", algorithm, dialect, name, params, threads=n,
                           unit="ops/s", values=[n * ops / w for w in walls], status="failed",
                           note=f"{type(exc).__name__}: {exc}")
                progress.write(f"  scaling {algorithm} {name} x{n}: FAILED {exc!r}")
                progress.update(size.scaling_rounds - len(walls))
                continue
            store_cpu(params, walls, cpus, n * ops)
            if hit_rates:
                params["cache_hit_rate"] = spread(hit_rates)["median"]
            run.record("scaling", algorithm, dialect, name, params, threads=n,
                       unit="ops/s", values=[n * ops / w for w in walls])
