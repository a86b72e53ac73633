"""Wording shared by the command line's messages."""

from __future__ import annotations

__all__ = ["count"]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1 (``plural``, or ``noun + "s"``):
    ``1 subscription``, ``2,000 subscriptions``."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
