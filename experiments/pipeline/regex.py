"""Subscription patterns as regular expressions: the baseline a Spark user would write.

:func:`pattern_regex` translates a valid pattern of a dialect into a regex that matches
``SEP + topic`` (the topic with one separator put in front, see :func:`subject`) exactly when
the pattern matches the topic. Prefixing the separator lets every pattern word carry its own
leading separator, so wildcards that match zero words need no special case:

========  =================  ==================  =========================================
dialect   one level          many levels         notes
========  =================  ==================  =========================================
NATS      ``\\.[^.]+``        ``(?:\\.[^.]+)+``    ``>`` one or more tokens
AMQP      ``\\.[^.]+``        ``(?:\\.[^.]+)*``    ``#`` zero or more words, anywhere
MQTT      ``/[^/]*``         ``(?:/[^/]*)*``     levels may be empty; ``a/#`` matches ``a``
========  =================  ==================  =========================================

MQTT's ``$`` rule (a filter starting with ``+`` or ``#`` does not match a topic whose first
level starts with ``$``) is a lookahead ``(?!/\\$)`` at the start. Literal words are escaped
character by character (ASCII punctuation and space get a backslash, which is literal in
Java and Python regexes alike). The end anchor is ``\\z`` for Java (Spark's ``rlike``;
``$`` would also match before a final line terminator) and ``\\Z`` for Python's :mod:`re`,
which the tests use to hold the translation to :func:`ctrie.matches`. Consecutive AMQP
``#`` words are merged (``#.#`` behaves as ``#``), which keeps backtracking polynomial for
the pattern shapes the generator produces. AMQP's empty key ``""`` (zero words) has the
separator alone as its subject: the patterns that match zero words (``""`` and runs of
``#``) accept it, and no other subject is a lone separator.

Topics are not validated by a regex: the baseline is compared with the matcher on the
messages the matcher routed.
"""

from __future__ import annotations

import string

from ctrie import Dialect, validate_pattern

__all__ = ["pattern_regex", "subject"]

_SPECIAL = frozenset(string.punctuation + " ")

_END = {"java": r"\z", "python": r"\Z"}


def _literal(word: str) -> str:
    return "".join("\\" + c if c in _SPECIAL else c for c in word)


def subject(topic: str, dialect: str) -> str:
    """The string a pattern's regex is matched against: the separator, then the topic."""
    return Dialect.coerce(dialect).separator + topic


def pattern_regex(pattern: str, dialect: str, flavor: str = "java") -> str:
    """The anchored regex for ``pattern`` over :func:`subject` strings (see the module).

    Raises what :func:`ctrie.validate_pattern` raises for an invalid pattern.
    """
    d = Dialect.coerce(dialect)
    words = validate_pattern(pattern, d)
    sep = _literal(d.separator)
    level = f"[^{sep}]*" if d is Dialect.MQTT else f"[^{sep}]+"
    out = ["^"]
    if d is Dialect.MQTT and words[0] in (d.single, d.multi):
        out.append(f"(?!{sep}\\$)")
    prev = None
    for w in words:
        if w == d.multi:
            if prev == d.multi:
                continue  # '#.#' is '#'
            out.append(f"(?:{sep}{level})" + ("+" if d.multi_min else "*"))
        elif w == d.single:
            out.append(sep + level)
        else:
            out.append(sep + _literal(w))
        prev = w
    if d is Dialect.AMQP and all(w == d.multi for w in words):
        # The empty key's subject is the separator alone (see the module docstring).
        out[1:] = [f"(?:{sep}|{''.join(out[1:])})" if words else sep]
    out.append(_END[flavor])
    return "".join(out)
