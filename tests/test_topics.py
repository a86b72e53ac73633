"""Layer 1: the topic model -- validation tables, matching tables, and properties.

Every table row below was written from ``api.md`` (the dialect table and its rules), not from
``ctrie/topics.py``. A validation row gives a string and its verdict as a pattern and as a
topic; each verdict is either ``OK`` or the one rule the string breaks (the error message must
name that rule), or ``SEVERAL`` when it breaks more than one. Each row is therefore two cases.

The properties hold the validators to a grammar written here as regular expressions over
explicit character classes (whitespace is the set of characters for which ``str.isspace()``
holds, listed once), and ``ctrie.matches`` to a recursive brute-force matcher.
"""

from __future__ import annotations

import itertools
import re
import sys
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import DIALECTS, LITERALS, SYNTAX, fuzz_text, patterns, topics, words_of

import ctrie
from ctrie import (
    Dialect,
    InvalidTopicError,
    UnsupportedPatternError,
    matches,
    validate_pattern,
    validate_topic,
)

NATS, AMQP, MQTT = Dialect.NATS, Dialect.AMQP, Dialect.MQTT

# --- verdicts and the words a message must use for each rule --------------------------------

OK = "ok"
EMPTY = "the string is empty"
EMPTY_WORD = "an empty token/word"
WS = "whitespace in a token"
MULTI_LAST = "the many-level wildcard is not last"
LITERAL = "a topic holds a wildcard"
WHOLE = "'+'/'#' do not fill a whole level"
NUL = "U+0000"
SEVERAL = "several rules broken"

# Case-insensitive; any one suffices. Searched in the message with the offending string's
# repr removed, so that the string itself cannot supply the word.
RULE_WORDS = {
    EMPTY: ("empty", "at least one"),
    EMPTY_WORD: ("empty",),
    WS: ("whitespace", "space"),
    MULTI_LAST: ("last",),
    LITERAL: ("literal", "wildcard", "'*'", "'>'", "'#'", "'+'"),
    WHOLE: ("whole",),
    NUL: ("u+0000", "null", "nul"),
}

# --- validation tables ----------------------------------------------------------------------

NATS_VALIDATION = [
    # literal tokens
    ("a", OK, OK),
    ("foo", OK, OK),
    ("foo.bar", OK, OK),
    ("foo.bar.baz", OK, OK),
    ("a.b.c.d.e.f.g.h.i.j", OK, OK),
    ("FOO.Bar", OK, OK),
    ("1.2.3", OK, OK),
    ("foo-bar.baz_qux", OK, OK),
    ("$SYS.ACCOUNT", OK, OK),
    ("$", OK, OK),
    ("_INBOX.x1y2", OK, OK),
    ("日本.語", OK, OK),
    ("ü.ÿ", OK, OK),
    ("\x00", OK, OK),  # U+0000 is not whitespace and NATS has no rule against it
    ("a\x00b.c", OK, OK),
    ("a\u200bb", OK, OK),  # ZERO WIDTH SPACE: str.isspace() is False
    ("\ufeff", OK, OK),
    # '*' and '>' inside a token are literal characters
    ("foo*", OK, OK),
    ("*foo", OK, OK),
    ("f*o", OK, OK),
    ("**", OK, OK),
    ("foo>", OK, OK),
    (">foo", OK, OK),
    (">>", OK, OK),
    ("*>", OK, OK),
    (">*", OK, OK),
    ("a.foo*.b", OK, OK),
    ("a.>b", OK, OK),
    ("a.b>", OK, OK),
    ("a.**", OK, OK),
    (">a.b", OK, OK),
    # the other dialects' wildcards and separator are literal in NATS
    ("#", OK, OK),
    ("a.#", OK, OK),
    ("#.a.#", OK, OK),
    ("+", OK, OK),
    ("a/+/#", OK, OK),
    ("a/b", OK, OK),
    ("/", OK, OK),
    # wildcards: valid patterns, never topics
    ("*", OK, LITERAL),
    (">", OK, LITERAL),
    ("a.*", OK, LITERAL),
    ("*.a", OK, LITERAL),
    ("a.*.b", OK, LITERAL),
    ("*.*", OK, LITERAL),
    ("*.*.*", OK, LITERAL),
    ("a.>", OK, LITERAL),
    ("*.>", OK, LITERAL),
    ("a.*.>", OK, LITERAL),
    ("foo.bar.>", OK, LITERAL),
    ("a.b.c.*", OK, LITERAL),
    ("foo*.*", OK, LITERAL),
    ("*.foo>", OK, LITERAL),
    ("$SYS.>", OK, LITERAL),
    ("#.*", OK, LITERAL),
    # '>' anywhere but last
    (">.a", MULTI_LAST, LITERAL),
    ("a.>.b", MULTI_LAST, LITERAL),
    (">.>", MULTI_LAST, LITERAL),
    (">.*", MULTI_LAST, LITERAL),
    ("a.>.>", MULTI_LAST, LITERAL),
    ("*.>.a", MULTI_LAST, LITERAL),
    (">.a.b.c", MULTI_LAST, LITERAL),
    (">.foo>", MULTI_LAST, LITERAL),
    # the empty string
    ("", EMPTY, EMPTY),
    # empty tokens
    (".", EMPTY_WORD, EMPTY_WORD),
    ("..", EMPTY_WORD, EMPTY_WORD),
    ("...", EMPTY_WORD, EMPTY_WORD),
    ("a.", EMPTY_WORD, EMPTY_WORD),
    (".a", EMPTY_WORD, EMPTY_WORD),
    ("a..b", EMPTY_WORD, EMPTY_WORD),
    ("a.b.", EMPTY_WORD, EMPTY_WORD),
    (".a.b", EMPTY_WORD, EMPTY_WORD),
    ("foo..bar.baz", EMPTY_WORD, EMPTY_WORD),
    ("foo*.", EMPTY_WORD, EMPTY_WORD),
    ("*.", EMPTY_WORD, SEVERAL),
    (".*", EMPTY_WORD, SEVERAL),
    (".>", EMPTY_WORD, SEVERAL),
    ("a..>", EMPTY_WORD, SEVERAL),
    ("a.*.", EMPTY_WORD, SEVERAL),
    (">.", SEVERAL, SEVERAL),
    # whitespace (every character with str.isspace()), anywhere in a token
    (" ", WS, WS),
    ("a b", WS, WS),
    (" a", WS, WS),
    ("a ", WS, WS),
    ("a.b c", WS, WS),
    ("a.\tb", WS, WS),
    ("\t", WS, WS),
    ("a\nb", WS, WS),
    ("a\r", WS, WS),
    ("a\x0b", WS, WS),
    ("a\x0c", WS, WS),
    ("a\x1c", WS, WS),  # FILE SEPARATOR
    ("\x1f.a", WS, WS),  # UNIT SEPARATOR
    ("a.\x85", WS, WS),  # NEXT LINE
    ("\xa0", WS, WS),  # NO-BREAK SPACE
    ("a\u1680", WS, WS),  # OGHAM SPACE MARK
    ("a\u2009b", WS, WS),  # THIN SPACE
    ("a.\u2028", WS, WS),  # LINE SEPARATOR
    ("\u3000.a", WS, WS),  # IDEOGRAPHIC SPACE
    ("a.\u202f", WS, WS),  # NARROW NO-BREAK SPACE
    ("a.* ", WS, WS),  # '* ' is a literal token that holds whitespace
    ("a. *", WS, WS),
    ("a.> ", WS, WS),
    ("* .a", WS, WS),
    ("a. ", WS, WS),
    (" .a", WS, WS),
    ("a.*.\t", WS, SEVERAL),
    ("*.\u3000", WS, SEVERAL),
    (">.\t", SEVERAL, SEVERAL),
    ("a b..c", SEVERAL, SEVERAL),
    (". ", SEVERAL, SEVERAL),
]

AMQP_VALIDATION = [
    # literal words
    ("a", OK, OK),
    ("a.b", OK, OK),
    ("a.b.c", OK, OK),
    ("stock.usd.nyse", OK, OK),
    ("a.b.c.d.e.f.g.h.i.j", OK, OK),
    ("A.b", OK, OK),
    ("1.2", OK, OK),
    ("日本.語", OK, OK),
    ("a-b.c_d", OK, OK),
    ("$SYS", OK, OK),
    ("foo.bar.baz.qux", OK, OK),
    # AMQP has no whitespace rule
    (" ", OK, OK),
    ("a b", OK, OK),
    (" a", OK, OK),
    ("a ", OK, OK),
    ("a. .b", OK, OK),
    ("\t", OK, OK),
    ("a\nb", OK, OK),
    ("\u3000.x", OK, OK),
    ("a.\x1c", OK, OK),
    (" . ", OK, OK),
    ("a\tb.c", OK, OK),
    ("a.\u200b", OK, OK),
    # nor a U+0000 rule
    ("\x00", OK, OK),
    ("a\x00.b", OK, OK),
    # '*' and '#' inside a word are literal characters
    ("a#", OK, OK),
    ("#a", OK, OK),
    ("a*", OK, OK),
    ("*a", OK, OK),
    ("##", OK, OK),
    ("**", OK, OK),
    ("#*", OK, OK),
    ("*#", OK, OK),
    ("a.b#", OK, OK),
    ("a.#b", OK, OK),
    ("x.*y.z", OK, OK),
    ("a.##", OK, OK),
    ("# ", OK, OK),
    (" #", OK, OK),
    ("* ", OK, OK),
    # the other dialects' wildcards and separator are literal in AMQP
    (">", OK, OK),
    ("a.>", OK, OK),
    ("+", OK, OK),
    ("a/+", OK, OK),
    ("a/#", OK, OK),
    ("/", OK, OK),
    ("a/b/c", OK, OK),
    # wildcards, '#' anywhere: valid patterns, never topics
    ("#", OK, LITERAL),
    ("*", OK, LITERAL),
    ("#.#", OK, LITERAL),
    ("#.*", OK, LITERAL),
    ("*.#", OK, LITERAL),
    ("a.#", OK, LITERAL),
    ("#.a", OK, LITERAL),
    ("a.#.b", OK, LITERAL),
    ("#.a.#", OK, LITERAL),
    ("*.a", OK, LITERAL),
    ("a.*", OK, LITERAL),
    ("a.*.b", OK, LITERAL),
    ("*.*", OK, LITERAL),
    ("#.#.#", OK, LITERAL),
    ("a.#.#.b", OK, LITERAL),
    ("*.#.*", OK, LITERAL),
    ("#.b.#.c.#", OK, LITERAL),
    ("a.*.#", OK, LITERAL),
    ("#.*.a", OK, LITERAL),
    ("#.a b", OK, LITERAL),
    ("*. ", OK, LITERAL),
    ("$SYS.#", OK, LITERAL),
    ("*.a.#.b.*", OK, LITERAL),
    ("#.#.a", OK, LITERAL),
    # the empty key: zero words, valid (AMQP 0-9-1: a routing key is "zero or more words")
    ("", OK, OK),
    # empty words
    (".", EMPTY_WORD, EMPTY_WORD),
    ("..", EMPTY_WORD, EMPTY_WORD),
    ("...", EMPTY_WORD, EMPTY_WORD),
    ("a.", EMPTY_WORD, EMPTY_WORD),
    (".a", EMPTY_WORD, EMPTY_WORD),
    ("a..b", EMPTY_WORD, EMPTY_WORD),
    ("a.b.", EMPTY_WORD, EMPTY_WORD),
    (".a.b", EMPTY_WORD, EMPTY_WORD),
    ("a#.", EMPTY_WORD, EMPTY_WORD),
    (". ", EMPTY_WORD, EMPTY_WORD),
    (" .", EMPTY_WORD, EMPTY_WORD),
    ("#.", EMPTY_WORD, SEVERAL),
    (".#", EMPTY_WORD, SEVERAL),
    ("*..*", EMPTY_WORD, SEVERAL),
    ("a.#.", EMPTY_WORD, SEVERAL),
    (".*", EMPTY_WORD, SEVERAL),
    ("#..#", EMPTY_WORD, SEVERAL),
    ("a..#", EMPTY_WORD, SEVERAL),
    ("#..", EMPTY_WORD, SEVERAL),
]

MQTT_VALIDATION = [
    # literal levels, empty levels included
    ("a", OK, OK),
    ("a/b", OK, OK),
    ("a/b/c", OK, OK),
    ("sport/tennis/player1", OK, OK),
    ("/", OK, OK),
    ("/a", OK, OK),
    ("a/", OK, OK),
    ("a//b", OK, OK),
    ("//", OK, OK),
    ("///", OK, OK),
    ("/a/", OK, OK),
    ("A/B", OK, OK),
    ("a-b_c", OK, OK),
    ("日本/語", OK, OK),
    # '$' topics are ordinary strings to the validators
    ("$SYS", OK, OK),
    ("$SYS/broker/load", OK, OK),
    ("$", OK, OK),
    ("$/a", OK, OK),
    ("a/$b", OK, OK),
    ("a/$", OK, OK),
    # MQTT has no whitespace rule
    (" ", OK, OK),
    ("a b/c", OK, OK),
    ("\t", OK, OK),
    ("a/\n", OK, OK),
    ("\u3000", OK, OK),
    ("a/\x1c", OK, OK),
    ("\u200b", OK, OK),
    # the other dialects' wildcards and separator are literal in MQTT
    ("a.b", OK, OK),
    ("a.b.c", OK, OK),
    ("a*", OK, OK),
    ("*", OK, OK),
    (">", OK, OK),
    ("a.>", OK, OK),
    ("a.*", OK, OK),
    ("*/a", OK, OK),
    # wildcards filling whole levels: valid filters, never topic names
    ("+", OK, LITERAL),
    ("#", OK, LITERAL),
    ("a/+", OK, LITERAL),
    ("+/a", OK, LITERAL),
    ("a/#", OK, LITERAL),
    ("+/#", OK, LITERAL),
    ("/+", OK, LITERAL),
    ("+/", OK, LITERAL),
    ("/#", OK, LITERAL),
    ("+/+", OK, LITERAL),
    ("a/+/b", OK, LITERAL),
    ("+/+/+", OK, LITERAL),
    ("a/+/#", OK, LITERAL),
    ("$SYS/#", OK, LITERAL),
    ("$SYS/+", OK, LITERAL),
    ("/+/", OK, LITERAL),
    ("+//", OK, LITERAL),
    ("//#", OK, LITERAL),
    ("a//+", OK, LITERAL),
    ("+/$x", OK, LITERAL),
    ("+/ /#", OK, LITERAL),
    ("a/b/c/#", OK, LITERAL),
    (" /+", OK, LITERAL),
    # '+' or '#' sharing a level with other characters
    ("a+", WHOLE, LITERAL),
    ("+a", WHOLE, LITERAL),
    ("a#", WHOLE, LITERAL),
    ("#a", WHOLE, LITERAL),
    ("a/b+", WHOLE, LITERAL),
    ("a/+b", WHOLE, LITERAL),
    ("a/#b", WHOLE, LITERAL),
    ("a/b#", WHOLE, LITERAL),
    ("++", WHOLE, LITERAL),
    ("##", WHOLE, LITERAL),
    ("+#", WHOLE, LITERAL),
    ("#+", WHOLE, LITERAL),
    ("a/+#", WHOLE, LITERAL),
    ("sport+", WHOLE, LITERAL),
    ("a/ + /b", WHOLE, LITERAL),
    ("$SYS#", WHOLE, LITERAL),
    ("+ ", WHOLE, LITERAL),
    (" #", WHOLE, LITERAL),
    # '#' anywhere but last
    ("#/a", MULTI_LAST, LITERAL),
    ("#/#", MULTI_LAST, LITERAL),
    ("a/#/b", MULTI_LAST, LITERAL),
    ("#/+", MULTI_LAST, LITERAL),
    ("#/", MULTI_LAST, LITERAL),
    ("+/#/a", MULTI_LAST, LITERAL),
    ("/#/", MULTI_LAST, LITERAL),
    ("#//", MULTI_LAST, LITERAL),
    ("#/a+", SEVERAL, LITERAL),
    ("a+/#/b", SEVERAL, LITERAL),
    # U+0000
    ("\x00", NUL, NUL),
    ("a\x00", NUL, NUL),
    ("a/\x00", NUL, NUL),
    ("\x00/a", NUL, NUL),
    ("a/b\x00c", NUL, NUL),
    ("/\x00/", NUL, NUL),
    ("+/\x00", NUL, SEVERAL),
    ("#\x00", SEVERAL, SEVERAL),
    ("a/#/\x00", SEVERAL, SEVERAL),
    # at least one character
    ("", EMPTY, EMPTY),
]

VALIDATION = {NATS: NATS_VALIDATION, AMQP: AMQP_VALIDATION, MQTT: MQTT_VALIDATION}
# The rules of api.md per dialect: each must have at least one single-rule case.
RULES = {
    NATS: {OK, EMPTY, EMPTY_WORD, WS, MULTI_LAST, LITERAL},
    AMQP: {OK, EMPTY_WORD, LITERAL},
    MQTT: {OK, EMPTY, LITERAL, WHOLE, MULTI_LAST, NUL},
}
MIN_VALIDATION_CASES = 150


def _validation_params() -> list:
    return [
        pytest.param(d, s, as_pattern, as_topic, id=f"{d.value}-{i}-{s!r}")
        for d, rows in VALIDATION.items()
        for i, (s, as_pattern, as_topic) in enumerate(rows)
    ]


def test_validation_tables_are_large_enough(figures):
    for d, rows in VALIDATION.items():
        strings = [s for s, _, _ in rows]
        dupes = sorted({s for s in strings if strings.count(s) > 1})
        assert not dupes, f"{d.value}: duplicate rows {dupes}"
        n = 2 * len(rows)  # every row is checked as a pattern and as a topic
        assert n >= MIN_VALIDATION_CASES, f"{d.value}: only {n} validation cases"
        verdicts = {v for _, p, t in rows for v in (p, t)}
        missing = RULES[d] - verdicts
        assert not missing, f"{d.value}: no case for {missing}"


def _check_one(validate, s: str, dialect: Dialect, kind: str, verdict: str) -> None:
    for dialect_arg in (dialect, dialect.value):  # a member or its name
        if verdict == OK:
            words = validate(s, dialect_arg)
            assert list(words) == words_of(s, dialect), f"{kind} {s!r}: returned {words!r}"
            continue
        with pytest.raises(InvalidTopicError) as info:
            validate(s, dialect_arg)
        exc = info.value
        assert isinstance(exc, ValueError)
        msg = str(exc)
        assert repr(s) in msg, f"{kind} {s!r}: the message {msg!r} does not name the string"
        if verdict != SEVERAL:
            rest = msg.replace(repr(s), "").lower()
            assert any(w.lower() in rest for w in RULE_WORDS[verdict]), (
                f"{dialect.value} {kind} {s!r} breaks '{verdict}', but the message {msg!r} "
                f"does not say so (expected one of {RULE_WORDS[verdict]})"
            )


@pytest.mark.parametrize(("dialect", "s", "as_pattern", "as_topic"), _validation_params())
def test_validation_table(dialect, s, as_pattern, as_topic, figures):
    _check_one(validate_pattern, s, dialect, "pattern", as_pattern)
    _check_one(validate_topic, s, dialect, "topic", as_topic)
    figures.add(f"validation cases {dialect.value}", 2)


# --- matching tables ------------------------------------------------------------------------

T, F = True, False

NATS_MATCHES = [
    ("a", "a", T),
    ("a", "b", F),
    ("a", "a.b", F),
    ("a.b", "a", F),
    ("a.b", "a.b", T),
    ("a.b", "a.c", F),
    ("a.b", "b.a", F),
    ("A", "a", F),  # case-sensitive
    ("*", "a", T),
    ("*", "a.b", F),
    ("a.*", "a.b", T),
    ("a.*", "a", F),
    ("a.*", "a.b.c", F),
    ("*.b", "a.b", T),
    ("*.b", "a.c", F),
    ("*.*", "a.b", T),
    ("*.*", "a", F),
    ("*.*.*", "a.b.c", T),
    ("*.*.*", "a.b.c.d", F),
    (">", "a", T),
    (">", "a.b.c", T),
    (">", "a.b.c.d.e.f", T),
    ("a.>", "a", F),  # '>' needs at least one token
    ("a.>", "a.b", T),
    ("a.>", "a.b.c", T),
    ("a.>", "b.c", F),
    ("a.b.>", "a.b", F),
    ("*.>", "a", F),
    ("*.>", "a.b", T),
    ("a.*.>", "a.b", F),
    ("a.*.>", "a.b.c", T),
    ("a.*.>", "a.b.c.d", T),
    ("foo*", "foo", F),  # 'foo*' is a literal token
    ("foo*", "foo*", T),
    ("foo*", "foobar", F),
    ("foo*.*", "foo*.x", T),
    ("foo>", "foo.bar", F),
    ("foo>", "foo>", T),
    ("*>", "a", F),
    ("$SYS.>", "$SYS.x", T),
    (">", "$SYS.x", T),  # no '$' rule in NATS
    ("*", "$SYS", T),
    ("#", "#", T),  # '#' is literal in NATS
    ("#", "a", F),
    ("a.#", "a.b", F),
    ("a.+", "a.+", T),
    ("a.+", "a.b", F),
]

AMQP_MATCHES = [
    ("a", "a", T),
    ("a", "b", F),
    ("a.b", "a.b", T),
    ("a.b", "a", F),
    ("*", "a", T),
    ("*", "a.b", F),
    ("a.*", "a.b", T),
    ("a.*", "a", F),
    ("#", "a", T),
    ("#", "a.b.c", T),
    ("#", "$sys", T),
    ("a.#", "a", T),  # '#' may take zero words
    ("a.#", "a.b", T),
    ("a.#", "a.b.c", T),
    ("a.#", "b", F),
    ("a.#", "b.a", F),
    ("#.a", "a", T),  # '#' first
    ("#.a", "x.y.a", T),
    ("#.a", "a.x", F),
    ("a.#.b", "a.b", T),  # '#' in the middle
    ("a.#.b", "a.x.b", T),
    ("a.#.b", "a.x.y.b", T),
    ("a.#.b", "a.x.y", F),
    ("a.#.b", "b.a.b", F),
    ("a.#.b", "a.b.c", F),
    ("#.#", "a", T),  # '#.#' behaves as '#'
    ("#.#", "a.b.c", T),
    ("#.#.a", "a", T),
    ("#.#.a", "a.b", F),
    ("a.#.#.b", "a.b", T),
    ("#.a.#", "a", T),
    ("#.a.#", "x.a.y", T),
    ("#.a.#", "x.b.y", F),
    ("*.#", "a", T),
    ("*.#", "a.b", T),
    ("#.*", "a", T),
    ("#.*", "a.b.c", T),
    ("*.*.#", "a", F),
    ("#.*.*", "a.b", T),
    ("#.*.*", "a", F),
    ("a.*.#", "a.b", T),
    ("a.*.#", "a", F),
    ("a.#.*", "a.b", T),
    ("a.#.*", "a", F),
    ("*.#.*", "a", F),
    ("*.#.*", "a.b", T),
    ("*.#.*", "a.b.c.d", T),
    ("#.b.#.c.#", "a.b.x.c.d", T),
    ("#.b.#.c.#", "b.c", T),
    ("#.b.#.c.#", "c.b", F),
    ("a#", "a", F),  # 'a#' is a literal word
    ("a#", "a#", T),
    ("a#", "ab", F),
    ("#a", "xa", F),
    ("*a", "ba", F),
    (">", ">", T),  # '>' is literal in AMQP
    ("a.>", "a.b", F),
    # the empty key: zero words, matched by '' and by the patterns that can match zero words
    ("", "", T),
    ("#", "", T),
    ("#.#", "", T),
    ("#.#.#", "", T),
    ("*", "", F),
    ("*.#", "", F),
    ("#.*", "", F),
    ("a.#", "", F),  # '#' may take zero words, but 'a' needs one ('a.#' matches 'a')
    ("#.a", "", F),
    ("a", "", F),
    ("", "a", F),  # '' matches only ''
    ("", "a.b", F),
    ("", "#c", F),
]

MQTT_MATCHES = [
    ("a", "a", T),
    ("a", "b", F),
    ("a/b", "a/b", T),
    ("a/b", "a", F),
    ("A", "a", F),
    ("a/#", "a", T),  # '#' matches the parent
    ("a/#", "a/b", T),
    ("a/#", "a/b/c", T),
    ("a/#", "a/", T),
    ("a/#", "b", F),
    ("a/#", "ab", F),
    ("a/b/#", "a/b", T),
    ("a/b/#", "a", F),
    ("a/+/#", "a/b", T),
    ("a/+/#", "a", F),
    ("+/#", "a", T),
    ("sport/#", "sport", T),
    ("#", "a", T),
    ("#", "/", T),
    ("#", "a/b/c", T),
    ("#", "/$x", T),  # the first level is empty, not '$...'
    ("+", "a", T),
    ("+", "a/b", F),
    ("+", "/", F),
    ("+/+", "/", T),  # '+' matches an empty level
    ("/+", "/a", T),
    ("/+", "a", F),
    ("+/+", "a/", T),
    ("a/+", "a", F),
    ("a/+", "a/", T),
    ("a//b", "a//b", T),
    ("a//b", "a/b", F),
    ("a/b", "a//b", F),
    ("/", "/", T),
    ("/", "a", F),
    ("/#", "/a", T),
    ("/#", "a", F),
    ("sport/tennis/+", "sport/tennis/player1", T),
    ("sport/tennis/+", "sport/tennis/player1/ranking", F),
    ("sport/+", "sport", F),
    # a filter starting with a wildcard does not match a topic starting with '$'
    ("#", "$SYS", F),
    ("#", "$SYS/a", F),
    ("#", "$", F),
    ("+", "$SYS", F),
    ("+", "$", F),
    ("+/a", "$x/a", F),
    ("+/#", "$SYS/x", F),
    ("+/+", "$/", F),
    ("$SYS/#", "$SYS/x", T),
    ("$SYS/#", "$SYS", T),
    ("$SYS/+", "$SYS/x", T),
    ("$", "$", T),
    ("a/+", "a/$x", T),  # only the first level counts
    ("a/#", "a/$x", T),
    ("a/$", "a/$", T),
    # other dialects' wildcards are literal in MQTT
    ("a.b", "a.b", T),
    ("a.*", "a.b", F),
    ("*", "a", F),
    (">", "a", F),
]

MATCHES = {NATS: NATS_MATCHES, AMQP: AMQP_MATCHES, MQTT: MQTT_MATCHES}


def _matches_params() -> list:
    return [
        pytest.param(d, p, t, want, id=f"{d.value}-{p!r}-{t!r}")
        for d, rows in MATCHES.items()
        for p, t, want in rows
    ]


def test_matches_tables_cover_both_outcomes():
    for d, rows in MATCHES.items():
        pairs = [(p, t) for p, t, _ in rows]
        assert len(set(pairs)) == len(pairs), f"{d.value}: duplicate rows"
        assert sum(w for *_, w in rows) >= 15 and sum(not w for *_, w in rows) >= 15, d


@pytest.mark.parametrize(("dialect", "pattern", "topic", "want"), _matches_params())
def test_matches_table(dialect, pattern, topic, want, figures):
    assert matches(pattern, topic, dialect) is want, f"{dialect.value}: {pattern!r} ~ {topic!r}"
    assert matches(pattern, topic, dialect.value) is want
    # The brute-force matcher of the properties below must agree with the table too.
    assert brute_matches(pattern, topic, dialect) is want
    figures.add(f"matches cases {dialect.value}")


def test_whitespace_fast_path_premise():
    """The NATS validators' fast path accepts any str.isprintable() text without ' ' as free
    of whitespace. That holds only if ' ' is the one printable whitespace character in all
    of Unicode; and each whitespace character must still be rejected inside a word."""
    printable_space = [c for c in map(chr, range(0x110000)) if c.isspace() and c.isprintable()]
    assert printable_space == [" "]
    for c in (c for c in map(chr, range(0x110000)) if c.isspace()):
        with pytest.raises(InvalidTopicError):
            validate_topic(f"a{c}b.c", Dialect.NATS)
        with pytest.raises(InvalidTopicError):
            validate_pattern(f"a.b{c}", Dialect.NATS)


# --- errors ---------------------------------------------------------------------------------


def test_error_classes():
    assert issubclass(InvalidTopicError, ValueError)
    assert issubclass(UnsupportedPatternError, ValueError)
    assert not issubclass(UnsupportedPatternError, InvalidTopicError)
    assert ctrie.InvalidTopicError is InvalidTopicError


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
@pytest.mark.parametrize("value", [None, 1, 2.5, b"a", bytearray(b"a"), ["a"], ("a",), object()],
                         ids=repr)
def test_non_str_is_type_error(dialect, value):
    with pytest.raises(TypeError):
        validate_pattern(value, dialect)
    with pytest.raises(TypeError):
        validate_topic(value, dialect)
    with pytest.raises(TypeError):
        matches(value, "a", dialect)
    with pytest.raises(TypeError):
        matches("a", value, dialect)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_matches_validates_both_arguments(dialect):
    for s, as_pattern, as_topic in VALIDATION[dialect]:
        if as_pattern != OK:
            with pytest.raises(InvalidTopicError, match=re.escape(repr(s))):
                matches(s, "a", dialect)
        if as_topic != OK:
            with pytest.raises(InvalidTopicError, match=re.escape(repr(s))):
                matches(SYNTAX[dialect].multi, s, dialect)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_long_invalid_strings_give_short_messages(dialect):
    """The validators and the reference quote a long string by its start, its length and
    the characters around the place it broke the rule, in at most about 1,000 characters,
    however many of them need escapes; the exception keeps the whole string."""
    s = SYNTAX[dialect]
    # 100,000 characters whose repr takes 10 each, then a one-level wildcard in a topic.
    odd = "\U000e0001" * 100_000
    topic = odd + s.sep + s.single
    for call in (lambda: validate_topic(topic, dialect), lambda: matches("a", topic, dialect)):
        with pytest.raises(InvalidTopicError) as info:
            call()
        msg = str(info.value)
        assert len(msg) <= 1_000, (len(msg), msg[:300])
        assert "100,002 characters" in msg and "character index 100,001" in msg, msg
        assert "word index 1" in msg and repr(s.sep + s.single)[1:] in msg, msg
        assert info.value.value == topic and info.value.word == 1
    short = f"a{s.sep}{s.single}"
    with pytest.raises(InvalidTopicError) as info:
        validate_topic(short, dialect)
    assert repr(short) in str(info.value) and "character index 2 (word index 1)" in str(info.value)


# --- an independent grammar of valid patterns and topics ------------------------------------

_WS = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
_W = re.escape(_WS)

# NATS: tokens are non-empty runs of characters other than '.' and whitespace.
_N_TOKEN_NOT_GT = rf"(?:[^.>{_W}][^.{_W}]*|>[^.{_W}]+)"  # any token but '>'
_N_LITERAL = rf"(?:[^.*>{_W}][^.{_W}]*|[*>][^.{_W}]+)"  # any token but '*' and '>'
# AMQP: words are non-empty runs of characters other than '.'.
_A_LITERAL = r"(?:[^.*#][^.]*|[*#][^.]+)"  # any word but '*' and '#'
# MQTT: a literal level is any run (maybe empty) of characters other than '/', '+', '#', NUL.
_M_LEVEL = r"(?:[^/+#\x00]*|\+)"

GRAMMAR = {
    (NATS, "pattern"): re.compile(rf"(?:{_N_TOKEN_NOT_GT}\.)*(?:{_N_TOKEN_NOT_GT}|>)"),
    (NATS, "topic"): re.compile(rf"{_N_LITERAL}(?:\.{_N_LITERAL})*"),
    # the empty key: zero words
    (AMQP, "pattern"): re.compile(r"(?:[^.]+(?:\.[^.]+)*)?"),
    (AMQP, "topic"): re.compile(rf"(?:{_A_LITERAL}(?:\.{_A_LITERAL})*)?"),
    (MQTT, "pattern"): re.compile(rf"(?=[\s\S])(?:{_M_LEVEL}/)*(?:{_M_LEVEL}|#)"),
    (MQTT, "topic"): re.compile(r"[^+#\x00]+"),
}


def grammar_accepts(s: str, dialect: Dialect, kind: str) -> bool:
    return GRAMMAR[dialect, kind].fullmatch(s) is not None


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_grammar_agrees_with_the_tables(dialect):
    """The grammar is checked against the hand-written tables before it judges the code."""
    for s, as_pattern, as_topic in VALIDATION[dialect]:
        assert grammar_accepts(s, dialect, "pattern") is (as_pattern == OK), s
        assert grammar_accepts(s, dialect, "topic") is (as_topic == OK), s


def _structured(dialect: Dialect) -> st.SearchStrategy[str]:
    """Strings made of the words that the rules are about, joined by either separator."""
    words = st.sampled_from(
        ["a", "b", "", "*", ">", "#", "+", "a*", "#b", "+c", " ", "\t", "$", "$x", "\x00",
         "\u3000", "\x1c", "\u200b", "a b"]
    )
    sep = SYNTAX[dialect].sep
    seps = st.sampled_from([sep, sep, "/" if sep == "." else "."])
    return st.tuples(st.lists(words, min_size=1, max_size=5), seps).map(
        lambda ws: ws[1].join(ws[0])
    )


FUZZ_SETTINGS = settings(max_examples=800, deadline=None, derandomize=True, database=None,
                         suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_validators_fuzz(dialect, figures):
    """Arbitrary text: the validators succeed or raise InvalidTopicError naming the text, and
    they accept exactly what the grammar accepts, in both directions."""
    count = 0

    @FUZZ_SETTINGS
    @given(s=st.one_of(fuzz_text(), _structured(dialect)))
    def check(s):
        nonlocal count
        count += 1
        for kind, validate in (("pattern", validate_pattern), ("topic", validate_topic)):
            try:
                words = validate(s, dialect)
            except InvalidTopicError as exc:
                assert repr(s) in str(exc), f"{kind} {s!r}: message {str(exc)!r}"
                valid = False
            else:
                assert list(words) == words_of(s, dialect)
                valid = True
            assert valid is grammar_accepts(s, dialect, kind), (
                f"{dialect.value} {kind} {s!r}: validator says {'valid' if valid else 'invalid'}"
            )

    check()
    figures.add(f"validator fuzz inputs {dialect.value}", count)


# --- an independent brute-force matcher -----------------------------------------------------


def brute_matches(pattern: str, topic: str, dialect: Dialect) -> bool:
    """Recursive matcher over (pattern word i, topic word j); inputs must be valid."""
    s = SYNTAX[dialect]
    p = words_of(pattern, dialect)
    t = words_of(topic, dialect)
    if dialect is MQTT and t[0][:1] == "$" and p[0] in (s.single, s.multi):
        return False

    @cache
    def m(i: int, j: int) -> bool:
        if i == len(p):
            return j == len(t)
        if p[i] == s.multi:
            if s.multi_last_only:  # validated: this is the last word
                return len(t) - j >= s.multi_min
            return m(i + 1, j) or (j < len(t) and m(i, j + 1))
        if j == len(t):
            return False
        return (p[i] == s.single or p[i] == t[j]) and m(i + 1, j + 1)

    return m(0, 0)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_matches_agrees_with_brute_force(dialect, figures):
    count = 0

    @settings(max_examples=600, deadline=None, derandomize=True, database=None)
    @given(pattern=patterns(dialect, max_words=6), topic=topics(dialect, max_words=6))
    def check(pattern, topic):
        nonlocal count
        count += 1
        assert matches(pattern, topic, dialect) is brute_matches(pattern, topic, dialect), (
            f"{dialect.value}: {pattern!r} ~ {topic!r}"
        )

    check()
    figures.add(f"matches property pairs {dialect.value}", count)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_matches_exhaustive_small(dialect, figures):
    """Every pattern and topic of up to 3 words over the alphabet, against the brute force."""
    s = SYNTAX[dialect]
    symbols = (*LITERALS[dialect], s.single, s.multi)
    all_patterns = [""] if dialect is AMQP else []  # the empty key
    for n in range(1, 4):
        for ws in itertools.product(symbols, repeat=n):
            if s.multi_last_only and s.multi in ws[:-1]:
                continue
            if "".join(ws) or n > 1:
                all_patterns.append(s.sep.join(ws))
    all_topics_ = [""] if dialect is AMQP else []
    all_topics_ += [
        s.sep.join(ws)
        for n in range(1, 4)
        for ws in itertools.product(LITERALS[dialect], repeat=n)
        if "".join(ws) or n > 1
    ]
    n_true = 0
    for p in all_patterns:
        for t in all_topics_:
            want = brute_matches(p, t, dialect)
            assert matches(p, t, dialect) is want, f"{dialect.value}: {p!r} ~ {t!r}"
            n_true += want
    total = len(all_patterns) * len(all_topics_)
    assert 0.05 * total < n_true < 0.95 * total  # both outcomes well represented
    figures.add(f"matches exhaustive pairs {dialect.value}", total)


def test_an_error_quotes_a_str_subclass_by_its_text_not_its_repr():
    """A subclass's ``__repr__`` may return anything: the message quotes the string's own
    text, abbreviated as any other."""
    from ctrie.errors import abbreviate

    huge = type("Huge", (str,), {"__repr__": lambda self: "R" * 10**6})
    assert abbreviate(huge("a.*")) == "'a.*'"
    assert len(abbreviate(huge("w" * 10**6))) < 1000
