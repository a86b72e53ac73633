"""What a type checker must accept and reject in the package's public types (never run).

``tests/test_typing.py`` runs ``mypy --strict`` on this file and compares its errors with the
marks here, both ways: every line ending in ``# E: <code> [<part of the message>]`` must get
that error, and no other line may get any. So the dialect staying a ``Literal`` (a misspelt
name is an error), the matchers staying generic in the subscriber type, and the ``Matcher``
protocol keeping its type parameter are all held here.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import assert_type

from baselines import InvertedBitmapMatcher, LockedTrie, NaiveMatcher, OptimizedBitmapMatcher
from ctrie import CSTrie, Dialect, Matcher, ReplicatedTrie
from ctrie.protocol import S

# --- dialect=: a Dialect member or a dialect's name, nothing else ----------------------------

CSTrie("nats")
CSTrie("mqtt")
CSTrie(dialect="amqp")
CSTrie(Dialect.MQTT)
CSTrie("natz")  # E: arg-type "Literal['natz']"
CSTrie(dialect="NATS")  # E: arg-type "Literal['NATS']"
ReplicatedTrie("natz")  # E: arg-type "Literal['natz']"
NaiveMatcher("natz")  # E: arg-type "Literal['natz']"
InvertedBitmapMatcher(["a.b"], "natz")  # E: arg-type "Literal['natz']"
OptimizedBitmapMatcher(4, dialect="natz")  # E: arg-type "Literal['natz']"
LockedTrie("natz")  # E: arg-type "Literal['natz']"


def from_config(name: str) -> None:
    CSTrie(name)  # E: arg-type "str"
    CSTrie(Dialect.coerce(name))  # a name read at run time goes through coerce


# --- every matcher is generic in the subscriber type ------------------------------------------

t = CSTrie[str]()
t.subscribe("a.*", "alice")
t.subscribe("a.*", 42)  # E: arg-type "int"
assert_type(t.unsubscribe("a.*", "alice"), bool)
assert_type(t.lookup("a.b"), frozenset[str])
assert_type(t.subscriptions(), dict[str, frozenset[str]])
assert_type(t.snapshot(), CSTrie[str])
assert_type(t.read_only_snapshot().lookup("a.b"), frozenset[str])
assert_type(CSTrie[int]("mqtt", cache=True).lookup("a/b"), frozenset[int])
assert_type(CSTrie().lookup("a.b"), frozenset[Hashable])  # unparameterised: Hashable
CSTrie[list[int]]()  # E: type-var "list[int]"

assert_type(ReplicatedTrie[str]().lookup("a.b"), frozenset[str])
assert_type(NaiveMatcher[str]().lookup("a.b"), frozenset[str])
assert_type(InvertedBitmapMatcher[str](["a.b"]).lookup("a.b"), frozenset[str])
assert_type(OptimizedBitmapMatcher[str](4).lookup("a.b"), frozenset[str])
assert_type(LockedTrie[str]().lookup("a.b"), frozenset[str])
assert_type(LockedTrie[str]().subscriptions(), dict[str, frozenset[str]])
LockedTrie[str]().subscribe("a.b", b"bytes")  # E: arg-type "bytes"

# --- the Matcher protocol carries the subscriber type -----------------------------------------

every: list[Matcher[str]] = [
    CSTrie[str](),
    CSTrie[str](cache=True),
    ReplicatedTrie[str](),
    NaiveMatcher[str](),
    InvertedBitmapMatcher[str](["a.b"]),
    OptimizedBitmapMatcher[str](4),
    LockedTrie[str](),
]
wrong: Matcher[int] = CSTrie[str]()  # E: assignment "Matcher[int]"


def first_hits(m: Matcher[S], topic: str) -> frozenset[S]:
    return m.lookup(topic)


assert_type(first_hits(CSTrie[int](), "a.b"), frozenset[int])
assert_type(first_hits(LockedTrie[bytes](), "a.b"), frozenset[bytes])
