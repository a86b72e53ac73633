"""The persistent subscriber set (ctrie/subsets.py) against a plain set, as a model.

Random adds and removes drive one set across both of its boundaries (flat -> SubSet past
SUBS_FLAT, back to flat at SUBS_FLAT // 2) many times; after every step the set must agree
with the model on membership (members and non-members), size, iteration and the frozenset
a lookup would return, and must have the representation its size calls for; adding a
member that is already there returns the set itself. Subscribers include values with
colliding hashes (equal hash, unequal value), so leaves that cannot split are exercised
too.
"""

from __future__ import annotations

import random

import pytest
from strategies import DIALECTS

from ctrie import CSTrie, Dialect
from ctrie.subsets import SUBS_FLAT, SubSet, as_frozenset, with_sub, without_sub


class Collide:
    """Unequal values with one hash: they all land in the same slice at every level."""

    __slots__ = ("v",)

    def __init__(self, v: int) -> None:
        self.v = v

    def __hash__(self) -> int:
        return 42

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collide) and other.v == self.v

    def __repr__(self) -> str:
        return f"Collide({self.v})"


def _versions(rnd: random.Random, universe: list, steps: int, high: int):
    """The successive versions of one set under random adds and removes, as (step, set,
    model): it grows to ``high`` members, mostly adding, then shrinks to ``SUBS_FLAT // 4``,
    mostly removing, and again. Adding a member that is already there, or removing one
    that is not, must hand back the same set, which is how a write tells."""
    model: set = set()
    s = frozenset()
    grow = True
    for step in range(steps):
        if len(model) >= high:
            grow = False
        elif len(model) <= SUBS_FLAT // 4:
            grow = True
        if model and (not grow) == (rnd.random() < 0.8):
            x = rnd.choice(list(model))
            s = without_sub(s, x)
            model.discard(x)
        else:
            x = rnd.choice(universe)
            if x in model:
                assert with_sub(s, x) is s, (step, x)
            else:
                assert without_sub(s, x) is s, (step, x)
                s = with_sub(s, x)
                model.add(x)
        yield step, s, model


class Touchy:
    """A subscriber whose ``==`` raises against anything but another Touchy. A set never
    asks it about a value of another hash, so a set of many members holds it."""

    def __eq__(self, other: object) -> bool:
        if type(other) is not Touchy:
            raise TypeError("compared with a foreign value")
        return self is other

    __hash__ = object.__hash__


def test_a_crowded_set_finds_members_as_a_set_finds_them():
    # Past SUBS_FLAT the members sit in tuple leaves, whose C scan calls == on every
    # neighbour whatever its hash; a set compares only members of equal hash.
    from ctrie import CSTrie

    a = Touchy()
    n = 3 * SUBS_FLAT
    s = frozenset({a})
    for i in range(n):
        s = with_sub(s, i)
    assert type(s) is SubSet and len(s) == n + 1
    assert a in s and all(i in s for i in range(n)) and -7 not in s
    assert with_sub(s, a) is s and all(with_sub(s, i) is s for i in range(n))
    assert without_sub(s, -7) is s
    assert all(i not in without_sub(s, i) for i in range(n))
    rest = without_sub(s, a)
    assert a not in rest and as_frozenset(rest) == set(range(n))
    t = CSTrie()
    t.subscribe("p", a)
    for i in range(n):
        t.subscribe("p", i)
    assert t.lookup("p") == {a, *range(n)}
    assert t.unsubscribe("p", a) and t.lookup("p") == set(range(n))
    t.check()


@pytest.mark.parametrize("seed", range(4))
def test_a_subscriber_set_agrees_with_a_set_across_its_boundaries(seed):
    rnd = random.Random(seed)
    universe = [*range(3 * SUBS_FLAT), *(f"s{i}" for i in range(SUBS_FLAT)),
                *(Collide(i) for i in range(40)), -1, -2, 2 ** 64, None]
    conversions = 0
    before: type = frozenset
    for step, s, model in _versions(rnd, universe, 8000, 2 * SUBS_FLAT):
        conversions += type(s) is not before
        before = type(s)
        assert len(s) == len(model), step
        probe = rnd.choice(universe)
        assert (probe in s) == (probe in model), (step, probe)
        if step % 16 == 0:
            assert all(y in s for y in model), step
            assert as_frozenset(s) == model and set(s) == model, step
        if len(model) > SUBS_FLAT:
            assert type(s) is SubSet, step
        elif len(model) <= SUBS_FLAT // 2:
            assert type(s) is frozenset, step
    assert conversions >= 4, "the walk never crossed the boundaries both ways"


def test_a_lookup_of_a_crowded_pattern_returns_a_frozenset_of_every_subscriber():
    from ctrie import CSTrie

    t = CSTrie()
    for i in range(3 * SUBS_FLAT):
        t.subscribe("stock.>", i)
    r = t.lookup("stock.nyse")
    assert type(r) is frozenset and r == set(range(3 * SUBS_FLAT))
    for i in range(0, 3 * SUBS_FLAT, 2):
        assert t.unsubscribe("stock.>", i)
    assert t.lookup("stock.nyse") == set(range(1, 3 * SUBS_FLAT, 2))
    assert type(t.subscriptions()["stock.>"]) is frozenset
    t.check()


def _members(s) -> list:
    """A SubSet's members read from its nodes (not from its cached frozenset, which would
    hide a node changed after the set was built); a frozenset's as they are."""
    if type(s) is frozenset:
        return list(s)
    return [x for leaf in s.leaves() for x in leaf]


def test_no_version_of_a_subscriber_set_changes_when_later_versions_are_written():
    # Persistence: a branch keeps a set while its successors are built from it, and a
    # snapshot or a lookup may hold any old version. Every version kept, then checked at
    # the end against the model of its own step: a write that changed a node it shares
    # with its predecessor (instead of copying it) changes an old version.
    universe = [*range(1500), *(Collide(i) for i in range(60))]
    history = [(s, frozenset(model))
               for _, s, model in _versions(random.Random(7), universe, 4000, 1200)]
    assert any(type(v) is SubSet and len(v) > 1000 for v, _ in history)
    for step, (v, m) in enumerate(history):
        got = _members(v)
        assert len(got) == len(m) == len(v) and set(got) == m, f"version {step} changed"
        assert all(x in v for x in m), f"version {step} lost a member"


def test_a_subscriber_coming_and_going_beside_a_full_leaf_splits_it_once(monkeypatch):
    # 1,024 int members (an int hashes to itself): 32 leaves of exactly 32 members under
    # the root. A fresh member of leaf 5 splits it; removing that member must not fold the
    # split leaf back at once, or every later add there splits it again (a write each time
    # pays for a split and a fold).
    from ctrie import subsets

    splits = []
    real = subsets._split
    monkeypatch.setattr(subsets, "_split", lambda *a: splits.append(a) or real(*a))
    s = SubSet.of(frozenset(range(1024)))
    assert [len(leaf) for leaf in s.leaves()] == [32] * 32
    for k in range(50):
        x = 32 * (10 ** 6 + k) + 5
        s = with_sub(s, x)
        s = without_sub(s, x)
    assert len(splits) == 1, f"{len(splits)} splits for 50 members coming and going"
    assert as_frozenset(s) == set(range(1024))


def _crowded(dialect: Dialect, copy: str, form: str = "wildcard") -> tuple[CSTrie, str, str, set]:
    """A trie whose lookup of its topic takes two sets, one of them a crowd (a SubSet):
    the crowd of ``stock.>`` (``form`` "wildcard": a set of the level below 'stock') beside
    two literal patterns, so that the walk reads three I-nodes; or (``form`` "S-node") the
    crowd of ``stock.nyse.ibm`` alone below 'stock', so an S-node's set, beside
    ``*.nyse.ibm``. Returns (trie, the crowded pattern, the topic, the expected answer)."""
    from ctrie.gcas import gcas_read

    sep, single, multi = dialect.separator, dialect.single, dialect.multi
    topic = sep.join(["stock", "nyse", "ibm"])
    crowd = sep.join(["stock", multi]) if form == "wildcard" else topic
    t: CSTrie = CSTrie(dialect)
    if form == "wildcard":  # (the others first: the crowd then grows in a level's set)
        t.subscribe(topic, "other")
        t.subscribe(sep.join(["stock", "nyse", "msft"]), "msft")
    for i in range(SUBS_FLAT + 1):
        t.subscribe(crowd, i)
    if form == "wildcard":
        stock = gcas_read(t._read_root(), t).branches["stock"].inode
        crowd_set = gcas_read(stock, t).branches[multi]
    else:
        t.subscribe(sep.join([single, "nyse", "ibm"]), "other")
        crowd_set = gcas_read(t._read_root(), t).branches["stock"].subs  # an S-node's
    assert type(crowd_set) is SubSet, "no SubSet to union"
    if copy == "read-only snapshot":
        t = t.read_only_snapshot()
    elif copy == "snapshot":
        t = t.snapshot()
    elif copy == "snapshot of a read-only snapshot":  # (CSTrie._copy)
        t = t.read_only_snapshot().snapshot()
    return t, crowd, topic, set(range(SUBS_FLAT + 1)) | {"other"}


def _iterating_is_a_failure(monkeypatch) -> list:
    """SubSet.__iter__ made to record its callers: a union handed a SubSet iterates it."""
    calls: list = []
    real = SubSet.__iter__

    def spy(self):
        calls.append(self.size)
        return real(self)

    monkeypatch.setattr(SubSet, "__iter__", spy)
    return calls


@pytest.mark.parametrize("form", ["wildcard", "S-node"])
@pytest.mark.parametrize("copy", ["the trie", "snapshot", "read-only snapshot",
                                  "snapshot of a read-only snapshot", "frozen fallback"])
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_a_union_takes_a_crowded_set_as_its_frozenset(dialect, copy, form, monkeypatch):
    """A lookup that takes a SubSet and another set unions them. Handed the SubSet itself,
    ``frozenset.union`` iterates it through ``SubSet.__iter__`` and hashes every member
    again (2-5x slower than merging its cached frozenset); the union must take the
    frozenset. Snapshots too: they share the trie's sets; and the fallback walk of a
    lookup that failed validation, which walks a read-only trie of its own."""
    t, _, topic, expected = _crowded(dialect, copy if copy != "frozen fallback" else "the trie",
                                     form)
    calls = _iterating_is_a_failure(monkeypatch)
    for _ in range(3):  # recorded walks first, then the unrecorded one
        got = t._frozen_lookup(topic) if copy == "frozen fallback" else t.lookup(topic)
        assert got == expected
    assert calls == [], f"the union iterated a SubSet of {calls[0]} members"


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_a_trie_that_never_held_a_crowd_unions_without_looking_for_one(dialect, monkeypatch):
    """The other side of the flag: a lookup of several small sets in a trie that never
    held a SubSet unions them at once, without union_of's scan for one."""
    import ctrie.cstrie as cstrie_module

    sep, single = dialect.separator, dialect.single
    t: CSTrie = CSTrie(dialect)
    for i in range(SUBS_FLAT):  # the most a frozenset holds
        t.subscribe(sep.join(["a", "b"]), i)
    t.subscribe(sep.join([single, "b"]), "w")
    used: list = []
    monkeypatch.setattr(cstrie_module, "union_of", lambda hits: used.append(hits))
    for snap in (t, t.snapshot(), t.read_only_snapshot()):
        assert snap.lookup(sep.join(["a", "b"])) == set(range(SUBS_FLAT)) | {"w"}
    assert used == [], "union_of called in a trie without a SubSet"


def test_a_repaired_walk_takes_a_crowded_set_as_its_frozenset(monkeypatch, one_get_per_read):
    """The same for a walk whose validation repairs it: a subscriber joins the crowd right
    after the walk read the level of 'stock'; the repair swaps in the new SubSet and unions
    (NATS and MQTT repair; AMQP walks again, and its union is the one tested above)."""
    import ctrie.cstrie as cstrie_module
    from test_cache import _ReadThen

    from ctrie.counters import counting
    from ctrie.gcas import gcas_read

    t, crowd, topic, expected = _crowded(Dialect.NATS, "the trie")
    stock = gcas_read(t._read_root(), t).branches["stock"].inode
    stock.main = _ReadThen(stock.main, lambda: t.subscribe(crowd, "late"))
    monkeypatch.setattr(cstrie_module, "_get", lambda r: r.get())  # the stand-in too
    calls = _iterating_is_a_failure(monkeypatch)
    with counting() as c:
        got = t.lookup(topic)
    stock.main = stock.main.ref
    n = c.snapshot()
    assert (n["revalidate"], n["rewalk"]) == (1, 0), n  # the repair, not a second walk
    assert got == expected | {"late"}
    assert calls == [], f"the repair's union iterated a SubSet of {calls[0]} members"
    t.check()
