"""Exceptions raised by every matcher of the package (see ``docs/api.md``), and the one place
where an error message quotes its input: :func:`abbreviate` (a bad 1 MB topic gives a
message of a few hundred characters, not of a megabyte)."""

from __future__ import annotations

import reprlib
from typing import Optional

__all__ = ["InvalidTopicError", "UnsupportedPatternError", "ReadOnlyError", "abbreviate",
           "QUOTE_MAX"]

#: A string of at most this many characters is quoted whole in an error message; a longer
#: one by its start, its length and (for an invalid pattern or topic) the characters around
#: the place where it broke the rule.
QUOTE_MAX = 200
# The longest repr quoted for one piece of a long input (its start, or the characters around
# the place where it broke the rule): a piece whose repr would be longer (an escape takes up
# to 10 characters) is cut shorter.
_PIECE_MAX = 300
# Characters shown on each side of the place where a long input broke its rule.
_AROUND = 40

# repr() of a non-str value, bounded without building the whole repr of a large container.
_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxstring = _repr.maxother = _repr.maxlong = QUOTE_MAX
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxfrozenset = 10
_repr.maxdict = _repr.maxdeque = _repr.maxarray = 10


def _clipped(s: str) -> str:
    """repr(s), or that of the longest start of ``s`` (halving) whose repr fits _PIECE_MAX."""
    r = repr(s)
    while len(r) > _PIECE_MAX:
        s = s[: len(s) // 2]
        r = repr(s)
    return r


def abbreviate(value: object) -> str:
    """``value`` as an error message quotes it: ``repr(value)`` if that is short; else, for
    a ``str``, the repr of its start, ``...`` and its length in characters; for anything
    else a repr shortened by :mod:`reprlib` and cut at ``QUOTE_MAX`` characters. At most
    about 350 characters, in O(``QUOTE_MAX``) work for a ``str`` whatever its length.

    >>> abbreviate("a.b")
    "'a.b'"
    >>> abbreviate("w" * 1000)[-25:]
    "ww'... (1,000 characters)"
    """
    if not isinstance(value, str):
        r = _repr.repr(value)
        return r if len(r) <= QUOTE_MAX else r[:QUOTE_MAX] + "..."
    n = len(value)
    if n <= QUOTE_MAX:
        return str.__repr__(value)  # the string's own text: a subclass's __repr__ may be huge
    return f"{_clipped(value[:QUOTE_MAX // 2])}... ({n:,} characters)"


def _around(value: str, at: int) -> str:
    """The characters of a long ``value`` around index ``at`` (at most _AROUND on each side,
    fewer where their repr would pass _PIECE_MAX), quoted."""
    w = _AROUND
    while True:
        lo = max(0, at - w)
        r = repr(value[lo:at + w + 1])
        if len(r) <= _PIECE_MAX or w == 0:
            break
        w //= 2
    return f"{'...' if lo else ''}{r}{'...' if at + w + 1 < len(value) else ''}"


class InvalidTopicError(ValueError):
    """A pattern or topic breaks a rule of its dialect.

    The message names the offending string (abbreviated when long: :func:`abbreviate`), the
    dialect, the rule and, when the rule broke at one place, that place: its character
    index and the index of the word it is in (both from 0). The same facts are kept as
    attributes (``value``, the whole string; ``kind``, ``"pattern"`` or ``"topic"``;
    ``dialect``; ``rule``; ``position`` and ``word``, None when not known) for programs
    that want to react to them.
    """

    def __init__(self, value: str, kind: str, dialect: str, rule: str,
                 position: Optional[int] = None, word: Optional[int] = None) -> None:
        self.value = value
        self.kind = kind
        self.dialect = dialect
        self.rule = rule
        self.position = position
        self.word = word
        where = ""
        if position is not None:
            where = f"; at character index {position:,}"
            if word is not None:
                where += f" (word index {word:,})"
            if len(value) > QUOTE_MAX:
                where += f": {_around(value, position)}"
        super().__init__(f"invalid {dialect} {kind} {abbreviate(value)}: {rule}{where}")


class UnsupportedPatternError(ValueError):
    """A valid pattern that a matcher's algorithm cannot represent.

    Raised, for example, by the bitmap baselines for an AMQP ``#`` in the middle of a
    pattern. The matcher is left unchanged.
    """


class ReadOnlyError(RuntimeError):
    """A mutation was attempted on a read-only snapshot of a ``CSTrie``."""
