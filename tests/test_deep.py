"""Deep patterns and long topics: no depth limit, and walks that are linear in the topic.

- Every matcher, every dialect, at 10,000 levels: subscribe, lookup and unsubscribe either
  work or are rejected up front with the package's error (the matcher unchanged), never a
  ``RecursionError``, never a half-done change (:class:`matchers.Subject` checks both).
- The CS-trie's walks, counted in words touched rather than timed: a lookup passing an
  S-node at every level of an n-word topic touches O(n) words, not O(n^2) (it used to
  slice the rest of the topic at every S-node before testing its length); an AMQP lookup
  against a chain of '#' touches O(chain x n) words, not O(chain x n^2).
"""

from __future__ import annotations

import pytest
from matchers import IDS, REGISTRY, MatcherSpec, Subject
from strategies import SYNTAX

from ctrie import CSTrie, Dialect

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

