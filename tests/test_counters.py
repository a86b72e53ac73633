"""ctrie.counters: each event is counted where it happens, and only while counters are
installed. Deterministic: the events are forced through the fault hook and a stand-in for an
I-node's AtomicRef, not hoped for from thread timing."""

from __future__ import annotations

import pytest

from ctrie import CSTrie, counters, faults
from ctrie.gcas import gcas_read

# Stand-ins count get() calls: one per read (see conftest.one_get_per_read).
pytestmark = pytest.mark.usefixtures("one_get_per_read")


class _Trip:
    """Stands in for an I-node's AtomicRef: its ``n``-th ``get()`` first runs
    ``actions[n - 1]`` (None: nothing)."""

    def __init__(self, ref, *actions) -> None:
        self.ref, self.actions = ref, list(actions)

    def get(self):
        if self.actions:
            action = self.actions.pop(0)
            if action is not None:
                action()
        return self.ref.get()

    def __getattr__(self, name):
        return getattr(self.ref, name)


def _trie(dialect: str) -> CSTrie:
    t = CSTrie(dialect)
    sep = t.dialect.separator
    for p in (f"a{sep}b", f"a{sep}x{sep}y"):
        t.subscribe(p, "s")
    return t


@pytest.mark.parametrize("dialect", ["nats", "mqtt", "amqp"])
def test_a_lookup_that_walks_again_counts_it(dialect):
    """While the walk of 'a.b' reads the I-node of 'a', a subscribe of '*.b' adds a branch
    the walk reads at the root ('*'): the validation fails and the lookup walks again."""
    t = _trie(dialect)
    sep = t.dialect.separator
    one = "+" if dialect == "mqtt" else "*"
    root = t._read_root()
    inode = gcas_read(root, t).branches["a"].inode
    inode.main = _Trip(inode.main, lambda: t.subscribe(f"{one}{sep}b", "w"))
    with counters.counting() as c:
        got = t.lookup(f"a{sep}b")
    assert got == {"s", "w"}
    n = c.snapshot()
    assert n["revalidate"] == 1 and n["rewalk"] == 1 and n["frozen"] == 0, n


def test_a_lookup_whose_records_all_held_counts_nothing():
    """A write during the walk that moves none of the I-nodes the walk read (it lands at
    I(q), off the path) still moves the content version, so the recorded walk's records are
    re-read (the repair's first pass). None moved: the lookup neither repairs its result
    nor walks again, and counts neither."""
    t = CSTrie("nats")
    for p in ("a.b.c.d", "a.b.c.e", "a.b.x", "a.y", "q.r", "q.s"):
        t.subscribe(p, p)
    inode = t._read_root()
    for w in "abc":
        inode = gcas_read(inode, t).branches[w].inode
    inode.main = _Trip(inode.main, lambda: t.subscribe("q.t", "w"))
    with counters.counting() as c:
        got = t.lookup("a.b.c.d")
    inode.main = inode.main.ref
    assert got == {"a.b.c.d"}
    n = c.snapshot()
    assert n["revalidate"] == 0 and n["rewalk"] == 0 and n["frozen"] == 0, n


def _fail_first_inode_cas():
    """A fault hook that makes the first I-node CAS fail, as if another writer had won."""
    failed: list[str] = []

    def hook(site: str, phase: str):
        if site == "inode_cas" and phase == "before" and not failed:
            failed.append(site)
            return True
        return None

    return hook


@pytest.mark.parametrize("dialect", ["nats", "mqtt", "amqp"])
def test_a_lookup_that_falls_back_to_a_frozen_root_counts_it(dialect):
    """As above, and while the second walk reads 'a', the '*' branch goes away again: two
    failed validations, then the frozen-root walk (counted once, not as a third walk)."""
    t = _trie(dialect)
    sep = t.dialect.separator
    one = "+" if dialect == "mqtt" else "*"
    inode = gcas_read(t._read_root(), t).branches["a"].inode
    # The AMQP walk records its last read too, so its quick check reads 'a' once more.
    skip = (None,) if dialect == "amqp" else ()
    inode.main = _Trip(inode.main, lambda: t.subscribe(f"{one}{sep}b", "w"), *skip,
                       lambda: t.unsubscribe(f"{one}{sep}b", "w"))
    with counters.counting() as c:
        got = t.lookup(f"a{sep}b")
    assert got == {"s"}
    n = c.snapshot()
    assert n["revalidate"] == 2 and n["rewalk"] == 1 and n["frozen"] == 1, n


def test_a_lost_gcas_and_the_retried_write_are_counted():
    t = _trie("nats")
    faults.set_fault_hook(_fail_first_inode_cas())
    try:
        with counters.counting() as c:
            t.subscribe("a.b", "t")
            assert t.unsubscribe("a.b", "t") is True
    finally:
        faults.set_fault_hook(None)
    n = c.snapshot()
    assert n["gcas_fail"] == 1 and n["write_retry"] == 1, n
    assert t.lookup("a.b") == {"s"}


def test_nothing_is_counted_outside_the_block():
    t = _trie("nats")
    with counters.counting() as c:
        pass
    assert counters.installed() is None
    faults.set_fault_hook(_fail_first_inode_cas())
    try:
        t.subscribe("a.c", "u")
    finally:
        faults.set_fault_hook(None)
    assert c.snapshot() == dict.fromkeys(counters.EVENTS, 0)
