"""Subscriber sets whose updates do not copy the whole set.

A branch's subscribers are a ``frozenset`` while there are at most ``SUBS_FLAT`` of them
(copying a small frozenset is the cheapest update there is, and a lookup hands it out as is).
A larger set is a :class:`SubSet`: a persistent hash trie over the subscribers' hashes, the
Ctrie's layout without I-nodes (the whole set is immutable and is replaced, inside its
branch, by the level's one GCAS). Its nodes are tuple leaves of at most 32 members, or
tuples of 32 children indexed by five bits of the hash, so adding or removing one subscriber
copies one leaf and O(log32 n) tuples of 32, whatever the size, where a flat set copied all n.

``lookup`` must still return a ``frozenset`` (the contract), so a :class:`SubSet`
materialises one the first time a lookup asks, O(n), and caches it on itself: once per
version of the set, shared by every lookup of that version. Two threads that race to
materialise build equal sets and either may be kept (a plain attribute store).

Thread-safety: immutable once built (the cache aside, see above). Pure: the builders return
new objects.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any, Optional, Union, final

__all__ = ["SUBS_FLAT", "SubSet", "Subscribers", "with_sub", "without_sub", "as_frozenset"]

#: The most subscribers a branch keeps in a flat ``frozenset``. A SubSet shrinking to half
#: of it goes back to a frozenset. Measured on the starvation experiment's hot subject (100
#: subscribers of ``stock.>``), one run per build: 256 against 64 took a lookup from 4.5 to
#: 2.6 us (GIL) and 7.8 to 4.6 us (3.13t), and a subscribe + lookup + unsubscribe from 23.6
#: to 10.5 us (GIL), 40.9 to 19.9 us (3.13t); building 40,000 subscribers cost the same. A
#: lookup hands a flat set out as is; a SubSet costs Python-level calls and a copy per
#: version.
SUBS_FLAT = 256
_BITS = 5
_FANOUT = 1 << _BITS
_MASK = _FANOUT - 1
_MAX_SHIFT = 60  # past this a hash has no bits left: such a leaf grows instead of splitting

#: A branch's subscribers. Members are ``Any``: a trie's subscriber type is checked where
#: subscribers come in (``CSTrie[S].subscribe``), not in its nodes.
Subscribers = Union[frozenset[Any], "SubSet"]
#: A node of a SubSet: a leaf tuple of members or an :class:`_Inner` of children.
_Node = tuple[Any, ...]


class _Inner(tuple[Any, ...]):
    """An inner node of a SubSet: ``_FANOUT`` children, each None, a leaf or an _Inner.
    (A tuple subclass, so that a leaf, a plain tuple, is told from it by type.)"""

    __slots__ = ()


@final
class SubSet:
    """A persistent set of more than ``SUBS_FLAT // 2`` subscribers (see the module).

    Nodes: leaves are plain tuples of at most ``_LEAF`` (32) members (a tuple costs 8 bytes a
    member where a small frozenset costs 200 bytes; ``in`` scans it in C), inner nodes are
    :class:`_Inner` tuples of 32 children indexed by five bits of the member's hash.
    Supports what the trie needs of a subscriber set: ``in``, ``len``, truth, iteration and
    :meth:`frozen`; updates through :func:`with_sub` / :func:`without_sub`. O(log32 n)
    membership, O(_LEAF + 32 log32 n) updates, O(n) once for :meth:`frozen`.
    """

    __slots__ = ("root", "size", "_frozen", "_base")

    def __init__(self, root: _Node, size: int,
                 base: Optional[tuple[frozenset[Any], Hashable, bool]] = None) -> None:
        self.root = root
        self.size = size
        self._frozen: Optional[frozenset[Any]] = None
        # (the predecessor's materialised frozenset, the member added or removed, added?):
        # then frozen() is one C-level copy of that set, not a rebuild from the leaves.
        self._base = base

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __contains__(self, x: object) -> bool:
        node = self.root
        h = hash(x)
        shift = 0
        while type(node) is _Inner:
            node = node[(h >> shift) & _MASK]
            if node is None:
                return False
            shift += _BITS
        return x in node

    def __iter__(self) -> Iterator[Any]:
        return iter(self.frozen())

    def leaves(self) -> Iterator[_Node]:
        """The leaf tuples, depth first."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            if type(node) is _Inner:
                stack.extend(c for c in node if c is not None)
            else:
                yield node

    def frozen(self) -> frozenset[Any]:
        """The members as a ``frozenset``: built once per SubSet, O(n), then cached. When
        the predecessor's was built, this one is a copy of it with one member more or less
        (no member is hashed again): a hot subject that is subscribed to and published to
        in turn pays one set copy per version."""
        f = self._frozen
        if f is None:
            base = self._base
            if base is None:
                f = frozenset().union(*self.leaves())
            else:
                f = base[0] | {base[1]} if base[2] else base[0] - {base[1]}
            self._frozen = f
            self._base = None  # let the predecessor's set go
        return f

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SubSet):
            other = other.frozen()
        return self.frozen() == other

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a set is; typeshed's is not Optional

    def __repr__(self) -> str:
        return f"SubSet({self.size} subscribers)"

    @classmethod
    def of(cls, members: frozenset[Any]) -> SubSet:
        """A SubSet holding ``members``. O(len(members) log n)."""
        root: _Node = ()
        for x in members:
            root = _add(root, x, hash(x), 0)
        return cls(root, len(members))


#: The most members a leaf tuple holds before it splits.
_LEAF = 32


def _add(node: _Node, x: Hashable, h: int, shift: int) -> _Node:
    """``node`` with ``x`` added (``x`` not in it): path copy."""
    if type(node) is _Inner:
        j = (h >> shift) & _MASK
        t = list(node)
        c = t[j]
        t[j] = (x,) if c is None else _add(c, x, h, shift + _BITS)
        return _Inner(t)
    if len(node) < _LEAF or shift >= _MAX_SHIFT:
        return node + (x,)
    # A full leaf: split it on the next five bits (each part then holds about 1/32 of it).
    groups: list[Optional[_Node]] = [None] * _FANOUT
    for y in node:
        j = (hash(y) >> shift) & _MASK
        g = groups[j]
        groups[j] = (y,) if g is None else g + (y,)
    return _add(_Inner(groups), x, h, shift)


def _remove(node: _Node, x: Hashable, h: int, shift: int) -> Optional[_Node]:
    """``node`` without ``x`` (``x`` in it), or None if nothing is left: path copy. An inner
    node left with only leaves of ``_LEAF`` members in all folds back into one leaf."""
    if type(node) is not _Inner:
        i = node.index(x)
        return (node[:i] + node[i + 1:]) or None
    j = (h >> shift) & _MASK
    t = list(node)
    t[j] = _remove(node[j], x, h, shift + _BITS)
    total = 0
    for c in t:
        if c is None:
            continue
        if type(c) is _Inner:
            return _Inner(t)
        total += len(c)
        if total > _LEAF:
            return _Inner(t)
    return tuple(y for c in t if c is not None for y in c) if total else None


def with_sub(subs: Subscribers, x: Hashable) -> Subscribers:
    """``subs`` plus ``x`` (which must not be in it). A flat set past ``SUBS_FLAT`` becomes
    a SubSet."""
    # Tested as "not a SubSet" (the same one test as "a frozenset"): SubSet is final, so
    # the type checker narrows both branches.
    if type(subs) is not SubSet:
        if len(subs) < SUBS_FLAT:
            return subs | {x}
        s = SubSet.of(subs)
        f: Optional[frozenset[Any]] = subs
    else:
        s = subs
        f = s._frozen
    return SubSet(_add(s.root, x, hash(x), 0), s.size + 1, None if f is None else (f, x, True))


def without_sub(subs: Subscribers, x: Hashable) -> Subscribers:
    """``subs`` without ``x`` (which must be in it). A SubSet shrinking to ``SUBS_FLAT // 2``
    goes back to a frozenset (the gap keeps a set at the boundary from converting back and
    forth on every write)."""
    if type(subs) is not SubSet:  # a frozenset (see with_sub)
        return subs - {x}
    root = _remove(subs.root, x, hash(x), 0)
    size = subs.size - 1
    if root is None:
        return frozenset()
    f = subs._frozen
    s = SubSet(root, size, None if f is None else (f, x, False))
    return s.frozen() if size <= SUBS_FLAT // 2 else s


def as_frozenset(subs: Subscribers) -> frozenset[Any]:
    """``subs`` as a frozenset (materialised and cached for a SubSet)."""
    return subs.frozen() if type(subs) is SubSet else subs
