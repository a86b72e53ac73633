"""Stress invariants of the CS-trie under real threads (after the Scala TrieMap suites)."""

from __future__ import annotations

import random

import pytest

from ctrie import CSTrie
from ctrie.gcas import gcas_read
from threads import run_threads, switch_interval

pytestmark = pytest.mark.concurrency

THREADS = 4


def _range(k: int, n: int = 150) -> list[str]:
    # Disjoint pairs, shared prefixes: every thread writes into the same levels.
    return [f"{i % 4}.{'*' if i % 6 == 0 else i % 9}.{k}.{i}" if i % 2 else f"{i % 4}.{i}.>" for i in range(n)]


@pytest.mark.parametrize("cache", [False, True], ids=["plain", "cached"])
def test_disjoint_subscribe_then_unsubscribe_loses_nothing_and_ends_empty(cache, figures):
    trie = CSTrie(cache=cache)

    def subscribe_all(k):
        for p in _range(k):
            trie.subscribe(p, k)
        return len(_range(k))

    def unsubscribe_all(k):
        missing = [p for p in _range(k) if not trie.unsubscribe(p, k)]
        assert not missing, f"thread {k} lost {missing[:5]}"
        return len(_range(k))

    with switch_interval(1e-6):
        n = sum(run_threads([subscribe_all] * THREADS))
        expected = {}
        for k in range(THREADS):
            for p in _range(k):
                expected.setdefault(p, set()).add(k)
        assert trie.subscriptions() == {p: frozenset(s) for p, s in expected.items()}
        trie.check()
        n += sum(run_threads([unsubscribe_all] * THREADS))
    trie.check()
    assert len(trie) == 0
    assert gcas_read(trie._read_root(), trie).branches == {}, "not back to the empty shape"
    figures.add("stress: disjoint subscribe/unsubscribe operations", n)


@pytest.mark.parametrize("cache", [False, True], ids=["plain", "cached"])
def test_snapshots_taken_while_writers_run_never_change(cache, figures):
    trie = CSTrie(cache=cache)
    taken = []

    def writer(k):
        rnd = random.Random(k)
        for _ in range(600):
            p = f"{rnd.randrange(5)}.{rnd.choice('ab*')}.{rnd.randrange(5)}"
            if rnd.random() < 0.6:
                trie.subscribe(p, k)
            else:
                trie.unsubscribe(p, k)
        return 600

    def snapshotter(k):
        for i in range(40):
            snap = trie.read_only_snapshot() if i % 2 else trie.snapshot()
            taken.append((snap, snap.subscriptions(), snap.lookup("1.a.2")))
        return 40

    with switch_interval(1e-6):
        run_threads([writer, writer, writer, snapshotter])
    for snap, subs, hit in taken:
        assert snap.subscriptions() == subs
        assert snap.lookup("1.a.2") == hit
    figures.add("stress: snapshots re-read while writers ran", len(taken))


@pytest.mark.parametrize("cache", [False, True], ids=["plain", "cached"])
def test_writable_snapshot_diverges_independently(cache):
    trie = CSTrie(cache=cache)
    for i in range(100):
        trie.subscribe(f"{i % 4}.{i % 7}.x", i)
    snap = trie.snapshot()
    base = trie.subscriptions()

    def left(k):
        for i in range(100):
            trie.unsubscribe(f"{i % 4}.{i % 7}.x", i)
            trie.subscribe(f"{i % 4}.left", i)

    def right(k):
        for i in range(100):
            snap.subscribe(f"{i % 4}.{i % 7}.x", -i - 1)
            snap.subscribe(f"{i % 4}.right", i)

    with switch_interval(1e-6):
        run_threads([left, right])
    trie.check()
    snap.check()
    assert trie.subscriptions() == {f"{j}.left": frozenset(range(j, 100, 4)) for j in range(4)}
    assert set(snap.subscriptions()) == set(base) | {f"{j}.right" for j in range(4)}
    for p, subs in base.items():
        assert snap.subscriptions()[p] == subs | {-i - 1 for i in subs}


@pytest.mark.parametrize("cache", [False, True], ids=["plain", "cached"])
def test_readers_of_an_insert_only_run_never_see_a_subscriber_disappear(cache, figures):
    trie = CSTrie(cache=cache)
    topics = ["a.b.c", "a.x.c", "z.b.c"]
    patterns = ["a.b.c", "a.*.c", "*.b.c", "a.>", ">", "*.*.c"]

    def writer(k):
        for i in range(300):
            trie.subscribe(patterns[(i + k) % len(patterns)], (k, i))
        return 300

    def reader(k):
        last = {t: frozenset() for t in topics}
        reads = 0
        for _ in range(500):
            for t in topics:
                now = trie.lookup(t)
                assert last[t] <= now, f"{t}: lost {set(last[t] - now)}"
                last[t] = now
                reads += 1
        return reads

    with switch_interval(1e-6):
        results = run_threads([writer, writer, reader, reader])
    figures.add("stress: monotone reads checked", results[2] + results[3])
