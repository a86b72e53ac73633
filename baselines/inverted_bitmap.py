"""The inverted bitmap baseline: one bitmap of subscriptions per topic of a fixed topic space.

The "Inverted Bitmap" of the Fast Topic Matching article moves the matching work from lookup
to subscribe. The topic space is known up front; every stored (pattern, subscriber) pair gets
a *subscription number*, and subscribing sets that bit in the bitmap of every topic of the
space the pattern matches. A lookup is then one dict access and the decoding of one bitmap.
Bitmaps are Python ``int``s (arbitrary precision, C-speed ``|``, ``&``, ``~``).

The number bookkeeping here (:func:`take_number`, :func:`release_number`,
:func:`subscribers_of`) is shared with :class:`~baselines.OptimizedBitmapMatcher`.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable
from heapq import heappop, heappush
from typing import Any, Generic

from ctrie.errors import InvalidTopicError, abbreviate
from ctrie.protocol import S
from ctrie.topics import Dialect, DialectLike, pattern_validator, require_hashable, topic_validator

from .naive import compile_pattern

__all__ = ["InvertedBitmapMatcher", "TopicOutsideSpaceError", "take_number", "release_number",
           "subscribers_of"]

_EMPTY: frozenset[Any] = frozenset()

# Marks a free slot of an owner list (a subscriber may be None, so None cannot mark it).
_FREE = object()

# Up to this many set bits, decode by peeling the lowest bit off the int; above it, scan the
# binary string once (O(bits) in C) so that dense bitmaps do not cost O(k x bits).
_PEEL_LIMIT = 16


def take_number(owner: list[Any], free: list[int], subscriber: Hashable) -> int:
    """Allocate a subscription number for ``subscriber``: the smallest freed one, else a new one.

    ``owner`` maps number -> subscriber; ``free`` is a min-heap of freed numbers. Reusing the
    smallest number keeps bitmaps as short as the live population allows. O(log F).
    """
    if free:
        number = heappop(free)
        owner[number] = subscriber
        return number
    owner.append(subscriber)
    return len(owner) - 1


def release_number(owner: list[Any], free: list[int], number: int) -> None:
    """Free ``number`` for reuse. Call it exactly once per freed pair. O(log F).

    The original Go implementation appended the id to its free list on *every* Unsubscribe
    call, including repeated calls for a subscription already removed (its benchmark did
    exactly that), so the same number could sit in the free list twice and later be handed
    to two live subscriptions at once, which then shared a bit. Here a number is released
    only when its pair was actually present, so each freed number is pushed exactly once.
    """
    owner[number] = _FREE
    heappush(free, number)


def subscribers_of(bitmap: int, owner: list[Any]) -> frozenset[Any]:
    """The subscribers whose numbers are set in ``bitmap``, as a frozenset (no duplicates)."""
    if not bitmap:
        return _EMPTY
    count = bitmap.bit_count()
    if count == 1:
        return frozenset((owner[bitmap.bit_length() - 1],))
    if count <= _PEEL_LIMIT:
        out: list[Any] = []
        append = out.append
        while bitmap:
            low = bitmap & -bitmap
            append(owner[low.bit_length() - 1])
            bitmap ^= low
        return frozenset(out)
    digits = bin(bitmap)  # '0b1...'; bit i is the character at index top - i
    top = len(digits) - 1
    find = digits.find
    out = []
    append = out.append
    i = find("1", 2)
    while i != -1:
        append(owner[top - i])
        i = find("1", i + 1)
    return frozenset(out)


class TopicOutsideSpaceError(InvalidTopicError):
    """A lookup of a valid topic outside an :class:`InvertedBitmapMatcher`'s topic space, by
    a matcher built with ``outside_space="raise"``. A :class:`ctrie.InvalidTopicError`
    (hence a ``ValueError``) whose message names the topic and the rule; ``value`` is the
    topic. The matcher is unchanged."""


class InvertedBitmapMatcher(Generic[S]):
    """One subscription bitmap per topic of a topic space fixed at construction. Generic in
    the subscriber type, as every matcher (:class:`ctrie.Matcher`).

    ``topic_space`` is an iterable of topics (each validated as a topic of the dialect;
    duplicates are ignored; in AMQP it may hold the empty key ``""``, of zero words). Every
    valid pattern of the dialect is supported, including AMQP ``#`` anywhere: a pattern
    covers the topics of the space that :func:`ctrie.matches` says it matches. A pattern matching no topic of the space is still stored (and reported by
    ``subscriptions`` and ``len``); it just never sets a bit.

    Looking up a valid topic that is not in the space returns ``frozenset()`` (the topic has
    no bitmap, so no subscription is known to match it, whatever is stored), or, with the
    keyword-only ``outside_space="raise"``, raises :class:`TopicOutsideSpaceError` naming
    the topic and the rule. ``outside_space="empty"`` (the default) is the first behaviour.
    The test costs nothing on a topic inside the space.

    Complexity (T topics in the space, m words, M topics a pattern matches, N the highest
    subscription number in use, w = 30 bits per int digit, k matched subscriptions):
    construction O(total topic length); ``subscribe`` of a new pattern scans the topics of a
    word count the pattern can match, O(T x m) worst case and O(1) for a literal pattern,
    then sets M bits at O(N / w) each; ``subscribe`` of a further subscriber to a stored
    pattern and ``unsubscribe`` cost O(M x N / w); ``lookup`` O(m + N / w + k).

    Thread safety: one ``threading.Lock`` guards the bitmaps and the subscription tables;
    mutations and a lookup's bitmap read and decoding run under it, so every operation is
    atomic (linearizable) with or without the GIL. The scan of the (immutable) topic space
    for a new pattern runs before the lock is taken. Arguments are validated first; an
    operation that raises leaves the matcher unchanged.
    """

    __slots__ = (
        "dialect",
        "_lock",
        "_check_pattern",
        "_check_topic",
        "_bitmaps",
        "_by_length",
        "_entries",
        "_owner",
        "_free",
        "_pairs",
        "_outside_raises",
    )

    dialect: Dialect

    def __init__(self, topic_space: Iterable[str], dialect: DialectLike = "nats", *,
                 outside_space: str = "empty") -> None:
        if outside_space not in ("empty", "raise"):
            raise ValueError("outside_space must be 'empty' (return frozenset()) or 'raise', "
                             f"not {abbreviate(outside_space)}")
        self._outside_raises = outside_space == "raise"
        self.dialect = Dialect.coerce(dialect)
        if isinstance(topic_space, str):
            raise TypeError(
                "topic_space must be an iterable of topics, not a single str: "
                f"{abbreviate(topic_space)}"
            )
        self._lock = threading.Lock()
        self._check_pattern = pattern_validator(self.dialect)
        check_topic = self._check_topic = topic_validator(self.dialect)
        # topic -> bitmap of the subscription numbers whose pattern matches it.
        bitmaps: dict[str, int] = {}
        # word count -> [(topic, words)], to scan only topics a pattern's length allows.
        by_length: dict[int, list[tuple[str, list[str]]]] = {}
        for topic in topic_space:
            words = check_topic(topic)
            if topic not in bitmaps:
                bitmaps[topic] = 0
                by_length.setdefault(len(words), []).append((topic, words))
        self._bitmaps = bitmaps
        self._by_length = by_length
        # pattern -> (topics of the space it matches, {subscriber: subscription number}).
        self._entries: dict[str, tuple[tuple[str, ...], dict[S, int]]] = {}
        self._owner: list[Any] = []  # subscription number -> subscriber (or _FREE)
        self._free: list[int] = []  # min-heap of freed numbers
        self._pairs = 0

    def _topics_matching(self, pattern: str, words: list[str]) -> tuple[str, ...]:
        """The topics of the space that ``pattern`` matches (pure: the space never changes)."""
        compiled = compile_pattern(words, self.dialect)
        if compiled.literal:
            return (pattern,) if pattern in self._bitmaps else ()
        by_length = self._by_length
        if compiled.max_words is not None:
            k = compiled.min_words
            groups = [by_length[k] if k in by_length else ()]  # not dict.get: see ctrie/_ftdict.py
        else:
            lo = compiled.min_words
            groups = [g for n, g in by_length.items() if n >= lo]
        match = compiled.match
        return tuple(topic for g in groups for topic, tw in g if match(tw))

    def subscribe(self, pattern: str, subscriber: S) -> None:
        """Store the pair and set its bit in every matching topic; a stored pair is a no-op."""
        words = self._check_pattern(pattern)
        require_hashable(subscriber)
        # An unlocked read is only a hint (dict reads are safe without the GIL too); the
        # decision is taken again under the lock.
        entries = self._entries
        try:  # the key may go between the test and the read: then there is no hint
            hint = entries[pattern] if pattern in entries else None  # not dict.get: see ctrie/_ftdict.py
        except KeyError:
            hint = None
        topics = hint[0] if hint is not None else self._topics_matching(pattern, words)
        with self._lock:
            entries = self._entries
            entry = entries[pattern] if pattern in entries else None  # not dict.get: see ctrie/_ftdict.py
            if entry is not None:
                topics = entry[0]
                if subscriber in entry[1]:
                    return
            number = take_number(self._owner, self._free, subscriber)
            if entry is None:
                self._entries[pattern] = (topics, {subscriber: number})
            else:
                entry[1][subscriber] = number
            bit = 1 << number
            bitmaps = self._bitmaps
            for topic in topics:
                bitmaps[topic] |= bit
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
            topics, numbers = entry
            number = numbers.pop(subscriber)
            if not numbers:
                del self._entries[pattern]
            mask = ~(1 << number)
            bitmaps = self._bitmaps
            for topic in topics:
                bitmaps[topic] &= mask
            release_number(self._owner, self._free, number)
            self._pairs -= 1
            return True

    def lookup(self, topic: str) -> frozenset[S]:
        """Subscribers of every pattern matching ``topic``; outside the space,
        ``frozenset()`` or (``outside_space="raise"``) :class:`TopicOutsideSpaceError`."""
        self._check_topic(topic)
        with self._lock:
            bitmaps = self._bitmaps
            if topic in bitmaps:
                bitmap = bitmaps[topic]  # not dict.get: see ctrie/_ftdict.py
                if not bitmap:
                    return _EMPTY
                return subscribers_of(bitmap, self._owner)
        # Outside the space (which never changes): nothing was read, nothing changed.
        if self._outside_raises:
            raise TopicOutsideSpaceError(
                topic, "topic", self.dialect.value,
                f"not in this InvertedBitmapMatcher's topic space of {len(bitmaps):,} "
                f"topic{'' if len(bitmaps) == 1 else 's'} "
                "(built with outside_space='raise'; a topic outside the space has no bitmap)")
        return _EMPTY

    def subscriptions(self) -> dict[str, frozenset[S]]:
        """A consistent copy: pattern -> its subscribers (never empty)."""
        with self._lock:
            return {p: frozenset(numbers) for p, (_, numbers) in self._entries.items()}

    def __len__(self) -> int:
        return self._pairs

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(<{len(self._bitmaps)} topics>, "
            f"dialect={self.dialect.value!r}) with {self._pairs} pairs"
        )
