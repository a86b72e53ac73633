"""Node classes of the CS-trie, named as in Prokopec et al. (PPoPP 2012).

The subscription-trie variant (the second article of ``seeds/002_*``) differs from the hash
Ctrie in three ways: a C-node maps a *word* (not a hash fragment) to a :class:`Branch` (or,
where the word has only that, to its subscriber set or its S-node alone); subscribers live
on branches, so internal levels carry values too; and a T-node wraps nothing,
because a C-node is entombed only once its last branch is gone.

- :class:`Gen`        a generation; compared by identity only (``is``), never by value.
- :class:`INode`      an indirection node: ``main`` is a ``cereggii.AtomicRef`` holding the
                      current main node, changed only by GCAS; ``gen`` is fixed at creation.
- :class:`CNode`      a main node mapping words to branches; immutable once published.
- :class:`TNode`      a tomb: the final main node of an I-node whose C-node lost its last
                      branch. An entombed I-node never changes again.
- :class:`FailedNode` written into a main node's ``prev`` when its GCAS is aborted.
- :class:`SNode`      a singleton node: the rest of one pattern and its subscribers, kept in
                      a branch in place of a chain of one-branch I-nodes (the paper's
                      S-node, which holds one key without an I-node above it).
- :class:`Branch`     a word's subscribers and its child, where the trie goes deeper: an
                      I-node, or an S-node when a single pattern continues below. A word
                      with only subscribers, or only an S-node, maps to that alone,
                      without a Branch (see :data:`Value`).

Main nodes carry ``prev`` for GCAS: ``None`` once the node is committed (or for a node that
was never published through GCAS), otherwise an ``AtomicRef`` that holds the node it replaced
(pending), ``None`` (committed) or a :class:`FailedNode` (aborted); see :mod:`ctrie.gcas`.

The builders (:meth:`CNode.updated`, :meth:`CNode.removed`) are pure: they return new nodes
and never touch published ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union, final

from cereggii import AtomicRef

from ._atomic import FREE_THREADED_BUILD as _FT_BUILD

if TYPE_CHECKING:
    from .subsets import Subscribers

__all__ = ["Gen", "INode", "MainNode", "CNode", "TNode", "FailedNode", "Branch", "SNode", "EMPTY",
           "Value", "branch", "replaced", "subs_of", "child_of",
           "LEAF_MAX", "FANOUT_BITS", "FANOUT", "KID_MASK", "MAX_SHIFT", "kid_index", "kid_slot",
           "SMALL_COPY_MAX", "Main", "Prev", "Kids", "Automaton"]

# Types: the nodes are not generic. A trie stores subscribers of one type (the ``S`` of
# ``CSTrie[S]``, checked where they come in, at ``subscribe``), so the sets here hold ``Any``.
EMPTY: frozenset[Any] = frozenset()

#: A level's words live in one flat dict (a leaf C-node) until it would hold more than
#: ``LEAF_MAX`` literal words; then the level splits on the words' hashes into ``FANOUT``
#: child I-nodes (see :class:`CNode`). Chosen by measurement (``tools/level_width.py
#: --leaf``, GIL build, one run): 128 against 32 gave the same write cost at 100 to 10,000
#: words and cheaper lookups (a flat level up to 128; one hash level, not two, up to 4,096);
#: 2,048 made a write at 1,000 words copy the level (4.9x LockedTrie against 2.1x).
LEAF_MAX = 128
#: On a free-threaded build a C-node's word dict of at most this many entries is copied with
#: ``{**d}``, not ``d.copy()``. On 3.13t, ``d.copy()`` of a small dict that deletions have
#: left sparse (one entry after two insert-and-delete rounds) takes about 16 us, single-
#: threaded (``ctrie/_ftdict.py``), and a narrow level's copy-on-write writes make such
#: dicts every few writes: copying and inserting, then copying and deleting, cost about
#: 8 us a pair at one entry against 0.3 with ``{**d}`` (``tools/ft_dict_get.py --copy``);
#: the two meet at 32 to 40 entries, and at 128 ``copy()`` is cheaper (1.6 against 3.6 us),
#: so wider leaves keep it. Where writes only replace values (no dict goes sparse),
#: ``{**d}`` costs about 0.1 us more a pair. Chosen by the build, not by whether the GIL
#: runs: 3.13t with ``PYTHON_GIL=1`` is as slow. The GIL build keeps ``copy()``, the
#: cheapest there at every size. 3.14t is not measured: rerun the tool there.
SMALL_COPY_MAX = 32


def _small_copy(branches: dict[str, Value]) -> dict[str, Value]:
    """A copy of a C-node's word dict on a free-threaded build (see ``SMALL_COPY_MAX``)."""
    return {**branches} if len(branches) <= SMALL_COPY_MAX else branches.copy()


#: How the builders copy a C-node's word dict, chosen once for the build: ``dict.copy``
#: itself on a GIL build (no test per write), :func:`_small_copy` on a free-threaded one.
_copy_branches: Callable[[dict[str, Value]], dict[str, Value]] = (
    _small_copy if _FT_BUILD else dict.copy)
FANOUT_BITS = 5
FANOUT = 1 << FANOUT_BITS
KID_MASK = FANOUT - 1  #: hash bits at a shift -> kid index (walks inline it)
#: Past this shift a string hash has no bits left: such a leaf grows instead of splitting.
MAX_SHIFT = 60


@final
class Gen:
    """A generation tag. Deliberately has no ``__eq__``: two generations are the same only if
    they are the same object (a known bug of Ctrie ports compared them by value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<Gen {id(self):#x}>"


class MainNode:
    """What an I-node points to: a :class:`CNode` or a :class:`TNode`."""

    __slots__ = ("prev",)

    def __init__(self) -> None:
        # None: committed (or never published through GCAS). See ctrie.gcas.
        self.prev: Optional[AtomicRef[Prev]] = None


@final
class SNode:
    """A singleton node: ``words`` (a non-empty list, never changed once the node is made:
    a list so that it compares with a slice of a pattern's words, and serves as ``key``,
    without a copy) is the rest of exactly one pattern below a branch, and ``subs``
    (non-empty) its subscribers. Immutable, and it has no generation: being immutable, it
    can be shared by a trie and its snapshots.

    Path compression: a pattern whose words below some branch are shared with no other
    pattern costs one S-node instead of one I-node and C-node per word, and a lookup matches
    the rest of the topic against ``words`` in a loop instead of reading one I-node per
    level. A subscribe that needs to go through an S-node first expands it into I-nodes
    (:meth:`ctrie.CSTrie._expanded`); that leaves the stored patterns unchanged.
    """

    __slots__ = ("words", "subs", "key", "wild", "open", "nfa")

    def __init__(self, words: list[str], subs: Subscribers, single: str, multi: str) -> None:
        self.words = words
        self.subs = subs
        # For matching in NATS and MQTT, where the many-level wildcard can only be last:
        # ``key`` is the words before it, with None in place of each one-level wildcard,
        # whose positions are ``wild``; ``open`` says the pattern ends in the many-level
        # wildcard. A topic's rest matches if it has the right length and, with None put at
        # ``wild``, equals ``key`` (one C-level list comparison). Without wildcards ``key``
        # is ``words`` itself: one list fewer per S-node, which on a wide level of literal
        # patterns is measured in both memory and the collector's time.
        self.open = words[-1] == multi
        key: list[Optional[str]] = words[:-1] if self.open else words  # type: ignore[assignment]
        if single in key:
            key = list(key)  # a copy: None goes in place of the wildcards, never into words
            self.wild = tuple(j for j, w in enumerate(key) if w == single)
            for j in self.wild:
                key[j] = None
        else:
            self.wild = ()  # the common case, without a generator
        self.key = key
        # AMQP allows '#' anywhere: a pattern with no '#' but a trailing one matches as
        # above (with ``multi_min`` 0); any other needs an automaton, built here once:
        # ``nfa`` (see :func:`automaton`). Always None in NATS and MQTT.
        self.nfa = automaton(words, single, multi) if multi in key else None

    def with_subs(self, subs: Subscribers) -> SNode:
        """The same pattern with other subscribers: shares the derived fields. O(1)."""
        c = SNode.__new__(SNode)
        c.words, c.key, c.wild, c.open, c.nfa = self.words, self.key, self.wild, self.open, self.nfa
        c.subs = subs
        return c

    def __repr__(self) -> str:
        return f"SNode({self.words!r}, {len(self.subs)} subscribers)"


def automaton(words: Sequence[str], single: str, multi: str) -> Automaton:
    """The bit-parallel automaton of a pattern with many-level wildcards anywhere (AMQP):
    ``(hashes, stars, literals, start, accept)``. Bit ``s`` stands for pattern position
    ``s``: ``hashes`` and ``stars`` mark the wildcards, ``literals[w]`` the positions of word
    ``w``, ``start`` the positions reached before any word (0, and through a leading run of
    many-level wildcards, which may match nothing), ``accept`` the end. Run by
    ``ctrie.cstrie._tail_ok_amqp``. O(len(words))."""
    hashes = stars = 0
    literals: dict[str, int] = {}
    for s, x in enumerate(words):
        bit = 1 << s
        if x == multi:
            hashes |= bit
        elif x == single:
            stars |= bit
        else:
            literals[x] = (literals[x] if x in literals else 0) | bit  # not dict.get: ctrie/_ftdict.py
    start = 1 | (((hashes & 1) + hashes) ^ hashes)
    return hashes, stars, literals, start, 1 << len(words)


@final
class Branch:
    """A word's branch in a C-node where patterns both end and go on, or where the trie
    goes deeper through an I-node: ``subs`` (the subscribers whose pattern ends here;
    empty only beside an I-node) and ``inode``, never None: the child I-node, or an
    :class:`SNode` holding the only pattern that continues below. Immutable.

    A word with only subscribers, or only an S-node, has no Branch: the C-node maps it to
    that set or that S-node (see :data:`Value`). Most patterns end in such a word, so this
    saves a 48-byte object per pattern, and a lookup reads one attribute less there.
    :func:`branch` builds the right value; :func:`subs_of` and :func:`child_of` read any."""

    __slots__ = ("subs", "inode")

    def __init__(self, subs: Subscribers, inode: INode | SNode) -> None:
        self.subs = subs
        self.inode = inode

    def __repr__(self) -> str:
        return f"Branch({set(self.subs) or '{}'}, {self.inode!r})"


#: What a C-node maps a word to, told apart by ``type(v)``: a :class:`Branch`; a non-empty
#: subscriber set (a frozenset or a SubSet) where no pattern continues below the word; or
#: an :class:`SNode` where one pattern continues below and none ends at the word.
Value = Union[Branch, "Subscribers", SNode]


def branch(subs: Subscribers, child: Optional[INode | SNode]) -> Value:
    """The value of a word with subscribers ``subs`` and child ``child``: ``subs`` alone
    where there is no child (``subs`` then non-empty: the caller removes a word left with
    neither), an S-node child alone where there are no subscribers, else a Branch. O(1).

    Identity is how a lookup's validation tells a value unchanged, so a bare value must be
    an object this word has not held as its value before: one just built, or, where it
    comes out of the word's Branch, a copy (:func:`replaced` sees to that)."""
    if child is None:
        return subs
    if not subs and type(child) is SNode:
        return child
    return Branch(subs, child)


def replaced(old: Value, subs: Subscribers, child: Optional[INode | SNode]) -> Value:
    """:func:`branch` for a word whose value was ``old``: where the new value would be a
    bare set or S-node taken out of ``old``, a Branch, it is a copy. Such an object may
    have been this word's value before it went into the Branch (``S``, then
    ``Branch(S, c)``, then ``S`` again: an ABA that a lookup's identity test would miss).
    Every other bare value a write makes is new. O(1), or O(n) to copy a frozenset of n
    (at most ``SUBS_FLAT``) subscribers."""
    v = branch(subs, child)
    if type(old) is Branch and (v is old.subs or v is old.inode):
        if type(v) is SNode:
            return v.with_subs(v.subs)
        if type(v) is frozenset:
            return v | EMPTY  # a new frozenset (``frozenset(v)`` would return ``v`` itself)
        return v.renewed()  # type: ignore[union-attr]  # a SubSet
    return v


def subs_of(v: Value) -> Subscribers:
    """The subscribers of a word's value (a Branch's, the set itself, none for an S-node)."""
    t = type(v)
    return v.subs if t is Branch else EMPTY if t is SNode else v  # type: ignore[union-attr, return-value]


def child_of(v: Value) -> Optional[INode | SNode]:
    """The child of a word's value (a Branch's, the S-node itself, None for a set)."""
    t = type(v)
    return v.inode if t is Branch else v if t is SNode else None  # type: ignore[union-attr, return-value]


@final
class CNode(MainNode):
    """A C-node: ``branches`` maps words to their values (:data:`Value`: a :class:`Branch`,
    or a word's subscriber set or S-node alone). ``pwc`` and ``fwc`` cache
    the values of the dialect's one-level and many-level wildcard words (or None) so that
    a lookup reads them without hashing.

    A word level is a small hash trie, as in the Ctrie itself. A *leaf* C-node (``kids`` is
    None) holds every word of its level in ``branches``, at most ``LEAF_MAX`` literal words
    plus the wildcards. A wider level *splits*: its top C-node keeps only the wildcard
    branches, and ``kids`` is a tuple of ``FANOUT`` child I-nodes (or None), indexed by the
    bits ``[shift, shift + FANOUT_BITS)`` of the word's hash; each child holds a C-node of
    the same kind (leaf or split, ``shift`` one step further, never wildcards). A literal
    word lives in exactly one leaf: the one its hash leads to. So a write copies at most
    ``LEAF_MAX`` branches or ``FANOUT`` kids at each of O(log W) hash levels, and two
    writers of different words under a wide level meet at one I-node only when their words
    share a leaf.

    ``lit`` and ``wc`` are insertion tokens: plain objects, compared by identity, that a
    copy keeps unless it adds a word that was absent (a literal word, or a kid where there
    was none: a new ``lit``; a wildcard word: a new ``wc``) or gives a word that had
    subscribers alone a child (a new token of the word's kind). Replacing or removing a
    branch otherwise keeps both. Successive C-nodes of one I-node with the same ``lit``
    therefore had no literal word (no kid) added in between, so a word absent from both was
    absent all along: this is how a lookup validates, without ABA, that a word it found
    *absent* is still absent (:meth:`ctrie.CSTrie._validate`). A token never returns once
    replaced, and neither does a word's value (a :class:`Branch`, a set or an S-node: every
    write makes a new one, and one that comes back out of a Branch is copied, see
    :func:`replaced`) or a kid I-node object, which makes identity a sound test for
    "unchanged since it was read" of present words.

    ``npairs`` is the number of (pattern, subscriber) pairs stored in this C-node's own
    branches: their subscribers and their S-nodes', not those below child or kid I-nodes. A
    GCAS that replaces one C-node by another changes the trie's size by the difference
    (except an S-node's expansion or a split, which move pairs into new I-nodes): that is
    how the trie keeps its count (:mod:`ctrie.size`). The builders keep it in O(1); the
    constructor counts it in O(branches) unless told.

    Immutable once published: updates build a new C-node (O(LEAF_MAX) for the dict copy,
    O(FANOUT) for a kids tuple).
    """

    __slots__ = ("branches", "pwc", "fwc", "lit", "wc", "npairs", "kids", "shift")

    def __init__(self, branches: dict[str, Value], single: str, multi: str,
                 lit: object = None, wc: object = None, npairs: Optional[int] = None,
                 kids: Optional[Kids] = None, shift: int = 0) -> None:
        self.prev = None
        self.branches = branches
        # not dict.get: see ctrie/_ftdict.py
        self.pwc = branches[single] if single in branches else None
        self.fwc = branches[multi] if multi in branches else None
        self.lit = object() if lit is None else lit
        self.wc = object() if wc is None else wc
        self.npairs = sum(map(_pairs, branches.values())) if npairs is None else npairs
        self.kids = kids
        self.shift = shift

    def updated(self, word: str, branch: Value, single: str, multi: str,
                npairs: Optional[int] = None, child_added: bool = False) -> CNode:
        """A copy with ``word`` mapped to ``branch``, with a new insertion token of the
        word's kind if ``word`` is new here, or if ``child_added`` (the caller gives a word
        that had subscribers alone a child). ``npairs``: the copy's pair count, where the
        caller knows it (a write that adds one pair: ``self.npairs + 1``); else it is
        counted from the old and the new value (``len()`` of a large subscriber set is a
        Python-level call)."""
        branches = _copy_branches(self.branches)  # (see SMALL_COPY_MAX)
        lit, wc = self.lit, self.wc
        # (The trie's writes pass ``npairs``, those that move pairs between levels too: an
        # S-node's expansion, a tomb's S-node taken up. This count is for callers that do
        # not know it.)
        n = (self.npairs + _pairs(branch) - (_pairs(branches[word]) if word in branches else 0)
             if npairs is None else npairs)
        if child_added or word not in branches:
            if word == single or word == multi:
                wc = None  # a fresh token
            else:
                lit = None
        branches[word] = branch
        if wc is not self.wc or word == single or word == multi:
            return CNode(branches, single, multi, lit, wc, n, self.kids, self.shift)
        # A literal word: the wildcard caches carry over (no hashing them again).
        return _cnode_like(self, branches, lit, self.kids, n)

    def removed(self, word: str, single: str, multi: str) -> CNode:
        """A copy without ``word`` (same insertion tokens)."""
        branches = _copy_branches(self.branches)  # (see SMALL_COPY_MAX)
        b = branches.pop(word)
        # _pairs(b) inlined: this runs on every write
        t = type(b)
        if t is Branch:
            c = b.inode  # type: ignore[union-attr]
            k = len(b.subs) + len(c.subs) if type(c) is SNode else len(b.subs)  # type: ignore[union-attr]
        else:
            k = len(b.subs) if t is SNode else len(b)  # type: ignore[union-attr, arg-type]
        n = self.npairs - k
        if word == single or word == multi:
            return CNode(branches, single, multi, self.lit, self.wc, n, self.kids, self.shift)
        # A literal word: the wildcard caches and both tokens carry over.
        return _cnode_like(self, branches, self.lit, self.kids, n)

    def full(self, single: str, multi: str, limit: int) -> bool:
        """Whether a new literal word would take this leaf past ``limit`` words (normally
        ``LEAF_MAX``) while its hash still has bits to split on."""
        n = len(self.branches) - (single in self.branches) - (multi in self.branches)
        return n >= limit and self.shift < MAX_SHIFT

    def split(self, single: str, multi: str, gen: Gen) -> CNode:
        """This leaf, split: the same wildcard branches, and its literal words moved into
        fresh leaf C-nodes under ``FANOUT`` kid I-nodes of generation ``gen``. It stores the
        same words, so publishing it is a neutral GCAS; the new ``lit`` token makes every
        lookup that read this leaf re-check. O(LEAF_MAX)."""
        groups: list[Optional[dict[str, Value]]] = [None] * FANOUT
        top: dict[str, Value] = {}
        shift = self.shift
        for w, b in self.branches.items():
            if w == single or w == multi:
                top[w] = b
                continue
            j = kid_slot(w, shift)
            g = groups[j]
            if g is None:
                g = groups[j] = {}
            g[w] = b
        kid_shift = shift + FANOUT_BITS
        kids = tuple(None if g is None else INode(CNode(g, single, multi, shift=kid_shift), gen)
                     for g in groups)
        return CNode(top, single, multi, None, self.wc, None, kids, shift)

    def with_kid(self, j: int, kid: Optional[INode]) -> CNode:
        """A copy with kid ``j`` replaced (a new ``lit`` token if a kid appears where there
        was none). O(FANOUT)."""
        kids = list(self.kids)  # type: ignore[arg-type]  # only a split C-node has kids to replace
        lit = None if kids[j] is None and kid is not None else self.lit
        kids[j] = kid
        return _cnode_like(self, self.branches, lit, tuple(kids), self.npairs)

    def __repr__(self) -> str:
        if self.kids is not None:
            return f"CNode({self.branches!r}, kids={sum(k is not None for k in self.kids)}, shift={self.shift})"
        return f"CNode({self.branches!r})"


def _cnode_like(m: CNode, branches: dict[str, Value], lit: object, kids: Optional[Kids],
                npairs: int) -> CNode:
    """A C-node with ``m``'s wildcard caches, ``wc`` token and shift: the copy every write
    of a literal word makes (no hashing of the wildcards again). ``lit`` None: a new token."""
    c = CNode.__new__(CNode)
    c.prev = None
    c.branches = branches
    c.pwc, c.fwc, c.wc, c.shift = m.pwc, m.fwc, m.wc, m.shift
    c.lit = object() if lit is None else lit
    c.npairs = npairs
    c.kids = kids
    return c


def kid_slot(word: str, shift: int) -> int:
    """The kid index of ``word`` at a split C-node of ``shift``."""
    return (hash(word) >> shift) & KID_MASK


def kid_index(m: CNode, word: str) -> int:
    """The index in ``m.kids`` of the kid whose subtree holds ``word``."""
    return (hash(word) >> m.shift) & KID_MASK


def _pairs(b: Value) -> int:
    """The pairs a word's value stores at its own level: its subscribers and its S-node's."""
    t = type(b)
    if t is Branch:
        c = b.inode  # type: ignore[union-attr]
        return len(b.subs) + len(c.subs) if type(c) is SNode else len(b.subs)  # type: ignore[union-attr]
    return len(b.subs) if t is SNode else len(b)  # type: ignore[union-attr, arg-type]


@final
class TNode(MainNode):
    """A tomb: the last main node an I-node ever holds. It stands for the C-node it froze,
    ``cnode``: an empty subtree, or (the Ctrie's contraction) a level left with one pattern,
    which ``sn`` holds as an S-node for the parent to take in place of the I-node.

    ``ref`` is an AtomicRef that always holds ``cnode``: what a lookup records for the read
    of a tomb, which needs no second look (a tomb is final). ``npairs`` is ``cnode``'s."""

    __slots__ = ("sn", "cnode", "ref", "npairs")
    kids = None
    #: Typed as an I-node's reference, whose place it takes in a lookup's records.
    ref: AtomicRef[Main]

    def __init__(self, sn: Optional[SNode] = None, cnode: Optional[CNode] = None) -> None:
        self.prev = None
        self.sn = sn
        if cnode is None:
            self.cnode, self.ref, self.npairs = EMPTY_CNODE, EMPTY_REF, 0
        else:
            self.cnode, self.ref, self.npairs = cnode, AtomicRef(cnode), cnode.npairs

    def __repr__(self) -> str:
        return "TNode()" if self.sn is None else f"TNode({self.sn!r})"


@final
class FailedNode(MainNode):
    """Marks an aborted GCAS: ``old`` is the main node the I-node must be restored to."""

    __slots__ = ("old",)

    def __init__(self, old: Main) -> None:
        self.prev = None
        self.old = old


@final
class INode:
    """An indirection node. ``main`` (an ``AtomicRef``) is changed only by compare-and-swap;
    ``gen`` is the generation the I-node belongs to, fixed at creation."""

    __slots__ = ("main", "gen")

    def __init__(self, main: Main, gen: Gen) -> None:
        self.main: AtomicRef[Main] = AtomicRef(main)
        self.gen = gen

    def __repr__(self) -> str:
        return f"<INode {id(self):#x} gen={id(self.gen):#x}>"


#: What an I-node's ``main`` holds (a :class:`FailedNode` only ever sits in a ``prev``).
Main = Union[CNode, TNode]
#: What a main node's ``prev`` holds while its GCAS settles: the node it replaced (pending),
#: None (committed) or a :class:`FailedNode` (aborted).
Prev = Union[CNode, TNode, FailedNode, None]
#: A split C-node's child I-nodes, ``FANOUT`` of them, None where a hash slice has no word.
Kids = tuple[Optional[INode], ...]
#: :func:`automaton`'s ``(hashes, stars, literals, start, accept)``.
Automaton = tuple[int, int, dict[str, int], int, int]

#: What an empty tomb stands for, and the reference a lookup records for reading it.
EMPTY_CNODE = CNode({}, "", "")
EMPTY_REF: AtomicRef[Main] = AtomicRef(EMPTY_CNODE)  # never written
