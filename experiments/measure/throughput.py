"""Throughput on the 3-digit workload: messages per second of serial lookups.

Per round: a fresh matcher (inverted bitmap: topic space = the message list; optimized
bitmap: 3 words), the subscriptions populated untimed (subscriber ``i`` for pattern ``i``),
then every message looked up once, timed; the round's figure is messages / elapsed time.

A matcher with a result cache records the share of the timed lookups it answered from it
(``params.cache_hit_rate``, median over rounds).

Before timing, the answers of the first ``ORACLE_MESSAGES`` messages are compared with the
reference :func:`ctrie.matches`; disagreements are recorded (``params.oracle_mismatches``)
and printed, since a matcher's speed means nothing if its answers are wrong.
"""

from __future__ import annotations

import gc
from time import perf_counter
from typing import Any

from ctrie import Dialect, matches

from .. import registry, workloads
from ..env import Run
from ..progress import bar
from ..text import count

__all__ = ["run_throughput"]

#: Messages whose answers are checked against the reference matcher.
ORACLE_MESSAGES = 200
#: Word count of the workload (the optimized bitmap's size).
WORDS = 3


def _expected(patterns: list[str], messages: list[str], dialect: str) -> list[frozenset[int]]:
    d = Dialect.coerce(dialect)
    return [frozenset(i for i, p in enumerate(patterns) if matches(p, m, d))
            for m in messages]


def run_throughput(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record messages per second for every (algorithm, dialect)."""
    size = run.size
    wl = workloads.throughput_workload(run.seed, size.throughput_subscriptions,
                                       size.throughput_messages)
    cells = [(a, d) for a in algorithms for d in registry.dialects_for(a, dialects)]
    forms = {}
    with bar(len(cells) * size.throughput_rounds, "throughput") as progress:
        for algorithm, dialect in cells:
            progress.set_postfix_str(f"{algorithm}:{dialect}")
            if dialect not in forms:
                form = workloads.to_mqtt if dialect == "mqtt" else (lambda s: s)
                pats = [form(p) for p in wl.patterns]
                msgs = [form(m) for m in wl.messages]
                sample = msgs[:ORACLE_MESSAGES]
                forms[dialect] = (pats, msgs, sample, _expected(pats, sample, dialect))
            pats, msgs, sample, expected = forms[dialect]
            params: dict[str, Any] = {
                "subscriptions": len(pats), "messages": len(msgs),
                "distinct_patterns": wl.distinct_patterns, "words": WORDS,
                "messages_full_size": 100_000,
            }
            if algorithm == "inverted_bitmap":
                params["topic_space"] = "the message list"
                params["topic_space_distinct"] = len(set(msgs))
            if algorithm == "optimized_bitmap":
                params["max_words"] = WORDS
            why = registry.unavailable(algorithm)
            if why:
                run.record("throughput", algorithm, dialect, "3-digit", params,
                           unit="msg/s", status="skipped", note=why)
                progress.update(size.throughput_rounds)
                continue
            rates: list[float] = []
            hit_rates: list[float] = []  # with a result cache: lookups answered from it
            try:
                for rnd in range(size.throughput_rounds):
                    m = registry.make(algorithm, dialect, topic_space=msgs, max_words=WORDS)
                    refused = registry.populate(m, pats, range(len(pats)))
                    if rnd == 0:
                        params["refused_patterns"] = refused
                        got = [m.lookup(t) for t in sample]
                        bad = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
                        params["oracle_checked"] = len(sample)
                        params["oracle_mismatches"] = len(bad)
                        if bad:
                            i = bad[0]
                            params["oracle_first_mismatch"] = {
                                "topic": sample[i], "got": sorted(got[i])[:10],
                                "expected": sorted(expected[i])[:10]}
                            progress.write(
                                f"  WARNING throughput {algorithm}:{dialect}: {len(bad)} of "
                                f"{count(len(sample), 'lookup')} disagree with ctrie.matches "
                                f"(first: {sample[i]!r})")
                    look = m.lookup
                    before = registry.computed_lookups(m)
                    gc.collect()
                    t0 = perf_counter()
                    for msg in msgs:
                        look(msg)
                    elapsed = perf_counter() - t0
                    rates.append(len(msgs) / elapsed)
                    after = registry.computed_lookups(m)
                    if before is not None and after is not None:
                        hit_rates.append(registry.cache_hit_share(after - before, len(msgs)))
                    del m, look
                    progress.update(1)
            except Exception as exc:
                run.record("throughput", algorithm, dialect, "3-digit", params, unit="msg/s",
                           values=rates, status="failed", note=f"{type(exc).__name__}: {exc}")
                progress.write(f"  throughput {algorithm}:{dialect}: FAILED {exc!r}")
                progress.update(size.throughput_rounds - len(rates))
                continue
            if hit_rates:
                params["cache_hit_rate"] = sorted(hit_rates)[len(hit_rates) // 2]
            note = None
            if params.get("refused_patterns"):
                note = f"{params['refused_patterns']} patterns refused (UnsupportedPatternError)"
            if params.get("oracle_mismatches"):
                note = (note + "; " if note else "") + (
                    f"{params['oracle_mismatches']} of {params['oracle_checked']} answers "
                    "differ from ctrie.matches")
            run.record("throughput", algorithm, dialect, "3-digit", params, unit="msg/s",
                       values=rates, note=note)
