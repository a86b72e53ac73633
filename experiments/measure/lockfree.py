"""``lockfree`` (second article): lock-free vs locked, insert:lookup rounds.

No pre-population; insert workers each subscribe the ``ops`` items (worker ``w`` as
subscriber ``ins<w>``, so every insert stores a new pair), lookup workers each look the
``ops`` items up; insert:lookup ratios 1:1 and 1:3 at growing worker counts. Unit: seconds
for the whole round (lower is better), as in the article. Rounds are timed as described in
:mod:`experiments.measure.rounds`; paho's ``MQTTMatcher`` (not thread-safe) is recorded as
skipped.
"""

from __future__ import annotations

from typing import Any

from .. import registry, workloads
from ..env import Run
from ..progress import bar
from .rounds import add_hit_share, dialect_form, spread, store_cpu, timed_round

__all__ = ["MAX_WORKERS", "lockfree_configs", "run_lockfree"]

#: Largest worker count of the lockfree experiment (the articles went to 16).
MAX_WORKERS = 16


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
            form = dialect_form(dialect)
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
                    add_hit_share(hit_rates, [(m, before)], lookers * ops)
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
            params["ops_per_s_median"] = n * ops / spread(walls)["median"]
            store_cpu(params, walls, cpus, n * ops)
            if hit_rates:
                params["cache_hit_rate"] = spread(hit_rates)["median"]
            run.record("lockfree", algorithm, dialect, ratio, params, threads=n, unit="s",
                       values=walls)
