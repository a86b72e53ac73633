"""The matchers the pipeline can route with, by name, and how each is built.

Names follow :mod:`experiments.registry` (``cstrie``, ``locked_trie``,
``locked_trie_nocache``, ``naive``, ``inverted_bitmap``, ``optimized_bitmap``); this module
does not import the harness, so the pipeline runs wherever the package is importable.

Two matchers need facts about the topics before they can be built:

- ``inverted_bitmap`` needs its topic space: the pipeline gives it the distinct valid topics
  of the partition it routes (the partition is materialised first), so every topic it is
  asked about is in its space. Its build cost grows with topics x patterns: use it on small
  data only.
- ``optimized_bitmap`` needs ``max_words``: a topic longer than that matches nothing, so the
  pipeline passes the word count of the longest topic of the input (computed by Spark), at
  least the longest pattern's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["MATCHERS", "MAY_REFUSE", "NEEDS_TOPIC_SPACE", "build", "make"]

#: Matcher names accepted by ``--matcher``, with what they are.
MATCHERS = {
    "cstrie": "ctrie.CSTrie (lock-free CS-trie; the default)",
    "locked_trie": "baselines.LockedTrie with its result cache",
    "locked_trie_nocache": "baselines.LockedTrie without the cache",
    "naive": "baselines.NaiveMatcher (every pattern tried per topic)",
    "inverted_bitmap": "baselines.InvertedBitmapMatcher over the partition's topics",
    "optimized_bitmap": "baselines.OptimizedBitmapMatcher (max_words from the input)",
}

#: Matchers whose constructor needs the topics first.
NEEDS_TOPIC_SPACE = frozenset({"inverted_bitmap"})

#: Matchers whose ``subscribe`` may refuse a valid pattern (``UnsupportedPatternError``):
#: only for these must the driver build a matcher to know which subscriptions to reject.
MAY_REFUSE = frozenset({"optimized_bitmap"})


def make(name: str, dialect: str, *, topic_space: Iterable[str] = (),
         max_words: int | None = None) -> Any:
    """A new, empty matcher ``name`` for ``dialect`` (a name; an unknown one raises
    ``ValueError``)."""
    from ctrie import Dialect

    d = Dialect.coerce(dialect)
    if name == "cstrie":
        from ctrie import CSTrie

        return CSTrie(dialect=d)
    if name in ("locked_trie", "locked_trie_nocache"):
        from baselines import LockedTrie

        return LockedTrie(dialect=d, cache=name == "locked_trie")
    if name == "naive":
        from baselines import NaiveMatcher

        return NaiveMatcher(dialect=d)
    if name == "inverted_bitmap":
        from baselines import InvertedBitmapMatcher

        return InvertedBitmapMatcher(list(topic_space), dialect=d)
    if name == "optimized_bitmap":
        from baselines import OptimizedBitmapMatcher

        if max_words is None:
            raise ValueError("optimized_bitmap needs max_words")
        return OptimizedBitmapMatcher(max(1, max_words), dialect=d)
    raise ValueError(f"unknown matcher {name!r}; choose from {', '.join(MATCHERS)}")


def build(name: str, dialect: str, pairs: Iterable[tuple[str, str]], *,
          topic_space: Iterable[str] = (), max_words: int | None = None) -> Any:
    """A matcher ``name`` holding every (pattern, subscriber) of ``pairs``.

    The pairs must have been accepted by :func:`experiments.pipeline.routing.check_subscriptions`
    for the same matcher: any error here is a bug, and is raised.
    """
    m = make(name, dialect, topic_space=topic_space, max_words=max_words)
    sub = m.subscribe
    for pattern, subscriber in pairs:
        sub(pattern, subscriber)
    return m
