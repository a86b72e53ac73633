"""The optimized inverted bitmap baseline: per-position bitmaps, ANDed at lookup.

The "Optimized Inverted Bitmap" of the Fast Topic Matching article needs no topic space, only
the longest topic length ``max_words``. Each word position keeps one bitmap of subscription
numbers per word that patterns have at that position, plus two special rows:

- *other*: the pattern accepts any word here (a one-level wildcard, or a position covered by
  a trailing many-level wildcard);
- *null*: the pattern accepts the topic having no word here (the topic ended before).

A lookup ANDs one row per position: for a position holding a topic word, that word's row OR
the *other* row; past the topic's end, the *null* row. It stops as soon as the running AND is
empty. Bitmaps are Python ``int``s; subscription numbers are allocated and reused as in
:mod:`baselines.inverted_bitmap`.
"""

from __future__ import annotations

import threading
from operator import index
from typing import Any, Generic, NamedTuple

from ctrie.errors import UnsupportedPatternError, abbreviate
from ctrie.protocol import S
from ctrie.topics import Dialect, DialectLike, pattern_validator, require_hashable, topic_validator

from .inverted_bitmap import release_number, subscribers_of, take_number

__all__ = ["OptimizedBitmapMatcher"]

_EMPTY: frozenset[Any] = frozenset()


class _Plan(NamedTuple):
    """Where a pattern's bit goes: literal rows, *other* rows, *null* rows, '$' exclusion."""

    literals: tuple[tuple[int, str], ...]  # (position, word)
    other: tuple[int, ...]  # positions whose *other* row gets the bit
    null: tuple[int, ...]  # positions whose *null* row gets the bit
    wild_first: bool  # MQTT: first level is '+' or '#', so '$' topics are excluded


class OptimizedBitmapMatcher(Generic[S]):
    """Per-word-position inverted bitmaps for topics of at most ``max_words`` words. Generic
    in the subscriber type, as every matcher (:class:`ctrie.Matcher`).

    A topic longer than ``max_words`` matches nothing (``lookup`` validates it, then returns
    ``frozenset()``). The MQTT rule that a filter starting with ``+`` or ``#`` does not match
    a topic starting with ``$`` holds: the bits of such filters are kept in one more bitmap,
    ANDed out for ``$`` topics.

    Supported patterns: every pattern of the dialect made of literal words and one-level
    wildcards, optionally ending with a many-level wildcard that the per-position scheme can
    express: NATS ``>``, MQTT ``#`` (which also matches the parent level, ``a/#`` matches
    ``a``) and, in AMQP, ``#`` when every word after the first ``#`` is also ``#`` (a
    trailing run: ``a.*.#``, ``a.#.#``, and ``#`` or ``#.#`` alone, which match every
    topic). The AMQP empty key ``""`` (zero words) is supported as a pattern and as a
    topic: its bit is in every *null* row, and the lookup of ``""`` ANDs only those.

    Unsupported: ``subscribe`` raises :class:`ctrie.UnsupportedPatternError`, and stores
    nothing, for

    1. an AMQP pattern with a ``#`` followed by a word other than ``#``: ``#`` at the start
       of a longer pattern (``#.a``) or in the middle (``a.#.b``, ``a.#.*``). The words after
       such a ``#`` have no fixed position, which per-position rows cannot express;
    2. any pattern whose minimum word count exceeds ``max_words`` (a fixed-length pattern
       longer than ``max_words``, or a prefix before the many-level wildcard plus the words
       it needs -- one for NATS ``>`` -- longer than ``max_words``): it could never match
       a topic this matcher accepts, so it is refused rather than stored silently.

    ``unsubscribe`` of such a pattern returns ``False`` (the pair cannot have been stored).
    Invalid patterns raise :class:`ctrie.InvalidTopicError` as everywhere else.

    Complexity (n = ``max_words``, N the highest subscription number in use, w = 30 bits per
    int digit, m topic words, k matched subscriptions): ``subscribe`` and ``unsubscribe``
    O(n x N / w) (one row update per position); ``lookup`` O(m + n x N / w + k), usually
    less thanks to the early exit; memory O(distinct (position, word) pairs x N / w).

    Thread safety: one ``threading.Lock`` guards the rows and the subscription tables;
    mutations and a lookup's row reads and decoding run under it, so every operation is
    atomic (linearizable) with or without the GIL. Arguments are validated, and patterns
    checked for support, before the lock is taken; an operation that raises leaves the
    matcher unchanged.
    """

    __slots__ = (
        "dialect",
        "_size",
        "_lock",
        "_check_pattern",
        "_check_topic",
        "_rows",
        "_other",
        "_null",
        "_wild_first",
        "_dollar_rule",
        "_entries",
        "_owner",
        "_free",
        "_pairs",
    )

    dialect: Dialect

    def __init__(self, max_words: int, dialect: DialectLike = "nats") -> None:
        if isinstance(max_words, bool):
            raise TypeError(f"max_words must be an int, not bool: {max_words!r}")
        try:
            size = index(max_words)
        except TypeError:
            raise TypeError(
                f"max_words must be an int, not {type(max_words).__name__}: {max_words!r}"
            ) from None
        if size < 1:
            raise ValueError(f"max_words must be at least 1, got {size}")
        self.dialect = Dialect.coerce(dialect)
        self._size = size
        self._lock = threading.Lock()
        self._check_pattern = pattern_validator(self.dialect)
        self._check_topic = topic_validator(self.dialect)
        self._rows: list[dict[str, int]] = [{} for _ in range(size)]  # word -> bitmap
        self._other: list[int] = [0] * size
        self._null: list[int] = [0] * size
        self._wild_first = 0
        self._dollar_rule = self.dialect is Dialect.MQTT
        # pattern -> (plan, {subscriber: subscription number}); no empty entries.
        self._entries: dict[str, tuple[_Plan, dict[S, int]]] = {}
        self._owner: list[Any] = []  # subscription number -> subscriber
        self._free: list[int] = []  # min-heap of freed numbers
        self._pairs = 0

    @property
    def max_words(self) -> int:
        """The longest topic, in words, that this matcher can match (fixed at construction)."""
        return self._size

    def _plan(self, pattern: str, words: list[str]) -> _Plan:
        """Where ``pattern``'s bit goes, or UnsupportedPatternError. Pure; O(max_words)."""
        d = self.dialect
        single, multi = d.single, d.multi
        size = self._size
        if multi in words:
            first = words.index(multi)
            # NATS '>' and MQTT '#' are last by validation; only AMQP can fail this.
            for w in words[first + 1 :]:
                if w != multi:
                    raise UnsupportedPatternError(
                        f"OptimizedBitmapMatcher cannot represent {d.value} pattern "
                        f"{abbreviate(pattern)}: '{multi}' is supported only in a trailing "
                        f"run of '{multi}' words (as in 'a.*.#'); after a '{multi}' followed "
                        f"by another word, the later words have no fixed position"
                    )
            prefix = words[:first]
            min_words = first + d.multi_min
            other = [i for i, w in enumerate(prefix) if w == single]
            other.extend(range(first, size))
            null = range(min_words, size)
        else:
            prefix = words
            min_words = len(words)
            other = [i for i, w in enumerate(prefix) if w == single]
            null = range(min_words, size)
        if min_words > size:
            raise UnsupportedPatternError(
                f"OptimizedBitmapMatcher(max_words={size}) cannot store {d.value} pattern "
                f"{abbreviate(pattern)}: it needs topics of at least {min_words} words, longer "
                f"than any topic this matcher can match, so it could never match"
            )
        literals = tuple((i, w) for i, w in enumerate(prefix) if w != single)
        wild_first = self._dollar_rule and words[0] in (single, multi)
        return _Plan(literals, tuple(other), tuple(null), wild_first)

    def subscribe(self, pattern: str, subscriber: S) -> None:
        """Store the pair and set its bit in its rows; a stored pair is a no-op."""
        words = self._check_pattern(pattern)
        require_hashable(subscriber)
        # Unlocked: a hint only, re-read under the lock. The key may go between the test and
        # the read: then there is no hint.
        entries = self._entries
        try:
            hint = entries[pattern] if pattern in entries else None  # not dict.get: see ctrie/_ftdict.py
        except KeyError:
            hint = None
        plan = hint[0] if hint is not None else self._plan(pattern, words)
        with self._lock:
            entries = self._entries
            entry = entries[pattern] if pattern in entries else None  # not dict.get: see ctrie/_ftdict.py
            if entry is not None:
                plan = entry[0]
                if subscriber in entry[1]:
                    return
            number = take_number(self._owner, self._free, subscriber)
            if entry is None:
                self._entries[pattern] = (plan, {subscriber: number})
            else:
                entry[1][subscriber] = number
            bit = 1 << number
            rows = self._rows
            for pos, word in plan.literals:
                row = rows[pos]
                row[word] = (row[word] if word in row else 0) | bit  # not dict.get: see ctrie/_ftdict.py
            other = self._other
            for pos in plan.other:
                other[pos] |= bit
            null = self._null
            for pos in plan.null:
                null[pos] |= bit
            if plan.wild_first:
                self._wild_first |= bit
            self._pairs += 1

    def unsubscribe(self, pattern: str, subscriber: S) -> bool:
        """Remove the pair, clear its bit and free its number; return whether it was stored."""
        self._check_pattern(pattern)
        require_hashable(subscriber)
        with self._lock:
            entries = self._entries
            entry = entries[pattern] if pattern in entries else None  # not dict.get: see ctrie/_ftdict.py
            if entry is None or subscriber not in entry[1]:
                return False
            plan, numbers = entry
            number = numbers.pop(subscriber)
            if not numbers:
                del self._entries[pattern]
            mask = ~(1 << number)
            rows = self._rows
            for pos, word in plan.literals:
                row = rows[pos]
                left = row[word] & mask
                if left:
                    row[word] = left
                else:
                    del row[word]  # keep one row per word *currently* in a pattern
            other = self._other
            for pos in plan.other:
                other[pos] &= mask
            null = self._null
            for pos in plan.null:
                null[pos] &= mask
            if plan.wild_first:
                self._wild_first &= mask
            release_number(self._owner, self._free, number)
            self._pairs -= 1
            return True

    def lookup(self, topic: str) -> frozenset[S]:
        """Subscribers of every pattern matching ``topic``; nothing if it is too long."""
        words = self._check_topic(topic)
        n = len(words)
        size = self._size
        if n > size:
            return _EMPTY
        with self._lock:
            # -1 is all ones: the identity of AND.
            acc = ~self._wild_first if self._dollar_rule and words[0][:1] == "$" else -1
            for row, other, word in zip(self._rows, self._other, words):
                acc &= (row[word] if word in row else 0) | other  # not dict.get: see ctrie/_ftdict.py
                if not acc:
                    return _EMPTY
            null = self._null
            for pos in range(n, size):
                acc &= null[pos]
                if not acc:
                    return _EMPTY
            return subscribers_of(acc, self._owner)

    def subscriptions(self) -> dict[str, frozenset[S]]:
        """A consistent copy: pattern -> its subscribers (never empty)."""
        with self._lock:
            return {p: frozenset(numbers) for p, (_, numbers) in self._entries.items()}

    def __len__(self) -> int:
        return self._pairs

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self._size}, dialect={self.dialect.value!r}) "
            f"with {self._pairs} pairs"
        )
