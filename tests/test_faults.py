"""Fault injection at every CAS site of the CS-trie (ctrie.faults), and lock-freedom made
observable: with one thread parked in the middle of a GCAS, the others keep completing."""

from __future__ import annotations

import random
import threading
import time

import pytest

from ctrie import CSTrie, faults
from threads import run_threads, switch_interval

pytestmark = pytest.mark.concurrency

THREADS = 4
PATTERNS_PER_THREAD = 60


def _patterns(k: int) -> list[str]:
    # Threads share prefixes (and so I-nodes) but never a (pattern, subscriber) pair.
    return [f"{i % 3}.{'*' if i % 5 == 0 else i % 7}.{i}" for i in range(PATTERNS_PER_THREAD)]


class _Counting:
    """A hook that counts its calls per site and applies ``action`` to some of them."""

    def __init__(self, action, seed: int) -> None:
        self.action = action
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}
        self.injected = 0
        self.rnd = random.Random(seed)

    def __call__(self, site: str, phase: str):
        with self.lock:
            self.calls[site] = self.calls.get(site, 0) + 1
            draw = self.rnd.random()
        fail = self.action(site, phase, draw)
        with self.lock:
            self.injected += 1 if fail is not False else 0
        return bool(fail)


def _churn(trie: CSTrie, rounds: int = 2):
    def worker(k: int) -> int:
        ops = 0
        for _ in range(rounds):
            for p in _patterns(k):
                trie.subscribe(p, k)
                ops += 1
            for p in _patterns(k):
                assert k in trie.lookup(p.replace("*", "x")), p
                ops += 1
            for p in _patterns(k):
                assert trie.unsubscribe(p, k), p
                ops += 1
        return ops

    return sum(run_threads([worker] * THREADS, timeout=120))


@pytest.mark.parametrize("kind", ["yield", "spurious failure"])
def test_faults_at_every_cas_site_lose_nothing(kind, figures):
    def action(site, phase, draw):
        if kind == "yield":
            time.sleep(0)
            return None  # injected (a yield), but the CAS goes ahead
        return phase == "before" and draw < 0.3  # 30% of CAS attempts fail spuriously

    hook = _Counting(action, seed=7)
    trie = CSTrie()
    faults.set_fault_hook(hook)
    try:
        with switch_interval(1e-6):
            ops = _churn(trie)
            # Snapshots exercise the RDCSS site.
            for _ in range(20):
                trie.read_only_snapshot()
                trie.snapshot()
    finally:
        faults.set_fault_hook(None)
    trie.check()
    assert len(trie) == 0
    assert set(hook.calls) == set(faults.SITES), hook.calls
    print(f"\nfault injection ({kind}): {ops} operations, {hook.injected} faults injected, "
          f"hook calls per site {hook.calls}")
    assert hook.injected > 100
    figures.add(f"faults injected ({kind})", hook.injected)
    figures.add(f"operations under faults ({kind})", ops)


def test_parked_thread_mid_gcas_does_not_block_the_others(figures):
    """One thread parks between its GCAS's CAS and its commit (the node is pending). The
    others must complete at least 10,000 operations meanwhile, helping that GCAS to finish
    when they meet it: that is lock-freedom, made observable."""
    trie = CSTrie()
    parked = threading.Event()
    release = threading.Event()
    victim: list[int] = []

    def hook(site, phase):
        if site == "gcas_commit" and phase == "before" and threading.get_ident() in victim:
            victim.clear()  # park once
            parked.set()
            assert release.wait(120), "never released"
        return False

    def parker(k: int) -> int:
        victim.append(threading.get_ident())
        trie.subscribe("a.b.c", "parked")  # parks mid-GCAS
        return 1

    done = [0] * 3

    def worker(k: int) -> int:
        assert parked.wait(60), "the parker never parked"
        rnd = random.Random(k)
        n = 0
        while n < 4000:
            p = f"a.{rnd.choice('b*')}.{rnd.randrange(20)}"
            trie.subscribe(p, k)
            trie.lookup("a.b.c")
            trie.unsubscribe(p, k)
            n += 3
        done[k - 1] = n
        return n

    faults.set_fault_hook(hook)
    try:
        threads = [threading.Thread(target=parker, args=(0,), daemon=True)]
        threads[0].start()
        results = run_threads([lambda k: worker(k + 1)] * 3, timeout=120)
        others = sum(results)
        assert not release.is_set()
        # The parked subscribe is already visible: another thread committed its GCAS.
        assert "parked" in trie.lookup("a.b.c")
        release.set()
        threads[0].join(60)
        assert not threads[0].is_alive()
    finally:
        release.set()
        faults.set_fault_hook(None)
    print(f"\nparked thread: the other 3 threads completed {others} operations meanwhile")
    figures.add("operations completed while a thread was parked mid-GCAS", others)
    assert others >= 10_000
    trie.check()
    assert trie.subscriptions() == {"a.b.c": frozenset({"parked"})}
