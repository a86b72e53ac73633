"""The Matcher protocol that every matcher of the package implements (``docs/api.md``)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .topics import Dialect

__all__ = ["Matcher", "S"]

if TYPE_CHECKING:
    # The default (PEP 696) is for type checkers only: typing.TypeVar takes it from 3.13 on,
    # typing_extensions is no run-time dependency, and nothing reads it at run time. With
    # it, an unparameterised ``CSTrie()`` is a ``CSTrie[Hashable]`` (the signatures of
    # docs/api.md) instead of a "Need type annotation" error at every ``t = CSTrie()``.
    from typing_extensions import TypeVar

    S = TypeVar("S", bound=Hashable, default=Hashable)
else:
    from typing import TypeVar

    #: The subscriber type of a matcher: ``CSTrie[str]().lookup(t)`` is a ``frozenset[str]``.
    S = TypeVar("S", bound=Hashable)


@runtime_checkable
class Matcher(Protocol[S]):
    """A thread-safe map from subscription patterns to subscribers of type ``S``.

    - ``subscribe`` is idempotent: a (pattern, subscriber) pair is stored once.
    - ``unsubscribe`` returns whether the pair was present.
    - ``lookup`` returns every subscriber of every pattern matching the literal topic, once.
    - ``subscriptions`` maps each pattern to its subscribers and holds no empty entry.
    - ``len`` counts stored (pattern, subscriber) pairs.

    Bad input raises ``TypeError`` (not a ``str``, or an unhashable subscriber) or
    ``ctrie.InvalidTopicError`` and leaves the matcher unchanged.

    Every matcher class of the package is generic in ``S`` (``CSTrie[str]``,
    ``LockedTrie[int]``...); unparameterised, ``S`` is ``Hashable``. ``isinstance(m,
    Matcher)`` checks that the members are there, not ``S``.
    """

    dialect: Dialect

    def subscribe(self, pattern: str, subscriber: S) -> None: ...

    def unsubscribe(self, pattern: str, subscriber: S) -> bool: ...

    def lookup(self, topic: str) -> frozenset[S]: ...

    def subscriptions(self) -> dict[str, frozenset[S]]: ...

    def __len__(self) -> int: ...
