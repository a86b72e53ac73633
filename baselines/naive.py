"""The naive baseline: a map from pattern to subscribers, scanned in full on every lookup.

This is the "naive solution" of the Fast Topic Matching article: subscribing adds an entry to
a hash map, and matching a message checks every stored pattern against its topic. Each
pattern is compiled once, when it is first stored, into a small predicate over the topic's
words (:func:`compile_pattern`), so a lookup costs one predicate call per stored pattern and
no re-parsing. :func:`compile_pattern` is also what :class:`~baselines.InvertedBitmapMatcher`
uses to decide which topics of its space a pattern covers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from operator import eq, itemgetter
from typing import Any, Generic, NamedTuple, Optional

from ctrie.protocol import S
from ctrie.topics import Dialect, DialectLike, pattern_validator, require_hashable, topic_validator

__all__ = ["NaiveMatcher", "CompiledPattern", "compile_pattern"]

_EMPTY: frozenset[Any] = frozenset()


class CompiledPattern(NamedTuple):
    """A pattern compiled for repeated matching against validated topic word lists.

    ``match(words)`` takes the ``list`` of words returned by a topic validator of the same
    dialect and says whether the pattern matches that topic; it agrees exactly with
    :func:`ctrie.topics.matches`. ``min_words``/``max_words`` bound the word count of the
    topics it can match (``max_words`` is ``None`` when unbounded); ``literal`` is true when
    the pattern has no wildcard, in which case it matches exactly the topic spelled like it.
    """

    match: Callable[[list[str]], bool]
    min_words: int
    max_words: Optional[int]
    literal: bool


def _always(words: list[str]) -> bool:
    return True


def _segment_checker(
    segment: list[Optional[str]], base: int = 0
) -> Optional[tuple[Callable[[list[str]], object], object]]:
    """``(get, expected)`` checking the literal words of ``segment`` placed at index ``base``.

    ``None`` stands for "any one word" in ``segment``. Returns ``None`` if the segment has no
    literal word (nothing to check). ``base`` may be negative (a segment anchored at the end).
    """
    idx = [base + i for i, w in enumerate(segment) if w is not None]
    if not idx:
        return None
    lits = tuple(w for w in segment if w is not None)
    if len(idx) == 1:
        return itemgetter(idx[0]), lits[0]
    return itemgetter(*idx), lits


def compile_pattern(words: list[str], dialect: Dialect) -> CompiledPattern:
    """Compile a validated pattern (its word list) of ``dialect`` into a :class:`CompiledPattern`.

    The pattern is first rewritten as fixed-length *segments* (literal words and "any one
    word") separated by "zero or more words" gaps; NATS ``>`` becomes "one word" followed by
    a gap. Then:

    - no gap: the topic must have the segment's length and its literal words;
    - one trailing gap: the topic must be at least as long as the segment and start with it;
    - otherwise (AMQP ``#`` at the start or in the middle): the first segment is anchored at
      the start, the last at the end, and each middle segment is placed at its leftmost
      possible position after the previous one. Leftmost placement is optimal because the
      gaps accept any number of words, so matching is O(topic words x pattern words) with no
      backtracking: ``#.a.#.b.#`` cannot blow up.

    The MQTT rule that a filter starting with ``+`` or ``#`` does not match a topic starting
    with ``$`` is part of the compiled predicate. O(len(words)).
    """
    single, multi, multi_min = dialect.single, dialect.multi, dialect.multi_min
    segments: list[list[Optional[str]]] = [[]]
    for w in words:
        if w == multi:
            if multi_min:
                segments[-1].append(None)
            segments.append([])
        elif w == single:
            segments[-1].append(None)
        else:
            segments[-1].append(w)

    if len(segments) == 1:
        seg = segments[0]
        n = len(seg)
        if None not in seg:
            # No wildcard: list equality, done in C (a partial of operator.eq). A literal
            # never starts with a wildcard, so the MQTT '$' rule has nothing to add.
            return CompiledPattern(partial(eq, list(words)), n, n, True)
        compiled = CompiledPattern(_fixed_matcher(seg), n, n, False)
    elif len(segments) == 2 and not segments[1]:
        head = segments[0]
        compiled = CompiledPattern(_prefix_matcher(head), len(head), None, False)
    else:
        min_words = sum(len(s) for s in segments)
        compiled = CompiledPattern(_general_matcher(segments), min_words, None, False)

    if dialect is Dialect.MQTT and words[0] in (single, multi):
        inner = compiled.match

        def dollar_guarded(w: list[str]) -> bool:
            # MQTT 4.7.2: a filter starting with a wildcard does not match a '$' topic.
            return not w[0].startswith("$") and inner(w)

        compiled = compiled._replace(match=dollar_guarded)
    return compiled


def _fixed_matcher(seg: list[Optional[str]]) -> Callable[[list[str]], bool]:
    """Predicate for exactly the words of ``seg`` (``None`` = any one word)."""
    n = len(seg)
    chk = _segment_checker(seg)
    if chk is None:

        def same_length(w: list[str]) -> bool:
            return len(w) == n

        return same_length
    get, lits = chk

    def fixed(w: list[str]) -> bool:
        return len(w) == n and get(w) == lits

    return fixed


def _prefix_matcher(head: list[Optional[str]]) -> Callable[[list[str]], bool]:
    """Predicate for ``head`` followed by zero or more words."""
    k = len(head)
    chk = _segment_checker(head)
    if chk is None:
        if k == 0:
            return _always

        def long_enough(w: list[str]) -> bool:
            return len(w) >= k

        return long_enough
    get, lits = chk

    def prefixed(w: list[str]) -> bool:
        return len(w) >= k and get(w) == lits

    return prefixed


def _general_matcher(segments: list[list[Optional[str]]]) -> Callable[[list[str]], bool]:
    """Predicate for ``segments[0] GAP segments[1] GAP ... GAP segments[-1]`` (>= 1 gap)."""
    head, tail = segments[0], segments[-1]
    hlen, tlen = len(head), len(tail)
    min_len = sum(len(s) for s in segments)
    head_chk = _segment_checker(head)
    tail_chk = _segment_checker(tail, -tlen)
    # Middle segments (empty ones come from '#.#' and vanish) as (length, anchor offset,
    # anchor word, getter, expected). The anchor is the segment's first literal word, used to
    # jump to candidate positions with list.index (C speed) instead of trying each position;
    # a segment of "any one word" only has no anchor (offset -1) and fits anywhere.
    middles: list[tuple[int, int, str, Optional[Callable[[list[str]], object]], object]] = []
    for seg in segments[1:-1]:
        if not seg:
            continue
        chk = _segment_checker(seg)
        if chk is None:
            middles.append((len(seg), -1, "", None, None))
        else:
            off = next(i for i, w in enumerate(seg) if w is not None)
            middles.append((len(seg), off, str(seg[off]), chk[0], chk[1]))

    def match(w: list[str]) -> bool:
        n = len(w)
        if n < min_len:
            return False
        if head_chk is not None and head_chk[0](w) != head_chk[1]:
            return False
        if tail_chk is not None and tail_chk[0](w) != tail_chk[1]:
            return False
        pos = hlen
        end = n - tlen  # the middle segments must fit, in order, in w[pos:end]
        for slen, off, word, get, expected in middles:
            last_start = end - slen
            if get is None:
                if pos > last_start:
                    return False
                pos += slen
                continue
            while True:
                if pos > last_start:
                    return False
                try:
                    start = w.index(word, pos + off, last_start + off + 1) - off
                except ValueError:
                    return False
                if get(w[start : start + slen]) == expected:
                    pos = start + slen
                    break
                pos = start + 1
        return True

    return match


class NaiveMatcher(Generic[S]):
    """Pattern -> subscribers map; every lookup tests every stored pattern. Generic in the
    subscriber type, as every matcher (:class:`ctrie.Matcher`).

    Supports every valid pattern of all three dialects.

    Complexity (P stored patterns, m words in the topic or pattern):
    ``subscribe``/``unsubscribe`` O(m) (validation, one compile the first time a pattern is
    stored, a dict and a set operation); ``lookup`` O(P x m) predicate work (AMQP patterns
    with inner ``#`` are O(m x pattern words) each) plus O(result) to build the answer;
    ``subscriptions`` O(pairs); ``len`` O(1).

    Thread safety: one ``threading.Lock`` guards the map. Mutations and the lookup scan run
    under it, so every operation is atomic (linearizable) on CPython with or without the GIL;
    argument validation runs before the lock is taken, and an operation that raises leaves
    the matcher unchanged.
    """

    __slots__ = ("dialect", "_lock", "_check_pattern", "_check_topic", "_entries", "_pairs")

    dialect: Dialect

    def __init__(self, dialect: DialectLike = "nats") -> None:
        self.dialect = Dialect.coerce(dialect)
        self._lock = threading.Lock()
        self._check_pattern = pattern_validator(self.dialect)
        self._check_topic = topic_validator(self.dialect)
        # pattern -> (compiled predicate, set of subscribers); no entry has an empty set.
        self._entries: dict[str, tuple[Callable[[list[str]], bool], set[S]]] = {}
        self._pairs = 0

    def subscribe(self, pattern: str, subscriber: S) -> None:
        """Store the pair (``pattern``, ``subscriber``); storing it again does nothing."""
        words = self._check_pattern(pattern)
        require_hashable(subscriber)
        with self._lock:
            entries = self._entries
            entry = entries[pattern] if pattern in entries else None  # not dict.get: see ctrie/_ftdict.py
            if entry is None:
                match = compile_pattern(words, self.dialect).match
                self._entries[pattern] = (match, {subscriber})
            elif subscriber in entry[1]:
                return
            else:
                entry[1].add(subscriber)
            self._pairs += 1

    def unsubscribe(self, pattern: str, subscriber: S) -> bool:
        """Remove the pair; return whether it was stored."""
        self._check_pattern(pattern)
        require_hashable(subscriber)
        with self._lock:
            entries = self._entries
            entry = entries[pattern] if pattern in entries else None  # not dict.get: see ctrie/_ftdict.py
            if entry is None or subscriber not in entry[1]:
                return False
            subs = entry[1]
            subs.remove(subscriber)
            if not subs:
                del self._entries[pattern]
            self._pairs -= 1
            return True

    def lookup(self, topic: str) -> frozenset[S]:
        """Subscribers of every stored pattern matching the literal ``topic``, each once."""
        words = self._check_topic(topic)
        with self._lock:
            hits = [subs for match, subs in self._entries.values() if match(words)]
            if not hits:
                return _EMPTY
            if len(hits) == 1:
                return frozenset(hits[0])
            return _EMPTY.union(*hits)

    def subscriptions(self) -> dict[str, frozenset[S]]:
        """A consistent copy: pattern -> its subscribers (never empty)."""
        with self._lock:
            return {p: frozenset(subs) for p, (_, subs) in self._entries.items()}

    def __len__(self) -> int:
        return self._pairs

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dialect={self.dialect.value!r}) with {self._pairs} pairs"
