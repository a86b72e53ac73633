"""CSTrie(cache=True): the result cache's protocol (ctrie/cache.py) under the two windows the
naive designs get wrong, driven deterministically and each shown failing on the naive
variant; snapshots never serve each other's answers; memory stays bounded."""

from __future__ import annotations

import pytest

from ctrie import CSTrie, faults
from ctrie.cache import ResultCache
from ctrie.gcas import gcas_read
from ctrie.size import WINDOWS

# Stand-ins count get() calls: one per read (see conftest.one_get_per_read).
pytestmark = pytest.mark.usefixtures("one_get_per_read")


def _uncached(t: CSTrie, topic: str) -> frozenset:
    """A lookup that walks the trie, whatever its cache holds."""
    return CSTrie.lookup(t, topic)


class _BumpAfterTheCommit:
    """The naive variant of a trie's content version: no window; the version moves on
    after the write committed. Stands in for the counter (GCAS adds to it with ``+=``)."""

    def __init__(self, real) -> None:
        self.real = real

    def __iadd__(self, n: int):
        if n == WINDOWS - 1:  # the close of a committed write: only the version moves
            self.real += WINDOWS
        return self

    def get(self) -> int:
        return self.real.get()


def _bump_after_the_commit(t: CSTrie) -> None:
    t._version = t._cache.state = _BumpAfterTheCommit(t._version)


@pytest.mark.parametrize("variant", ["as is", "version bumped after the commit"])
def test_a_hit_never_serves_a_set_a_committed_write_replaced(variant):
    """'a.*' -> 1 is cached for 'a.b'. Right after subscribe('a.b', 2) commits (the fault
    hook's 'gcas_commit'/'after'), one reader walks the trie and sees {1, 2}; a lookup that
    begins after that one ended must not answer {1} from the cache."""
    t = CSTrie(cache=True)
    if variant != "as is":
        _bump_after_the_commit(t)
    t.subscribe("a.*", 1)
    assert t.lookup("a.b") == {1} and t.lookup("a.b") == {1}  # cached
    seen: list = []

    def hook(site: str, phase: str):
        if site == "gcas_commit" and phase == "after" and not seen:
            seen.append(_uncached(t, "a.b"))
            seen.append(t.lookup("a.b"))
        return None

    faults.set_fault_hook(hook)
    try:
        t.subscribe("a.b", 2)
    finally:
        faults.set_fault_hook(None)
    assert seen[0] == {1, 2}
    if variant == "as is":
        assert seen[1] == {1, 2}
    else:
        assert seen[1] == {1}, "the schedule no longer exposes the variant"


class _ReadThen:
    """Stands in for an I-node's AtomicRef: the first ``get()`` reads, runs ``action``, then
    returns what it read (the write lands right after the walk's read of that node)."""

    def __init__(self, ref, action) -> None:
        self.ref, self.action = ref, action

    def get(self):
        value = self.ref.get()
        action, self.action = self.action, None
        if action is not None:
            action()
        return value

    def __getattr__(self, name):
        return getattr(self.ref, name)


def _store_what_the_walk_found(self, topic, s0, result):
    """The naive variant of ResultCache.store: the version read after the walk."""
    self.entries[topic] = (self.state.get(), result)


@pytest.mark.parametrize("variant", ["as is", "store under the version after the walk"])
def test_a_miss_never_stores_a_set_a_write_replaced_during_its_walk(variant, monkeypatch):
    """The walk of 'a.b' reads the I-node below 'a' (its last read, which needs no
    validation); right after, subscribe('a.b', 2) commits there. The walk answers {1}, which
    held when it read. Once the write has returned, a lookup must answer {1, 2}: the miss
    must not have stored {1} as the current answer."""
    if variant != "as is":
        monkeypatch.setattr(ResultCache, "store", _store_what_the_walk_found)
    t = CSTrie(cache=True)
    t.subscribe("a.b", 1)
    t.subscribe("a.c", 0)  # two words below 'a': a level of its own, behind an I-node
    inode = gcas_read(t._read_root(), t).branches["a"].inode
    inode.main = _ReadThen(inode.main, lambda: t.subscribe("a.b", 2))
    assert t.lookup("a.b") == {1}
    if variant == "as is":
        assert t.lookup("a.b") == {1, 2}
    else:
        assert t.lookup("a.b") == {1}, "the schedule no longer exposes the variant"


def test_a_snapshot_and_its_origin_never_serve_each_others_answers():
    t = CSTrie(cache=True)
    t.subscribe("a.*", 1)
    assert t.lookup("a.b") == {1}
    s, frozen = t.snapshot(), t.read_only_snapshot()
    t.subscribe("a.b", 2)
    s.subscribe("a.b", 3)
    for _ in range(2):  # the second round is answered from each one's cache
        assert t.lookup("a.b") == {1, 2}
        assert s.lookup("a.b") == {1, 3}
        assert frozen.lookup("a.b") == {1}
    assert t._cache is not s._cache is not frozen._cache


def test_memory_stays_bounded_under_any_topic_stream():
    t = CSTrie(cache=True)
    t.subscribe("t.>", "s")
    for i in range(100_000):
        assert t.lookup(f"t.{i}") == {"s"}
        assert len(t._cache) <= t._cache.max_entries
    assert t._cache.misses.get() == 100_000
    # The newest entries survive a sweep and answer.
    assert t.lookup("t.99999") == {"s"} and t._cache.misses.get() == 100_000


def test_hits_answer_without_walking_and_writes_invalidate():
    t = CSTrie(cache=True)
    t.subscribe("a.>", 1)
    t.lookup("a.b.c")
    misses = t._cache.misses.get()
    for _ in range(5):
        assert t.lookup("a.b.c") == {1}
    assert t._cache.misses.get() == misses
    t.subscribe("x", 2)  # any content change: the next lookup walks again
    assert t.lookup("a.b.c") == {1} and t._cache.misses.get() == misses + 1
    t.subscribe("a.b", 2)  # a no-op write changes nothing ...
    t.subscribe("a.b", 2)  # ... the second time: still a hit after the walk that follows
    t.lookup("a.b.c")
    before = t._cache.misses.get()
    t.subscribe("a.b", 2)
    assert t.lookup("a.b.c") == {1} and t._cache.misses.get() == before


def test_bad_input_and_options():
    t = CSTrie(cache=True)
    with pytest.raises(TypeError):
        t.lookup(["not", "a", "str"])
    with pytest.raises(ValueError):
        t.lookup("a..b")
    assert len(t._cache) == 0
    with pytest.raises(TypeError, match="cache"):
        CSTrie(cache="yes")
    with pytest.raises(ValueError, match="cache_sweep_to"):
        CSTrie(cache=True, cache_max=4, cache_sweep_to=5)
    with pytest.raises(TypeError, match="cache_max"):
        CSTrie(cache=True, cache_max=4.0)


@pytest.mark.parametrize("cache_max, sweep_to", [(1, 0), (100, 25), (1000, 250), (5000, 256)])
def test_a_cache_max_alone_gets_a_sweep_it_can_hold(cache_max, sweep_to):
    """Given ``cache_max`` alone, the sweep keeps NATS's quarter, at most its 256: a small
    ``cache_max`` is not refused over a default ``cache_sweep_to`` the user never gave."""
    t = CSTrie(cache=True, cache_max=cache_max)
    assert (t._cache.max_entries, t._cache.sweep_to) == (cache_max, sweep_to)
    assert (t.snapshot()._cache.max_entries, t.snapshot()._cache.sweep_to) == (cache_max,
                                                                                sweep_to)


class _CaseInsensitive(str):
    """A str whose equality and hash ignore case: valid as a topic, not as a cache key."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and str.lower(self) == str.lower(other)

    def __hash__(self) -> int:
        return hash(str.lower(self))


def test_a_str_subclass_never_answers_for_another_topic():
    """Found by review: keyed by the caller's object, CI('A') stored {upper} under a key
    equal to 'a', and lookup('a') then answered {upper} (and the other way round)."""
    for first, second in ((_CaseInsensitive("A"), "a"), ("a", _CaseInsensitive("A"))):
        t = CSTrie(cache=True)
        t.subscribe("A", "upper")
        t.subscribe("a", "lower")
        # (Not a dict keyed by the topics: the two are equal keys.)
        want_first, want_second = _uncached(t, first), _uncached(t, second)
        assert want_first != want_second
        assert t.lookup(first) == want_first and t.lookup(second) == want_second
        assert t.lookup(second) == want_second and t.lookup(first) == want_first


class _LooksLike:
    """Not a str, but hashes and compares as 'a.b'."""

    def __hash__(self) -> int:
        return hash("a.b")

    def __eq__(self, other: object) -> bool:
        return other == "a.b"


class _Stripped(str):
    """Whitespace is invalid in a topic; this one compares as its stripped text."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and str.strip(self) == str.strip(other)

    def __hash__(self) -> int:
        return hash(str.strip(self))


class _NoHash(str):
    def __eq__(self, other: object) -> bool:  # defining __eq__ alone makes it unhashable
        return str.__eq__(self, other)


def test_bad_input_raises_as_without_the_cache_and_valid_subclasses_answer():
    """Found by review: a non-str equal to a cached topic was answered from the cache, an
    invalid str subclass too, and a valid unhashable one failed in the store."""
    from collections import UserString

    from ctrie import InvalidTopicError

    t = CSTrie(cache=True)
    t.subscribe("a.b", 1)
    assert t.lookup("a.b") == {1} and t.lookup("a.b") == {1}  # cached
    for bad in (_LooksLike(), UserString("a.b")):
        with pytest.raises(TypeError):
            t.lookup(bad)
        with pytest.raises(TypeError):
            CSTrie().lookup(bad)  # the uncached fast path too (it let UserString through)
    with pytest.raises(InvalidTopicError):
        t.lookup(_Stripped(" a.b "))
    assert t.lookup(_NoHash("a.b")) == {1}
    assert all(type(k) is str for k in t._cache.entries)


def test_a_sweep_keeps_the_newest_entries():
    t = CSTrie(cache=True, cache_max=4, cache_sweep_to=2)
    t.subscribe("t.>", "s")
    for topic in ("t.1", "t.2", "t.3", "t.4"):
        t.lookup(topic)
    t._cache.entries.pop("t.1")  # t.1 is looked up again below: it becomes the newest
    t.lookup("t.1")
    t.lookup("t.5")  # the fifth entry: sweep to the two newest
    assert list(t._cache.entries) == ["t.1", "t.5"]
    with pytest.raises(ValueError, match="cache_sweep_to"):
        CSTrie(cache=True, cache_max=4, cache_sweep_to=4)


class _VanishingEntries(dict):
    """Entries in which a key is gone between ``in`` and ``[]``, as when another thread's
    store moves it to the end (pop, then set) right between the two."""

    def __contains__(self, key: object) -> bool:
        found = dict.__contains__(self, key)
        if found:
            self.pop(key)
        return found


def test_an_entry_moved_between_the_probe_and_the_read_is_a_miss():
    """Found by the free-threaded stress layer: the hit read the entry with `in` then
    `[]`, and a concurrent store's move raised KeyError out of lookup."""
    t = CSTrie(cache=True)
    t.subscribe("a.b", 1)
    assert t.lookup("a.b") == {1}
    t._cache.entries = _VanishingEntries(t._cache.entries)
    misses = t._cache.misses.get()
    assert t.lookup("a.b") == {1}  # a miss: walked
    assert t._cache.misses.get() == misses + 1


class _ChangingWhileIterated(dict):
    """Entries that another store changes while a sweep iterates them (as on 3.11, when a
    garbage collection inside the iteration runs a finalizer and switches threads)."""

    def items(self):
        for i, kv in enumerate(list(dict.items(self))):
            if i == 1:
                self[f"late.{len(self)}"] = kv[1]  # a concurrent store
                raise RuntimeError("dictionary changed size during iteration")
            yield kv


def test_a_sweep_is_not_disturbed_by_a_store_during_it():
    """Found by review (3.11, finalizers in cyclic garbage): the sweep iterated the live
    dict, and a store during it raised RuntimeError out of lookup."""
    t = CSTrie(cache=True, cache_max=4, cache_sweep_to=2)
    t.subscribe("t.>", "s")
    for topic in ("t.1", "t.2", "t.3", "t.4"):
        t.lookup(topic)
    t._cache.entries = _ChangingWhileIterated(t._cache.entries)
    assert t.lookup("t.5") == {"s"}  # the fifth entry: a sweep
    assert list(t._cache.entries) == ["t.4", "t.5"]
