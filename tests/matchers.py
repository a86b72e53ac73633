"""The registry of every matcher the conformance suite runs against: one line per matcher.

Each entry is a :class:`MatcherSpec`: a name and a factory
``factory(dialect, topic_space, max_words) -> matcher``, plus the limits its class documents
(``api.md``, "Baselines"), which are the only places where its behaviour may differ from the
reference ``ctrie.matches``:

- ``may_reject(words, dialect, max_words)``: the valid patterns for which ``subscribe`` (and
  ``unsubscribe``) may raise ``ctrie.UnsupportedPatternError``, leaving the matcher unchanged;
- ``blind_outside_space`` / ``blind_beyond_max_words``: ``lookup`` returns ``frozenset()``,
  whatever is stored, for a topic outside the topic space / longer than ``max_words``.

Tests give the inverted bitmap a topic space holding every topic they look up, and pick
``max_words`` for the optimized bitmap; every other matcher ignores both arguments and is held
to the reference exactly. Baselines are imported when a test builds one, so that the suite
collects (and the topic tests run) while ``baselines`` is being written; a missing class fails
its tests, it is never skipped. ``CSTrie`` joins the registry as soon as ``ctrie`` exports it.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from strategies import SYNTAX, words_of

import ctrie
from ctrie import Dialect

__all__ = ["IDS", "REGISTRY", "MatcherSpec", "Subject", "build", "by_name", "reference_matches"]

Factory = Callable[[Dialect, Sequence[str], int], Any]


def _never(*_args: object) -> bool:
    return False


def _baseline(name: str) -> Any:
    module = importlib.import_module("baselines")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AssertionError(f"baselines does not export {name} (api.md, 'Baselines')") from None


# --- documented limits ----------------------------------------------------------------------


def _optimized_may_reject(words: list[str], dialect: Dialect, max_words: int) -> bool:
    """OptimizedBitmapMatcher (its docstring): an AMQP '#' followed by a word other than '#'
    (a trailing run such as 'a.#.#' is supported), or a pattern needing > max_words words."""
    s = SYNTAX[dialect]
    if dialect is Dialect.AMQP and s.multi in words:
        first = words.index(s.multi)
        if any(w != s.multi for w in words[first:]):
            return True
    return sum(s.multi_min if w == s.multi else 1 for w in words) > max_words


@dataclass(frozen=True)
class MatcherSpec:
    """A matcher under test: its name, how to build it, and the limits its docstring states."""

    name: str
    factory: Factory
    may_reject: Callable[[list[str], Dialect, int], bool] = _never
    blind_outside_space: bool = False
    blind_beyond_max_words: bool = False

    def __str__(self) -> str:
        return self.name


REGISTRY: list[MatcherSpec] = [
    MatcherSpec("NaiveMatcher", lambda d, ts, mw: _baseline("NaiveMatcher")(dialect=d)),
    MatcherSpec(
        "InvertedBitmapMatcher",
        lambda d, ts, mw: _baseline("InvertedBitmapMatcher")(ts, dialect=d),
        blind_outside_space=True,
    ),
    MatcherSpec(
        "OptimizedBitmapMatcher",
        lambda d, ts, mw: _baseline("OptimizedBitmapMatcher")(mw, dialect=d),
        may_reject=_optimized_may_reject,
        blind_beyond_max_words=True,
    ),
    MatcherSpec(
        "LockedTrie(cache=True)",
        lambda d, ts, mw: _baseline("LockedTrie")(dialect=d, cache=True),
    ),
    MatcherSpec(
        "LockedTrie(cache=False)",
        lambda d, ts, mw: _baseline("LockedTrie")(dialect=d, cache=False),
    ),
]

if hasattr(ctrie, "CSTrie"):
    REGISTRY.append(MatcherSpec("CSTrie", lambda d, ts, mw: ctrie.CSTrie(dialect=d)))
    # The same trie with one-word leaves: every level with two literal words splits into
    # hash levels (ctrie.nodes.CNode), so every test also runs the wide-level code.
    REGISTRY.append(MatcherSpec("CSTrie(leaf=1)", lambda d, ts, mw: ctrie.CSTrie(dialect=d, _leaf_max=1)))
    # With its result cache, tiny so that every test also meets sweeps.
    REGISTRY.append(MatcherSpec("CSTrie(cache=True)", lambda d, ts, mw: ctrie.CSTrie(
        dialect=d, cache=True, cache_max=4, cache_sweep_to=1)))
if hasattr(ctrie, "ReplicatedTrie"):
    # Checkpoints every 3 entries, so that every test also meets them.
    REGISTRY.append(MatcherSpec("ReplicatedTrie", lambda d, ts, mw: ctrie.ReplicatedTrie(
        dialect=d, checkpoint_every=3)))

IDS = [spec.name for spec in REGISTRY]


def by_name(name: str) -> MatcherSpec:
    return next(spec for spec in REGISTRY if spec.name == name)


# --- a matcher under test with its limits and a model to hold it to -------------------------


class Subject:
    """A matcher built from a spec, with the topic space and max_words it was given.

    The helpers apply one operation to the matcher and to a ``dict[str, set]`` model and check
    the result against the model, allowing exactly the documented limits and nothing else.
    """

    def __init__(
        self,
        spec: MatcherSpec,
        dialect: Dialect | str,
        topic_space: Sequence[str],
        max_words: int,
    ) -> None:
        self.spec = spec
        self.dialect = Dialect.coerce(dialect)
        self.topic_space = tuple(topic_space)
        self._space = frozenset(topic_space)
        self.max_words = max_words
        self.matcher = spec.factory(dialect, self.topic_space, max_words)

    def __repr__(self) -> str:
        return f"<{self.spec.name} {self.dialect.value}{self._label}>"

    _label = ""

    def derived(self, matcher: Any, label: str) -> Subject:
        """The same spec and limits around another matcher (a snapshot of this one)."""
        other = object.__new__(Subject)
        other.__dict__.update(self.__dict__)
        other.matcher = matcher
        other._label = f" {label}"
        return other

    def may_reject(self, pattern: str) -> bool:
        return self.spec.may_reject(words_of(pattern, self.dialect), self.dialect,
                                    self.max_words)

    def blind_to(self, topic: str) -> bool:
        if self.spec.blind_outside_space and topic not in self._space:
            return True
        if self.spec.blind_beyond_max_words:
            return len(words_of(topic, self.dialect)) > self.max_words
        return False

    def expected_lookup(self, model: Mapping[str, set], topic: str) -> frozenset:
        if self.blind_to(topic):
            return frozenset()
        out: set = set()
        for pattern, subs in model.items():
            if subs and reference_matches(pattern, topic, self.dialect):
                out |= subs
        return frozenset(out)

    # Each helper returns what the matcher returned; ``ctx`` is put in every assertion message
    # (the seed, the step, ...).

    def subscribe(self, model: dict[str, set], pattern: str, sub: object, ctx: str = "") -> bool:
        """Subscribe on both sides; False if the matcher rejected the pattern (allowed only
        where documented, and then the matcher must be unchanged)."""
        m = self.matcher
        if self.may_reject(pattern):
            before = self.state()
            try:
                ret = m.subscribe(pattern, sub)
            except ctrie.UnsupportedPatternError:
                assert self.state() == before, f"{self}: rejected {pattern!r} but changed. {ctx}"
                assert pattern not in model, (
                    f"{self}: rejected {pattern!r} after accepting it. {ctx}"
                )
                return False
        else:
            ret = m.subscribe(pattern, sub)
        assert ret is None, f"{self}: subscribe({pattern!r}, {sub!r}) returned {ret!r}. {ctx}"
        model.setdefault(pattern, set()).add(sub)
        return True

    def unsubscribe(self, model: dict[str, set], pattern: str, sub: object, ctx: str = "") -> bool:
        m = self.matcher
        present = sub in model.get(pattern, ())
        if self.may_reject(pattern) and not present:
            before = self.state()
            try:
                got = m.unsubscribe(pattern, sub)
            except ctrie.UnsupportedPatternError:
                assert self.state() == before, f"{self}: rejected {pattern!r} but changed. {ctx}"
                return False
        else:
            got = m.unsubscribe(pattern, sub)
        assert got is present, (
            f"{self}: unsubscribe({pattern!r}, {sub!r}) returned {got!r}, expected {present}. "
            f"{ctx}"
        )
        if present:
            model[pattern].discard(sub)
            if not model[pattern]:
                del model[pattern]
        return got

    def check_lookup(self, model: Mapping[str, set], topic: str, ctx: str = "") -> frozenset:
        got = self.matcher.lookup(topic)
        assert isinstance(got, frozenset), f"{self}: lookup({topic!r}) returned {type(got)}. {ctx}"
        want = self.expected_lookup(model, topic)
        assert got == want, (
            f"{self}: lookup({topic!r}) = {sorted(map(repr, got))}, expected "
            f"{sorted(map(repr, want))}; missing {sorted(map(repr, want - got))}, extra "
            f"{sorted(map(repr, got - want))}; stored {model_repr(model)}. {ctx}"
        )
        return got

    def state(self) -> tuple[dict, int]:
        """What the matcher says it holds: (subscriptions(), len())."""
        return self.matcher.subscriptions(), len(self.matcher)

    def check_state(self, model: Mapping[str, set], ctx: str = "") -> None:
        subs = self.matcher.subscriptions()
        assert isinstance(subs, dict), f"{self}: subscriptions() is a {type(subs)}. {ctx}"
        for pattern, members in subs.items():
            assert isinstance(members, frozenset), (
                f"{self}: subscriptions()[{pattern!r}] is a {type(members)}. {ctx}"
            )
            assert members, f"{self}: subscriptions() has an empty entry {pattern!r}. {ctx}"
        want = {p: frozenset(s) for p, s in model.items() if s}
        assert subs == want, (
            f"{self}: subscriptions() = {model_repr(subs)}, expected {model_repr(want)}. {ctx}"
        )
        n = len(self.matcher)
        assert n == sum(map(len, want.values())), f"{self}: len() = {n}, model {want}. {ctx}"


@functools.lru_cache(maxsize=1 << 18)
def reference_matches(pattern: str, topic: str, dialect: Dialect) -> bool:
    """``ctrie.matches``, memoized: models re-ask the same pairs many times."""
    return ctrie.matches(pattern, topic, dialect)


def build(
    spec: MatcherSpec, dialect: Dialect | str, topic_space: Sequence[str], max_words: int
) -> Subject:
    return Subject(spec, dialect, topic_space, max_words)


def model_repr(model: Mapping[str, Collection]) -> str:
    items = (f"{p!r}: {sorted(map(repr, s))}" for p, s in sorted(model.items()))
    return "{" + ", ".join(items) + "}"
