"""len() of a CS-trie: O(1) and no snapshot, yet linearizable (see ctrie/size.py).

A counter bumped after each commit is not enough: between a write's commit and its bump, a
lookup can see the write and a later len() not count it. These tests park a writer exactly
there (fault hook, after the commit CAS), show that len() still counts it, and show that the
same schedule catches a counter read without its window check. Histories mixing len() with
writes and lookups go through the linearizability checker.
"""

from __future__ import annotations

import threading

import pytest

from ctrie import CSTrie, faults
from test_linearizability import SEED, make_draw, run_histories
from threads import gil_enabled

pytestmark = pytest.mark.concurrency


def test_len_takes_no_snapshot():
    """len() on a writable trie swaps no root (the snapshot it used to take made the next
    write renew every level it passed) and costs no write: the hook sees no CAS at all."""
    t = CSTrie("mqtt")
    for i in range(200):
        t.subscribe(f"devices/{i}/telemetry", i)
        t.subscribe(f"devices/{i}/status", i)
    root = t._root.get()
    cas_sites: list[str] = []
    faults.set_fault_hook(lambda site, phase: cas_sites.append(site))
    try:
        sizes = [len(t) for _ in range(20)]
    finally:
        faults.set_fault_hook(None)
    assert sizes == [400] * 20
    assert cas_sites == [], f"len() ran {len(cas_sites)} CAS steps: {sorted(set(cas_sites))}"
    assert t._root.get() is root


def test_len_of_a_writable_snapshot_counts_its_start_once():
    t = CSTrie()
    for i in range(50):
        t.subscribe(f"a.{i}.b", i)
    s = t.snapshot()
    t.subscribe("only.in.t", 0)
    s.unsubscribe("a.0.b", 0)
    s.subscribe("only.in.s", 0)
    s.subscribe("only.in.s", 1)
    assert (len(t), len(s)) == (51, 51)
    assert s._size.frozen is None, "the frozen start is still held after being counted"
    s.check()
    t.check()


def _lookup_then_len_beside_a_parked_commit(op: str) -> tuple[frozenset, int, int]:
    """A writer runs ``op`` of ('a.b', 'w') and parks right after its commit CAS, before
    its count. Meanwhile this thread looks 'a.b' up, then calls len(). Returns what the
    lookup saw, what len() said while the writer was parked, and len() afterwards."""
    t = CSTrie()
    t.subscribe("keep", "k")
    if op == "unsubscribe":
        t.subscribe("a.b", "w")
    victim: list[int] = []
    parked = threading.Event()
    release = threading.Event()

    def hook(site, phase):
        if site == "gcas_commit" and phase == "after" and threading.get_ident() in victim:
            victim.clear()  # park once
            parked.set()
            if not release.wait(60):
                raise AssertionError("never released")
        return False

    def writer():
        victim.append(threading.get_ident())
        getattr(t, op)("a.b", "w")

    th = threading.Thread(target=writer, daemon=True)
    faults.set_fault_hook(hook)
    try:
        th.start()
        assert parked.wait(60), "the writer never parked"
        seen = t.lookup("a.b")
        during = len(t)
    finally:
        release.set()
        th.join(60)
        faults.set_fault_hook(None)
    assert not th.is_alive(), "the writer did not finish"
    t.check()
    return seen, during, len(t)


WANT = {"subscribe": (frozenset({"w"}), 2), "unsubscribe": (frozenset(), 1)}


@pytest.mark.parametrize("op", ["subscribe", "unsubscribe"])
def test_len_counts_a_write_that_a_lookup_already_saw(op):
    seen, during, after = _lookup_then_len_beside_a_parked_commit(op)
    lookup_result, size = WANT[op]
    assert seen == lookup_result
    assert during == size, f"the lookup saw {op} but len() then said {during}, not {size}"
    assert after == size


@pytest.mark.parametrize("op", ["subscribe", "unsubscribe"])
def test_a_counter_read_without_its_window_check_is_caught(monkeypatch, op):
    """The mutant reads the bare counter: the schedule above must catch it."""
    import ctrie.size  # here, not at the top: the module is new, and the file must also run on older code

    monkeypatch.setattr(ctrie.size.SizeCounter, "read",
                        lambda self: self.state.get() // ctrie.size.WINDOWS)
    seen, during, after = _lookup_then_len_beside_a_parked_commit(op)
    lookup_result, size = WANT[op]
    assert seen == lookup_result and after == size
    assert during != size, "the bare counter was not caught: the test cannot fail"


LEN_HISTORIES = 300


# A quarter of the operations are len(), instead of the snapshots of the main histories.
_draw_with_len = make_draw(lookups_below=0.75, rest="len")


@pytest.mark.timeout(600)
def test_histories_with_len_are_linearizable(figures):
    tally = run_histories(LEN_HISTORIES, SEED + 7, draw=_draw_with_len)
    build = "GIL" if gil_enabled() else "free-threaded"
    print(f"\nlinearizability with len() ({build}): {tally['histories']} histories, "
          f"{tally['operations']} operations, {tally['violations']} violations, "
          f"{tally['unknown']} unknown")
    figures.add(f"linearizability histories with len() ({build})", tally["histories"])
    assert tally["violations"] == 0, f"first violation:\n{tally['first']}"
    assert tally["unknown"] <= tally["histories"] // 100, tally


def test_two_first_lens_of_a_writable_snapshot_both_count_its_start():
    """Found by review: B's first len() reads ``base`` (None); A's whole first len() lands
    right then, stores ``base`` and drops ``frozen``; B then counted the dropped ``frozen``
    as 0 and stored base = 0 for good. Driven deterministically: a counter whose ``base``
    read runs A's len() inside B's."""
    from ctrie.size import SizeCounter

    t = CSTrie()
    for i in range(10):
        t.subscribe(f"a.{i}", "s")
    snap = t.snapshot()
    results = {}

    class Racy(SizeCounter):
        __slots__ = ("_b", "armed")

        @property
        def base(self):
            v = self._b
            if self.armed and threading.current_thread().name == "B":
                self.armed = False
                a = threading.Thread(target=lambda: results.__setitem__("A", len(snap)), name="A")
                a.start()
                a.join()
            return v

        @base.setter
        def base(self, v):
            self._b = v

    old = snap._size
    racy = Racy.__new__(Racy)
    racy.state, racy.frozen, racy._b, racy.armed = old.state, old.frozen, old.base, True
    snap._size = racy
    b = threading.Thread(target=lambda: results.__setitem__("B", len(snap)), name="B")
    b.start()
    b.join()
    assert not racy.armed, "the interleaving did not happen"
    assert results == {"A": 10, "B": 10} and len(snap) == 10, results
