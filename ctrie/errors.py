"""Exceptions raised by every matcher of the package (see ``api.md``)."""

from __future__ import annotations

__all__ = ["InvalidTopicError", "UnsupportedPatternError", "ReadOnlyError"]


class InvalidTopicError(ValueError):
    """A pattern or topic breaks a rule of its dialect.

    The message names the offending string, the dialect and the rule; the same facts are
    kept as attributes (``value``, ``kind`` -- ``"pattern"`` or ``"topic"`` --, ``dialect``
    and ``rule``) for programs that want to react to them.
    """

    def __init__(self, value: str, kind: str, dialect: str, rule: str) -> None:
        self.value = value
        self.kind = kind
        self.dialect = dialect
        self.rule = rule
        super().__init__(f"invalid {dialect} {kind} {value!r}: {rule}")


class UnsupportedPatternError(ValueError):
    """A valid pattern that a matcher's algorithm cannot represent.

    Raised, for example, by the bitmap baselines for an AMQP ``#`` in the middle of a
    pattern. The matcher is left unchanged.
    """


class ReadOnlyError(RuntimeError):
    """A mutation was attempted on a read-only snapshot of a ``CSTrie``."""
