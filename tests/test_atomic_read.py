"""The second read of ctrie._atomic: a ``get()`` that returns an object never stored in the
reference (cereggii 1.0.1 on a free-threaded build, when the value's memory was reused) must
not reach the trie's logic.

The bad ``get()`` is made deterministic by a stand-in for an I-node's reference whose first
``get()`` returns a C-node of another trie, as the race did (stop 40 saw an inbox level read
a root's C-node, and the root an inbox's). The double read is forced on (conftest's
``double_read``: what a free-threaded build runs), so that these tests run on both builds. With it forced off, as
before the fix, the unsubscribe below returns False for a stored pair and the lookup
misses a subscriber: the failures the churn test of tests/test_tombs.py met at random.
"""

from __future__ import annotations

import pytest
from strategies import DIALECTS

from linearizability import Op, check, make_spec
from test_cache import _ReadThen
from test_lookup_validation import (_inode_at, _recorded_lookup, _TrippingRef, _unseen_by,
                                     _writes)

import ctrie._atomic as atomic
from ctrie import CSTrie, Dialect, matches
from ctrie.gcas import GCAS, gcas_read
from ctrie.nodes import CNode

SPEC = make_spec(lambda p, t: matches(p, t, "nats"))


class _ForeignOnce:
    """Stands in for an AtomicRef: its ``at``-th ``get()`` returns ``foreign``, an object
    never stored in it; the others read the reference. Reads made while ``paused`` (an
    adversary's writes) are neither counted nor fooled."""

    paused = False

    def __init__(self, ref, foreign, at: int = 1) -> None:
        self.ref, self.foreign, self.at, self.calls = ref, foreign, at, 0

    def get(self):
        if self.paused:
            return self.ref.get()
        self.calls += 1
        return self.foreign if self.calls == self.at else self.ref.get()

    def __getattr__(self, name):
        return getattr(self.ref, name)


def test_read_returns_only_a_value_two_gets_agree_on(double_read):
    class Ref:
        def __init__(self, values):
            self.values = values

        def get(self):
            return self.values.pop(0) if len(self.values) > 1 else self.values[0]

    stored, foreign = object(), object()
    assert atomic.read(Ref([foreign, stored])) is stored
    assert atomic.read(Ref([foreign, stored, stored])) is stored
    assert atomic.read(Ref([stored, foreign, stored])) is stored  # the second get was wrong
    assert atomic.read(Ref([stored])) is stored


def _trie(dialect: Dialect):
    """A trie whose level below 'a' is an I-node, that level's I-node, a foreign C-node (the
    root C-node of another trie), and the separator."""
    sep = dialect.separator
    t: CSTrie = CSTrie(dialect)
    t.subscribe(sep.join("abc"), "s1")
    t.subscribe(sep.join("ax"), "s2")
    other: CSTrie = CSTrie(dialect)
    other.subscribe(sep.join("qr"), "z")
    a = gcas_read(t._read_root(), t).branches["a"].inode
    return t, a, gcas_read(other._read_root(), other), sep


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_an_unsubscribe_that_reads_a_foreign_node_first_still_finds_its_pair(dialect, double_read):
    t, a, foreign, sep = _trie(dialect)
    a.main = _ForeignOnce(a.main, foreign)
    assert t.unsubscribe(sep.join("abc"), "s1") is True
    a.main = a.main.ref
    assert t.lookup(sep.join("abc")) == frozenset()
    t.check()


@pytest.mark.parametrize("walk", ["recorded", "unrecorded"])
@pytest.mark.parametrize("at", [1, 2], ids=["first get", "second get"])
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_a_lookup_that_reads_a_foreign_node_answers_from_the_trie(dialect, at, walk, double_read):
    """Also when the wrong object comes second (the double read must not take the second
    get's value), and in the unrecorded walk that quiet lookups lead to."""
    t, a, foreign, sep = _trie(dialect)
    if walk == "unrecorded":
        for _ in range(4):
            assert t.lookup(sep.join("ax")) == {"s2"}
    a.main = _ForeignOnce(a.main, foreign, at)
    assert t.lookup(sep.join("ax")) == {"s2"}
    a.main = a.main.ref


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_a_subscribe_that_reads_a_foreign_node_first_stores_its_pair(dialect, double_read):
    t, a, foreign, sep = _trie(dialect)
    a.main = _ForeignOnce(a.main, foreign)
    t.subscribe(sep.join("ay"), "s3")
    a.main = a.main.ref
    assert t.lookup(sep.join("ay")) == {"s3"}
    assert t.subscriptions() == {sep.join("abc"): {"s1"}, sep.join("ax"): {"s2"},
                                 sep.join("ay"): {"s3"}}
    t.check()


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_a_subscribe_does_not_follow_a_foreign_node_of_the_same_trie(dialect, double_read):
    """The foreign C-node is another level of the same trie (same generation, so the walk
    would not restart), with a branch of the word the subscribe follows: taken, the pair
    would be stored below 'q' (found by review)."""
    sep = dialect.separator
    t: CSTrie = CSTrie(dialect)
    for pat in ("abc", "ax", "qyz", "qyv", "qw"):
        t.subscribe(sep.join(pat), pat)
    root = gcas_read(t._read_root(), t)
    a = root.branches["a"].inode
    a.main = _ForeignOnce(a.main, gcas_read(root.branches["q"].inode, t))
    t.subscribe(sep.join("ayw"), "s3")
    a.main = a.main.ref
    assert t.lookup(sep.join("ayw")) == {"s3"}
    assert sep.join("qyw") not in t.subscriptions()
    t.check()


@pytest.mark.parametrize("op", ["lookup", "unsubscribe"])
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_an_operation_that_reads_a_foreign_root_answers_from_the_trie(dialect, op, double_read):
    sep = dialect.separator
    t: CSTrie = CSTrie(dialect)
    t.subscribe(sep.join("ax"), "s2")
    other: CSTrie = CSTrie(dialect)
    other.subscribe(sep.join("qq"), "z")
    t._root = _ForeignOnce(t._root, other._read_root())
    got = t.lookup(sep.join("ax")) if op == "lookup" else t.unsubscribe(sep.join("ax"), "s2")
    t._root = t._root.ref
    assert got == ({"s2"} if op == "lookup" else True)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_reads_of_a_split_levels_kids_answer_from_the_trie(dialect, double_read):
    """The kid leaves of a wide level, each read wrong once: a lookup and an unsubscribe."""
    sep = dialect.separator
    t: CSTrie = CSTrie(dialect)
    for i in range(200):
        t.subscribe(sep.join(["a", f"w{i}"]), i)
    top = gcas_read(gcas_read(t._read_root(), t).branches["a"].inode, t)
    assert top.kids is not None, "no split level"
    _, _, foreign, _ = _trie(dialect)
    kids = [k for k in top.kids if k is not None]
    for k in kids:
        k.main = _ForeignOnce(k.main, foreign)
    got = t.lookup(sep.join(["a", "w7"]))
    for k in kids:
        k.main = _ForeignOnce(k.main.ref, foreign)
    found = t.unsubscribe(sep.join(["a", "w9"]), 9)
    for k in kids:
        k.main = k.main.ref
    assert got == {7} and found is True
    t.check()


def test_a_gcas_that_reads_an_old_root_still_aborts_after_a_snapshot(double_read):
    """GCAS's inlined commit reads the root. Read wrong as the root from before a snapshot
    (of the I-node's generation), it would commit a write into a level the snapshot shares
    (found by review)."""
    t: CSTrie = CSTrie()
    for pat in ("a.b.c", "a.x"):
        t.subscribe(pat, pat)
    old_root = t._read_root()
    a = gcas_read(old_root, t).branches["a"].inode
    m = gcas_read(a, t)
    snap = t.read_only_snapshot()
    new = m.removed("x", t._single, t._multi)
    t._root = _ForeignOnce(t._root, old_root)
    try:
        committed = GCAS(a, m, new, t)
    finally:
        t._root = t._root.ref
    assert committed is False
    assert snap.lookup("a.x") == {"a.x"}


class _Touchy:
    """What a bad read may return: any object, here one whose ``==`` raises."""

    def __eq__(self, other):
        raise AssertionError("a validation compared a bad read with ==")

    __hash__ = object.__hash__


@pytest.mark.parametrize("write", [False, True], ids=["quiet", "a write during the walk"])
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_a_walks_checks_compare_by_identity(dialect, write, double_read):
    """A walk of four I-nodes records three. Its first check, the version's test, re-reads
    the first of them (the root); with a write during the walk the version has moved and
    that test fails before it, and the records are re-read instead, in C (in NATS and MQTT
    the repair's first pass). Either way the third get() of the root is a bad read: it must
    count as "changed", never reach ``__eq__`` (found by review: the check compared lists
    with ``!=``; the second case by the review of 271ca5b: the first alone no longer
    reached the records)."""
    sep = dialect.separator
    t: CSTrie = CSTrie(dialect)
    for pat in ("abcd", "abce", "abx", "ay", "z", "qr", "qs"):
        t.subscribe(sep.join(pat), pat)
    root = t._read_root()
    abc = _inode_at(t, "a.b.c")
    abc_ref = abc.main
    # The walk reads the root's main twice (the double read), then a check re-reads it.
    bad = root.main = _ForeignOnce(root.main, _Touchy(), at=3)
    if write:  # at I(q) only: no I-node the walk reads moves
        abc.main = _ReadThen(abc_ref, _unseen_by(bad, lambda: t.subscribe(sep.join("qt"), "qt")))
    got = t.lookup(sep.join("abcd"))
    calls = bad.calls
    root.main, abc.main = bad.ref, abc_ref
    # (A quiet AMQP walk re-reads no I-node: its version's test reads the version alone.)
    if write or dialect.value != "amqp":
        assert calls >= 3, "the bad read was never made"
    assert got == {"abcd"}


def _copy_of(m: CNode) -> CNode:
    """A C-node equal to ``m`` field for field that was never stored anywhere: what a bad
    read returns when the freed node's memory holds a node of the same shape."""
    c = CNode.__new__(CNode)
    for cls in CNode.__mro__:
        for name in getattr(cls, "__slots__", ()):
            setattr(c, name, getattr(m, name))
    return c


def test_a_repair_confirms_a_moved_record_before_judging_it(double_read):
    """The repair's pass re-reads its records in one batch; on a free-threaded build each
    record that reads as moved is read again (ctrie._atomic) before it is judged. Here the
    bad read returns a copy of the very node the walk read: same branches, never stored.
    The walk of 'p.a.b.c' reads I(p.a.*) last; at that read W1 unsubscribes 'p.a.b.c' (a
    part of I(p.a) the walk used) and W2 subscribes 'p.a.*.c' -> z, which the read sees.
    Judged as read, the copy would pass for I(p.a) and the lookup would answer 1 and z
    together, which held at no instant (W1 came before W2); confirmed, the real node shows
    'b' gone, and the lookup walks again."""
    t: CSTrie = CSTrie()
    initial = {("p.a.b.c", 1), ("p.a.*.c", 2), ("p.a.*.d", 2), ("p.q", 9)}
    for p, s in sorted(initial, key=str):
        t.subscribe(p, s)
    pa = _inode_at(t, "p.a")
    walked = gcas_read(pa, t)
    star = walked.pwc.inode
    history: list[Op] = []
    # I(p.a): the walk's two gets (the double read), then the repair's first pass (three
    # records: the root, p, p.a) gets the copy; the writers' own reads of it go past.
    bad = pa.main = _ForeignOnce(pa.main, _copy_of(walked), at=3)
    writes = _writes(t, [("unsub", "p.a.b.c", 1), ("sub", "p.a.*.c", "z")], history)
    star.main = _TrippingRef(star.main, {1: _unseen_by(bad, writes)})
    got = _recorded_lookup(t, "p.a.b.c", history)
    calls = bad.calls
    star.main, pa.main = star.main.ref, bad.ref
    assert calls >= 3, "the bad read was never made"
    assert check(history, SPEC, initial=frozenset(initial)) is True, (got, history)
    assert got == {2, "z"}, got
    t.check()
