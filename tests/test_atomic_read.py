"""The second read of ctrie._atomic: a ``get()`` that returns an object never stored in the
reference (cereggii 1.0.1 on a free-threaded build, when the value's memory was reused) must
not reach the trie's logic.

The bad ``get()`` is made deterministic by a stand-in for an I-node's reference whose first
``get()`` returns a C-node of another trie, as the race did (stop 40 saw an inbox level read
a root's C-node, and the root an inbox's). The double read is forced on (it is what a
free-threaded build runs), so that these tests run on both builds. With it forced off, as
before the fix, the unsubscribe below returns False for a stored pair and the lookup
misses a subscriber: the failures the churn test of tests/test_tombs.py met at random.
"""

from __future__ import annotations

import pytest
from strategies import DIALECTS

import ctrie._atomic as atomic
import ctrie.cstrie as cstrie_module
import ctrie.gcas as gcas_module
from ctrie import CSTrie, Dialect
from ctrie.gcas import gcas_read


@pytest.fixture
def double_read(monkeypatch):
    """The free-threaded build's reads, on any build."""
    monkeypatch.setattr(atomic, "FREE_THREADED_BUILD", True)
    monkeypatch.setattr(cstrie_module, "_FT", True)
    monkeypatch.setattr(gcas_module, "_FT", True)
    monkeypatch.setattr(cstrie_module, "_get", lambda r: r.get())  # (the stand-in too)


class _ForeignOnce:
    """Stands in for an AtomicRef: its first ``get()`` returns ``foreign``, an object never
    stored in it; later ones read the reference."""

    def __init__(self, ref, foreign) -> None:
        self.ref, self.foreign = ref, foreign

    def get(self):
        f, self.foreign = self.foreign, None
        return self.ref.get() if f is None else f

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
    assert atomic.read(Ref([stored])) is stored


def _trie(dialect: Dialect):
    """A trie whose level below 'a' is an I-node, that level's I-node, a foreign C-node (the
    root C-node of another trie), and the separator."""
    sep = "/" if dialect is Dialect.MQTT else "."
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


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_a_lookup_that_reads_a_foreign_node_first_answers_from_the_trie(dialect, double_read):
    t, a, foreign, sep = _trie(dialect)
    a.main = _ForeignOnce(a.main, foreign)
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
