"""Generators of patterns, topics and bad input per dialect, shared by the whole suite.

The syntax of each dialect is restated here from ``api.md`` (``SYNTAX``) rather than read from
``ctrie.Dialect``, so that the tests do not inherit a mistake of the code they check.

Two flavours of every generator:

- Hypothesis strategies (``patterns``, ``topics``, ``fuzz_text``) for property tests and the
  state machine, which shrink on failure;
- plain functions of a seeded ``random.Random`` (``random_pattern``, ``random_topic``) and an
  exhaustive enumeration (``all_topics``) for the oracle and threaded tests.

Alphabets are deliberately tiny (three or four literal words) so that patterns collide, share
prefixes and match topics often; each one holds a literal that looks like a wildcard to a
careless implementation (``c*`` in NATS, ``#c`` in AMQP) and, for MQTT, an empty level and a
``$`` level. In AMQP they also give the empty key ``""`` (zero words), which AMQP 0-9-1
allows as a routing key and as a binding key.
"""

from __future__ import annotations

import itertools
import os
import random
import zlib
from dataclasses import dataclass

from hypothesis import strategies as st

from ctrie import Dialect

__all__ = [
    "BASE_SEED",
    "DIALECTS",
    "INVALID_PATTERNS",
    "INVALID_TOPICS",
    "LITERALS",
    "NON_STR",
    "SUBSCRIBERS",
    "SYNTAX",
    "UNHASHABLE",
    "Syntax",
    "all_topics",
    "every_pattern",
    "fuzz_text",
    "min_words",
    "pattern_pool",
    "patterns",
    "random_pattern",
    "random_topic",
    "seed_for",
    "subscribers",
    "topic_pool",
    "topics",
    "words_of",
]

DIALECTS = (Dialect.NATS, Dialect.AMQP, Dialect.MQTT)

# Every seeded test derives its seed from this one and its own name; set CSTRIE_TEST_SEED to
# explore other seeds. Assertion messages print the derived seed.
BASE_SEED = int(os.environ.get("CSTRIE_TEST_SEED", "20240611"))


def seed_for(*parts: object) -> int:
    """A stable seed for one test case, e.g. ``seed_for("oracle", spec.name, dialect)``."""
    text = "/".join(str(getattr(p, "value", p)) for p in (BASE_SEED, *parts))
    return zlib.crc32(text.encode())


@dataclass(frozen=True)
class Syntax:
    """A dialect's syntax as ``api.md`` states it."""

    sep: str
    single: str  # exactly one word
    multi: str  # many words
    multi_min: int  # words the many-level wildcard needs at least
    multi_last_only: bool


SYNTAX = {
    Dialect.NATS: Syntax(".", "*", ">", 1, True),
    Dialect.AMQP: Syntax(".", "*", "#", 0, False),
    Dialect.MQTT: Syntax("/", "+", "#", 0, True),
}

LITERALS = {
    Dialect.NATS: ("a", "b", "c*"),
    Dialect.AMQP: ("a", "b", "#c"),
    Dialect.MQTT: ("a", "b", "", "$x"),
}

# Subscribers of several hashable types; few of them, so that they are shared between patterns.
SUBSCRIBERS = (0, 1, "s", ("t", 2))


def words_of(s: str, dialect: Dialect) -> list[str]:
    """The words of a valid pattern or topic: none for the AMQP empty key, else the split."""
    if not s and dialect is Dialect.AMQP:
        return []
    return s.split(SYNTAX[dialect].sep)


def _zero_words_ok(dialect: Dialect) -> bool:
    """Whether ``""`` (zero words) is a valid pattern and topic: AMQP only."""
    return dialect is Dialect.AMQP


def min_words(words: list[str], dialect: Dialect) -> int:
    """The fewest topic words a pattern (given as its words) can match."""
    s = SYNTAX[dialect]
    return sum(s.multi_min if w == s.multi else 1 for w in words)


# --- Hypothesis strategies ------------------------------------------------------------------


def patterns(dialect: Dialect, max_words: int = 4) -> st.SearchStrategy[str]:
    """Valid patterns of 1..max_words words over the dialect's small alphabet (AMQP: from
    0 words, the empty key)."""
    s = SYNTAX[dialect]
    lits = LITERALS[dialect]
    if s.multi_last_only:
        body = st.lists(st.sampled_from((*lits, s.single)), max_size=max_words)
        words = st.tuples(body, st.booleans()).map(
            lambda bt: [*bt[0], s.multi] if bt[1] else bt[0]
        )
        words = words.filter(lambda w: 1 <= len(w) <= max_words)
    else:
        symbols = st.sampled_from((*lits, s.single, s.multi))
        words = st.lists(symbols, min_size=0 if _zero_words_ok(dialect) else 1,
                         max_size=max_words)
    # MQTT: a single empty level is "", which is invalid there
    return words.map(s.sep.join).filter(lambda p: bool(p) or _zero_words_ok(dialect))


def every_pattern(dialect: Dialect, max_words: int) -> list[str]:
    """Every valid pattern of 1..max_words words over the alphabet, shortest first (AMQP:
    the empty key first)."""
    s = SYNTAX[dialect]
    symbols = (*LITERALS[dialect], s.single, s.multi)
    out = [""] if _zero_words_ok(dialect) else []
    for n in range(1, max_words + 1):
        for ws in itertools.product(symbols, repeat=n):
            if s.multi_last_only and s.multi in ws[:-1]:
                continue
            pattern = s.sep.join(ws)
            if pattern:
                out.append(pattern)
    return out


def pattern_pool(dialect: Dialect, max_words: int = 4) -> st.SearchStrategy[str]:
    """Like :func:`patterns`, drawn from the precomputed :func:`every_pattern` in two draws (a
    length, then a pattern of that length): cheap enough for state machines that draw
    hundreds of thousands, and short patterns, which collide most, are as likely as long.
    (The AMQP empty key is drawn with the one-word patterns.)"""
    sep = SYNTAX[dialect].sep
    pool = every_pattern(dialect, max_words)
    by_len = [[p for p in pool if p.count(sep) == n - 1] for n in range(1, max_words + 1)]
    return st.one_of(*(st.sampled_from(ps) for ps in by_len))


def topic_pool(topic_list: list[str], sep: str) -> st.SearchStrategy[str]:
    """A topic from ``topic_list``, its length (in words) uniform first."""
    lengths = sorted({t.count(sep) for t in topic_list})
    return st.one_of(*(st.sampled_from([t for t in topic_list if t.count(sep) == n])
                       for n in lengths))


def topics(dialect: Dialect, max_words: int = 4) -> st.SearchStrategy[str]:
    """Valid (literal) topics of 1..max_words words over the dialect's small alphabet (AMQP:
    from 0 words, the empty key)."""
    s = SYNTAX[dialect]
    zero = _zero_words_ok(dialect)
    words = st.lists(st.sampled_from(LITERALS[dialect]), min_size=0 if zero else 1,
                     max_size=max_words)
    return words.map(s.sep.join).filter(lambda t: bool(t) or zero)


def subscribers() -> st.SearchStrategy[object]:
    return st.sampled_from(SUBSCRIBERS)


# Characters that matter to some dialect, and whitespace of several kinds (str.isspace()),
# including some that a careless check misses (U+001C, U+0085, U+3000) and one look-alike that
# is not whitespace (U+200B).
_SPECIAL = [".", "/", "*", ">", "#", "+", "$", "a", "b", " ", "\x00", "\t", "\n", "\x0b",
            "\x1c", "\x85", "\xa0", "\u2028", "\u3000", "\u200b"]


def fuzz_text(max_size: int = 10) -> st.SearchStrategy[str]:
    """Arbitrary text, biased towards the characters the dialects give a meaning to."""
    chars = st.one_of(st.sampled_from(_SPECIAL), st.characters())
    return st.one_of(st.text(chars, max_size=max_size), st.text(max_size=max_size))


# --- seeded random generators ---------------------------------------------------------------


def random_pattern(rng: random.Random, dialect: Dialect, max_words: int = 4) -> str:
    """A valid pattern of 1..max_words words; wildcards about a third of the words. In AMQP,
    one in twenty is the empty key (zero words)."""
    s = SYNTAX[dialect]
    lits = LITERALS[dialect]
    if _zero_words_ok(dialect) and rng.random() < 0.05:
        return ""
    while True:
        n = rng.randint(1, max_words)
        words = [rng.choice(lits) if rng.random() < 0.65 else s.single for _ in range(n)]
        if s.multi_last_only:
            if rng.random() < 0.35:
                words[-1] = s.multi
        else:
            for i in range(n):
                if rng.random() < 0.2:
                    words[i] = s.multi
        pattern = s.sep.join(words)
        if pattern:
            return pattern


def random_topic(rng: random.Random, dialect: Dialect, min_len: int = 1, max_len: int = 4) -> str:
    """A valid topic of min_len..max_len words (0 words: the AMQP empty key)."""
    s = SYNTAX[dialect]
    while True:
        n = rng.randint(min_len, max_len)
        topic = s.sep.join(rng.choice(LITERALS[dialect]) for _ in range(n))
        if topic or (n == 0 and _zero_words_ok(dialect)):
            return topic


def all_topics(dialect: Dialect, max_words: int) -> list[str]:
    """Every valid topic of 1..max_words words over the alphabet, sorted (AMQP: and the
    empty key, of zero words)."""
    s = SYNTAX[dialect]
    out = {
        s.sep.join(ws)
        for n in range(1, max_words + 1)
        for ws in itertools.product(LITERALS[dialect], repeat=n)
    }
    out.discard("")  # MQTT: one empty level
    if _zero_words_ok(dialect):
        out.add("")
    return sorted(out)


# --- bad input ------------------------------------------------------------------------------

INVALID_PATTERNS = {
    Dialect.NATS: ["", ".", "a..b", ".a", "a.", "a.>.b", ">.a", "a b", "a.\tb", "a.\u3000"],
    Dialect.AMQP: [".", "a..b", ".a", "a.", "#..#", "*."],  # "" is the empty key: valid
    Dialect.MQTT: ["", "a+", "a/b#", "#/a", "a/#/b", "+#", "a/\x00", "\x00"],
}

INVALID_TOPICS = {
    Dialect.NATS: ["", ".", "a..b", "a.", "*", ">", "a.*", "a.>", "a b", "\x1c"],
    Dialect.AMQP: [".", "a..b", "a.", "*", "#", "a.#", "#.a", "a.*.b"],
    Dialect.MQTT: ["", "+", "#", "a/+", "a/#", "a+", "a#b", "\x00", "a/\x00"],
}

NON_STR = [None, 1, 2.5, b"a", bytearray(b"a"), ["a"], ("a",), object()]

UNHASHABLE = [[], ["a"], {}, set(), bytearray(b"x")]
