"""Tombs never outlive quiescence, whatever snapshots land meanwhile (api.md: "once no
operation runs, check() passes: no reachable tomb, no empty C-node below the root").

An unsubscribe that empties a non-root C-node entombs its I-node and then compresses the tomb
out of the parent. A snapshot landing before that clean-up freezes the parent, so the GCAS
fails; renewal then copies the tomb into the new generation, and in a word-keyed trie nobody
may walk that path again. These tests drive that hazard deterministically (a snapshot taken
from the fault hook at the clean-up's GCAS) and under real threads (inbox churn beside a
monitor that snapshots).
"""

from __future__ import annotations

import threading
import time

import pytest

from ctrie import CSTrie, faults
from ctrie.gcas import gcas_read
from ctrie.nodes import CNode, INode, SNode, child_of
from threads import run_threads, switch_interval

pytestmark = pytest.mark.concurrency

# Two patterns per inbox: each '_INBOX.<n>' gets an I-node of its own (one pattern alone
# would sit in an S-node, which has no tomb to leak).
INBOX_SUFFIXES = ("reply", "*")


def shape(trie: CSTrie) -> tuple[int, int, int, int]:
    """(I-nodes, C-node branches, S-nodes, tombs) reachable from the root."""
    inodes = branches = snodes = tombs = 0
    stack = [trie._read_root()]
    while stack:
        inode = stack.pop()
        inodes += 1
        m = gcas_read(inode, trie)
        if type(m) is not CNode:
            tombs += 1
            continue
        stack.extend(k for k in (getattr(m, "kids", None) or ()) if k is not None)  # hash levels
        for b in m.branches.values():
            branches += 1
            c = child_of(b)
            if type(c) is SNode:
                snodes += 1
            elif type(c) is INode:
                stack.append(c)
    return inodes, branches, snodes, tombs


# The clean-up of the unsubscribe below: its 1st I-node CAS entombs 'a.x', left with one
# pattern, holding it as the S-node 'err' (the linearization point); the 2nd compresses that
# tomb into 'a', which, left with one pattern too, is entombed holding 'x.err'; the 3rd
# compresses 'a' into the root. (Contraction: the trie ends as if 'a.x.err' alone had been
# subscribed.)
SCRIPT_SUBSCRIBE = ["keep.me", "a.x.reply", "a.x.err"]
SCRIPT_UNSUBSCRIBE = ["a.x.reply"]


def _run_script(trie: CSTrie) -> None:
    for p in SCRIPT_SUBSCRIBE:
        trie.subscribe(p, "s")
    for p in SCRIPT_UNSUBSCRIBE[:-1]:
        assert trie.unsubscribe(p, "s")


@pytest.mark.parametrize("at_cas", [2, 3], ids=["before compressing a.x", "before compressing a"])
@pytest.mark.parametrize("how", ["read_only_snapshot", "snapshot", "subscriptions"])
def test_snapshot_at_the_cleanup_gcas_leaves_no_tomb(at_cas, how):
    twin = CSTrie()  # the same operations, no snapshot: the shape to come back to
    _run_script(twin)
    assert twin.unsubscribe(SCRIPT_UNSUBSCRIBE[-1], "s")

    trie = CSTrie()
    _run_script(trie)
    calls = 0
    taken = []

    def hook(site, phase):
        nonlocal calls
        if site == "inode_cas" and phase == "before" and not taken:
            calls += 1
            if calls == at_cas:
                taken.append(None)  # before the snapshot: its RDCSS calls the hook too
                taken[0] = getattr(trie, how)()
        return False

    faults.set_fault_hook(hook)
    try:
        assert trie.unsubscribe(SCRIPT_UNSUBSCRIBE[-1], "s")
    finally:
        faults.set_fault_hook(None)
    assert taken and taken[0] is not None, f"the hook saw only {calls} I-node CASes"
    trie.check()
    assert shape(trie) == shape(twin)
    assert trie.subscriptions() == twin.subscriptions() == {"keep.me": frozenset({"s"}),
                                                            "a.x.err": frozenset({"s"})}
    fresh = CSTrie()
    for p in ("keep.me", "a.x.err"):
        fresh.subscribe(p, "s")
    assert shape(trie) == shape(fresh), "not contracted back to the fresh shape"


CHURN_SECONDS = 3.0
CHURN_MAX_INBOXES = 200_000  # per thread: the time bound ends the loop first


def test_inbox_churn_beside_a_snapshotting_monitor_ends_empty(figures):
    """Two threads churn NATS inboxes while a third calls len() and subscriptions() in a
    loop (subscriptions() reads a snapshot, so snapshots keep landing inside the
    churners' clean-ups). Once quiet, no tomb and no '_INBOX' branch may be left."""
    trie = CSTrie()
    trie.subscribe("keep.me", "s")
    done = threading.Event()
    reads = [0]

    def churner(k: int) -> int:
        n = 0
        deadline = time.monotonic() + CHURN_SECONDS
        while n < CHURN_MAX_INBOXES and time.monotonic() < deadline:
            pats = [f"_INBOX.{k}x{n}.{s}" for s in INBOX_SUFFIXES]
            for p in pats:
                trie.subscribe(p, k)
            for p in pats:
                assert trie.unsubscribe(p, k), p
            n += 1
        return n

    def monitor(k: int) -> int:
        while not done.is_set() and reads[0] < 10 * CHURN_MAX_INBOXES:
            assert len(trie) >= 1
            if reads[0] % 2:
                assert "keep.me" in trie.subscriptions()
            reads[0] += 1
        return reads[0]

    def churn_then_stop(k: int) -> int:
        try:
            return churner(k)
        finally:
            if k == 1:
                done.set()

    with switch_interval(1e-4):
        results = run_threads([churner, churn_then_stop, monitor], timeout=CHURN_SECONDS + 60)
    inboxes = results[0] + results[1]
    print(f"\ninbox churn: {inboxes} inboxes churned beside {results[2]} len()/subscriptions() "
          f"calls; shape {shape(trie)}")
    figures.add("inboxes churned beside a snapshotting monitor", inboxes)
    trie.check()
    root = gcas_read(trie._read_root(), trie)
    assert "_INBOX" not in root.branches, f"not back to the empty shape: {shape(trie)}"
    assert len(trie) == 1
