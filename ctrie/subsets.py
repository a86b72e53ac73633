"""Subscriber sets whose updates do not copy the whole set.

A branch's subscribers are a ``frozenset`` while there are at most ``SUBS_FLAT`` of them
(copying a small frozenset is the cheapest update there is, and a lookup hands it out as is).
A larger set is a :class:`SubSet`: a persistent hash trie over the subscribers' hashes, the
Ctrie's layout without I-nodes (the whole set is immutable and is replaced, inside its
branch, by the level's one GCAS). Its nodes are tuple leaves of at most 32 members, or
lists of 32 children indexed by five bits of the hash (lists, so that a write sets one slot
in its own copy of one; no list is changed once published), so adding or removing one subscriber
copies one leaf and O(log32 n) lists of 32, whatever the size, where a flat set copied all n.

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

from .nodes import EMPTY

_new = object.__new__

__all__ = ["SUBS_FLAT", "SubSet", "Subscribers", "with_sub", "without_sub", "as_frozenset",
           "union_of"]

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
#: The most members a leaf tuple holds before it splits.
_LEAF = 32
#: An inner node of leaves folds back into one leaf once they hold this many members in
#: all. Half of ``_LEAF``, not ``_LEAF``: a leaf that splits at 33 members would otherwise
#: fold again at 32, so that a subscriber coming and going beside a full leaf split and
#: folded it on every write (measured at 1,000 subscribers of one pattern: 1,233 splits in
#: 5,000 subscribe + unsubscribe pairs, 13.0 us per pair against 10.7 at 3,000).
_FOLD = _LEAF // 2

#: A branch's subscribers. Members are ``Any``: a trie's subscriber type is checked where
#: subscribers come in (``CSTrie[S].subscribe``), not in its nodes.
Subscribers = Union[frozenset[Any], "SubSet"]
#: A node of a SubSet: a leaf tuple of members, or an inner list of ``_FANOUT`` children.
_Node = Union[tuple[Any, ...], list[Any]]


@final
class SubSet:
    """A persistent set of more than ``SUBS_FLAT // 2`` subscribers (see the module).

    Nodes: leaves are tuples of at most ``_LEAF`` (32) members (a tuple costs 8 bytes a
    member where a small frozenset costs 200 bytes; ``in`` scans it in C); inner nodes are
    lists of ``_FANOUT`` (32) children (None, a leaf or an inner list), indexed by five bits
    of the member's hash. A list, not a tuple, because a write slices it and sets one slot
    of its copy in place; no list is ever changed once a SubSet that reaches it has been
    returned (the builders only write into their own fresh copies).
    Supports what the trie needs of a subscriber set: ``in``, ``len``, truth, iteration and
    :meth:`frozen`; updates through :func:`with_sub` / :func:`without_sub`. O(log32 n)
    membership, O(_LEAF + 32 log32 n) updates, O(n) once for :meth:`frozen`.
    """

    __slots__ = ("root", "size", "_frozen", "_base")

    def __init__(self, root: _Node, size: int,
                 base: Optional[tuple[frozenset[Any], Hashable, bool]] = None) -> None:
        # (with_sub sets these four fields without this call: a field added here goes
        # there too; an unset slot fails its first read with AttributeError.)
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
        while type(node) is list:
            node = node[(h >> shift) & _MASK]
            if node is None:
                return False
            shift += _BITS
        return _has(node, x, h)  # type: ignore[arg-type]  # a leaf tuple

    def __iter__(self) -> Iterator[Any]:
        return iter(self.frozen())

    def leaves(self) -> Iterator[tuple[Any, ...]]:
        """The leaf tuples, depth first."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            if type(node) is list:
                stack.extend(c for c in node if c is not None)
            else:
                yield node  # type: ignore[misc]  # not a list: a leaf tuple

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

    def renewed(self) -> SubSet:
        """A new SubSet object with the same members (and the same cached frozenset): the
        nodes are shared, being immutable. O(1). (For a word that takes a set back out of
        its Branch: see :func:`ctrie.nodes.replaced`.)"""
        r = _new(SubSet)
        r.root, r.size, r._frozen, r._base = self.root, self.size, self._frozen, self._base
        return r

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SubSet):
            other = other.frozen()
        return self.frozen() == other

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a set is; typeshed's is not Optional

    def __repr__(self) -> str:
        return f"SubSet({self.size} subscribers)"

    @classmethod
    def of(cls, members: frozenset[Any]) -> SubSet:
        """A SubSet holding ``members``, built in one pass over them: O(n log32 n)."""
        return cls(_build([(hash(x), x) for x in members], 0), len(members))


def _build(items: list[tuple[int, Any]], shift: int) -> _Node:
    """The node holding ``items`` (pairs of hash and member) below ``shift`` hash bits."""
    if len(items) <= _LEAF or shift >= _MAX_SHIFT:
        return tuple(x for _, x in items)
    groups: list[list[tuple[int, Any]]] = [[] for _ in range(_FANOUT)]
    for hx in items:
        groups[(hx[0] >> shift) & _MASK].append(hx)
    return [_build(g, shift + _BITS) if g else None for g in groups]


def _split(leaf: tuple[Any, ...], x: Hashable, shift: int) -> _Node:
    """A full ``leaf`` at ``shift`` with ``x`` added: an inner node of leaves. A group still
    too large (its members' hashes agree on these bits) is built by :func:`_build`, as
    many levels further down as its hashes need, or left as one larger leaf once the
    hashes have no bits left."""
    groups: list[Any] = [None] * _FANOUT
    for y in (*leaf, x):
        j = (hash(y) >> shift) & _MASK
        g = groups[j]
        groups[j] = (y,) if g is None else g + (y,)
    for j, g in enumerate(groups):
        if g is not None and len(g) > _LEAF:
            groups[j] = _build([(hash(y), y) for y in g], shift + _BITS)
    return groups


def _has(leaf: tuple[Any, ...], x: object, h: int) -> bool:
    """Whether ``x`` (of hash ``h``) is in ``leaf``: the C scan, or :func:`_find` where
    one of its ``==`` calls raised. (``with_sub`` inlines it on its way down: that runs on
    every add.)"""
    try:
        return x in leaf
    except Exception:  # an __eq__ raised: see _find
        return _find(leaf, x, h) >= 0


def _find(leaf: tuple[Any, ...], x: object, h: int) -> int:
    """The index of ``x`` (of hash ``h``) in ``leaf``, or -1, found as a set finds a member:
    the same object, or one of equal hash that ``==`` says is equal. A leaf is scanned in C
    first (``in``, ``index``), which calls ``==`` on every member ahead of ``x`` whatever its
    hash; this Python-level scan is the fallback when one of those calls raised (a
    subscriber whose ``==`` refuses foreign values, which a set would never have asked),
    so a large set accepts what a small one does. O(len(leaf))."""
    for i, y in enumerate(leaf):
        if y is x or (hash(y) == h and y == x):
            return i
    return -1


def _remove(node: _Node, x: Hashable, h: int, shift: int) -> Optional[_Node]:
    """``node`` without ``x``: path copy; ``node`` itself (the same object) if ``x`` is not
    in it, or None if nothing is left. An inner node left with only leaves, of at most
    ``_FOLD`` members in all, folds back into one leaf."""
    if type(node) is not list:
        try:
            i = node.index(x)
        except ValueError:
            return node  # not there
        except Exception:  # an __eq__ raised: see _find
            i = _find(node, x, h)  # type: ignore[arg-type]  # a leaf tuple
            if i < 0:
                return node
        return (node[:i] + node[i + 1:]) or None  # type: ignore[operator]  # a leaf tuple
    j = (h >> shift) & _MASK
    c = node[j]
    if c is None:
        return node
    r = _remove(c, x, h, shift + _BITS)
    if r is c:
        return node
    t = node[:]
    t[j] = r
    total = 0
    for k in t:
        if k is None:
            continue
        if type(k) is list:
            return t
        total += len(k)
        if total > _FOLD:
            return t
    return tuple(y for k in t if k is not None for y in k) if total else None


def with_sub(subs: Subscribers, x: Hashable) -> Subscribers:
    """``subs`` plus ``x``; ``subs`` itself (the same object) if ``x`` is in it already, so
    that a caller tells "already there" by identity, without a membership test of its own.
    A flat set past ``SUBS_FLAT`` becomes a SubSet. O(_LEAF + 32 log32 n): a SubSet's write
    copies one leaf and the inner lists on the way down to it, top-down, in one pass."""
    # Tested as "not a SubSet" (the same one test as "a frozenset"): SubSet is final, so
    # the type checker narrows both branches.
    if type(subs) is not SubSet:
        if x in subs:
            return subs
        if len(subs) < SUBS_FLAT:
            return subs | {x}
        s = SubSet.of(subs)
        f: Optional[frozenset[Any]] = subs
    else:
        s = subs
        f = s._frozen
    h = hash(x)
    node = s.root
    if type(node) is tuple:  # a single leaf
        if _has(node, x, h):
            return subs
        new: _Node = node + (x,) if len(node) < _LEAF else _split(node, x, 0)
    else:
        # Copy the inner lists on the way down, each linked into the copy above it; the
        # copies are this call's own until the SubSet is returned. Already there: the
        # copies are dropped and ``subs`` returned, so an idempotent subscribe pays for
        # them (measured at 40,000 members: 0.54 us against 0.31 for copying bottom-up
        # after a search, which made every new member 0.26 us dearer, 0.90 -> 1.17 us).
        t: list[Any] = node[:]  # type: ignore[assignment]  # not a leaf tuple: an inner list
        new = t
        shift = 0
        while True:
            j = (h >> shift) & _MASK
            c = t[j]
            shift += _BITS
            if type(c) is list:
                t[j] = t = c[:]
                continue
            if c is None:
                t[j] = (x,)
                break
            try:  # _has(c, x, h), inlined
                there = x in c
            except Exception:  # an __eq__ raised: see _find
                there = _find(c, x, h) >= 0
            if there:
                return subs
            if len(c) < _LEAF or shift >= _MAX_SHIFT:
                t[j] = c + (x,)
            else:
                t[j] = _split(c, x, shift)
            break
    r = _new(SubSet)  # SubSet(...) without its __init__ call: the same four fields
    r.root, r.size, r._frozen, r._base = new, s.size + 1, None, None if f is None else (f, x, True)
    return r


def without_sub(subs: Subscribers, x: Hashable) -> Subscribers:
    """``subs`` without ``x``; ``subs`` itself (the same object) if ``x`` is not in it, so
    that a caller tells "not there" by identity, as with :func:`with_sub`. A SubSet
    shrinking to ``SUBS_FLAT // 2`` goes back to a frozenset (the gap keeps a set at the
    boundary from converting back and forth on every write)."""
    if type(subs) is not SubSet:  # a frozenset (see with_sub)
        return subs - {x} if x in subs else subs
    root = _remove(subs.root, x, hash(x), 0)
    if root is subs.root:
        return subs
    size = subs.size - 1
    if root is None:
        return frozenset()
    f = subs._frozen
    s = SubSet(root, size, None if f is None else (f, x, False))
    return s.frozen() if size <= SUBS_FLAT // 2 else s


def as_frozenset(subs: Subscribers) -> frozenset[Any]:
    """``subs`` as a frozenset (materialised and cached for a SubSet)."""
    return subs.frozen() if type(subs) is SubSet else subs


def union_of(hits: list[Subscribers]) -> frozenset[Any]:
    """The union of subscriber sets, any of them SubSets, as one frozenset. Each SubSet
    goes in as its materialised frozenset (:meth:`SubSet.frozen`, cached): ``union`` then
    merges hash tables in C. Handed a SubSet itself, it would iterate it through
    ``SubSet.__iter__`` and hash every member again: measured 2-3x slower on the GIL build
    and 2-5x on 3.13t, at 300 and at 40,000 members. Whether any is a SubSet is asked in
    C first, so a union of frozensets alone builds no list. O(total members)."""
    if SubSet in map(type, hits):
        return EMPTY.union(*[h.frozen() if type(h) is SubSet else h for h in hits])
    return EMPTY.union(*hits)
