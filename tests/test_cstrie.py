"""CS-trie specific tests: snapshots, check(), and regressions for known Ctrie-port bugs.

The protocol itself is covered for every matcher by test_conformance / test_state_machine;
this file holds what only the CS-trie has.
"""

from __future__ import annotations

import pytest

from ctrie import CSTrie, ReadOnlyError
from ctrie import faults
from ctrie.gcas import GCAS, gcas_complete, gcas_read
from ctrie.nodes import Branch, CNode, Gen, SNode, TNode
from ctrie.size import WINDOWS


# --- regressions listed in testing.md --------------------------------------------------------


@pytest.mark.parametrize(
    "dialect, wildcard, longer, topic",
    [
        ("nats", "a.>", "a.b.c", "a.b.c"),
        ("nats", "a.>", "a.b", "a.b"),
        ("amqp", "a.#", "a.b.c", "a.b.c"),
        ("amqp", "a.#", "a.b.c", "a"),
        ("mqtt", "a/#", "a/b/c", "a/b/c"),
        ("mqtt", "a/#", "a/b", "a"),
        ("mqtt", "a/b/#", "a/b/c", "a/b"),
    ],
)
def test_multilevel_wildcard_on_internal_node_survives_longer_pattern(dialect, wildcard, longer, topic):
    """Subscribers of a multi-level wildcard on an internal node must not be missed once a
    longer pattern shares its prefix (in either subscription order)."""
    for order in ((wildcard, longer), (longer, wildcard)):
        t = CSTrie(dialect)
        for p in order:
            t.subscribe(p, p)
        assert wildcard in t.lookup(topic), (order, topic)
        t.check()


def test_generations_are_compared_by_identity(monkeypatch):
    """Generations that compare equal must still be different generations: with an __eq__
    that says every two are equal, snapshots must stay independent."""
    assert Gen() is not Gen()
    monkeypatch.setattr(Gen, "__eq__", lambda a, b: True, raising=False)
    monkeypatch.setattr(Gen, "__hash__", lambda a: 0, raising=False)
    t = CSTrie()
    t.subscribe("a.b.c", 1)
    s = t.snapshot()
    s.subscribe("a.b.c", 2)
    t.unsubscribe("a.b.c", 1)
    assert t.lookup("a.b.c") == frozenset()
    assert s.lookup("a.b.c") == {1, 2}
    t.check()
    s.check()


def test_gcas_commit_returns_the_new_node_and_abort_the_old():
    t = CSTrie()
    t.subscribe("a.b", 1)
    t.subscribe("a.c", 1)  # two patterns below 'a': an I-node there, not an S-node
    inode = gcas_read(t._read_root(), t).branches["a"].inode
    old = gcas_read(inode, t)
    new = old.updated("x", frozenset({2}), "*", ">")
    assert GCAS(inode, old, new, t) is True
    assert gcas_read(inode, t) is new

    # Abort: a snapshot renews the root generation between the CAS and the commit. (On
    # the root I-node itself the snapshot would commit the GCAS first: RDCSS reads the
    # root's main node through GCAS_READ.)
    old = new
    newer = old.updated("y", frozenset({3}), "*", ">")
    fired = []

    def hook(site, phase):
        if site == "inode_cas" and phase == "after" and not fired:
            fired.append(1)
            t._swap_root_generation()

    faults.set_fault_hook(hook)
    try:
        assert GCAS(inode, old, newer, t) is False
    finally:
        faults.set_fault_hook(None)
    assert fired
    assert gcas_read(inode, t) is old  # rolled back, and read back as the old node
    assert t.lookup("a.y") == frozenset() and t.lookup("a.x") == {2}
    t.check()


class _SnapshotAfterCAS:
    """An I-node's ``main`` that, after its first successful compare-and-set, lets a
    snapshot renew the root generation before GCAS goes on: the window of the test above,
    reached without a fault hook (with none installed GCAS commits inline, not through
    gcas_complete)."""

    def __init__(self, ref, trie):
        self.ref, self.trie, self.fired = ref, trie, 0

    def get(self):
        return self.ref.get()

    def compare_and_set(self, expected, new):
        ok = self.ref.compare_and_set(expected, new)
        if ok and not self.fired:
            self.fired += 1
            self.trie._swap_root_generation()
        return ok


def _a_write_to_make():
    """A trie holding a.b and a.c, with no fault hook installed (so GCAS commits inline),
    the I-node of 'a', its main node and a successor adding a.y -> 3, not yet written."""
    assert faults.get_fault_hook() is None
    t = CSTrie()
    t.subscribe("a.b", 1)
    t.subscribe("a.c", 1)
    inode = gcas_read(t._read_root(), t).branches["a"].inode
    old = gcas_read(inode, t)
    return t, inode, old, old.updated("y", frozenset({3}), "*", ">")


def test_a_snapshot_between_the_inode_cas_and_the_commit_aborts_the_inline_commit():
    t, inode, old, new = _a_write_to_make()
    inode.main = trap = _SnapshotAfterCAS(inode.main, t)
    assert GCAS(inode, old, new, t) is False  # the root's generation moved: abort
    assert trap.fired
    assert gcas_read(inode, t) is old
    assert t.lookup("a.y") == frozenset()
    # Through subscribe: the write restarts in the new generation, once, and lands there.
    t2 = CSTrie()
    t2.subscribe("a.b", 1)
    t2.subscribe("a.c", 1)
    inode2 = gcas_read(t2._read_root(), t2).branches["a"].inode
    inode2.main = trap2 = _SnapshotAfterCAS(inode2.main, t2)
    t2.subscribe("a.y", 3)
    assert trap2.fired
    assert t2.lookup("a.y") == {3} and len(t2) == 3
    t2.check()


class _HelperAfterRootRead:
    """The trie's root reference. Armed with a pending GCAS (I-node, new main node), its
    next ``get()`` reads the root and then, before handing it back, lets a helper settle
    that GCAS: after a snapshot (``snapshot=True``: the root's generation is no longer the
    I-node's, so the helper aborts it) or not (it commits). The writer's inline commit has
    then read a root of the I-node's generation, and its CAS on ``prev`` comes after the
    helper's verdict."""

    def __init__(self, ref, trie, snapshot):
        self.ref, self.trie, self.snapshot, self.armed = ref, trie, snapshot, None

    def get(self):
        r = self.ref.get()
        if self.armed is not None:
            inode, new = self.armed
            self.armed = None
            self.trie._root = self.ref  # the snapshot's RDCSS and the helper use the real one
            if self.snapshot:
                self.trie._swap_root_generation()
            gcas_complete(inode, new, self.trie)
        return r

    def __getattr__(self, name):
        return getattr(self.ref, name)


@pytest.mark.parametrize("snapshot", [True, False], ids=["helper aborts", "helper commits"])
def test_a_helper_deciding_before_the_inline_commit_is_obeyed(snapshot):
    """GCAS commits inline with one CAS of ``prev`` from the node it replaced, with no read
    before it: the CAS itself must fail once a helper has decided. Here the helper decides
    after the writer's check of the root's generation, which passed. Aborted, the write
    must report False and leave the old node in place (an unconditional commit reports it
    done while the helper has restored the old node: a lost write, and a size one too
    large); committed, it reports True once."""
    t, inode, old, new = _a_write_to_make()
    t._root = trap = _HelperAfterRootRead(t._root, t, snapshot)
    trap.armed = (inode, new)
    committed = GCAS(inode, old, new, t)
    assert trap.armed is None and t._root is trap.ref, "the helper did not run"
    if snapshot:
        assert committed is False
        assert gcas_read(inode, t) is old
        assert t.lookup("a.y") == frozenset() and len(t) == 2
    else:
        assert committed is True
        assert gcas_read(inode, t) is new
        assert t.lookup("a.y") == {3} and len(t) == 3
    t.check()


def test_read_only_snapshot_never_changes():
    t = CSTrie()
    for i in range(50):
        t.subscribe(f"a.{i % 7}.{i}", i)
    ro = t.read_only_snapshot()
    before = ro.subscriptions()
    for i in range(50):
        t.unsubscribe(f"a.{i % 7}.{i}", i)
        t.subscribe(f"a.*.{i}", -i)
    assert ro.subscriptions() == before
    assert ro.lookup("a.3.3") == {3}
    with pytest.raises(ReadOnlyError):
        ro.subscribe("a", 1)
    with pytest.raises(ReadOnlyError):
        ro.unsubscribe("a.3.3", 3)
    assert ro.read_only_snapshot() is ro
    t.check()


# --- the double collect -----------------------------------------------------------------------


class _WritesOnFirstRead(dict):
    """A C-node's branch map whose first membership test (how a walk reads a word: ``w in
    branches`` then ``branches[w]``, see ctrie/_ftdict.py) runs ``action`` first."""

    action = None

    def __contains__(self, key):
        action, self.action = self.action, None
        if action is not None:
            action()
        return super().__contains__(key)


def test_lookup_never_mixes_two_instants():
    """A lookup of 'a.b.c' reads the level of 'a' (where 'a.>' lives) and then the level of
    'a.b'. Between the two reads, 'a.>' is unsubscribed and then 'a.b.c' subscribed.
    Without the double collect the lookup returned both subscribers, a state that never
    existed; with it, the lookup sees the change and reads again."""
    t = CSTrie()
    t.subscribe("a.>", "old")
    t.subscribe("a.b.x", "keep")  # two patterns make the level of 'a.b' an I-node
    t.subscribe("a.b.y", "keep")
    inode_a = gcas_read(t._read_root(), t).branches["a"].inode
    m = gcas_read(inode_a, t)
    branches = _WritesOnFirstRead(m.branches)

    def two_writes():
        assert t.unsubscribe("a.>", "old")
        t.subscribe("a.b.c", "new")

    instrumented = CNode(branches, "*", ">")  # same content (action is not set yet)
    branches.action = two_writes
    inode_a.main.set(instrumented)
    result = t.lookup("a.b.c")
    assert branches.action is None, "the writes did not run inside the lookup"
    assert result in (frozenset({"old"}), frozenset(), frozenset({"new"})), result


# --- check() catches what it promises to ----------------------------------------------------


def _broken(t: CSTrie, how: str) -> None:
    root = t._read_root()
    m = gcas_read(root, t)
    child = m.branches["a"].inode
    if how == "tomb":
        child.main.set(TNode())
    elif how == "empty":
        child.main.set(CNode({}, "*", ">"))
    elif how == "leaf":
        root.main.set(m.updated("z", frozenset(), "*", ">"))
    elif how == "branch-without-child":
        # A word where no pattern goes on must map to its set alone (nodes.Value).
        root.main.set(m.updated("z", Branch(frozenset({1}), None), "*", ">"))  # type: ignore[arg-type]
    elif how == "snode-in-branch":
        # A word with only an S-node must map to the S-node alone (nodes.Value).
        sn = SNode(["q"], frozenset({1}), "*", ">")
        root.main.set(m.updated("z", Branch(frozenset(), sn), "*", ">"))
    elif how == "fwc-goes-on":
        # NATS '>' ends its pattern: the lookup adds its value as a set.
        sn = SNode(["q"], frozenset({1}), "*", ">")
        root.main.set(m.updated(">", Branch(frozenset({1}), sn), "*", ">"))
    elif how == "pending":
        new = m.updated("z", frozenset({1}), "*", ">")
        from cereggii import AtomicRef

        new.prev = AtomicRef(m)
        root.main.set(new)
    elif how == "generation":
        # A child in the root's generation below one of an older generation.
        old = gcas_read(child, t)
        grandchild = old.branches["b"].inode
        child.gen = Gen()
        grandchild.gen = root.gen
    elif how == "cache":
        m.pwc = m.branches["a"]
    elif how == "snode":
        # An S-node left without subscribers.
        old = gcas_read(child, t)
        bb = old.branches["b"]
        sn = gcas_read(bb.inode, t).branches["c"]  # an S-node alone (nodes.Value)
        sn.subs = frozenset()


@pytest.mark.parametrize("how,message", [
    ("tomb", "reachable tomb"), ("empty", "empty C-node"), ("leaf", "without subscribers"),
    ("branch-without-child", "a Branch without a child"), ("fwc-goes-on", "'>' goes on"),
    ("snode-in-branch", "a Branch of an S-node alone"),
    ("pending", "pending GCAS"), ("generation", "generation"), ("cache", "stale"),
    ("snode", "stale pair count|S-node without subscribers")])
def test_check_detects_broken_invariants(how, message):
    t = CSTrie()
    t.subscribe("a.b.c.d", 1)
    t.subscribe("a.b.x", 1)  # 'a' and 'a.b' are I-nodes; 'c.d' stays an S-node
    t.subscribe("a.y", 1)
    t.check()
    _broken(t, how)
    with pytest.raises(AssertionError, match=message):
        t.check()


def test_unsubscribing_everything_restores_the_empty_shape():
    t = CSTrie()
    pats = [f"{a}.{b}.{c}" for a in "ab*" for b in "xy*" for c in "12>"]
    for p in pats:
        t.subscribe(p, 1)
        t.subscribe(p, 2)
    t.check()
    for p in pats:
        assert t.unsubscribe(p, 1) and t.unsubscribe(p, 2)
        t.check()
    assert gcas_read(t._read_root(), t).branches == {}


def test_a_lone_pattern_is_one_s_node_and_expands_where_patterns_part():
    """Path compression: one 5-word pattern costs the root I-node and one S-node; a second
    pattern sharing two words expands the S-node into I-nodes down to where they part, and
    removing both returns the empty shape."""
    t = CSTrie()
    t.subscribe("a.b.c.d.e", 1)
    (b,) = gcas_read(t._read_root(), t).branches.values()
    assert type(b) is SNode and b.words == ["b", "c", "d", "e"]  # the S-node alone: no Branch
    t.subscribe("a.b.x.y", 2)
    a = gcas_read(t._read_root(), t).branches["a"].inode
    ab = gcas_read(gcas_read(a, t).branches["b"].inode, t)
    assert set(ab.branches) == {"c", "x"}
    assert ab.branches["c"].words == ["d", "e"] and ab.branches["x"].words == ["y"]
    assert t.lookup("a.b.c.d.e") == {1} and t.lookup("a.b.x.y") == {2}
    t.check()
    assert t.unsubscribe("a.b.c.d.e", 1) and t.unsubscribe("a.b.x.y", 2)
    t.check()
    assert gcas_read(t._read_root(), t).branches == {}


@pytest.mark.parametrize("topic", ["a.b.c", "a.b.c.d", "a.x"])
def test_a_lookup_meeting_a_tomb_cleans_it(topic):
    """A lookup that meets a tomb reads it as an empty subtree and compresses it out of its
    parent first (the tomb is made by hand here: the I-node of 'a.b' is entombed while the
    branch of 'a' still points to it, as after an unsubscribe that lost the race to clean)."""
    t = CSTrie()
    for p in ("a.b.c", "a.b.d", "a.x", "a.*.c"):
        t.subscribe(p, p)
    a = gcas_read(t._read_root(), t).branches["a"].inode
    ab = gcas_read(a, t).branches["b"].inode
    ab.main.set(TNode())
    t._size.state.increment_and_get(-2 * WINDOWS)  # the pairs the tomb dropped, as a commit counts
    want = {"a.b.c": {"a.*.c"}, "a.b.c.d": set(), "a.x": {"a.x"}}[topic]
    assert t.lookup(topic) == want
    if topic != "a.x":  # 'a.x' never goes down 'b', so it never meets the tomb
        assert "b" not in gcas_read(a, t).branches
        t.check()
