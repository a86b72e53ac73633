"""The Matcher protocol that every matcher of the package implements (``api.md``)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from .topics import Dialect

__all__ = ["Matcher"]


@runtime_checkable
class Matcher(Protocol):
    """A thread-safe map from subscription patterns to subscribers.

    - ``subscribe`` is idempotent: a (pattern, subscriber) pair is stored once.
    - ``unsubscribe`` returns whether the pair was present.
    - ``lookup`` returns every subscriber of every pattern matching the literal topic, once.
    - ``subscriptions`` maps each pattern to its subscribers and holds no empty entry.
    - ``len`` counts stored (pattern, subscriber) pairs.

    Bad input raises ``TypeError`` (not a ``str``, or an unhashable subscriber) or
    ``ctrie.InvalidTopicError`` and leaves the matcher unchanged.
    """

    dialect: Dialect

    def subscribe(self, pattern: str, subscriber: Hashable) -> None: ...

    def unsubscribe(self, pattern: str, subscriber: Hashable) -> bool: ...

    def lookup(self, topic: str) -> frozenset: ...

    def subscriptions(self) -> dict[str, frozenset]: ...

    def __len__(self) -> int: ...
