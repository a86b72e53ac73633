"""Linearizability of the CS-trie, checked on recorded concurrent histories.

Each history: a trie pre-populated with a few seeded pairs, then THREADS threads started at a
barrier, each running OPS_PER_THREAD seeded operations (subscribe, unsubscribe, lookup,
read-only snapshot) over a small universe of overlapping patterns, so that wildcard lookups
read several subtrees while writers change them. Every call and return is time-stamped and
the history is checked by the Wing-Gong-Lowe search of ``tests/linearizability.py``.

Sizes come from the environment so that the free-threaded run can use more threads:
``CSTRIE_LIN_HISTORIES`` (default 1000) and ``CSTRIE_LIN_THREADS`` (default 4).
"""

from __future__ import annotations

import functools
import os
import random
import threading
import time

import pytest

import ctrie.cstrie
import replicated_variants
from ctrie import CSTrie, ReplicatedTrie, matches
from ctrie.nodes import LEAF_MAX
from linearizability import Op, check, explain, make_spec, pairs_of
from threads import gil_enabled, run_threads, switch_interval

HISTORIES = int(os.environ.get("CSTRIE_LIN_HISTORIES", "1000"))
THREADS = int(os.environ.get("CSTRIE_LIN_THREADS", "4"))
OPS_PER_THREAD = 8
SEED = int(os.environ.get("CSTRIE_LIN_SEED", "20261121"))

# Overlapping patterns: literal, '*' and '>' at several depths, so one lookup of 'a.b.c'
# reads the subtrees of 'a' and of '*' and collects '>' subscribers on the way.
PATTERNS = ["a.b", "a.*", "a.>", "*.b", "a.b.c", "*.b.c", "a.*.c", ">", "a"]
TOPICS = ["a.b", "a.b.c", "x.b.c", "a"]
SUBSCRIBERS = [0, 1]

matches_nats = functools.lru_cache(maxsize=None)(lambda p, t: matches(p, t, "nats"))
SPEC = make_spec(matches_nats)


def make_draw(lookups_below: float = 0.95, rest: str = "snapshot",
              writes_below: float = 0.60, patterns: list[str] = PATTERNS,
              topics: list[str] = TOPICS):
    """A draw of one seeded operation (name, argument): subscribe up to 0.35, unsubscribe up
    to ``writes_below``, lookup up to ``lookups_below``, and the ``rest`` ("snapshot" or
    "len") after that; over ``patterns`` and ``topics``."""

    def draw(rnd: random.Random) -> tuple[str, object]:
        r = rnd.random()
        pair = (rnd.choice(patterns), rnd.choice(SUBSCRIBERS))
        if r < 0.35:
            return "subscribe", pair
        if r < writes_below:
            return "unsubscribe", pair
        if r < lookups_below:
            return "lookup", rnd.choice(topics)
        return rest, None

    return draw


draw_op = make_draw()


def record_history(trie: CSTrie, rnd: random.Random, draw=draw_op) -> list[Op]:
    """Run one concurrent history of operations drawn by ``draw`` on ``trie`` and return
    its operations."""
    plans = [[draw(rnd) for _ in range(OPS_PER_THREAD)] for _ in range(THREADS)]

    clock = time.monotonic_ns
    # A ReplicatedTrie makes each thread's replica on its first use, and that join marks
    # every other replica: joined beforehand, the history exercises the marks of its
    # operations alone. (Not recorded: a lookup changes nothing.) Every thread joins before
    # any starts its operations: a write can only fail to mark a replica that exists, so a
    # thread that started late would leave the early ones nothing to miss (found by review:
    # without this barrier the replicated no-mark variant showed in about 1 % of histories,
    # and in long stretches of none; with it, about 7 %).
    joined = threading.Barrier(THREADS) if isinstance(trie, ReplicatedTrie) else None

    def worker(k: int) -> list[Op]:
        if joined is not None:
            trie.lookup(TOPICS[0])
            joined.wait(60)
        ops = []
        for name, arg in plans[k]:
            if name == "subscribe":
                t0 = clock()
                res = trie.subscribe(*arg)
                t1 = clock()
            elif name == "unsubscribe":
                t0 = clock()
                res = trie.unsubscribe(*arg)
                t1 = clock()
            elif name == "lookup":
                t0 = clock()
                res = trie.lookup(arg)
                t1 = clock()
            elif name == "len":
                t0 = clock()
                res = len(trie)
                t1 = clock()
            else:
                t0 = clock()
                snap = trie.read_only_snapshot()
                t1 = clock()
                res = pairs_of(snap.subscriptions())  # frozen: reading it later is fine
            ops.append(Op(k, name, arg, res, t0, t1))
        return ops

    per_thread = run_threads([worker] * THREADS, timeout=60)
    return [op for ops in per_thread for op in ops]


def _cstrie(rnd: random.Random) -> CSTrie:
    # Half the histories with one-word leaves: their levels split into hash levels.
    return CSTrie("nats", _leaf_max=rnd.choice((1, LEAF_MAX)))


def run_histories(n: int, seed: int, stop_at_first: bool = False, draw=draw_op,
                  make=_cstrie, spec=SPEC, patterns: list[str] = PATTERNS) -> dict:
    """Record and check ``n`` histories of operations drawn by ``draw`` on tries made by
    ``make(rnd)`` against ``spec``, each starting from a few pairs of ``patterns``; return
    the tally (and the first violation)."""
    rnd = random.Random(seed)
    tally = {"histories": 0, "operations": 0, "violations": 0, "unknown": 0, "first": None}
    with switch_interval(1e-6):
        for _ in range(n):
            trie = make(rnd)
            initial = frozenset((rnd.choice(patterns), rnd.choice(SUBSCRIBERS)) for _ in range(3))
            for p, s in initial:
                trie.subscribe(p, s)
            history = record_history(trie, rnd, draw)
            verdict = check(history, spec, initial)
            tally["histories"] += 1
            tally["operations"] += len(history)
            if verdict is None:
                tally["unknown"] += 1
            elif not verdict:
                tally["violations"] += 1
                if tally["first"] is None:
                    tally["first"] = explain(history)
                if stop_at_first:
                    break
    return tally


# --- the checker itself can fail -------------------------------------------------------------


def _op(thread, name, arg, result, call, ret):
    return Op(thread, name, arg, result, call, ret)


def test_checker_accepts_a_legal_sequential_history():
    h = [
        _op(0, "subscribe", ("a.*", 1), None, 0, 1),
        _op(0, "lookup", "a.b", frozenset({1}), 2, 3),
        _op(0, "unsubscribe", ("a.*", 1), True, 4, 5),
        _op(0, "lookup", "a.b", frozenset(), 6, 7),
        _op(0, "unsubscribe", ("a.*", 1), False, 8, 9),
    ]
    assert check(h, SPEC) is True


def test_checker_rejects_a_stale_read_after_a_completed_write():
    h = [
        _op(0, "subscribe", ("a.*", 1), None, 0, 1),
        _op(1, "lookup", "a.b", frozenset(), 2, 3),  # called after the subscribe returned
    ]
    assert check(h, SPEC) is False


def test_checker_reorders_overlapping_operations():
    # The lookup overlaps the subscribe, so it may linearize before it.
    h = [
        _op(0, "subscribe", ("a.*", 1), None, 0, 10),
        _op(1, "lookup", "a.b", frozenset(), 2, 3),
        _op(1, "lookup", "a.b", frozenset({1}), 11, 12),
    ]
    assert check(h, SPEC) is True


def test_checker_rejects_a_lookup_mixing_two_instants():
    # The multi-subtree anomaly: the lookup sees 'a.>' (removed before the subscribe of
    # 'a.b.c' began) together with 'a.b.c'. No single instant had both.
    h = [
        _op(0, "unsubscribe", ("a.>", 1), True, 5, 6),
        _op(0, "subscribe", ("a.b.c", 2), None, 7, 8),
        _op(1, "lookup", "a.b.c", frozenset({1, 2}), 0, 20),
    ]
    assert check(h, SPEC, initial=frozenset({("a.>", 1)})) is False


def test_checker_rejects_a_wrong_snapshot_and_reports_unknown_at_the_cap():
    h = [
        _op(0, "subscribe", ("a", 1), None, 0, 1),
        _op(0, "snapshot", None, frozenset(), 2, 3),
    ]
    assert check(h, SPEC) is False
    many = [_op(k, "subscribe", ("a", k), None, 0, 100) for k in range(12)]
    assert check(many, SPEC, max_steps=5) is None


# --- the CS-trie -----------------------------------------------------------------------------


@pytest.mark.concurrency
@pytest.mark.timeout(900)
def test_cstrie_histories_are_linearizable(figures):
    _report(run_histories(HISTORIES, SEED), "", figures)


def _report(tally: dict, what: str, figures) -> None:
    """Print and record a tally of ``what`` ("" for the CS-trie); fail on any violation."""
    build = "GIL" if gil_enabled() else "free-threaded"
    name = f"{what} linearizability".strip()
    print(f"\n{name} ({build}): {tally['histories']} histories x {THREADS} threads, "
          f"{tally['operations']} operations, {tally['violations']} violations, "
          f"{tally['unknown']} unknown (seed {SEED})")
    if what:
        figures.add(f"{name} histories ({build})", tally["histories"])
    else:
        figures.add(f"linearizability histories x{THREADS} threads ({build})", tally["histories"])
        figures.add(f"linearizability operations ({build})", tally["operations"])
        figures.add(f"linearizability unknown ({build})", tally["unknown"])
    figures.add(f"{name} violations ({build})", tally["violations"])
    assert tally["violations"] == 0, f"seed {SEED}; first violation:\n{tally['first']}"
    assert tally["unknown"] <= tally["histories"] // 100, f"too many undecided histories: {tally}"


def _broken_gcas(inode, old, new, trie, neutral=False, delta=None):
    """The mutant: GCAS's compare-and-swap replaced by a read, a yield, then a write."""
    if inode.main.get() is not old:
        return False
    time.sleep(0)  # another thread may write here; its update is then overwritten
    inode.main.set(new)
    return True


MUTANT_RUNS = 20
MUTANT_HISTORIES_PER_RUN = 50
#: The share of runs that must catch a mutant.
MUTANT_CAUGHT = 0.95


@pytest.mark.concurrency
@pytest.mark.timeout(900)
def test_read_then_write_mutant_is_caught(monkeypatch, figures):
    monkeypatch.setattr(ctrie.cstrie, "GCAS", _broken_gcas)
    caught = 0
    for run in range(MUTANT_RUNS):
        tally = run_histories(MUTANT_HISTORIES_PER_RUN, SEED + 1 + run, stop_at_first=True)
        caught += tally["violations"] > 0
    print(f"\nread-then-write mutant caught in {caught}/{MUTANT_RUNS} runs "
          f"(a run: up to {MUTANT_HISTORIES_PER_RUN} histories x {THREADS} threads)")
    figures.add("mutant runs caught (read-then-write GCAS)", caught)
    figures.add("mutant runs (read-then-write GCAS)", MUTANT_RUNS)
    assert caught >= MUTANT_CAUGHT * MUTANT_RUNS


# --- the CS-trie with its result cache ------------------------------------------------------


def _cstrie_cached(rnd: random.Random) -> CSTrie:
    # A cache of 2 entries (swept at every third topic) or of 1,024; both leaf sizes.
    return CSTrie("nats", cache=True, cache_max=rnd.choice((2, 1024)), cache_sweep_to=1,
                  _leaf_max=rnd.choice((1, LEAF_MAX)))


@pytest.mark.concurrency
@pytest.mark.timeout(900)
def test_cstrie_with_its_cache_histories_are_linearizable(figures):
    """Four topics over nine patterns: hits, misses and invalidations interleave."""
    _report(run_histories(HISTORIES, SEED, make=_cstrie_cached), "cached CS-trie", figures)


# --- the AMQP empty key ----------------------------------------------------------------------

# The empty key (zero words) beside the patterns that can match it ('#', '#.#': a chain of
# '#' I-nodes once both are stored) and those that cannot: a lookup of '' reads the root's
# branch of the reserved word and the '#' levels below it while writers change both.
AMQP_PATTERNS = ["", "#", "#.#", "*", "*.#", "a.#", "#.a", "a", "a.b"]
AMQP_TOPICS = ["", "", "a", "a.b"]
AMQP_SPEC = make_spec(functools.lru_cache(maxsize=None)(lambda p, t: matches(p, t, "amqp")))
draw_amqp = make_draw(patterns=AMQP_PATTERNS, topics=AMQP_TOPICS)


def _cstrie_amqp(rnd: random.Random) -> CSTrie:
    # Both leaf sizes (a split root keeps the empty key in a hash level), with and without
    # the result cache.
    bounds = {"cache_max": 2, "cache_sweep_to": 1} if rnd.random() < 0.5 else None
    return CSTrie("amqp", cache=bounds is not None, **(bounds or {}),
                  _leaf_max=rnd.choice((1, LEAF_MAX)))


@pytest.mark.concurrency
@pytest.mark.timeout(900)
def test_amqp_empty_key_histories_are_linearizable(figures):
    _report(run_histories(HISTORIES // 2, SEED + 3, draw=draw_amqp, make=_cstrie_amqp,
                          spec=AMQP_SPEC, patterns=AMQP_PATTERNS),
            "AMQP empty-key CS-trie", figures)


# --- the replicated trie ---------------------------------------------------------------------


def _replicated(rnd: random.Random) -> ReplicatedTrie:
    # Checkpoints every entry, every other entry, or rarely: threads join from each.
    return ReplicatedTrie("nats", checkpoint_every=rnd.choice((1, 2, 1024)))


# No snapshots: the rest of the draws read len().
draw_replicated = make_draw(lookups_below=0.95, rest="len")
# For the variant that loses marks: few unsubscribes, many lookups that could miss a write.
draw_replicated_reads = make_draw(lookups_below=0.95, rest="len", writes_below=0.40)


@pytest.mark.concurrency
@pytest.mark.timeout(900)
def test_replicated_histories_are_linearizable(figures):
    _report(run_histories(HISTORIES, SEED, draw=draw_replicated, make=_replicated),
            "replicated", figures)


#: Histories per run for the replicated no-mark variant, in units of MUTANT_HISTORIES_PER_RUN.
#: It shows only in some histories (every operation that catches up marks every replica), in
#: about 7 % with the threads joined before any operation (record_history); at 4 units 20 runs
#: of this test caught it in 18-20 of 20 runs, at 12 units 30 runs caught it in all 20. The
#: test shows that the checker and these histories catch the variant, not a calibrated rate
#: (it would stay green with most of that 7 % lost); tests/test_replicated.py catches the
#: same variant deterministically.
REPLICATED_SCALE = 12


@pytest.mark.concurrency
@pytest.mark.timeout(900)
def test_replicated_writes_that_mark_nobody_are_caught(monkeypatch, figures):
    """The variant: a write does not mark the other replicas, so a reader that was clean
    answers without a write that completed before it began."""
    monkeypatch.setattr(ReplicatedTrie, "_write", replicated_variants.write_without_marks)
    caught = 0
    for run in range(MUTANT_RUNS):
        # Each operation that catches up marks every replica, so the variant shows only in
        # some histories: a run checks REPLICATED_SCALE times as many.
        tally = run_histories(REPLICATED_SCALE * MUTANT_HISTORIES_PER_RUN, SEED + 1 + run,
                              stop_at_first=True,
                              draw=draw_replicated_reads, make=_replicated)
        caught += tally["violations"] > 0
    print(f"\nreplicated no-mark mutant caught in {caught}/{MUTANT_RUNS} runs "
          f"(a run: up to {REPLICATED_SCALE * MUTANT_HISTORIES_PER_RUN} histories x {THREADS} threads)")
    figures.add("mutant runs caught (replicated writes that mark nobody)", caught)
    assert caught >= MUTANT_CAUGHT * MUTANT_RUNS
