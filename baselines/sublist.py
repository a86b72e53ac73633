"""The NATS sublist's trie: levels, nodes and the walks that match a topic (used by
:class:`baselines.LockedTrie`, which holds the lock and the result cache around them).

The trie follows nats-server's ``sublist.go``. A :class:`Level` holds the children of one
word position: literal words in a dict, plus at most one one-level-wildcard child (``pwc``:
NATS/AMQP ``*``, MQTT ``+``) and one many-level-wildcard child (``fwc``: NATS ``>``, AMQP and
MQTT ``#``). A :class:`Node` is the end of one pattern word: it holds the :class:`Level` of
the following word, the plain subscribers of the pattern that ends here and its queue groups
(queue name -> members). Nodes and levels left empty by a removal are pruned, so the trie
holds no node that leads to no subscription.

Matching walks the trie along the topic's words, branching into the ``pwc`` child beside the
literal child and collecting the ``fwc`` child wherever the many-level wildcard may stand:

- NATS and MQTT: the many-level wildcard only ends a pattern, so an ``fwc`` node never has a
  ``next`` level and each trie level is visited at most once per lookup, with no memo.
  NATS ``>`` needs at least one word; MQTT ``#`` also matches zero (``a/#`` matches
  ``a``), and an MQTT ``+`` or ``#`` standing first in a filter does not match a topic whose
  first level starts with ``$``. The walk recurses only into ``pwc`` children; a trie deeper
  in them than the recursion limit is walked with an explicit stack instead.
- AMQP: ``#`` stands anywhere and matches zero or more words, so an ``fwc`` node may have a
  ``next`` level. The walk explores states (level, words consumed); an ``fwc`` node records
  the smallest word index it has absorbed from, so every state is explored at most once and
  ``#.a.#.b.#`` against a long topic costs O(levels x words), not an exponential number of
  splits. The empty key ``""`` (zero words) is a pattern too: its node is the root's child
  of the word ``""``, which no other pattern can reach (an empty word is invalid).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ctrie.topics import (
    EMPTY_KEY_WORD,
)

__all__ = ["Level", "MatchResult", "Node", "add_to_node", "build_result", "check_levels",
           "require", "set_child", "walk_anywhere", "walk_terminal"]


class Level:
    """The children of one word position: literal words, ``pwc`` and ``fwc``."""

    __slots__ = ("nodes", "pwc", "fwc")

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.pwc: Node | None = None
        self.fwc: Node | None = None

    def is_empty(self) -> bool:
        """Whether the level has no child at all."""
        return not self.nodes and self.pwc is None and self.fwc is None


class Node:
    """The end of one pattern word: the next level and the subscriptions ending here.

    ``psubs`` (plain subscribers) and ``qsubs`` (queue name -> members) are ``None`` rather
    than empty, and ``next`` is ``None`` rather than an empty level, so a node is empty, and
    pruned, exactly when all three are ``None``.
    """

    __slots__ = ("next", "psubs", "qsubs")

    def __init__(self) -> None:
        self.next: Level | None = None
        # (Members are Any: the trie's S is checked where subscribers come in.)
        self.psubs: set[Any] | None = None
        self.qsubs: dict[str, set[Any]] | None = None


class MatchResult(NamedTuple):
    """What :meth:`baselines.LockedTrie.match` returns for a topic.

    ``plain`` holds every plain subscriber of every matching pattern, once. ``queues`` maps
    each queue group with a member on a matching pattern to its members on matching
    patterns; a publisher delivers to every plain subscriber and to one member of each
    group. ``queues`` is a read-only mapping: results are shared through the cache.
    """

    plain: frozenset[Any]
    queues: Mapping[str, frozenset[Any]]

    @property
    def fanout(self) -> int:
        """Deliveries of one message: each plain subscriber, plus one per queue group."""
        return len(self.plain) + len(self.queues)


_EMPTY_QUEUES: Mapping[str, frozenset[Any]] = MappingProxyType({})


_EMPTY_RESULT = MatchResult(frozenset(), _EMPTY_QUEUES)


_new_result = tuple.__new__  # MatchResult(...) without the Python-level __new__


def add_to_node(node: Node, subscriber: Hashable, queue: str | None) -> bool:
    """Add a plain subscriber or a queue membership; False if it was already there."""
    if queue is None:
        members = node.psubs
        if members is None:
            node.psubs = {subscriber}
            return True
    else:
        groups = node.qsubs
        if groups is None:
            node.qsubs = {queue: {subscriber}}
            return True
        members = groups[queue] if queue in groups else None  # not dict.get: see ctrie/_ftdict.py
        if members is None:
            groups[queue] = {subscriber}
            return True
    if subscriber in members:
        return False
    members.add(subscriber)
    return True


def set_child(level: Level, word: str, child: Node, single: str, multi: str) -> None:
    if word == single:
        level.pwc = child
    elif word == multi:
        level.fwc = child
    else:
        level.nodes[word] = child


def walk_terminal(zero_ok: bool, dollar_rule: bool, root: Level, words: list[str]) -> list[Node]:
    """The nodes whose patterns match ``words``: NATS and MQTT (``fwc`` ends a pattern).

    ``zero_ok``: the many-level wildcard may match zero words (MQTT ``a/#`` matches ``a``).
    ``dollar_rule``: a first-level wildcard does not match a first word starting with
    ``$`` (MQTT). Each level is reached through one path of one length, so none is visited
    twice and no node is returned twice. The recursive :func:`_descend` is the fast walk;
    a trie deeper in one-level wildcards than the recursion limit falls back to the
    iterative :func:`_walk_terminal_iterative`.
    """
    n = len(words)
    hits: list[Node] = []
    try:
        if dollar_rule and words[0][:1] == "$":
            # Only a literal first level can match: step over it, then descend.
            w, nodes = words[0], root.nodes
            node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
            if node is not None:
                below = node.next
                if n == 1:
                    hits.append(node)
                    if below is not None and below.fwc is not None:
                        hits.append(below.fwc)  # zero_ok holds in MQTT
                elif below is not None:
                    _descend(below, words, 1, n, hits, zero_ok)
        else:
            _descend(root, words, 0, n, hits, zero_ok)
    except RecursionError:
        return _walk_terminal_iterative(zero_ok, dollar_rule, root, words)
    return hits


def _descend(
    level: Level, words: list[str], i: int, n: int, hits: list[Node], zero_ok: bool
) -> None:
    """Collect into ``hits`` the nodes below ``level`` matching ``words[i:]`` (``i < n``).

    The literal child is followed in the loop; the ``pwc`` child by recursion, so the
    depth is the number of one-level wildcards on the path.
    """
    while True:
        fwc = level.fwc
        if fwc is not None:
            hits.append(fwc)  # at least one word is left for it
        pwc = level.pwc
        w, nodes = words[i], level.nodes
        node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
        i += 1
        if i == n:
            if pwc is not None:
                hits.append(pwc)
                if zero_ok:
                    below = pwc.next
                    if below is not None and below.fwc is not None:
                        hits.append(below.fwc)
            if node is not None:
                hits.append(node)
                if zero_ok:
                    below = node.next
                    if below is not None and below.fwc is not None:
                        hits.append(below.fwc)
            return
        if pwc is not None:
            below = pwc.next
            if below is not None:
                _descend(below, words, i, n, hits, zero_ok)
        if node is None:
            return
        below = node.next
        if below is None:
            return
        level = below


def _walk_terminal_iterative(
    zero_ok: bool, dollar_rule: bool, root: Level, words: list[str]
) -> list[Node]:
    """:func:`walk_terminal` with an explicit stack of (level, words consumed) states.

    Slower than the recursive walk in CPython, but bounded by memory only.
    """
    n = len(words)
    hits: list[Node] = []
    if dollar_rule and words[0][:1] == "$":
        w, nodes = words[0], root.nodes
        node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
        if node is None:
            return hits
        if n == 1:
            hits.append(node)
        if node.next is None:
            return hits
        stack = [(node.next, 1)]
    else:
        stack = [(root, 0)]
    pop, push, hit = stack.pop, stack.append, hits.append
    while stack:
        level, i = pop()
        while True:
            fwc = level.fwc
            if i == n:
                if zero_ok and fwc is not None:
                    hit(fwc)
                break
            if fwc is not None:
                hit(fwc)
            w = words[i]
            i += 1
            pwc = level.pwc
            if pwc is not None:
                if i == n:
                    hit(pwc)
                if pwc.next is not None:
                    push((pwc.next, i))
            nodes = level.nodes
            node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
            if node is None:
                break
            if i == n:
                hit(node)
            below = node.next
            if below is None:
                break
            level = below
    return hits


def walk_anywhere(root: Level, words: list[str]) -> list[Node]:
    """The nodes whose patterns match ``words``: AMQP (``#`` anywhere, zero or more words).

    States are (level, words consumed). An ``fwc`` node entered at index ``i`` absorbs
    ``words[i:j]`` for every ``j`` in ``i..n``: it matches (it can absorb the rest) and
    continues at (``fwc.next``, ``j``). ``absorbed_from`` keeps the smallest ``i`` each
    ``fwc`` node was entered at, and a later entry only adds the indices below it, so the
    ranges are disjoint. Every level has one parent node, so every state is then pushed at
    most once: O(levels x (n + 1)) in all, whatever the number of ``#``.

    The empty key (``words == []``) is also matched by the pattern ``""``, whose node is the
    root's child of the reserved word :data:`ctrie.topics.EMPTY_KEY_WORD`.
    """
    n = len(words)
    hits: list[Node] = []
    absorbed_from: dict[Node, int] = {}
    stack = [(root, 0)]
    pop, push, hit = stack.pop, stack.append, hits.append
    while stack:
        level, i = pop()
        fwc = level.fwc
        if fwc is not None:
            start = absorbed_from[fwc] if fwc in absorbed_from else None  # not dict.get: see ctrie/_ftdict.py
            if start is None or i < start:
                absorbed_from[fwc] = i
                if start is None:
                    hit(fwc)
                    start = n + 1
                below = fwc.next
                if below is not None:
                    for j in range(i, start):
                        push((below, j))
        if i < n:
            w = words[i]
            i += 1
            pwc = level.pwc
            if pwc is not None:
                if i == n:
                    hit(pwc)
                if pwc.next is not None:
                    push((pwc.next, i))
            nodes = level.nodes
            node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
            if node is not None:
                if i == n:
                    hit(node)
                if node.next is not None:
                    push((node.next, i))
    if not n:
        nodes = root.nodes
        if EMPTY_KEY_WORD in nodes:
            hit(nodes[EMPTY_KEY_WORD])
    return hits


def build_result(hits: list[Node]) -> MatchResult:
    """Merge the subscribers of the matched nodes into an immutable result. O(result)."""
    if not hits:
        return _EMPTY_RESULT
    if len(hits) == 1:  # the common case: no merging
        node = hits[0]
        members = node.psubs
        groups = node.qsubs
        return _new_result(
            MatchResult,
            (
                _EMPTY_RESULT[0] if members is None else frozenset(members),
                _EMPTY_QUEUES
                if groups is None
                else MappingProxyType({q: frozenset(m) for q, m in groups.items()}),
            ),
        )
    plain: set[Any] = set()
    queues: dict[str, set[Any]] | None = None
    for node in hits:
        members = node.psubs
        if members is not None:
            plain |= members
        groups = node.qsubs
        if groups is not None:
            if queues is None:
                queues = {}
            for q, m in groups.items():
                acc = queues[q] if q in queues else None  # not dict.get: see ctrie/_ftdict.py
                if acc is None:
                    queues[q] = set(m)
                else:
                    acc |= m
    return _new_result(
        MatchResult,
        (
            frozenset(plain),
            _EMPTY_QUEUES
            if queues is None
            else MappingProxyType({q: frozenset(m) for q, m in queues.items()}),
        ),
    )


def check_levels(root: Level, single: str, multi: str, anywhere: bool) -> int:
    """Raise ``AssertionError`` if the trie below ``root`` breaks a structural invariant (no
    empty node or non-root level, subscriber sets and queue maps ``None`` or non-empty, no
    wildcard word as a literal key, no ``fwc`` node with a ``next`` level unless
    ``anywhere``); return the pairs and memberships stored. O(size); works under ``-O``."""
    total = 0
    stack: list[tuple[Level, bool]] = [(root, True)]
    while stack:
        level, is_root = stack.pop()
        require(is_root or not level.is_empty(), "empty non-root level")
        require(single not in level.nodes and multi not in level.nodes, "wildcard key")
        if level.fwc is not None and not anywhere:
            require(level.fwc.next is None, "fwc node with a next level")
        children = list(level.nodes.values())
        children += [c for c in (level.pwc, level.fwc) if c is not None]
        for node in children:
            require(
                node.psubs is not None or node.qsubs is not None or node.next is not None,
                "empty node",
            )
            if node.psubs is not None:
                require(isinstance(node.psubs, set) and bool(node.psubs), "empty psubs")
                total += len(node.psubs)
            if node.qsubs is not None:
                require(bool(node.qsubs), "empty qsubs")
                for name, members in node.qsubs.items():
                    require(isinstance(name, str) and bool(name), "bad queue name")
                    require(bool(members), "empty queue group")
                    total += len(members)
            if node.next is not None:
                stack.append((node.next, False))
    return total


def require(condition: bool, message: str) -> None:
    """``assert`` that survives ``python -O``."""
    if not condition:
        raise AssertionError(message)
