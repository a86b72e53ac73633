"""Memory held per subscription, measured with tracemalloc.

Per cell: the workload's patterns, subscribers and topic space are built first (untraced);
then tracemalloc starts, the matcher is constructed (``empty_bytes``) and populated, the
garbage collector runs, and the traced size is the matcher's total (``median`` in bytes;
``params.bytes_per_subscription`` = total / subscriptions). Strings the matcher keeps a
reference to (the pattern objects) are not counted; every token, node, set, bitmap and
compiled predicate it allocates is.

Workloads: the 3-digit throughput subscriptions at each size of the run. Variant
``digits`` is the original generator (3 words of one digit each: at most 1,331 distinct
patterns, so larger sizes add subscribers to existing patterns); variant ``distinct``
draws the 3 words from an alphabet of ``ceil((10 n) ** (1/3))`` words, so most patterns are
distinct and the structure itself grows.

The inverted bitmap's subscribe scans the topic space for each new wildcard pattern; a cell
whose projected scan exceeds the size's ``inverted_scan_budget`` pattern-topic matches is
recorded as skipped with the projection.
"""

from __future__ import annotations

import gc
import math
import tracemalloc

from .. import registry, workloads
from ..env import Run
from ..progress import bar

__all__ = ["run_memory"]

WORDS = 3


def _alphabet(variant: str, n: int) -> int:
    if variant == "digits":
        return 10
    return max(10, math.ceil((10 * n) ** (1 / 3)))


def run_memory(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record bytes held after populating each size, for every (algorithm, dialect)."""
    size = run.size
    cells = [(n, v, a, d) for n in size.memory_sizes for v in ("digits", "distinct")
             for a in algorithms for d in registry.dialects_for(a, dialects)]
    cache: dict[tuple, tuple] = {}
    with bar(len(cells) * size.memory_rounds, "memory") as progress:
        for n, variant, algorithm, dialect in cells:
            progress.set_postfix_str(f"{n} {variant} {algorithm}:{dialect}")
            key = (n, variant, dialect)
            if key not in cache:
                cache.clear()
                alphabet = _alphabet(variant, n)
                wl = workloads.throughput_workload(run.seed, n, n, alphabet)
                form = workloads.to_mqtt if dialect == "mqtt" else (lambda s: s)
                pats = [form(p) for p in wl.patterns]
                space = sorted({form(m) for m in wl.messages})
                wild = len({p for p in pats if "*" in p or "+" in p})
                cache[key] = (pats, space, list(range(n)), wl.distinct_patterns, alphabet, wild)
            pats, space, subs, distinct, alphabet, wild = cache[key]
            params = {"subscriptions": n, "variant": variant, "alphabet": alphabet,
                      "distinct_patterns": distinct, "words": WORDS}
            if algorithm == "inverted_bitmap":
                params["topic_space"] = len(space)
            if algorithm == "optimized_bitmap":
                params["max_words"] = WORDS
            why = registry.unavailable(algorithm)
            budget = size.inverted_scan_budget
            if algorithm == "inverted_bitmap" and not why and wild * len(space) > budget:
                why = (f"projected populate cost {wild} distinct wildcard patterns x "
                       f"{len(space)} topics = {wild * len(space):.1e} matches > the "
                       f"{size.name} budget {budget:.0e}")
            workload = f"3-digit/{variant}"
            if why:
                run.record("memory", algorithm, dialect, workload, params, unit="bytes",
                           status="skipped", note=why)
                progress.update(size.memory_rounds)
                continue
            totals: list[float] = []
            try:
                for _ in range(size.memory_rounds):
                    gc.collect()
                    tracemalloc.start()
                    try:
                        base = tracemalloc.get_traced_memory()[0]
                        m = registry.make(algorithm, dialect, topic_space=space,
                                          max_words=WORDS)
                        gc.collect()
                        empty = tracemalloc.get_traced_memory()[0] - base
                        refused = registry.populate(m, pats, subs)
                        gc.collect()
                        total = tracemalloc.get_traced_memory()[0] - base
                    finally:
                        tracemalloc.stop()
                    del m
                    totals.append(float(total))
                    params["empty_bytes"] = empty
                    params["refused_patterns"] = refused
                    progress.update(1)
            except Exception as exc:
                run.record("memory", algorithm, dialect, workload, params, unit="bytes",
                           values=totals, status="failed", note=f"{type(exc).__name__}: {exc}")
                progress.write(f"  memory {algorithm}:{dialect} n={n}: FAILED {exc!r}")
                progress.update(size.memory_rounds - len(totals))
                continue
            params["bytes_per_subscription"] = sorted(totals)[len(totals) // 2] / n
            note = (f"{params['refused_patterns']} patterns refused (UnsupportedPatternError)"
                    if params.get("refused_patterns") else None)
            run.record("memory", algorithm, dialect, workload, params, unit="bytes",
                       values=totals, note=note)
