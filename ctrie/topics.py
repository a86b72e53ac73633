"""The topic model: dialects, validation and the reference matcher.

Three dialects are supported (see ``docs/api.md`` for the table this module implements):

========  =========  =========  ==============================================
dialect   separator  one level  many levels
========  =========  =========  ==============================================
``NATS``  ``.``      ``*``      ``>``: one or more tokens, last token only
``AMQP``  ``.``      ``*``      ``#``: zero or more words, anywhere
``MQTT``  ``/``      ``+``      ``#``: zero or more levels, last level only
========  =========  =========  ==============================================

AMQP 0-9-1 makes a topic exchange's routing key "zero or more words": the empty key ``""`` is
a valid AMQP pattern and topic with zero words (the validators return ``[]``). It is matched
by the pattern ``""`` and by every pattern that can match zero words (``#``, ``#.#``), never
by one that needs a word (``*``, ``*.#``, ``a.#``); the pattern ``""`` matches only ``""``, as
RabbitMQ routes it. Empty *words* stay invalid (``a..b``, ``.a``), and NATS and MQTT reject
``""``.

:func:`validate_pattern` and :func:`validate_topic` split a string into its words and raise
:class:`~ctrie.errors.InvalidTopicError` naming the string and the rule it breaks.
:func:`matches` is the plain reference matcher that every matcher of the package is tested
against; it is written for obviousness, not speed.

All functions here are pure and thread-safe.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal, Optional, TypeVar, Union

from .errors import InvalidTopicError, abbreviate

__all__ = [
    "EMPTY_KEY_WORD",
    "Dialect",
    "DialectLike",
    "DialectName",
    "validate_pattern",
    "validate_topic",
    "matches",
    "pattern_validator",
    "topic_validator",
    "require_hashable",
    "join_paths",
]


class Dialect(enum.Enum):
    """A topic dialect: separator, wildcard words and their rules.

    Members carry their syntax as attributes: ``separator``, ``single`` (the one-level
    wildcard), ``multi`` (the many-level wildcard), ``multi_min`` (how many words the
    many-level wildcard needs at least: 1 for NATS ``>``, 0 otherwise) and
    ``multi_last_only`` (whether it may only end a pattern).
    """

    NATS = "nats"
    AMQP = "amqp"
    MQTT = "mqtt"

    separator: str
    single: str
    multi: str
    multi_min: int
    multi_last_only: bool

    @classmethod
    def coerce(cls, value: Dialect | str) -> Dialect:
        """Return the member for ``value``: a member, or its name (``"nats"``, ``"AMQP"``...).

        Takes any ``str`` (a name read from a command line or a file, in any case) and raises
        ``ValueError`` for an unknown one; the constructors' ``dialect=`` is typed
        :data:`DialectLike`, so a type checker rejects a misspelt literal there first."""
        if isinstance(value, Dialect):
            return value
        if isinstance(value, str):
            try:
                return cls(value.lower())
            except ValueError:
                pass
            raise ValueError(
                f"unknown dialect {abbreviate(value)}: expected one of "
                + ", ".join(repr(d.value) for d in cls)
            )
        raise TypeError(f"dialect must be a Dialect or its name, not {type(value).__name__}")


#: A dialect's name, as a type checker accepts it for ``dialect=`` (``CSTrie("natz")`` is a
#: type error; at run time any case is accepted, see :meth:`Dialect.coerce`).
DialectName = Literal["nats", "mqtt", "amqp"]
#: What every ``dialect=`` parameter takes: a :class:`Dialect` member or its name.
DialectLike = Union[Dialect, DialectName]

for _d, _syntax in {
    Dialect.NATS: (".", "*", ">", 1, True),
    Dialect.AMQP: (".", "*", "#", 0, False),
    Dialect.MQTT: ("/", "+", "#", 0, True),
}.items():
    (_d.separator, _d.single, _d.multi, _d.multi_min, _d.multi_last_only) = _syntax
del _d, _syntax

#: Where the tries keep the subscribers of the AMQP empty key (the pattern ``""``, zero words):
#: the branch of this word at their root. An empty word is invalid everywhere else in an AMQP
#: key, so no other pattern can reach that branch, and no topic word can look it up.
EMPTY_KEY_WORD = ""

# ``\s`` on a str pattern is exactly the set of characters for which ``str.isspace()`` holds.
_WHITESPACE = re.compile(r"\s")

# The rules, worded once so that every error names the same rule the same way.
R_NOT_EMPTY = "must not be empty"
R_EMPTY_TOKEN = "empty tokens are not allowed (no leading, trailing or doubled '.')"
R_WHITESPACE = "tokens must not contain whitespace"
R_NATS_FWC_LAST = "'>' may only be the last token"
R_LITERAL_NATS = "a topic must be literal: '*' and '>' are not allowed as tokens"
R_EMPTY_WORD = "empty words are not allowed (no leading, trailing or doubled '.')"
R_LITERAL_AMQP = "a topic must be literal: '*' and '#' are not allowed as words"
R_MQTT_NUL = "must not contain the null character U+0000"
R_MQTT_WHOLE_LEVEL = "'+' and '#' must occupy a whole level"
R_MQTT_HASH_LAST = "'#' may only be the last level"
R_MQTT_TOPIC_WILDCARD = "a topic name must not contain '+' or '#'"


def _str_or_type_error(value: object, kind: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{kind} must be a str, not {type(value).__name__}: {abbreviate(value)}")


# Errors (off every hot path): where the rule broke, as a character index into the string and
# the index of the word it is in, so that a message about a long string can point there.


def _invalid(value: str, kind: str, dialect: str, rule: str, at: Optional[int] = None,
             sep: str = ".") -> InvalidTopicError:
    """The error for ``value`` breaking ``rule`` at character index ``at`` (None: at no
    one place); the word index is counted here. O(len(value))."""
    word = None if at is None else value.count(sep, 0, at)
    return InvalidTopicError(value, kind, dialect, rule, at, word)


def _offset(words: list[str], i: int) -> int:
    """The character index where word ``i`` starts (one-character separators)."""
    return sum(map(len, words[:i])) + i


def _first_of(words: list[str], *bad: str) -> int:
    """The character index of the first word that is one of ``bad`` (one must be there)."""
    return _offset(words, min(words.index(b) for b in bad if b in words))


def require_hashable(subscriber: object) -> None:
    """Raise ``TypeError`` naming ``subscriber`` if it cannot be hashed."""
    try:
        hash(subscriber)
    except TypeError:
        raise TypeError(
            f"subscriber must be hashable, not {type(subscriber).__name__}: "
            f"{abbreviate(subscriber)}"
        ) from None


# --- NATS -----------------------------------------------------------------------------------


def _whitespace_at(s: str) -> int:
    """The index of the first whitespace character of ``s`` (-1 if none)."""
    m = _WHITESPACE.search(s)
    return -1 if m is None else m.start()


def _has_whitespace(s: str) -> bool:
    # In printable text the only whitespace is ' ': a cheap test for the common case.
    if s.isprintable():
        return " " in s
    return _WHITESPACE.search(s) is not None


def _nats_pattern(pattern: str) -> list[str]:
    # Hot path (every subscribe and unsubscribe), as in _nats_topic: a plain printable str
    # without space needs only the empty-word test and the '>' rule ('*' is a word of its
    # own or part of a literal word: both valid; so is a '>' inside a word). Anything else
    # takes the full checks below, which name the rule broken.
    if type(pattern) is str and pattern.isprintable() and " " not in pattern:
        words = pattern.split(".")
        if "" not in words and (">" not in pattern or ">" not in words
                                or words.index(">") == len(words) - 1):
            return words
    _str_or_type_error(pattern, "pattern")
    words = pattern.split(".")
    if not pattern:
        raise InvalidTopicError(pattern, "pattern", "nats", R_NOT_EMPTY)
    if "" in words:
        raise _invalid(pattern, "pattern", "nats", R_EMPTY_TOKEN, _first_of(words, ""))
    if _has_whitespace(pattern):
        raise _invalid(pattern, "pattern", "nats", R_WHITESPACE, _whitespace_at(pattern))
    if ">" in words and words.index(">") != len(words) - 1:
        raise _invalid(pattern, "pattern", "nats", R_NATS_FWC_LAST, _first_of(words, ">"))
    return words


def _nats_topic(topic: str) -> list[str]:
    # Hot path (every lookup): a printable string without space, '*' or '>' needs only the
    # empty-token test (the only whitespace character str.isprintable() accepts is the
    # space; test_topics checks that over all of Unicode). Anything else takes the full
    # checks below.
    if isinstance(topic, str) and topic.isprintable() and " " not in topic \
            and "*" not in topic and ">" not in topic:
        words = topic.split(".")
        if "" not in words:
            return words
    _str_or_type_error(topic, "topic")
    words = topic.split(".")
    if not topic:
        raise InvalidTopicError(topic, "topic", "nats", R_NOT_EMPTY)
    if "" in words:
        raise _invalid(topic, "topic", "nats", R_EMPTY_TOKEN, _first_of(words, ""))
    if _has_whitespace(topic):
        raise _invalid(topic, "topic", "nats", R_WHITESPACE, _whitespace_at(topic))
    if "*" in words or ">" in words:
        raise _invalid(topic, "topic", "nats", R_LITERAL_NATS, _first_of(words, "*", ">"))
    return words


# --- AMQP -----------------------------------------------------------------------------------


def _amqp_pattern(pattern: str) -> list[str]:
    _str_or_type_error(pattern, "pattern")
    if not pattern:
        return []  # the empty key: zero words (AMQP 0-9-1, see EMPTY_KEY_WORD)
    words = pattern.split(".")
    if "" in words:
        raise _invalid(pattern, "pattern", "amqp", R_EMPTY_WORD, _first_of(words, ""))
    return words


def _amqp_topic(topic: str) -> list[str]:
    if isinstance(topic, str) and "*" not in topic and "#" not in topic:  # hot path
        words = topic.split(".")
        if "" not in words:
            return words
    _str_or_type_error(topic, "topic")
    if not topic:
        return []  # the empty key: zero words; off the hot path above ("" has an empty word)
    words = topic.split(".")
    if "" in words:
        raise _invalid(topic, "topic", "amqp", R_EMPTY_WORD, _first_of(words, ""))
    if "*" in words or "#" in words:
        raise _invalid(topic, "topic", "amqp", R_LITERAL_AMQP, _first_of(words, "*", "#"))
    return words


# --- MQTT -----------------------------------------------------------------------------------


def _wildcard_at(s: str) -> int:
    """The index of the first '+' or '#' in ``s`` (there must be one)."""
    return min(i for i in (s.find("+"), s.find("#")) if i >= 0)


def _mqtt_pattern(pattern: str) -> list[str]:
    if not isinstance(pattern, str):  # the test of _str_or_type_error, without its call
        _str_or_type_error(pattern, "pattern")
    if not pattern:
        raise InvalidTopicError(pattern, "pattern", "mqtt", "must be at least one character")
    if "\x00" in pattern:
        raise _invalid(pattern, "pattern", "mqtt", R_MQTT_NUL, pattern.index("\x00"), "/")
    words = pattern.split("/")
    if "+" in pattern or "#" in pattern:
        last = len(words) - 1
        for i, level in enumerate(words):
            if level == "#":
                if i != last:
                    raise _invalid(pattern, "pattern", "mqtt", R_MQTT_HASH_LAST,
                                   _offset(words, i), "/")
            elif level != "+" and ("+" in level or "#" in level):
                raise _invalid(pattern, "pattern", "mqtt", R_MQTT_WHOLE_LEVEL,
                               _offset(words, i) + _wildcard_at(level), "/")
    return words


def _mqtt_topic(topic: str) -> list[str]:
    _str_or_type_error(topic, "topic")
    if not topic:
        raise InvalidTopicError(topic, "topic", "mqtt", "must be at least one character")
    if "+" in topic or "#" in topic:
        raise _invalid(topic, "topic", "mqtt", R_MQTT_TOPIC_WILDCARD, _wildcard_at(topic), "/")
    if "\x00" in topic:
        raise _invalid(topic, "topic", "mqtt", R_MQTT_NUL, topic.index("\x00"), "/")
    return topic.split("/")


_PATTERN = {Dialect.NATS: _nats_pattern, Dialect.AMQP: _amqp_pattern, Dialect.MQTT: _mqtt_pattern}
_TOPIC = {Dialect.NATS: _nats_topic, Dialect.AMQP: _amqp_topic, Dialect.MQTT: _mqtt_topic}


def pattern_validator(dialect: DialectLike) -> Callable[[str], list[str]]:
    """The validating splitter for patterns of ``dialect`` (for matchers' hot paths)."""
    return _PATTERN[Dialect.coerce(dialect)]


def topic_validator(dialect: DialectLike) -> Callable[[str], list[str]]:
    """The validating splitter for topics of ``dialect`` (for matchers' hot paths)."""
    return _TOPIC[Dialect.coerce(dialect)]


def validate_pattern(pattern: str, dialect: DialectLike = Dialect.NATS) -> list[str]:
    """Check a subscription pattern (an MQTT *filter*) and return its words, in order
    (``[]`` for the AMQP empty key ``""``).

    Raises ``TypeError`` if ``pattern`` is not a ``str`` and
    :class:`~ctrie.errors.InvalidTopicError` naming the pattern and the broken rule
    otherwise. O(len(pattern)).
    """
    return _PATTERN[Dialect.coerce(dialect)](pattern)


def validate_topic(topic: str, dialect: DialectLike = Dialect.NATS) -> list[str]:
    """Check a published topic (a literal: no wildcards) and return its words, in order
    (``[]`` for the AMQP empty key ``""``).

    Raises ``TypeError`` if ``topic`` is not a ``str`` and
    :class:`~ctrie.errors.InvalidTopicError` naming the topic and the broken rule
    otherwise. O(len(topic)).
    """
    return _TOPIC[Dialect.coerce(dialect)](topic)


def matches(pattern: str, topic: str, dialect: DialectLike = Dialect.NATS) -> bool:
    """The reference matcher: does ``pattern`` match ``topic`` in ``dialect``?

    Both strings are validated first (and errors raised as by the validators). The match is
    a simulation of the pattern read as a nondeterministic automaton: the set of pattern
    positions reachable after each topic word. That is O(len(pattern words) x len(topic
    words)) whatever the wildcards, so AMQP patterns such as ``#.a.#.b.#`` cannot blow up.
    """
    d = Dialect.coerce(dialect)
    pwords = _PATTERN[d](pattern)
    twords = _TOPIC[d](topic)
    if d is Dialect.MQTT and twords[0].startswith("$") and pwords[0] in ("+", "#"):
        return False  # MQTT 4.7.2: a leading wildcard does not match a '$' topic
    # Rewrite the many-level wildcard as "zero or more words" (ZERO_OR_MORE); NATS '>' needs
    # one word first, so it becomes ONE followed by ZERO_OR_MORE.
    program: list[object] = []
    for w in pwords:
        if w == d.single:
            program.append(_ONE)
        elif w == d.multi:
            if d.multi_min:
                program.append(_ONE)
            program.append(_ZERO_OR_MORE)
        else:
            program.append(w)
    end = len(program)

    def closure(states: set[int]) -> set[int]:
        # ZERO_OR_MORE may consume nothing: its successor is reachable too.
        todo = list(states)
        while todo:
            i = todo.pop()
            if i < end and program[i] is _ZERO_OR_MORE and i + 1 not in states:
                states.add(i + 1)
                todo.append(i + 1)
        return states

    states = closure({0})
    for word in twords:
        nxt: set[int] = set()
        for i in states:
            if i == end:
                continue
            step = program[i]
            if step is _ZERO_OR_MORE:
                nxt.add(i)  # consume the word and stay
            elif step is _ONE or step == word:
                nxt.add(i + 1)
        if not nxt:
            return False
        states = closure(nxt)
    return end in states


_ONE = object()
_ZERO_OR_MORE = object()


# --- whole-trie reads ---------------------------------------------------------------------

_Node = TypeVar("_Node")
_Value = TypeVar("_Value")
#: One edge of a trie for :func:`join_paths`: (words it adds, value at its end, child).
Edge = tuple[Union[str, Sequence[str]], Optional[_Value], Optional[_Node]]


def join_paths(root: _Node, edges: Callable[[_Node], Iterable[Edge[_Value, _Node]]],
               sep: str) -> Iterator[tuple[str, _Value]]:
    """Every (pattern, value) of a trie of words, depth first, each pattern joined once.

    ``edges(node)`` lists a node's edges, each ``(words, value, child)``: the words the edge
    adds to the path from the root (one word, as a ``str``; or a sequence of them: several,
    for a compressed path; none, for a level of a hash trie, which has no value), the value of the pattern that ends there
    (None: none does) and the node it leads to (None: none). The path to a node is one list
    of words, cut back and extended as the walk moves, and joined only at a node with an
    edge that has a value, once for all of them: O(nodes + words on the edges + length of
    the patterns yielded). Joining the prefix again at every level instead costs
    O(depth^2) for one deep pattern (one of 100,000 levels took 55.8 s in
    LockedTrie.subscriptions()). An explicit stack: no depth limit. The words of the AMQP
    empty key, ``""`` (:data:`EMPTY_KEY_WORD`), gives ``""``.
    """
    path: list[str] = []
    stack: list[tuple[int, Union[str, Sequence[str]], _Node]] = [(0, (), root)]
    pop, push = stack.pop, stack.append
    join = sep.join
    while stack:
        depth, words, node = pop()
        del path[depth:]
        if type(words) is str:
            path.append(words)
        else:
            path += words
        depth = len(path)
        prefix = None
        for w, v, c in edges(node):
            if v is not None:
                if prefix is None:
                    prefix = join(path) + sep if path else ""
                yield (prefix + w if type(w) is str else prefix + join(w)), v
            if c is not None:
                push((depth, w, c))
