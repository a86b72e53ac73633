"""The matchers the experiments measure: names, labels, constructors and limits.

Every experiment measures every algorithm below; a cell an algorithm cannot take is still
recorded, with ``status: "skipped"`` and the reason (see :func:`unavailable`).

paho-mqtt's ``MQTTMatcher`` maps one filter to one value and is not thread-safe; it enters
through :class:`PahoMatcher`, which stores the set of subscribers of a filter as its value so
that it answers the same protocol (``lookup`` returns the union as a frozenset). It speaks
only the MQTT dialect and is measured in the single-thread experiments and at one thread.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

__all__ = [
    "ALGORITHMS",
    "DIALECTS",
    "LABELS",
    "LOCK_NOTE",
    "lock_note",
    "PahoMatcher",
    "cache_hit_share",
    "computed_lookups",
    "dialects_for",
    "make",
    "populate",
    "thread_safe",
    "unavailable",
]

#: Every algorithm, in the order figures and tables list them.
ALGORITHMS = (
    "cstrie",
    "cstrie_cache",
    "cstrie_replicated",
    "locked_trie",
    "locked_trie_nocache",
    "naive",
    "inverted_bitmap",
    "optimized_bitmap",
    "paho",
)

#: The topic dialects the single-thread experiments can measure, in the order figures use.
DIALECTS = ("nats", "mqtt", "amqp")

#: Said under every table of threaded results: which lock the locked baseline holds, and why
#: (issue 19: the locked trie at its best, measured with tools/rwlock_scaling.py).
LOCK_NOTE = ("LockedTrie holds one plain `threading.Lock` around every operation: on the "
             "free-threaded build a reader-writer lock (lookups on its read side) was slower in "
             "every mix `tools/rwlock_scaling.py` measured, so the plain lock is the locked "
             "baseline at its best.")


def lock_note(algorithms: Iterable[str]) -> str:
    """`` `` + :data:`LOCK_NOTE` if a LockedTrie is among ``algorithms``, else ``""``."""
    return " " + LOCK_NOTE if any(a.startswith("locked_trie") for a in algorithms) else ""


LABELS = {
    "cstrie": "CS-trie (lock-free)",
    "cstrie_cache": "CS-trie (cache)",
    "cstrie_replicated": "CS-trie, a replica per thread",
    "locked_trie": "LockedTrie (cache)",
    "locked_trie_nocache": "LockedTrie (no cache)",
    "naive": "naive hashmap",
    "inverted_bitmap": "inverted bitmap",
    "optimized_bitmap": "optimized bitmap",
    "paho": "paho MQTTMatcher",
}


class PahoMatcher:
    """paho-mqtt's ``MQTTMatcher`` behind the package's Matcher protocol (MQTT only).

    The value stored under a filter is the ``set`` of its subscribers; ``lookup`` unions the
    sets of every matching filter. Not thread-safe (neither is ``MQTTMatcher``).
    """

    __slots__ = ("_m", "dialect")

    def __init__(self) -> None:
        from paho.mqtt.matcher import MQTTMatcher
        from ctrie import Dialect

        self._m = MQTTMatcher()
        self.dialect = Dialect.MQTT

    def subscribe(self, pattern: str, subscriber: Hashable) -> None:
        m = self._m
        try:
            m[pattern].add(subscriber)
        except KeyError:
            m[pattern] = {subscriber}

    def unsubscribe(self, pattern: str, subscriber: Hashable) -> bool:
        m = self._m
        try:
            subs = m[pattern]
        except KeyError:
            return False
        if subscriber not in subs:
            return False
        subs.discard(subscriber)
        if not subs:
            del m[pattern]
        return True

    def lookup(self, topic: str) -> frozenset:
        return frozenset().union(*self._m.iter_match(topic))


def unavailable(name: str) -> str | None:
    """Why ``name`` cannot be built in this interpreter, or None if it can."""
    if name == "paho":
        try:
            import paho.mqtt.matcher  # noqa: F401
        except ImportError as exc:
            return f"paho-mqtt not importable in this interpreter: {exc}"
    elif name not in ALGORITHMS:
        return f"unknown algorithm {name!r}"
    return None


def thread_safe(name: str) -> bool:
    """Whether the matcher may be shared between threads (all but paho's)."""
    return name != "paho"


def dialects_for(name: str, dialects: Iterable[str]) -> list[str]:
    """The dialects of ``dialects`` that ``name`` is measured in (paho: MQTT only)."""
    if name == "paho":
        return [d for d in dialects if d == "mqtt"]
    return list(dialects)


def make(name: str, dialect: str, *, topic_space: Iterable[str] | None = None,
         max_words: int | None = None) -> Any:
    """A new, empty matcher ``name`` for ``dialect``.

    ``topic_space`` is required by ``inverted_bitmap`` and ``max_words`` by
    ``optimized_bitmap``; the others ignore them. ``dialect`` is a name as read from a
    command line or a record; an unknown one raises ``ValueError``.
    """
    from ctrie.topics import Dialect

    d = Dialect.coerce(dialect)
    if name == "cstrie":
        from ctrie import CSTrie

        return CSTrie(dialect=d)
    if name == "cstrie_cache":
        from ctrie import CSTrie

        return CSTrie(dialect=d, cache=True)
    if name == "cstrie_replicated":
        from ctrie import ReplicatedTrie

        return ReplicatedTrie(dialect=d)
    if name == "locked_trie":
        from baselines import LockedTrie

        return LockedTrie(dialect=d, cache=True)
    if name == "locked_trie_nocache":
        from baselines import LockedTrie

        return LockedTrie(dialect=d, cache=False)
    if name == "naive":
        from baselines import NaiveMatcher

        return NaiveMatcher(dialect=d)
    if name == "inverted_bitmap":
        from baselines import InvertedBitmapMatcher

        if topic_space is None:
            raise ValueError("inverted_bitmap needs a topic_space")
        return InvertedBitmapMatcher(topic_space, dialect=d)
    if name == "optimized_bitmap":
        from baselines import OptimizedBitmapMatcher

        if max_words is None:
            raise ValueError("optimized_bitmap needs max_words")
        return OptimizedBitmapMatcher(max_words, dialect=d)
    if name == "paho":
        if dialect != "mqtt":
            raise ValueError(f"paho's MQTTMatcher speaks only MQTT, not {dialect!r}")
        return PahoMatcher()
    raise ValueError(f"unknown algorithm {name!r}; known: {', '.join(ALGORITHMS)}")


def computed_lookups(matcher: Any) -> int | None:
    """How many lookups ``matcher`` has answered by walking rather than from its result
    cache so far, or None if it has no cache (the hit rate over a stretch of ``n`` lookups
    is ``1 - (after - before) / n``)."""
    cache = getattr(matcher, "_cache", None)
    if cache is not None and hasattr(cache, "misses"):  # CSTrie(cache=True)
        return cache.misses.get()
    stats = getattr(matcher, "stats", None)
    if callable(stats) and getattr(matcher, "_cache", None) is not None:  # LockedTrie(cache)
        s = stats()
        return round(s["matches"] * (1 - s["cache_hit_rate"]))
    return None


def cache_hit_share(walked: int, lookups: int) -> float:
    """The share of ``lookups`` answered from a result cache when ``walked`` of them were
    computed (the difference of two :func:`computed_lookups` readings)."""
    return 1 - walked / lookups


def populate(matcher: Any, patterns: Iterable[str], subscribers: Iterable[Hashable],
             refused_patterns: list[str] | None = None) -> int:
    """Subscribe every (pattern, subscriber) pair; return how many the matcher refused.

    A refusal is :class:`ctrie.UnsupportedPatternError` (a pattern the algorithm cannot
    represent); the caller records the count rather than dropping it. With
    ``refused_patterns``, each refused pattern is also appended to it.
    """
    from ctrie import UnsupportedPatternError

    refused = 0
    sub = matcher.subscribe
    for pattern, subscriber in zip(patterns, subscribers):
        try:
            sub(pattern, subscriber)
        except UnsupportedPatternError:
            refused += 1
            if refused_patterns is not None:
                refused_patterns.append(pattern)
    return refused
