"""Deep patterns and long topics: no depth limit, and walks that are linear in the topic.

- Every matcher, every dialect, at 10,000 levels: subscribe, lookup and unsubscribe either
  work or are rejected up front with the package's error (the matcher unchanged), never a
  ``RecursionError``, never a half-done change (:class:`matchers.Subject` checks both).
- The CS-trie's walks, counted in words touched rather than timed: a lookup passing an
  S-node at every level of an n-word topic touches O(n) words, not O(n^2) (it used to
  slice the rest of the topic at every S-node before testing its length); an AMQP lookup
  against a chain of '#' touches O(chain x n) words, not O(chain x n^2).
- Whole-trie reads of deep patterns (``subscriptions()``, a snapshot's items, ``check()``),
  counted in characters put together with the dialect's separator: O(length of the
  patterns), not O(depth^2) (one 100,000-level pattern took 55.8 s in LockedTrie); and
  every matcher's ``subscriptions()`` right at 100,000 levels, inside the test's timeout.
"""

from __future__ import annotations

import pytest
from matchers import IDS, REGISTRY, MatcherSpec, Subject
from strategies import SYNTAX

from ctrie import CSTrie, Dialect
from ctrie.topics import join_paths

DEPTH = 10_000
DIALECTS = list(Dialect)


def _deep_groups(dialect: Dialect) -> list[tuple[list[str], list[str]]]:
    """Groups of (patterns, topics) at DEPTH levels, each subscribed, looked up and removed
    in turn. A '#' chain is looked up only with short topics: with one stored, any walk
    costs chain x topic length, for every matcher alike (the locked trie takes a minute
    for a 10,000-word topic)."""
    s = SYNTAX[dialect]
    sep, one, many = s.sep, s.single, s.multi
    deep = ["w"] * DEPTH
    groups = [(
        [
            sep.join(deep),
            sep.join([one] * DEPTH),
            sep.join(deep[:-1] + [many]),
            sep.join(deep[:-1] + ["x"]),  # shares 9,999 levels with the first
            sep.join(deep[:-2] + [one, "x"]),
        ],
        [sep.join(deep), sep.join(deep[:-1] + ["x"]), sep.join(deep[:-3])],
    )]
    if dialect is Dialect.AMQP:
        groups.append((
            [sep.join([many] * DEPTH), sep.join([many, "w"] * (DEPTH // 2)),
             sep.join([many] * (DEPTH - 1) + ["x"]), sep.join(deep)],
            ["w", "x", sep.join(["w"] * 5 + ["x"])],
        ))
    return groups


@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.value for d in DIALECTS])
@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
def test_ten_thousand_levels(spec: MatcherSpec, dialect: Dialect) -> None:
    groups = _deep_groups(dialect)
    subject = Subject(spec, dialect, [t for _, ts in groups for t in ts], DEPTH + 2)
    model: dict[str, set] = {}
    for g, (patterns, topics) in enumerate(groups):
        for k, p in enumerate(patterns):
            subject.subscribe(model, p, f"s{k}", ctx=f"group {g}, pattern {k}")
        for t in topics:
            subject.check_lookup(model, t, ctx=f"group {g}, topic of {len(t)} chars")
        for k, p in enumerate(patterns):
            subject.unsubscribe(model, p, f"s{k}", ctx=f"group {g}, pattern {k}")
            # Half-done: a removed pair that still matches, or a kept one that no longer does.
            subject.check_lookup(model, topics[0], ctx=f"group {g}, after removing pattern {k}")
        assert len(subject.matcher) == 0
        for t in topics:
            assert subject.matcher.lookup(t) == frozenset()
        if hasattr(subject.matcher, "check"):
            subject.matcher.check()


# --- counting the work of a walk --------------------------------------------------------------


class CountingWords(list):
    """The words of a topic that count every word a walk touches: one per index, the
    length of every slice taken."""

    touched = 0

    def __getitem__(self, index):  # type: ignore[override]
        got = super().__getitem__(index)
        CountingWords.touched += len(got) if isinstance(index, slice) else 1
        return got


class CountingTopic(str):
    """A topic whose ``split`` hands the lookup :class:`CountingWords`."""

    def split(self, sep=None, maxsplit=-1):  # type: ignore[override]
        return CountingWords(super().split(sep, maxsplit))


def touched(trie: CSTrie, topic: str) -> int:
    """Words touched by one lookup of ``topic`` (the result is checked by the caller)."""
    CountingWords.touched = 0
    trie.lookup(CountingTopic(topic))
    return CountingWords.touched


@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.value for d in DIALECTS])
def test_long_topic_walk_is_linear(dialect: Dialect) -> None:
    """A pattern ``w^d.<one>.z`` at every depth d: the walk meets a one-level wildcard
    branch holding an S-node at every level of the topic ``w^n``."""
    s = SYNTAX[dialect]
    work = {}
    for n in (250, 2000):
        trie = CSTrie(dialect)
        for d in range(n - 1):
            trie.subscribe(s.sep.join(["w"] * d + [s.single, "z"]), d)
        trie.subscribe(s.sep.join(["w"] * n), "all")
        topic = s.sep.join(["w"] * n)
        assert trie.lookup(CountingTopic(topic)) == {"all"}
        assert trie.lookup(CountingTopic(s.sep.join(["w"] * (n - 1) + ["z"]))) == {n - 2}
        work[n] = touched(trie, topic)
    # Linear: 8x the words, about 8x the work (quadratic would be 64x).
    assert work[2000] <= 10 * work[250], work


def test_amqp_hash_chain_walk_is_linear() -> None:
    """30 '#' then 'x', stored as an S-node (one pattern) and as 30 levels of I-nodes (two
    patterns sharing the chain), looked up with topics that match and that do not."""
    chain = ["#"] * 30
    for patterns in ([chain + ["x"]], [chain + ["x"], chain + ["y"]]):
        work = {}
        for n in (100, 400):
            trie = CSTrie("amqp")
            for p in patterns:
                trie.subscribe(".".join(p), p[-1])
            hit = ".".join(["w"] * (n - 1) + ["x"])
            miss = ".".join(["w"] * n)
            assert trie.lookup(CountingTopic(hit)) == {"x"}
            assert trie.lookup(CountingTopic(miss)) == frozenset()
            work[n] = touched(trie, hit) + touched(trie, miss)
        # 4x the words: about 4x the work (the old walk's was 16x and more).
        assert work[400] <= 5 * work[100], (len(patterns), work)


def test_amqp_lookup_errors_are_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TypeError raised inside the AMQP walk used to be caught by the NATS fast path's
    handler for bad topics, which then walked the AMQP trie with NATS rules. It must
    propagate."""
    trie = CSTrie("amqp")
    trie.subscribe("a.#.b", 1)

    def broken(*_args: object) -> None:
        raise TypeError("inside the walk")

    monkeypatch.setattr(CSTrie, "_walk_amqp", broken)
    with pytest.raises(TypeError, match="inside the walk"):
        trie.lookup("a.x.b")



# --- whole-trie reads of deep patterns --------------------------------------------------------


class CountingSep(str):
    """A separator that counts the characters it puts together: the parts it joins, and
    the string it is appended to (``path + sep``: a str subclass's reflected ``+`` comes
    first)."""

    def __new__(cls, sep: str) -> "CountingSep":
        self = super().__new__(cls, sep)
        self.work = 0
        return self

    def join(self, parts):  # type: ignore[override]
        parts = list(parts)
        self.work += sum(map(len, parts)) + len(parts)
        return str.join(self, parts)

    def __radd__(self, other: str) -> str:
        self.work += len(other) + len(self)
        return str(other) + str(self)


def test_join_paths_joins_each_pattern_once() -> None:
    """The helper on a chain of 100,000 one-word edges with a pattern only at the bottom:
    one join of 100,000 words, not one per level."""
    depth = 100_000
    sep = CountingSep(".")

    def edges(i: int) -> list:
        return [("w", "leaf", None)] if i == depth - 1 else [("w", None, i + 1)]

    assert list(join_paths(0, edges, sep)) == [(".".join(["w"] * depth), "leaf")]
    assert sep.work <= 5 * depth, sep.work  # O(depth^2) would be 5 x 10^9


def test_join_paths_covers_every_kind_of_edge() -> None:
    """One-word edges with and without a value, a compressed edge of several words (an
    S-node), a word-less edge (a hash level: the same path), the AMQP empty key (the word
    '' at the root) and values at inner nodes."""
    tree = {
        "root": [("", "empty key", None), ("a", "a", "A"), ((), None, "H")],
        "A": [("b", None, "AB"), (("c", "d", "e"), "a.c.d.e", None), ("*", "a.*", None)],
        "AB": [("x", "a.b.x", None), ("y", None, "ABY")],
        "ABY": [(("z",), "a.b.y.z", None)],
        "H": [("h", "h", "HH")],  # the root's hash level: its words are the root's
        "HH": [("i", "h.i", None)],
    }
    sep = CountingSep(".")
    got = dict(join_paths("root", tree.__getitem__, sep))
    assert got == {v: v for v in ("a", "a.c.d.e", "a.*", "a.b.x", "a.b.y.z", "h", "h.i")} | {
        "": "empty key"}, got
    assert sep.work <= 3 * sum(len(p) + 1 for p in got), sep.work


DEEP_READ = 20_000


def _two_deep_patterns(spec: MatcherSpec, depth: int, check: bool = False
                       ) -> tuple[Subject, dict[str, set], list[str]]:
    """A matcher holding two NATS patterns of ``depth`` levels that share all but the last
    (a chain of ``depth`` levels in the tries); with ``check``, its state and a lookup are
    checked after each subscribe."""
    deep = ["w"] * depth
    patterns = [".".join(deep), ".".join(deep[:-1] + ["x"])]
    subject = Subject(spec, Dialect.NATS, patterns, depth + 2)
    model: dict[str, set] = {}
    for k, p in enumerate(patterns):
        subject.subscribe(model, p, k)
        if check:
            subject.check_state(model, ctx=f"{k + 1} deep patterns")
            subject.check_lookup(model, patterns[0])
    return subject, model, patterns


def _read_whole(m: object) -> None:
    """The other whole-trie reads, where the matcher has them: a read-only snapshot's items
    (the same as subscriptions()) and check()."""
    if hasattr(m, "read_only_snapshot"):
        assert dict(m.read_only_snapshot()._items()) == m.subscriptions()
    if hasattr(m, "check"):
        m.check()


@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
def test_whole_trie_reads_of_deep_patterns_are_linear(spec: MatcherSpec, monkeypatch) -> None:
    """Two NATS patterns of 20,000 levels sharing 19,999 (a chain of levels in the tries):
    ``subscriptions()``, a read-only snapshot's items and ``check()`` put together
    O(length of the patterns) characters with the separator. Building the path again at
    every level was O(depth^2): 4 x 10^8 characters here."""
    sep = CountingSep(".")
    monkeypatch.setattr(Dialect.NATS, "separator", sep)
    subject, model, patterns = _two_deep_patterns(spec, DEEP_READ)
    sep.work = 0
    assert subject.matcher.subscriptions() == {p: {k} for k, p in enumerate(patterns)}
    _read_whole(subject.matcher)
    out = sum(len(p) + 1 for p in patterns)
    assert sep.work <= 10 * out, f"{spec.name}: {sep.work:,} characters for {out:,}"


HUNDRED_THOUSAND = 100_000


# The whole test takes 1-3 s per matcher; before the fix, 190 s for LockedTrie (whose
# subscriptions() re-joined the prefix at every level).
@pytest.mark.timeout(60)
@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
def test_subscriptions_at_one_hundred_thousand_levels(spec: MatcherSpec) -> None:
    """The issue's case: one 100,000-level pattern (LockedTrie took 55.8 s for its
    subscriptions()), then a second one sharing 99,999 levels. subscriptions(), len() and
    lookups are right, and the pairs come out again, well inside the timeout."""
    subject, model, patterns = _two_deep_patterns(spec, HUNDRED_THOUSAND, check=True)
    m = subject.matcher
    _read_whole(m)
    for k, p in enumerate(patterns):
        subject.unsubscribe(model, p, k)
        subject.check_state(model, ctx=f"pattern {k} removed")
    assert len(m) == 0
