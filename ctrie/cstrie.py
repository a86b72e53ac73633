"""The CS-trie: a lock-free concurrent subscription trie with O(1) snapshots.

After the Ctrie of Prokopec, Bronson, Bagwell and Odersky ("Concurrent Tries with Efficient
Non-Blocking Snapshots", PPoPP 2012) as generalised to subscription tries by the second
article of ``seeds/002_*``. Pattern ``a.b.c`` is the path of branches ``a``, ``b``, ``c`` from
the root; its subscribers sit on the last branch. Wildcard words are branches like any other.

Concurrency in one paragraph: every I-node's main node changes only through GCAS
(:mod:`ctrie.gcas`), the root only through RDCSS (:mod:`ctrie.rdcss`); C-nodes are never
modified once published. A writer copies the C-node it changes and publishes the copy with
one GCAS; the commit is its linearization point, and a lost race re-reads from the root and
retries. No thread ever waits for another: whoever meets a pending GCAS, a pending RDCSS or a
tomb completes or cleans it and carries on. No locks are taken anywhere.

Lookups read main nodes with GCAS_READ and never write, except to complete a pending GCAS or
compress a tomb they meet. A lookup that reads more than one I-node validates its reads: it
re-reads each I-node it visited but the last, and walks again only if a part of it that the
walk *used* changed (the branch of the word it read there, and the two wildcard branches,
each present or absent; :meth:`CSTrie._revalidate`). Where only subscriber sets changed
(every child the same), it swaps their hits instead of walking again. Without validation, a lookup whose
wildcards send it down two subtrees could combine a state of one subtree from before a write
with a state of the other from after a later write, a result no single instant ever had.
With it, every part used was still in place when the last I-node was read, and the lookup
linearizes at that read. Writes to words the lookup did not read cost it nothing. After two
walks that failed validation, a lookup walks a frozen root instead (:meth:`_frozen_lookup`),
so no writer can starve it: at most three walks per lookup (and the unrecorded one below).

When no write came lately, the records are not needed: every write that changes the stored
pairs moves the trie's content version inside a window (:mod:`ctrie.size`), so a walk
between two equal, window-free reads of it found the pairs stored throughout. A lookup's
walk goes *unrecorded* (one walk per lookup at most) when the version it reads on leaving
its second I-node is the hint (a version that two recorded walks, of any topic, found
unchanged): it keeps no record, and at the end re-reads the version and its first two
I-nodes only. If any moved it walks again, recorded, once more at most, outside the bound
above. A recorded walk takes the same test first and reads its records only if it fails:
the records serve the walks that a write overlapped. (A walk of two reads needs no version:
its first read's double collect is its whole validation. That is a lookup through one wide
level, its top and the leaf holding the word.) That saves a record and a re-read per I-node
read (on the dense workload 14 I-nodes a lookup), at the cost of two atomic reads and one
wasted walk when a write lands during it. The hint keeps those rare under steady writes; it
takes two quiet walks because one is a poor forecast beside a writer that commits about as
often as lookups complete (an inbox-churning writer on 3.13t: 21 % of lookups walked twice
with one, 4 % with two). What the version costs beside writers that never touch the
lookup's path (every reader reads a counter every write moves) is measured by the
``starvation`` experiment.

Path compression: where only one pattern continues below a branch, its remaining words sit
in an S-node (:class:`~ctrie.nodes.SNode`) in the branch instead of a chain of one-branch
I-nodes. A subscribe that must pass through an S-node first expands it into I-nodes with one
GCAS that leaves the stored patterns unchanged. An unsubscribe that leaves a level with one
pattern contracts it back (:meth:`CSTrie._contracted`, the Ctrie's toContracted): the I-node
is entombed holding that pattern as an S-node, and the parent's clean-up puts the S-node in
its place. So after any history the trie has the shape of a fresh build of its content.

Layout (:class:`~ctrie.nodes.CNode`): a level of more than ``LEAF_MAX`` literal words splits
on the words' hashes into kid I-nodes, so a write copies O(LEAF_MAX + 32 log W) entries, not
the level; a pattern's subscribers past ``SUBS_FLAT`` are a persistent set
(:mod:`ctrie.subsets`). Walks treat a kid as one more I-node on the word's path: a lookup
records it for validation like any other, with the kid for the word's hash slice as the
part it used.

Tombs: the unsubscribe that entombs an I-node owns its clean-up until the tomb (and any
parent entombed in turn) is out of the trie of the current root; when a snapshot freezes the
parent first, it finishes from the new root (:meth:`CSTrie._clean_path`). So once no
operation runs no tomb is reachable, whatever snapshots were taken meanwhile.

Depth: every walk (subscribe, unsubscribe, lookup, the AMQP walk, whole-trie reads) keeps
an explicit stack, so patterns and topics have no depth limit, and tests an S-node's length
before it compares words, so a lookup touches O(k) words per matching path.

Size: ``len()`` takes no snapshot (which would make the next writes renew every level they
pass). Each C-node carries the number of pairs stored at its level, so each GCAS knows how
much it changes the count, and counts it inside a window that a ``len()`` read can see
(:mod:`ctrie.size`): the read linearizes at an instant when no count was pending.
"""

# size: one module for the whole algorithm. The walk, the writes, their clean-up and the
# snapshots share the invariants of the GCAS/RDCSS protocol, and the hot paths inline one
# another by hand (no calls between them): split apart, each part would state invariants
# it cannot see.

from __future__ import annotations

import enum
import inspect
import time
from collections.abc import Collection, Hashable, Iterator
from itertools import compress
from operator import is_not
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, Optional

from cereggii import AtomicInt64, AtomicRef

from ._atomic import FREE_THREADED_BUILD as _FT
from ._atomic import read
from .errors import ReadOnlyError
from .gcas import GCAS, gcas_complete, gcas_read
from .nodes import (EMPTY, FANOUT, FANOUT_BITS, LEAF_MAX, MAX_SHIFT, Automaton, Branch, CNode,
                    FailedNode, KID_MASK, Gen, INode, Main, SNode, TNode, Value, automaton, branch,
                    child_of, kid_index, kid_slot, replaced, subs_of)
from .protocol import S
from .rdcss import Root, rdcss_read_root, rdcss_root, rdcss_swap
from .cache import CACHE_MAX_ENTRIES, CACHE_SWEEP_TO, ResultCache
from .size import WINDOWS, SizeCounter
from .subsets import (SUBS_FLAT, Subscribers, SubSet, as_frozenset, union_of, with_sub,
                      without_sub)
from .topics import (EMPTY_KEY_WORD, Dialect, DialectLike, Edge, join_paths, pattern_validator,
                     require_hashable, topic_validator)

if TYPE_CHECKING:  # pragma: no cover
    from .counters import Counters

__all__ = ["CSTrie"]


class _Retry(enum.Enum):
    """The type of :data:`_RESTART` (an enum member, so that a type checker narrows
    ``x is _RESTART``)."""

    RESTART = "restart"


# Results of the recursive update steps: RESTART re-reads the root and tries again.
_RESTART: Final = _Retry.RESTART
# Event counters (see ctrie.counters); None unless a contention experiment installed them.
# Every site that counts is off the common path.
_count: Optional[Counters] = None

# How many times len() reads the size counter while writes are inside their windows before
# it counts a read-only snapshot instead (see ctrie.size).
_LEN_READS = 8


class _Restart(Exception):
    """Raised inside a lookup that met a tomb (after helping to clean it)."""


class _Slow(Exception):
    """Raised inside a lookup whose topic needs the validator's full checks."""


class CSTrie(Generic[S]):
    """A lock-free subscription trie implementing the :class:`~ctrie.Matcher` protocol,
    generic in the subscriber type (``CSTrie[str]()``; unparameterised: ``Hashable``).

    Thread-safety: every method may be called from any number of threads at once, on CPython
    with or without the GIL; every method is linearizable and none takes a lock.

    Complexity, with ``k`` the number of words of the pattern or topic:

    - ``subscribe`` / ``unsubscribe``: O(k) levels; each level reached costs a dict lookup
      (plus O(log32 W) kid reads at a level of W > LEAF_MAX words), and the one C-node
      changed is copied: O(LEAF_MAX) branches or 32 kids; a subscriber set past SUBS_FLAT
      costs O(32 log32 S) to update. Retries on contention.
    - ``lookup``: O(k) per matching path without a multi-level wildcard inside a pattern;
      AMQP ``#`` inside patterns is O(visited nodes x k) at worst (memoised, never
      exponential). With ``cache=True`` (:mod:`ctrie.cache`), a topic looked up before
      with no write since costs one atomic load and one dict probe; ``cache_max`` and
      ``cache_sweep_to`` bound it (NATS's 1,024 and 256 by default; ``cache_max`` alone
      sweeps to a quarter of it, at most 256; given without ``cache=True`` they raise
      ``ValueError``). Each snapshot gets a cache of its own.
    - ``snapshot`` / ``read_only_snapshot``: O(1); the cost is paid lazily by writers, which
      copy each I-node of an older generation the first time they pass it.
    - ``subscriptions``: O(size of the trie), on a read-only snapshot.
    - ``len``: O(1), a validated read of the size counter (:mod:`ctrie.size`); O(size) when
      writes keep it from validating (then it counts a read-only snapshot), on a read-only
      snapshot, and once for a writable snapshot (the part it started from).

    >>> t = CSTrie()
    >>> t.subscribe("stock.*.ibm", "alice")
    >>> t.subscribe("stock.>", "bob")
    >>> sorted(t.lookup("stock.nyse.ibm"))
    ['alice', 'bob']
    >>> frozen = t.read_only_snapshot()
    >>> t.unsubscribe("stock.>", "bob")
    True
    >>> sorted(t.lookup("stock.nyse.ibm")), sorted(frozen.lookup("stock.nyse.ibm"))
    (['alice'], ['alice', 'bob'])
    """

    __slots__ = (
        "dialect",
        "_root",
        "_readonly",
        "_validate_pattern",
        "_validate_topic",
        "_single",
        "_multi",
        "_amqp",
        "_mqtt",
        "_multi_min",
        "_size",
        "_leaf_max",
        "_cache",
        "_version",
        "_quiet",
        "_calm",
        "_big",
        "_cleanups",
    )

    def __new__(cls, dialect: DialectLike = Dialect.NATS, *, cache: bool = False,
                **_kw: object) -> CSTrie[S]:
        # With a result cache, an instance of the subclass whose lookup consults it: the
        # lookup of a trie without one pays nothing for the option. (Typed as what it is
        # to its callers, a CSTrie[S]: _CachedCSTrie is a private subclass.)
        return object.__new__(_CachedCSTrie if cache and cls is CSTrie else cls)

    def __init__(self, dialect: DialectLike = Dialect.NATS, *, cache: bool = False,
                 cache_max: Optional[int] = None, cache_sweep_to: Optional[int] = None,
                 _root: Optional[INode] = None, _readonly: bool = False,
                 _frozen: Optional[Main] = None, _leaf_max: int = LEAF_MAX,
                 _big: bool = False) -> None:
        if type(cache) is not bool:
            raise TypeError(f"cache must be True or False, got {cache!r}")
        if not cache and (cache_max is not None or cache_sweep_to is not None):
            bounds = {k: v for k, v in (("cache_max", cache_max),
                                        ("cache_sweep_to", cache_sweep_to)) if v is not None}
            given = ", ".join(f"{k}={v!r}" for k, v in bounds.items())
            verb = "bounds" if len(bounds) == 1 else "bound"
            raise ValueError(f"{' and '.join(bounds)} {verb} the result cache, which only "
                             f"cache=True makes: got cache=False with {given}")
        # The result cache (ctrie.cache), its own for every trie and every snapshot.
        if cache_sweep_to is None:  # NATS keeps a quarter (256 of 1,024), at most 256
            cache_sweep_to = (min(CACHE_SWEEP_TO, cache_max // 4) if type(cache_max) is int
                              else CACHE_SWEEP_TO)
        # The content version (ctrie.size): lookups and the result cache read it; a
        # read-only view, whose content never changes, has none (its cache keeps a counter
        # that never moves).
        self._version = None if _readonly else AtomicInt64(0)
        self._quiet = -1  # the lookups' hint: a version two recorded walks found unchanged
        self._calm = -1  # the last version one recorded walk found unchanged
        self._cache = ResultCache(AtomicInt64(0) if self._version is None else self._version,
                                  CACHE_MAX_ENTRIES if cache_max is None else cache_max,
                                  cache_sweep_to) if cache else None
        d = Dialect.coerce(dialect)
        # Literal words a level holds in one flat C-node before it splits on their hashes
        # (ctrie.nodes.LEAF_MAX; tests make it tiny so that every test meets hash levels).
        self._leaf_max = _leaf_max
        # Whether this trie (or the one it was copied from) ever stored a SubSet: then a
        # lookup's union goes through subsets.union_of, which takes each SubSet as its
        # frozenset; a trie that never held one skips the call and its scan of the sets.
        # Only a matter of speed: the union is the same either way, so a stale value is
        # harmless (False: a SubSet unioned member by member; True, the flag never goes
        # back, as after the crowd left: one scan in C per union).
        self._big = _big
        # Unsubscribes whose tomb may still hang on their path (see _clean_path).
        self._cleanups: set[_Cleanup] = set()
        self.dialect = d
        self._single = d.single
        self._multi = d.multi
        self._validate_pattern = pattern_validator(d)
        self._validate_topic = topic_validator(d)
        self._readonly = _readonly
        if _root is None:
            _root = INode(CNode({}, d.single, d.multi), Gen())
        # The root reference holds an INode or, while a snapshot swaps it, a descriptor.
        self._root: AtomicRef[Root] = AtomicRef(_root)
        self._amqp = d is Dialect.AMQP
        self._mqtt = d is Dialect.MQTT
        self._multi_min = d.multi_min
        # The pair count; ``_frozen``: the frozen main node a writable snapshot starts from.
        self._size = None if _readonly else SizeCounter(_frozen)

    # --- root -------------------------------------------------------------------------------

    def _read_root(self, abort: bool = False) -> INode:
        r = self._root.get()
        if _FT and self._root.get() is not r:  # (ctrie._atomic)
            r = read(self._root)
        if type(r) is INode:
            return r
        return rdcss_read_root(self, abort)

    # --- snapshots --------------------------------------------------------------------------

    def _swap_root_generation(self) -> tuple[INode, Main, tuple[_Cleanup, ...]]:
        """Give this trie's root a new generation (RDCSS), returning the old root, its main
        node and the clean-ups in flight at the swap (see :meth:`_clean_path`). From then
        on both the old root and every I-node below it are frozen: GCAS on them aborts,
        because no root has their generation any more."""
        while True:
            r = self._read_root()
            expected = gcas_read(r, self)
            desc = rdcss_swap(self, r, expected, INode(expected, Gen()))
            if desc is not None:
                taken = desc.taken.get()  # set before the root moved (ctrie.rdcss)
                assert taken is not None
                return r, expected, taken

    def _capture_cleanups(self, taken: AtomicRef[Optional[tuple[Any, ...]]]) -> None:
        """A root swap of this trie has committed and is about to move the root: copy the
        records of the clean-ups in flight into ``taken`` (the first caller's copy stands; see
        :meth:`_clean_path`). Called by every thread that moves that root
        (:func:`ctrie.rdcss.rdcss_complete`). O(records)."""
        taken.compare_and_set(None, tuple(self._cleanups.copy()))  # (one atomic copy)

    def snapshot(self) -> CSTrie[S]:
        """A consistent, writable copy; the two tries are independent afterwards. O(1), plus
        O(k) per unsubscribe caught mid-clean-up (k: its pattern's length), whose tomb the
        copy cleans before it is returned (see :meth:`_clean_path`).

        Linearizes at the RDCSS that renews this trie's root generation (the CAS that decides
        its descriptor COMMITTED, :mod:`ctrie.rdcss`). The copy gets a root of its own, new
        generation over the same main node; each side copies the shared I-nodes lazily, on
        its first write below them.
        """
        if self._readonly:
            return self._copy(readonly=False)
        _, expected, cleanups = self._swap_root_generation()
        return self._cleaned_copy(expected, cleanups)

    def read_only_snapshot(self) -> CSTrie[S]:
        """A consistent, read-only view; ``subscribe``/``unsubscribe`` on it raise
        :class:`~ctrie.ReadOnlyError`. It keeps the old root, which no writer touches again,
        or, when the swap froze tombs of unsubscribes still cleaning up, the root of a
        private copy cleaned of them (see :meth:`_clean_path`). O(1), plus O(k) per such
        unsubscribe (k: its pattern's length)."""
        if self._readonly:
            return self
        old_root, expected, cleanups = self._swap_root_generation()
        if not cleanups:
            return CSTrie(self.dialect, _root=old_root, _readonly=True,
                          _leaf_max=self._leaf_max, _big=self._big, **self._cache_options())
        # A read-only view could never clean the tombs it froze: freeze a cleaned copy.
        return self._cleaned_copy(expected, cleanups).read_only_snapshot()

    def _cleaned_copy(self, frozen: Main, cleanups: tuple[_Cleanup, ...]) -> CSTrie[S]:
        """A writable trie over the frozen main node ``frozen`` of a root swap, with the
        tombs of the clean-ups the swap cut short (``cleanups``, see :meth:`_clean_path`)
        compressed out before anyone else can reach it. Content-neutral. O(1), plus O(k)
        per clean-up (k: its pattern's length)."""
        copy: CSTrie[S] = CSTrie(self.dialect, _root=INode(frozen, Gen()), _frozen=frozen,
                                 _leaf_max=self._leaf_max, _big=self._big,
                                 **self._cache_options())
        for cu in cleanups:
            copy._clean_path(cu.words)
        return copy

    def _copy(self, readonly: bool) -> CSTrie[S]:
        m = gcas_read(self._read_root(), self)
        return CSTrie(self.dialect, _root=INode(m, Gen()), _readonly=readonly, _frozen=m,
                      _leaf_max=self._leaf_max, _big=self._big, **self._cache_options())

    def _cache_options(self) -> dict[str, Any]:
        """The cache settings of this trie, for a snapshot: the same, with a cache of its
        own (a snapshot and its origin never serve each other's answers)."""
        c = self._cache
        if c is None:
            return {}
        return {"cache": True, "cache_max": c.max_entries, "cache_sweep_to": c.sweep_to}

    # --- subscribe --------------------------------------------------------------------------

    def subscribe(self, pattern: str, subscriber: S) -> None:
        """Add ``subscriber`` to ``pattern`` (idempotent). O(k) plus one C-node copy.

        Raises ``TypeError``/:class:`~ctrie.InvalidTopicError` on bad input (the trie is
        unchanged) and :class:`~ctrie.ReadOnlyError` on a read-only snapshot.
        """
        if self._readonly:
            raise ReadOnlyError("subscribe on a read-only snapshot")
        words = self._validate_pattern(pattern)
        try:
            hash(subscriber)  # require_hashable's test, inlined: its call costs more
        except TypeError:
            require_hashable(subscriber)  # raises, naming the subscriber
        while True:
            root = self._root.get()  # _read_root inlined: a descriptor goes the slow way
            if _FT and self._root.get() is not root:  # (ctrie._atomic)
                root = read(self._root)
            if type(root) is not INode:
                root = self._read_root()
            if self._insert(root, words, subscriber) is not _RESTART:
                return
            if _count is not None:
                _count("write_retry")

    def _expanded(self, sn: SNode, rest: list[str], gen: Gen) -> INode:
        """Fresh, unpublished I-nodes holding exactly the pattern of ``sn``: one I-node per
        word that ``sn.words`` shares with ``rest`` (at least one), the remainder still in
        an S-node. Publishing it in place of ``sn`` leaves the stored patterns unchanged."""
        t = sn.words
        k = 1
        top = min(len(t), len(rest))
        while k < top and t[k - 1] == rest[k - 1]:
            k += 1
        single, multi = self._single, self._multi
        # (``sn.subs`` as a bare value: new to these fresh I-nodes.)
        b: Value = sn.subs if k == len(t) else SNode(t[k:], sn.subs, single, multi)
        # Pair counts given, as in _expanded_with: the lowest level holds ``sn``'s
        # subscribers, the levels above none.
        npairs = len(sn.subs)
        for j in range(k - 1, -1, -1):
            inode = INode(CNode({t[j]: b}, single, multi, npairs=npairs), gen)
            b = Branch(EMPTY, inode)
            npairs = 0
        return inode

    def _expanded_with(self, sn: SNode, rest: list[str], subscriber: Hashable,
                       gen: Gen) -> INode:
        """:meth:`_expanded` with the pattern ``rest`` (another than ``sn``'s, sharing any
        prefix with it) already subscribed by ``subscriber``: fresh,
        unpublished I-nodes holding both patterns, the level where they part holding two
        branches (or one, where one pattern is a prefix of the other). O(len(rest))."""
        t = sn.words
        single, multi = self._single, self._multi
        k = 1
        top = min(len(t), len(rest))
        while k < top and t[k - 1] == rest[k - 1]:
            k += 1
        new = frozenset((subscriber,))
        # The branch at level k - 1 of each pattern: where it ends, or an S-node of the rest.
        old_b: Value = sn.subs if k == len(t) else SNode(t[k:], sn.subs, single, multi)
        branches: dict[str, Value]
        if t[k - 1] != rest[k - 1]:
            new_b: Value = new if k == len(rest) else SNode(rest[k:], new, single, multi)
            branches = {t[k - 1]: old_b, rest[k - 1]: new_b}
        elif k == len(rest):  # the new pattern is a prefix of the old: it ends here
            # (The old one goes on below: k < len(t), so ``old_b`` is its S-node.)
            branches = {t[k - 1]: Branch(new, old_b)}  # type: ignore[arg-type]
        else:  # the old pattern is a prefix of the new one: the new one goes on below
            branches = {t[k - 1]: Branch(sn.subs, SNode(rest[k:], new, single, multi))}
        # Pair counts given, not recounted (CNode.npairs): the parting level holds both
        # patterns' subscribers, ``sn``'s and the new one; the levels above hold none.
        inode = INode(CNode(branches, single, multi, npairs=len(sn.subs) + 1), gen)
        for j in range(k - 2, -1, -1):
            inode = INode(CNode({t[j]: Branch(EMPTY, inode)}, single, multi, npairs=0), gen)
        return inode

    def _insert(self, root: INode, words: list[str],
                subscriber: Hashable) -> Optional[Literal[_Retry.RESTART]]:
        if not words:
            # The AMQP empty key (zero words) lives in the root's branch of the reserved
            # word EMPTY_KEY_WORD, which no other pattern can reach (ctrie.topics). It is
            # written like any one-word pattern: the same GCAS on the root's I-node, so the
            # same linearization point and the same lock-freedom argument as every write.
            words = _EMPTY_KEY_PATH
        startgen = root.gen
        single, multi = self._single, self._multi
        inode, parent, pword = root, None, None
        last = len(words) - 1
        i = 0
        while True:
            m = inode.main.get()  # gcas_read inlined: one call less per level
            if _FT and inode.main.get() is not m:  # (ctrie._atomic)
                m = read(inode.main)
            if m.prev is not None:
                m = gcas_complete(inode, m, self)
            if type(m) is not CNode:
                # A tomb: help compress it out of its parent, then start again.
                self._compress_branch(parent, inode, pword, parent is root, startgen)
                return _RESTART
            w = words[i]
            br = m.branches
            b = br[w] if w in br else None  # not dict.get: see ctrie/_ftdict.py
            if b is None and w != single and w != multi:
                # A new literal word at this level: a wide level is a hash trie (CNode).
                ks = m.kids
                if ks is not None:
                    j = (hash(w) >> m.shift) & KID_MASK  # kid_index(m, w) inlined
                    kid = ks[j]
                    if kid is None:
                        # No word of this hash slice yet: a new kid leaf holding just w.
                        # Its pairs live in the new I-node, so the count comes with it.
                        nb: Value = (frozenset((subscriber,)) if i == last else
                                     SNode(words[i + 1:], frozenset((subscriber,)), single, multi))
                        leaf = CNode({w: nb}, single, multi, shift=m.shift + FANOUT_BITS)
                        return (None if GCAS(inode, m, m.with_kid(j, INode(leaf, startgen)), self,
                                             delta=1) else _RESTART)
                    if kid.gen is not startgen:
                        if GCAS(inode, m, self._renewed(m, startgen), self):
                            continue
                        return _RESTART
                    inode, parent, pword = kid, inode, w  # one hash level down, same word
                    continue
                if len(br) >= self._leaf_max and m.full(single, multi, self._leaf_max):
                    # A leaf with LEAF_MAX literal words: split it first (the same words, so
                    # a neutral GCAS), then read this level again.
                    if GCAS(inode, m, m.split(single, multi, startgen), self, neutral=True):
                        continue
                    return _RESTART
            # The word's value (nodes.Value): a Branch (subscribers and a child), or its
            # subscriber set alone, or its S-node alone.
            if b is None:
                bsubs: Subscribers = EMPTY
                child: Optional[INode | SNode] = None
            elif (tb := type(b)) is Branch:
                bsubs = b.subs  # type: ignore[union-attr]
                child = b.inode  # type: ignore[union-attr]
            elif tb is SNode:
                bsubs = EMPTY
                child = b  # type: ignore[assignment]
            else:
                bsubs = b  # type: ignore[assignment]
                child = None
            if i == last:
                if b is None:
                    nb = frozenset((subscriber,))
                else:
                    subs = with_sub(bsubs, subscriber)
                    if subs is bsubs:
                        return None  # already there: linearizes at the read of m
                    if type(subs) is SubSet and not self._big:
                        self._big = True  # (see __init__; stored once: the trie is shared)
                    nb = branch(subs, child)  # (a new set; a child, if any, goes in a Branch)
                # Linearization point: the commit of this GCAS (one pair more).
                return (None if GCAS(inode, m, m.updated(w, nb, single, multi, m.npairs + 1), self)
                        else _RESTART)
            if child is None:
                # The rest of the pattern is new: it goes in as one S-node, in one GCAS. A
                # word that had subscribers alone gains a child: a new insertion token
                # (CNode.updated), which is how a repair knows that a word it finds without
                # a child before and after had none in between (_same_use).
                nb = branch(bsubs, SNode(words[i + 1:], frozenset((subscriber,)), single, multi))
                return (None if GCAS(inode, m, m.updated(w, nb, single, multi, m.npairs + 1,
                                                         child_added=True), self)
                        else _RESTART)
            if type(child) is SNode:
                rest = words[i + 1:]
                if child.words == rest:
                    subs = with_sub(child.subs, subscriber)
                    if subs is child.subs:
                        return None  # already there: linearizes at the read of m
                    if type(subs) is SubSet and not self._big:
                        self._big = True  # (see __init__; stored once: the trie is shared)
                    nb = branch(bsubs, child.with_subs(subs))  # (a new S-node)
                    return (None if GCAS(inode, m, m.updated(w, nb, single, multi, m.npairs + 1), self)
                            else _RESTART)
                if self._leaf_max >= 2:
                    # Another pattern: expand the S-node into fresh I-nodes down to where
                    # the two patterns part, with the new pattern already in them, and
                    # publish both with one GCAS (the linearization point; one pair more).
                    # (This level's own count loses the S-node's subscribers, which move
                    # into the new I-nodes; ``delta`` counts the one new pair.)
                    nb = Branch(bsubs, self._expanded_with(child, rest, subscriber, startgen))
                    nm = m.updated(w, nb, single, multi, m.npairs - len(child.subs))
                    return None if GCAS(inode, m, nm, self, delta=1) else _RESTART
                # (Leaves of one word: the two words may need a split.) Expand the S-node
                # alone: the stored patterns are unchanged by this GCAS, so it needs no
                # linearization point of its own (``neutral``: it moves the S-node's pairs
                # out of this level without changing the count); then read this level again.
                nb = Branch(bsubs, self._expanded(child, rest, startgen))
                nm = m.updated(w, nb, single, multi, m.npairs - len(child.subs))
                if GCAS(inode, m, nm, self, neutral=True):
                    continue
                return _RESTART
            if child.gen is not startgen:
                # The child predates a snapshot: renew this C-node's children into our
                # generation first, then read this level again.
                if GCAS(inode, m, self._renewed(m, startgen), self):
                    continue
                return _RESTART
            inode, parent, pword = child, inode, w
            i += 1

    def _renewed(self, m: CNode, gen: Gen) -> CNode:
        """A copy of ``m`` whose child I-nodes are copies in generation ``gen``."""
        branches: dict[str, Value] = {}
        for w, b in m.branches.items():
            # (A bare subscriber set has no child: kept, like a Branch whose child is kept.)
            if type(b) is Branch and type(c := b.inode) is INode and c.gen is not gen:
                # S-nodes are immutable: shared
                b = Branch(b.subs, INode(gcas_read(c, self), gen))
            branches[w] = b
        kids = m.kids
        if kids is not None:
            kids = tuple(k if k is None or k.gen is gen else INode(gcas_read(k, self), gen)
                         for k in kids)
        # Same words, same branches or copies of them: the insertion tokens and the pair
        # count carry over. (A renewed kid is a new I-node object, which a lookup's
        # validation tells from the old one.)
        return CNode(branches, self._single, self._multi, m.lit, m.wc, m.npairs, kids, m.shift)

    # --- unsubscribe ------------------------------------------------------------------------

    def unsubscribe(self, pattern: str, subscriber: S) -> bool:
        """Remove ``subscriber`` from ``pattern``; True if the pair was present. O(k).

        Prunes the branch when it is left with no subscribers and no live child; a non-root
        C-node left without branches becomes a tomb, and each level then compresses the tomb
        out of its parent, so the trie returns to its empty shape.
        """
        if self._readonly:
            raise ReadOnlyError("unsubscribe on a read-only snapshot")
        words = self._validate_pattern(pattern)
        try:
            hash(subscriber)  # as in subscribe
        except TypeError:
            require_hashable(subscriber)
        while True:
            root = self._root.get()
            if _FT and self._root.get() is not root:  # (ctrie._atomic)
                root = read(self._root)
            if type(root) is not INode:
                root = self._read_root()
            res = self._remove(root, words, subscriber)
            if res is not _RESTART:
                return res
            if _count is not None:
                _count("write_retry")

    def _is_tomb(self, inode: INode) -> bool:
        return type(gcas_read(inode, self)) is TNode

    def _remove(self, root: INode, words: list[str],
                subscriber: Hashable) -> bool | Literal[_Retry.RESTART]:
        """Scala's rec_remove, as a loop: returns True, False or _RESTART.

        It goes down the path of ``words`` keeping the I-nodes it passed on an explicit
        stack (``frames``), commits the removal at the last level, then climbs back up the
        stack doing each level's clean-up, as the recursion's returns would: no depth limit.
        O(k) plus the C-node copies.
        """
        if not words:
            words = _EMPTY_KEY_PATH  # the AMQP empty key: see _insert
        single, multi = self._single, self._multi
        startgen = root.gen
        last = len(words) - 1
        frames: list[tuple[INode, Optional[INode], Optional[str]]] = []
        moved = 0
        inode: INode = root
        parent: Optional[INode] = None
        pword: Optional[str] = None
        i = 0
        while True:
            m = inode.main.get()  # gcas_read inlined: one call less per level
            if _FT and inode.main.get() is not m:  # (ctrie._atomic)
                m = read(inode.main)
            if m.prev is not None:
                m = gcas_complete(inode, m, self)
            if type(m) is not CNode:
                self._compress_branch(parent, inode, pword, parent is root, startgen)
                return _RESTART
            w = words[i]
            br = m.branches
            b = br[w] if w in br else None  # not dict.get: see ctrie/_ftdict.py
            if b is None:
                ks = m.kids
                if ks is None:
                    return False
                kid = ks[(hash(w) >> m.shift) & KID_MASK]  # kid_index(m, w) inlined
                if kid is None:
                    return False
                if kid.gen is not startgen:
                    if GCAS(inode, m, self._renewed(m, startgen), self):
                        continue
                    return _RESTART
                frames.append((inode, parent, pword))
                inode, parent, pword = kid, inode, w  # one hash level down, same word
                continue
            if (tb := type(b)) is Branch:
                bsubs: Subscribers = b.subs  # type: ignore[union-attr]
                child: Optional[INode | SNode] = b.inode  # type: ignore[union-attr]
            elif tb is SNode:  # an S-node alone (nodes.Value)
                bsubs = EMPTY
                child = b  # type: ignore[assignment]
            else:  # a subscriber set alone
                bsubs = b  # type: ignore[assignment]
                child = None
            if i == last:
                subs = without_sub(bsubs, subscriber)
                if subs is bsubs:
                    return False  # not there: linearizes at the read of m
                if type(child) is INode:
                    cm = gcas_read(child, self)
                    if type(cm) is TNode:
                        child = cm.sn  # a tombed child: its S-node, if any, or nothing
                        moved = cm.npairs  # its pairs move up into this level
            elif child is None:
                return False
            elif type(child) is SNode:
                t = child.words
                # Length first: comparing with a slice of the rest would copy it.
                if len(t) != last - i or t != words[i + 1:]:
                    return False
                rest = without_sub(child.subs, subscriber)
                if rest is child.subs:
                    return False  # not there: linearizes at the read of m
                subs, child = bsubs, (child.with_subs(rest) if rest else None)
            elif child.gen is not startgen:
                if GCAS(inode, m, self._renewed(m, startgen), self):
                    continue
                return _RESTART
            else:
                frames.append((inode, parent, pword))
                inode, parent, pword = child, inode, w
                i += 1
                continue
            # Here the pair was found on this level: ``subs`` and ``child`` are what the
            # branch keeps.
            if subs or child is not None:
                # One pair fewer here, and a tombed child's pairs (its S-node's) moved up.
                # (``replaced``: a set or S-node that comes out of the Branch is copied.)
                nm: Main = m.updated(w, replaced(b, subs, child), single, multi,
                                     m.npairs - 1 + moved)
            elif len(m.branches) > 1 or parent is None or m.kids is not None:
                nm = m.removed(w, single, multi)  # the root's C-node may be empty
            else:
                nm = TNode()  # last branch of a non-root C-node: entomb the I-node
            if (parent is not None and type(nm) is CNode and len(nm.branches) == 1
                    and nm.kids is None and not nm.shift):  # (_contracted's precondition)
                nm = self._contracted(nm)
            if type(nm) is not TNode:
                # Linearization point: the commit of this GCAS (one pair fewer).
                if not GCAS(inode, m, nm, self, delta=nm.npairs - m.npairs - moved):
                    return _RESTART
                return True  # no tomb made here: no clean-up is ours to do
            break
        # The same GCAS (the same linearization point), making a tomb: the clean-up is
        # ours, and recorded first (see _clean_path) until the path is clean, or the GCAS
        # failed (no tomb), or an exception ends the operation (a fault hook's: see GCAS).
        cu = _Cleanup(words)
        self._cleanups.add(cu)
        try:
            if not GCAS(inode, m, nm, self, delta=nm.npairs - m.npairs - moved):
                return _RESTART
            # The pair is removed. Climb back up, hash levels included. ``inode`` holds the
            # tomb ``nm``, committed above: a tomb is final, so neither the test below nor the
            # clean-up reads it again; the levels above are read.
            tomb: Optional[TNode] = nm
            while parent is not None:
                if tomb is not None or self._is_tomb(inode):
                    # Scala's cleanParent: this I-node is a tomb now; take it out of the
                    # parent so the trie stays compact. The parent, entombed in turn, goes
                    # next level up.
                    while True:
                        done = self._compress_branch(parent, inode, pword, parent is root,
                                                     startgen, tomb)
                        if done is None:
                            # Not under ``parent`` any more: compressed by another thread, or
                            # moved into a kid leaf by a split of that level. Finish from the
                            # root: that cleans every tomb left on the path, kids included.
                            self._clean_path(words)
                            return True
                        if done:
                            break
                        if self._read_root().gen is not startgen:
                            # A snapshot froze ``parent`` first: finish from the new root.
                            # That cleans the whole path; the levels above are frozen too.
                            self._clean_path(words)
                            return True
                tomb = None
                inode, parent, pword = frames.pop()
            return True
        finally:
            self._cleanups.remove(cu)

    def _clean_path(self, words: list[str]) -> None:
        """Compress every tomb on the path of ``words`` out of the trie of the current root.

        Called by an unsubscribe whose clean-up a snapshot interrupted: its tomb (and any
        parent entombed in turn) now hangs under I-nodes of an older generation, which no
        GCAS can change, and the writers that renew those levels copy the tomb into the new
        generation. In a word-keyed trie nobody may ever walk that path again, so the
        unsubscribe that made the tomb finishes the job here.

        Each round first reads the path (no writes; an I-node of an older generation shows
        the main node its renewal would copy), and returns when it meets no tomb: then no
        tomb of this path is reachable, since a tomb is final and reachable only along its
        own path. Otherwise it walks the path again as a writer, renewing the levels above
        the tomb into the root's generation, compresses the tomb out of its parent, and each
        parent that entombs in turn on its way back up, then starts over. A round that loses
        a race starts over too; it loses only to another operation that completed a step,
        so the loop is lock-free. Uncontended, O(k) reads and GCASes in all, however many
        levels the clean-up entombs; a renewal copies its level.

        **Snapshots.** A root swap freezes the trie as it is, tombs of clean-ups in flight
        included, and no GCAS can clean a frozen I-node, so the snapshot cleans its own copy
        (``snapshot``; ``read_only_snapshot`` cleans a private writable copy, then freezes
        it). It learns which paths from the trie's records (``_cleanups``): an unsubscribe
        records its path before the GCAS that makes its tomb and takes the record back once
        it has cleaned the path, and every thread that moves the root of a committed swap
        first copies the records into the swap's descriptor (:meth:`_capture_cleanups`).
        No tomb is missed: a tomb in the frozen state was made, and recorded, before the
        swap decided, and was still there then, so its owner has still to compress it, by
        a GCAS that first completes any swap it finds in the root (GCAS reads the root to
        commit), copy included, and aborts on the frozen generation. The record goes only
        after that, so every swap that froze the tomb has copied it (two snapshots during
        one clean-up: ``tests/test_tombs.py``). A helper's GCAS (a compression met on
        another operation's way) entombs only the parent of a tomb on a recorded path,
        which is on that path too, and its owner reads the path clean before it lets go.
        """
        while True:
            root = self._read_root()
            if self._first_tomb(root, words) is None:
                return
            self._compress_first_tomb(root, words)

    def _first_tomb(self, root: INode, words: list[str]) -> Optional[int]:
        """The depth of the first tombed I-node on the path of ``words`` below ``root``, or
        None. Reads only."""
        inode = root
        depth = 0
        while depth < len(words):
            m = gcas_read(inode, self)
            if type(m) is not CNode:
                return depth
            c, step = _path_step(m, words[depth])
            if type(c) is not INode:
                return None
            inode = c
            depth += step
        return None

    def _compress_first_tomb(self, root: INode, words: list[str]) -> None:
        """One writer walk of :meth:`_clean_path`: renew the path into ``root``'s generation
        down to the first tomb and compress it out of its parent, then each parent that
        this entombs in turn, climbing back up as the remover does (a chain of k levels
        emptied at once costs one walk, not k). Gives up (the caller re-reads) whenever the
        path changed or a GCAS lost a race."""
        gen = root.gen
        inode, parent, pword = root, None, None
        frames: list[tuple[INode, Optional[INode], Optional[str]]] = []
        i = 0
        while i < len(words):
            m = gcas_read(inode, self)
            if type(m) is not CNode:
                # ``parent`` is of ``gen`` (renewed below); a snapshot since makes this fail.
                while (self._compress_branch(parent, inode, pword, parent is root, gen)
                       and frames and self._is_tomb(parent)):  # type: ignore[arg-type]
                    inode, parent, pword = frames.pop()
                return
            w = words[i]
            c, step = _path_step(m, w)
            if type(c) is not INode:
                return  # the path changed under us: read it again
            if c.gen is not gen:
                # Renewal leaves the stored pairs unchanged: no linearization point needed.
                if GCAS(inode, m, self._renewed(m, gen), self):
                    continue
                return
            frames.append((inode, parent, pword))
            inode, parent, pword = c, inode, w
            i += step

    def _compress_branch(self, parent: Optional[INode], tombed: INode, word: Optional[str],
                         parent_is_root: bool, startgen: Gen,
                         tm: Optional[TNode] = None) -> Optional[bool]:
        """Take the entombed I-node ``tombed`` out of ``parent``'s branch ``word``.

        Returns True when it is done here (or there was nothing to do), False when the GCAS
        lost a race, None when ``tombed`` is not under ``parent`` any more: compressed by
        someone else, or moved with its branch into a kid leaf by a split of ``parent``'s
        level (then only a walk from the root finds it: the remover's :meth:`_clean_path`). A tomb is final, so dropping the reference loses nothing;
        the branch itself goes too when it has no subscribers, and a non-root parent left
        without branches becomes a tomb in turn.
        """
        if parent is None:  # the root is never a tomb
            return True
        pm = gcas_read(parent, self)
        if type(pm) is not CNode:
            return True
        if word is None:  # (only the root has no word, and it has no parent)
            return None
        br = pm.branches
        b = br[word] if word in br else None  # not dict.get: ctrie/_ftdict.py
        if b is None or type(b) is not Branch or b.inode is not tombed:
            # Not the word's child: perhaps the kid (a hash level) the word's slice is in.
            ks = pm.kids
            if ks is None:
                return None  # already compressed, or moved (a split of this level)
            j = kid_index(pm, word)
            if ks[j] is not tombed:
                return None  # already compressed, or moved into a kid by a split
            if parent.gen is not startgen and not self._readonly:
                return True
            if len(ks) - ks.count(None) > 1:
                npm: Main = pm.with_kid(j, None)
            elif pm.branches or parent_is_root:
                # The level's last kid: back to a leaf (wildcards only, or empty at the
                # root). A fresh ``lit`` token: lookups that read the split node re-check.
                npm = CNode(pm.branches, self._single, self._multi, None, pm.wc, pm.npairs,
                            None, pm.shift)
            else:
                npm = TNode()
            return GCAS(parent, pm, npm, self)
        if parent.gen is not startgen and not self._readonly:
            return True  # frozen by a snapshot: cleaned after renewal by a later writer
        single, multi = self._single, self._multi
        if tm is None:  # (the remover that committed the tomb passes it: it is final)
            held = gcas_read(tombed, self)
            if type(held) is not TNode:
                return True  # (only a broken GCAS, as the tests' mutants, un-entombs a node)
            tm = held
        sn = tm.sn
        if b.subs or sn is not None:
            # (``replaced``: the word's own set, if it becomes the value alone, is copied.)
            # (The tomb's pairs, its S-node's, join the parent's own count.)
            npm = pm.updated(word, replaced(b, b.subs, sn), single, multi, pm.npairs + tm.npairs)
        elif len(pm.branches) > 1 or parent_is_root or pm.kids is not None:
            npm = pm.removed(word, single, multi)
        else:
            npm = TNode()
        if (not parent_is_root and type(npm) is CNode and len(npm.branches) == 1
                and npm.kids is None and not npm.shift):  # (_contracted's precondition)
            npm = self._contracted(npm)  # the parent may now hold one pattern in turn
        # The tomb's pairs move up into the parent: the count does not change.
        return GCAS(parent, pm, npm, self, delta=npm.npairs - pm.npairs - tm.npairs)

    def _contracted(self, m: CNode) -> Main:
        """The Ctrie's toContracted: ``m`` (the new C-node of a non-root I-node), or, if it
        is a word level left with one pattern (one branch: subscribers and no child, or no
        subscribers and an S-node), a tomb holding that pattern as an S-node. The parent's
        clean-up then puts the S-node in the I-node's place, so after any history a path
        that holds one pattern is one S-node, as in a trie built fresh (tails of up to
        ``_CONTRACT_MAX`` words: folding longer ones level by level would be quadratic).
        O(_CONTRACT_MAX).

        Precondition, which the callers test inline (a call less on most writes): ``m`` is
        a word level (no kids, shift 0) with exactly one branch."""
        (w, b), = m.branches.items()
        if type(b) is SNode:  # an S-node alone: the one pattern goes on below
            if len(b.words) < _CONTRACT_MAX:
                # ([w] + words: sized exactly, where a display with * over-allocates.)
                return TNode(SNode([w] + b.words, b.subs, self._single, self._multi), m)
        elif type(b) is not Branch:  # a set alone: the one pattern ends here
            return TNode(SNode([w], b, self._single, self._multi), m)
        return m

    # --- lookup -----------------------------------------------------------------------------

    def lookup(self, topic: str) -> frozenset[S]:
        """Every subscriber of every pattern matching the literal ``topic``, once each.

        O(k) per matching path (see the class docstring), at most four walks: one
        unrecorded, validated by the content version (see the module docstring), two
        recorded (or of two reads, validated by a double collect), then the frozen root.
        Lock-free and linearizable: what a recorded walk used of the I-nodes it read is
        validated (:meth:`_revalidate`); two walks that fail it are followed by a walk of a
        frozen root (:meth:`_frozen_lookup`), which needs no validation.

        NATS and MQTT (AMQP: :meth:`_lookup_amqp`): the many-level wildcard ends a pattern,
        so the walk goes down the trie one word per level and forks only where both the
        word's branch and the one-level wildcard's branch go deeper (the fork waits on
        ``forks``). Each state is (I-node, index of the next word); MQTT also visits
        (child, n) after the last word, for the parent match of ``a/#`` against ``a``. An
        S-node met on the way is matched against the rest of the topic on the spot.

        Written as one loop for speed (it runs once per published message): no call per
        level, and no tomb test -- a tomb has no ``fwc``, so meeting one raises
        AttributeError, handled off the hot path.
        """
        if self._amqp:
            return self._lookup_amqp(self._validate_topic(topic))
        mqtt = self._mqtt
        # The validators' fast paths (ctrie.topics), inlined: a call costs as much as a
        # level of the walk. Whatever they do not accept at once (including a non-str,
        # which fails here with AttributeError or TypeError) goes to the validator, which
        # raises the documented error or returns the words.
        try:
            if type(topic) is not str:
                raise _Slow  # a subclass or another type: the validator decides
            if mqtt:
                if not topic or "+" in topic or "#" in topic or "\x00" in topic:
                    raise _Slow
                words = topic.split("/")
            else:
                if not topic.isprintable() or " " in topic or "*" in topic or ">" in topic:
                    raise _Slow
                words = topic.split(".")
                if "" in words:
                    raise _Slow
        except (_Slow, AttributeError, TypeError):
            words = self._validate_topic(topic)
        n = len(words)
        # MQTT 4.7.2: a leading wildcard does not match a topic that starts with '$'.
        dollar = mqtt and words[0][:1] == "$"
        vc = self._version  # None: a read-only view, which never changes
        # Read once per lookup: the walk tests the type of every value and child it meets,
        # and on 3.13t, which does not specialize, a global (or builtin) read costs about
        # 20 ns where a local costs 1 (tools: a loop of such tests, 42 against 23 ns).
        tp, Br, SN = type, Branch, SNode
        unrec = True  # this lookup may still take its one unrecorded walk
        walks = 0
        while True:
            if walks:
                if walks == _MAX_WALKS:
                    if _count is not None:
                        _count("frozen")
                    return self._frozen_lookup(topic)
                if _count is not None:
                    _count("rewalk")
            walks += 1
            # Whether the walk records its reads for the validation is decided when it
            # leaves its second I-node (a walk that reads one I-node needs no validation,
            # one that reads two only its first read's double collect): see the record
            # step below. Until then rec is False and r1 None.
            rec = False
            r0: Any = None
            r1: Any = None
            # The root reference may hold an RDCSS descriptor (a snapshot is being taken):
            # then ``root.main`` below raises AttributeError, and the handler completes it.
            # (Any: the walk reads its nodes duck-typed, a descriptor or a tomb failing an
            # attribute read, which a type checker cannot follow.)
            root: Any = self._root.get()
            if _FT and self._root.get() is not root:  # (ctrie._atomic)
                root = read(self._root)
            hits: list[Subscribers] = []
            # For each I-node read but the last: its AtomicRef, the main node read and the
            # index of the word read there (n: none), for the validation below.
            seen: list[Any] = []
            add = hits.append
            forks: Optional[list[tuple[INode, INode, int]]] = None  # made at the first fork
            inode = root
            parent = None
            i = 0
            try:
                while True:
                    ref = inode.main
                    m = ref.get()
                    if _FT and ref.get() is not m:  # (ctrie._atomic)
                        m = read(ref)
                    if m.prev is not None:
                        m = gcas_complete(inode, m, self)
                    try:
                        f = m.fwc
                    except AttributeError:
                        if type(m) is not TNode:
                            raise
                        self._tomb_met(inode, parent, root, words[i - 1] if i else None)
                        # Read it as the C-node it froze; a tomb is final, so its read
                        # needs no second look (``ref`` always holds that C-node).
                        ref = m.ref
                        m = m.cnode
                        f = m.fwc
                    k = i
                    if f is not None and (i or not dollar):
                        # NATS '>': i < n here, so a word remains; MQTT '#'. Either ends its
                        # pattern, so its value is always a bare set (nodes.Value), non-empty.
                        add(f)
                    nxt = None
                    if i < n:
                        w = words[i]
                        b = m.branches
                        # not dict.get, which costs 100x on 3.13t: see ctrie/_ftdict.py
                        b = b[w] if w in b else None
                        p = m.pwc
                        if dollar and not i:
                            p = None
                        if b is None and m.kids is not None:
                            # A wide level: the word's branch is in a hash level below. Its
                            # first hash level (all of a level up to 4,096 words; a top's
                            # shift is 0) is inlined from _kid_branch, which takes the
                            # deeper ones. The kid leaf read becomes the level's current
                            # read (ref, m), recorded below only if another read follows,
                            # like any read; the top is recorded before the kid is read.
                            # A missing kid leaves the top current (nothing was read
                            # after it). In _kid_branch, a deeper kid that is a tomb
                            # leaves the kid above it current, unchecked: a kid holds no
                            # wildcard, only the way to the tomb, which it keeps until the
                            # tomb is compressed out; so the word was absent at the
                            # entombing, while the top (recorded) was as read.
                            kid = m.kids[hash(w) & 31]  # kid_index(m, w) inlined
                            if kid is not None:
                                # The record step (as below), before the kid's read: an
                                # unrecorded walk must read the version before any read
                                # but its first two (found by review: reading a kid first
                                # let writes to it go unseen).
                                if rec:
                                    seen += (ref, m, k)
                                elif r0 is None:
                                    r0, m0, k0 = ref, m, k
                                elif r1 is None and vc is not None:
                                    r1, m1 = ref, m
                                    v0 = vc.get()
                                    if unrec and v0 == self._quiet:
                                        unrec = False  # the lookup's one
                                    else:
                                        rec = True
                                        seen += (r0, m0, k0, ref, m, k)
                                kref = kid.main
                                km = kref.get()
                                if _FT and kref.get() is not km:  # (ctrie._atomic)
                                    km = read(kref)
                                if km.prev is not None:
                                    km = gcas_complete(kid, km, self)
                                try:
                                    kb = km.branches
                                except AttributeError:  # a tomb (no type test: a global
                                    # read costs 20 ns on 3.13t). An empty leaf (kids never
                                    # contract), final: read as the C-node it froze, like
                                    # any tomb, it becomes the level's current read, which
                                    # needs no second look. The top stays recorded: it
                                    # was read before the tomb, and a write to it in
                                    # between must be seen (found by review: taking
                                    # its record back left the top unchecked).
                                    ref = km.ref
                                    m = km.cnode
                                    kb = m.branches
                                else:
                                    ref = kref
                                    m = km
                                b = kb[w] if w in kb else None
                                if b is None and m.kids is not None:
                                    if not rec and r1 is None and vc is not None:
                                        # The record step of this kid, the walk's second
                                        # read (the top was its first): decided here,
                                        # recorded below if recording.
                                        r1, m1 = ref, m
                                        v0 = vc.get()
                                        if unrec and v0 == self._quiet:
                                            unrec = False
                                        else:
                                            rec = True
                                            seen += (r0, m0, k0)
                                    seen += (ref, m, k)
                                    b = self._kid_branch(m, w, k, seen)
                                    # its last read is the current one
                                    ref = seen[-3]
                                    m = seen[-2]
                                    del seen[-3:]
                        i += 1
                        # A value (nodes.Value) is an S-node alone, a Branch, or a set alone.
                        if b is not None:
                            t = tp(b)
                            if t is SN:
                                if i < n or mqtt:
                                    # _snode_ok(b, words, i, multi_min) inlined: in a sparse
                                    # trie most lookups end in an S-node at this word.
                                    # Lengths first, then one slice: O(len(key)).
                                    key = b.key
                                    lk = len(key)
                                    if (n - i >= lk + self._multi_min) if b.open else (n - i == lk):
                                        r: list[Any] = words[i:i + lk]  # None at b.wild
                                        for j in b.wild:
                                            r[j] = None
                                        if r == key:
                                            add(b.subs)
                            elif t is Br:
                                if i == n and b.subs:
                                    add(b.subs)
                                if i < n or mqtt:
                                    c = b.inode
                                    if tp(c) is SN:
                                        if _snode_ok(c, words, i, self._multi_min):
                                            add(c.subs)
                                    else:
                                        nxt = c
                            elif i == n:  # a set alone: patterns end here, none goes on
                                add(b)
                        if p is not None:
                            t = tp(p)
                            if t is SN:
                                if (i < n or mqtt) and _snode_ok(p, words, i, self._multi_min):
                                    add(p.subs)
                            elif t is Br:
                                if i == n and p.subs:
                                    add(p.subs)
                                if i < n or mqtt:
                                    c = p.inode
                                    if tp(c) is SN:
                                        if _snode_ok(c, words, i, self._multi_min):
                                            add(c.subs)
                                    elif nxt is None:
                                        nxt = c
                                    elif forks is None:
                                        forks = [(c, inode, i)]
                                    else:
                                        forks.append((c, inode, i))
                            elif i == n:
                                add(p)
                    if nxt is None and not forks:
                        break  # the last read: it needs no record
                    # The record step. A recorded walk records the read for the validation
                    # (``seen += (ref, m, k)`` appends all three without a call). Else the
                    # walk keeps its first read (r0, m0, k0): a walk of two reads needs
                    # only that read's double collect. On leaving its second I-node it
                    # keeps that read too (r1, m1), reads the content version v0
                    # (ctrie.size) and decides: it goes on unrecorded if the lookup has not
                    # had its one unrecorded walk yet and the hint is v0 (the window-free
                    # version a walk last found unchanged: no write came since), else it
                    # records from here, both reads first.
                    if rec:
                        seen += (ref, m, k)
                    elif r0 is None:
                        r0, m0, k0 = ref, m, k
                    elif r1 is None and vc is not None:
                        r1, m1 = ref, m
                        v0 = vc.get()
                        if unrec and v0 == self._quiet:
                            unrec = False  # the lookup's one unrecorded walk
                        else:
                            rec = True
                            seen += (r0, m0, k0, ref, m, k)
                    if nxt is not None:
                        parent = inode
                        inode = nxt
                    else:  # forks is not empty: see the break above
                        inode, parent, i = forks.pop()  # type: ignore[union-attr]
            except _Restart:
                continue
            except AttributeError:
                if type(root) is INode:
                    raise  # a bug, not a descriptor
                self._read_root()  # completes the pending RDCSS
                continue
            # Validation. A walk that read one I-node needs none, nor does a read-only view.
            # A walk that read two: the double collect of its first read. If r0 still
            # holds m0, it held m0 when the second (last) read was made, so both reads
            # held together at that instant, where the lookup linearizes. (This is the
            # common case of a lookup through one wide level, its top and one kid: no
            # version to read.) If not, the walk is judged as a recorded one.
            # An unrecorded walk: v0, read after its first two reads r0 -> m0 and
            # r1 -> m1 and before any other (the record step, also before a kid's read),
            # had no window open (the hint is only ever such a version). If the version
            # still reads v0, no write that changes the stored pairs committed between
            # the two reads of it, so the pairs stored were the same throughout; if r0 and
            # r1 still hold m0 and m1, both were current when v0 was read (a main node
            # never returns), and every later read followed from m0 or m1. So the walk found
            # what the trie stored at the read of v0, and linearizes there (ctrie.size).
            # Otherwise walk again (not one of the walks the bound counts: a lookup has
            # one unrecorded walk at most).
            if not rec:
                if r0 is not None and vc is not None:
                    if r1 is None:
                        if r0.get() is not m0:
                            res = self._revalidate([r0, m0, k0], hits, words, dollar, (ref, m, k))
                            if res is None:
                                continue
                            return res
                    elif vc.get() != v0 or r0.get() is not m0 or r1.get() is not m1:
                        walks -= 1
                        if _count is not None and not walks:  # (else the loop counts it:
                            _count("rewalk")  # a two-read walk failed before this one)
                        continue
            # A recorded walk is first held to the unrecorded walk's test, which does not
            # depend on the records: its v0 was read at the same point (the record step
            # decides between the two only after reading it), so if v0 is window-free and
            # still current and r0, r1 still hold m0, m1, the argument above applies word
            # for word. That holds whenever no write changed the stored pairs during the
            # walk, and costs three reads where the records cost one per I-node read (and
            # more again to set up their check). The version then becomes _calm, or the
            # hint if _calm already held it (a second quiet walk at that version, of any
            # topic or thread), so that the next lookups may walk unrecorded.
            elif (not v0 % WINDOWS and vc.get() == v0  # type: ignore[union-attr]
                  and r0.get() is m0 and r1.get() is m1):
                if v0 != self._quiet:
                    self._quiet_walk(v0)
            # Otherwise what the walk used of every I-node but the last must still be in
            # place (see _revalidate). One or two records are checked here, written out;
            # more go to _revalidate, whose first pass is that check, in C. Where an I-node
            # changed, it looks at what changed: parts the walk did not use, or only
            # subscriber sets (whose hits it swaps), cost no new walk.
            elif seen and (len(seen) > 6 or seen[0].get() is not seen[1]
                           or len(seen) == 6 and seen[3].get() is not seen[4]):
                res = self._revalidate(seen, hits, words, dollar, (ref, m, k))
                if res is None:
                    continue
                return res
            if not hits:
                return EMPTY
            if len(hits) == 1:
                h = hits[0]  # a branch's own frozenset: immutable, so safe to hand out
                # (Tested as "a SubSet", which is final, so that a type checker narrows.)
                return h.frozen() if type(h) is SubSet else h  # SubSet.frozen(): cached once
            # A SubSet handed to union() would be iterated and hashed member by member:
            # union_of takes its frozenset (in a trie that ever stored one: see __init__).
            return union_of(hits) if self._big else EMPTY.union(*hits)

    def _quiet_walk(self, v0: int) -> None:
        """A recorded walk found the window-free content version ``v0`` unchanged (any
        dialect's lookup, off its common path: once or twice per write): the second such
        walk at ``v0`` makes it the hint, the first only notes it. Racing readers can only
        pick which window-free version becomes the hint. O(1)."""
        if self._calm == v0:
            self._quiet = v0
        else:
            self._calm = v0

    def _kid_branch(self, m: Main, w: str, k: int, seen: list[Any]) -> Optional[Value]:
        """The branch of word ``w`` below the split C-node ``m`` (a wide level, read at
        word index ``k``), or None: follows ``w``'s hash down the kids, recording each kid
        read in ``seen`` like any other I-node the lookup used (its branch of ``w`` present
        or absent, :meth:`_validate`). A kid that is a tomb (final) reads as an empty leaf;
        the unsubscribe that made it cleans it. O(log W) reads for a level of W words."""
        h = hash(w)  # kid_index(m, w) inlined below: this runs at every hash level
        while True:
            # (``m`` is a split C-node here: the caller's, or one whose kids were set below.)
            kid = m.kids[(h >> m.shift) & KID_MASK]  # type: ignore[union-attr, index]
            if kid is None:
                return None
            ref = kid.main
            m = ref.get()
            if _FT and ref.get() is not m:  # (ctrie._atomic)
                m = read(ref)
            if m.prev is not None:
                m = gcas_complete(kid, m, self)
            if type(m) is not CNode:
                return None
            seen += (ref, m, k)
            br = m.branches
            if w in br:
                return br[w]
            if m.kids is None:
                return None

    def _validate(self, seen: list[Any], words: list[str]) -> bool:
        """Whether every part of every I-node in ``seen`` that the walk *used* is unchanged.

        ``seen`` holds triples (the I-node's AtomicRef, the main node ``m`` read, the index
        ``k`` of the word read there). At that I-node the walk used the many-level wildcard's
        branch, the one-level wildcard's branch and, if ``k < n``, the branch of
        ``words[k]``: each either present (a value: a :class:`Branch`, a set or an S-node)
        or absent. For an I-node that
        now holds another main node ``m2``, each used part must be the same:

        - present in ``m``: the same value object in ``m2`` (a value never returns once
          replaced, so it was there all along: every write makes a new one, and a set taken
          back out of a Branch is copied, see :func:`~ctrie.nodes.replaced`);
        - absent in ``m``: absent in ``m2`` with the same insertion token of its kind
          (``lit`` for a literal word, ``wc`` for a wildcard), so no insertion of that
          kind happened in between and it was absent all along. Checking absence alone
          would be unsound (absent, added, removed again: the walk below may have read
          state from while it was there); so would skipping absent parts.

        Soundness, as for the double collect it refines: every used part held continuously
        from its read until its re-read here, and every re-read comes after the walk's last
        read, so all of them held together at the instant of that last read. The walk's
        result depends on nothing else, so it is the result at that instant, inside the
        lookup's interval: the lookup linearizes there. A tomb, or a GCAS still in flight
        on the I-node, fails the check. Cost: O(1) per changed I-node.
        """
        n = len(words)
        for j in range(0, len(seen), 3):
            ref, m, k = seen[j], seen[j + 1], seen[j + 2]
            m2 = read(ref)
            if m2 is m:
                continue
            p = m2.prev
            if p is not None:
                pv = read(p)
                if pv is not None:
                    # A GCAS in flight (or aborted) here. Whatever its outcome, the I-node
                    # holds either m2 or the committed node m2 replaced: both must agree.
                    old = pv.old if type(pv) is FailedNode else pv
                    if not _same_use(m, old, k, words, n, False):
                        return False
                    if type(pv) is FailedNode:
                        continue
            if not _same_use(m, m2, k, words, n, False):
                return False
        return True

    def _revalidate(self, seen: list[Any], hits: list[Subscribers], words: list[str],
                    dollar: bool, last: Optional[tuple[Any, ...]]) -> Optional[frozenset[Any]]:
        """After a lookup walk that its cheaper test did not settle (the version's, or for a
        walk of two reads the first read's double collect): the walk's result, repaired
        where only subscriber sets changed, or None if the walk must be done again.

        ``seen`` holds a triple (AtomicRef, main node read, word index) for every I-node the
        walk read but the last, ``last`` that triple of the last read; ``hits`` the
        subscriber sets the walk collected. The first pass leaves out the last read (the
        walk's result, if it stands, linearizes at it); once a pass swaps a set, the
        result belongs to a later instant, and later passes include it. A pass
        re-reads every I-node. One that now holds another main node ``m2`` is judged by
        :func:`_same_use`: every branch the walk used (see :meth:`_validate`) is the same,
        or a new Branch with the same child; else (a child changed) give up. Where a new
        Branch replaced one whose set the walk takes, swap the set in ``hits``
        (:func:`_swap_hits`; an empty set is not taken, but still counts: it may have been
        non-empty in between). Record ``m2``. A pass that swapped nothing (and met no GCAS
        in flight) ends it: the (repaired) hits are the result. Otherwise another pass.

        Soundness, as for the double collect it refines: in a pass that swaps nothing, each
        record's used parts -- the children followed and the subscriber sets taken -- held
        from the read that recorded them until this pass re-read them (a Branch or child
        never returns once replaced; an insertion token never returns either); every
        recording read precedes the pass, so all held together at the instant it began
        (for the first pass: at the walk's last read). The children are those the walk
        followed, so a walk at that instant would visit the same I-nodes and take exactly
        the sets in ``hits``: the lookup linearizes there. Cost: O(visited I-nodes) per
        pass plus O(hits) per swapped set, at most ``_REVALIDATIONS`` passes. A write
        that did not touch what the walk used costs one pass; a subscriber-only change,
        two passes and a list edit: no walk, which keeps a reader beside a hot branch
        going.
        """
        n = len(words)
        for attempt in range(_REVALIDATIONS):
            # The pass's re-reads, one per record in order, made in C and compared by
            # identity (see _records_moved); only the records that moved are then judged
            # in Python. (Read one by one in Python, the 15 records of a fork of depth 4
            # cost 2.8 us on 3.13t, where a writer beside the lookup had moved one of them.)
            cur = list(map(_get, seen[::3]))
            moved = list(map(is_not, cur, seen[1::3]))
            if True not in moved:
                break  # nothing changed since the walk, or since the last pass
            if not attempt and _count is not None:
                _count("revalidate")
            again = False
            for i in compress(range(len(cur)), moved):
                j = 3 * i
                ref, m, m2 = seen[j], seen[j + 1], cur[i]
                if _FT and ref.get() is not m2:  # (ctrie._atomic: ``_get`` is one get())
                    m2 = read(ref)
                    if m2 is m:
                        continue  # m after all: a bad first get(), or an aborted GCAS undone
                k = seen[j + 2]
                # Whether the walk used no child of the word's branch or the '*' branch
                # here: the topic ended at this word, and the dialect matches no parent.
                ends = k + 1 == n and not self._mqtt
                p = m2.prev
                if p is not None:
                    pv = read(p)
                    if pv is not None:
                        # A GCAS in flight (or aborted) here: the I-node will hold m2 or the
                        # node m2 replaced. If neither changes a child the walk used, look
                        # again in the next pass (it is settled by then, as a rule: its
                        # writer is between two steps); else walk again (the walk helps).
                        old = pv.old if type(pv) is FailedNode else pv
                        if (_same_use(m, old, k, words, n, True, ends)
                                and _same_use(m, m2, k, words, n, True, ends)):
                            again = True
                            continue
                        return None
                if not _same_use(m, m2, k, words, n, True, ends):
                    return None  # a child changed: walk again
                # Every used branch is the same or a new one with the same child: swap the
                # subscriber sets the walk took from the replaced ones (where it took them:
                # the walk's own conditions). S-nodes are children, hence the same.
                # Any such replacement needs another pass, even between two empty sets:
                # the set need not have stayed empty in between (empty, {x}, empty).
                # (_same_use passed, so two different values here have the same child: two
                # Branches of it, an S-node alone and a Branch of it, or two bare sets.)
                wild = k or not dollar  # the walk's condition for '>' and '*' at k
                taken = [(m.fwc, m2.fwc)] if wild else []
                if k + 1 == n:
                    w = words[k]
                    br, br2 = m.branches, m2.branches
                    taken.append((br[w] if w in br else None, br2[w] if w in br2 else None))
                    if wild:
                        taken.append((m.pwc, m2.pwc))
                for b, b2 in taken:
                    if b is not b2:
                        if not _swap_hits(hits, subs_of(b), subs_of(b2)):
                            return None
                        again = True
                seen[j + 1] = m2
            if not again:
                break
            if last is not None:
                seen += last
                last = None
        else:
            return None  # still changing after the last pass: walk again
        if not hits:
            return EMPTY
        return (as_frozenset(hits[0]) if len(hits) == 1 else
                union_of(hits) if self._big else EMPTY.union(*hits))

    def _frozen_lookup(self, topic: str) -> frozenset[Any]:
        """The fallback of a lookup whose validation failed ``_MAX_WALKS`` times: walk a
        frozen root, which needs no validation.

        The root read here, ``r0``, is frozen as soon as anyone's RDCSS (a snapshot's or
        another fallback's) decides to replace it, which it does before moving the root
        (:mod:`ctrie.rdcss`): from then on no GCAS can commit on it or below it, so it holds
        the trie's state at the instant of that decision, which comes after this read,
        inside the lookup's interval. If nobody has replaced it yet, this lookup does
        (as ``read_only_snapshot`` would). Lookups that fall back together share one swap.

        Bound: one walk of the frozen trie. The RDCSS retries only when a write commits on
        the root's own C-node meanwhile (lock-free, like every update). Writers pay for the
        swap by renewing the I-nodes they pass (see :meth:`snapshot`), once per swap, not
        once per fallen-back lookup.
        """
        r0 = self._read_root()
        while True:
            expected = gcas_read(r0, self)
            if self._read_root() is not r0:
                break  # replaced since we read it: frozen at that instant
            if rdcss_root(self, r0, expected, INode(expected, Gen())):
                break
        return CSTrie(self.dialect, _root=r0, _readonly=True, _leaf_max=self._leaf_max,
                      _big=self._big).lookup(topic)

    def _tomb_met(self, inode: INode, parent: Optional[INode], root: INode,
                  word: Optional[str]) -> None:
        """A lookup met a tomb. A tomb is an empty subtree, so the lookup may simply read it
        as one; where it can, it first helps compress it and restarts (the spec: every
        operation that meets a tomb helps clean it). It cannot in a read-only view, nor under
        a parent frozen by a snapshot (GCAS there always aborts: retrying would spin).
        Tombs are rare, so the branch under which ``inode`` hangs is looked up here
        rather than carried along by every lookup: a wildcard branch of ``parent``, or the
        branch of ``word`` (the topic word read at ``parent``), in ``parent``'s C-node or in
        the leaf of its hash levels that holds ``word``."""
        rootgen = root.gen
        if self._readonly or parent is None or parent.gen is not rootgen:
            return
        holder = parent
        while True:
            pm = gcas_read(holder, self)
            if type(pm) is not CNode:
                raise _Restart  # the parent changed (entombed in turn): start again
            for w, b in pm.branches.items():  # at most LEAF_MAX words and the wildcards
                if type(b) is Branch and b.inode is inode:
                    self._compress_branch(holder, inode, w, holder is root, rootgen)
                    raise _Restart
            ks = pm.kids
            if ks is None or word is None:
                raise _Restart  # already compressed out of the parent: the parent changed
            kid = ks[kid_index(pm, word)]
            if kid is None:
                raise _Restart  # the kid is gone: the parent changed
            holder = kid
            if holder.gen is not rootgen:
                return  # frozen by a snapshot: read the tomb as empty, as above

    def _lookup_amqp(self, words: list[str]) -> frozenset[Any]:
        """AMQP lookup: :meth:`_walk_amqp`, validated as :meth:`lookup` validates its walk:
        the first walk unrecorded when the hint allows (the version read before it),
        validated by the content version alone; then recorded walks, validated by
        :meth:`_validate` (only the parts each visit used), at most ``_MAX_WALKS`` of them,
        then the frozen root."""
        vc = self._version  # None: a read-only view, which never changes
        first = True
        v0 = -1
        walks = 0
        while True:
            if walks:
                if walks == _MAX_WALKS:
                    if _count is not None:
                        _count("frozen")
                    return self._frozen_lookup(self.dialect.separator.join(words))
                if _count is not None:
                    _count("rewalk")
            walks += 1
            rec = False  # recorded or not, as in lookup
            if vc is not None:
                v0 = vc.get()
                rec = not first or v0 != self._quiet
            first = False
            root = self._read_root()
            hits: list[Subscribers] = []
            seen: list[Any] = []
            try:
                self._walk_amqp(root, words, hits, seen, rec)
            except _Restart:
                continue
            if not rec:
                # Validated by the version alone, read before the walk's first read (as in
                # lookup; v0 is window-free, being the hint).
                if vc is not None and vc.get() != v0:
                    if _count is not None:
                        _count("rewalk")
                    walks -= 1
                    continue
            # A recorded walk is first held to the same test (v0 was read before its first
            # read too), when v0 is window-free: then its records need no reading.
            elif not v0 % WINDOWS and vc.get() == v0:  # type: ignore[union-attr]
                if v0 != self._quiet:
                    self._quiet_walk(v0)
            elif len(seen) > 3 and _records_moved(seen):
                if _count is not None:
                    _count("revalidate")
                # The empty key's walk used the root's branch of the reserved word too:
                # validated as the word at index 0 of every record (at the root that is
                # the branch it read; elsewhere an absent branch, which only makes the
                # check stricter: a new walk, never a wrong answer).
                if not self._validate(seen, words or _EMPTY_KEY_PATH):
                    continue
            if not hits:
                return EMPTY
            return (as_frozenset(hits[0]) if len(hits) == 1 else
                    union_of(hits) if self._big else EMPTY.union(*hits))

    def _walk_amqp(self, root: INode, words: list[str], hits: list[Subscribers],
                   seen: list[Any], rec: bool = True) -> None:
        """AMQP: '#' matches zero or more words anywhere. Iterative, with an explicit stack.

        A state is (I-node, index of the next word). The trie is a tree, so a state is
        reached only from its parent's state one word back, or through the parent's '#'
        branch; ``absorbed`` keeps, per I-node, the smallest index its '#' branch was
        entered at, and a later entry at a smaller index pushes only the indices below it.
        So every state is visited at most once: O(I-nodes x (n + 1)) visits in all, however
        the patterns nest '#'. An S-node without an inner '#' is matched on the spot in
        O(its length); one with an inner '#' once after the walk, from every index that
        reached it (:func:`_tail_ok_amqp`).

        With ``rec``, each visit records (AtomicRef, main node, index) in ``seen`` for
        :meth:`_validate`: it used that node's '#' and '*' branches and the branch of
        ``words[index]``; without, only the root's visit is recorded (the empty key's
        match reads it; the hash levels of a wide level, read by :meth:`_kid_branch`, are
        recorded too, unused) and the caller validates by the content version.
        Written as one loop, the two branches unrolled, for speed.
        """
        n = len(words)
        add = hits.append
        absorbed: dict[INode, int] = {}
        # Read once per walk, as in lookup: the walk tests the type of every value it meets.
        tp, Br, SN, E = type, Branch, SNode, EMPTY
        # S-nodes with an inner '#': S-node -> [start indices, smallest index of a '#'
        # branch above it (then it may start at any index from there)].
        later: dict[SNode, list[Any]] = {}
        stack: list[tuple[INode, Optional[INode], int]] = [(root, None, 0)]
        pop, push = stack.pop, stack.append
        while stack:
            inode, parent, i = pop()
            ref = inode.main
            m: Any = ref.get()  # duck-typed: a tomb fails m.fwc (as in lookup)
            if _FT and ref.get() is not m:  # (ctrie._atomic)
                m = read(ref)
            if m.prev is not None:
                m = gcas_complete(inode, m, self)
            try:
                h = m.fwc
            except AttributeError:
                if type(m) is not TNode:
                    raise
                self._tomb_met(inode, parent, root, words[i - 1] if i else None)
                # A tomb is final and reads as the C-node it froze (as in the NATS walk).
                ref = m.ref
                m = m.cnode
                h = m.fwc
            if rec or not seen:
                seen += (ref, m, i)
            if h is not None:
                start = absorbed[inode] if inode in absorbed else None  # not dict.get: ctrie/_ftdict.py
                if start is None or i < start:
                    absorbed[inode] = i
                    # The '#' value's subscribers and child (nodes.Value).
                    th = tp(h)
                    if th is Br:
                        hs, c = h.subs, h.inode
                    elif th is SN:
                        hs, c = E, h
                    else:
                        hs, c = h, None
                    if start is None:
                        if hs:
                            add(hs)  # the '#' consumes every remaining word
                        start = n + 1
                    if tp(c) is SN:
                        x = later[c] if c in later else None
                        if x is None:
                            x = later[c] = [set(), None]
                        if x[1] is None or i < x[1]:
                            x[1] = i
                    elif c is not None:
                        # '#' consumes words[i:j]: the child continues at every such j.
                        for j in range(i, start):
                            push((c, inode, j))
            if i == n:
                continue
            w = words[i]
            br = m.branches
            b = br[w] if w in br else None  # not dict.get: ctrie/_ftdict.py
            if b is None and m.kids is not None:
                b = self._kid_branch(m, w, i, seen)  # a wide level (this read is recorded)
            p = m.pwc
            i += 1
            while True:  # b, then p: the literal's branch, then the '*' branch
                if b is not None:
                    # The value (nodes.Value): its subscribers, then the S-node it is or
                    # holds (c), or the I-node it holds, to visit.
                    tb = tp(b)
                    c = None
                    if tb is SN:
                        c = b
                    elif tb is not Br:  # a set alone
                        if i == n:
                            add(b)
                    else:
                        if i == n and b.subs:
                            add(b.subs)
                        c = b.inode
                        if tp(c) is not SN:
                            push((c, inode, i))
                            c = None
                    if c is None:
                        pass
                    elif c.nfa is None:
                        # _snode_ok(c, words, i, 0) inlined: the lengths, then one slice.
                        # The call cost 4 % of a lookup on the random AMQP workload of
                        # tools/walk_cost.py (CSTrie/LockedTrie 1.24-1.28 against 1.19-1.22).
                        key = c.key
                        lk = len(key)
                        if (n - i >= lk) if c.open else (n - i == lk):
                            r: list[Any] = words[i:i + lk]  # None at c.wild
                            for j in c.wild:
                                r[j] = None
                            if r == key:
                                add(c.subs)
                    else:
                        x = later[c] if c in later else None
                        if x is None:
                            x = later[c] = [set(), None]
                        x[0].add(i)
                if p is None:
                    break
                b, p = p, None
        for c, (starts, hash_from) in later.items():
            nfa = c.nfa
            if nfa is None:
                # A plain S-node below a '#' (its other reaches were matched on the spot).
                if not c.open:
                    # '#' then a fixed length: only the last len(key) words can match it.
                    j = n - len(c.key)
                    if j >= hash_from and _snode_ok(c, words, j, 0):
                        add(c.subs)
                    continue
                nfa = automaton(c.words, self._single, self._multi)
            if _tail_ok_amqp(nfa, words, starts, hash_from):
                add(c.subs)
        if not n:
            # The empty key (zero words) is also matched by the pattern "", kept in the
            # root's branch of the reserved word (see _insert): read from the root's C-node
            # as this walk recorded it first (a split root: from its hash levels, each read
            # recorded). :meth:`_lookup_amqp` validates that branch with the rest.
            m = seen[1]
            br = m.branches
            b = br[EMPTY_KEY_WORD] if EMPTY_KEY_WORD in br else None  # not dict.get: ctrie/_ftdict.py
            if b is None and m.kids is not None:
                b = self._kid_branch(m, EMPTY_KEY_WORD, 0, seen)
            s = EMPTY if b is None else subs_of(b)
            if s:
                add(s)

    # --- whole-trie reads -------------------------------------------------------------------

    def _items(self) -> Iterator[tuple[str, frozenset[Any]]]:
        """(pattern, subscribers) of a frozen trie, depth first; call on a read-only view.
        O(size of the trie + length of the patterns): each pattern is joined once
        (:func:`~ctrie.topics.join_paths`), however deep the chain of I-nodes above it."""
        return join_paths(self._read_root(), self._edges, self.dialect.separator)

    def _edges(self, inode: INode) -> list[Edge[frozenset[Any], INode]]:
        """The edges below ``inode`` for :func:`~ctrie.topics.join_paths`: a wide level's
        hash levels (no word), each branch (its word, its subscribers, its child I-node)
        and each S-node (the branch's word and the S-node's words, its subscribers)."""
        m = gcas_read(inode, self)
        if type(m) is TNode:
            m = m.cnode  # the C-node it froze (empty, or one pattern)
        out: list[Edge[frozenset[Any], INode]] = (
            [] if m.kids is None else [((), None, k) for k in m.kids if k is not None])
        for w, b in m.branches.items():
            s, c = subs_of(b), child_of(b)
            out.append((w, as_frozenset(s) if s else None, c if type(c) is INode else None))
            if type(c) is SNode:
                out.append(((w, *c.words), as_frozenset(c.subs), None))
        return out

    def subscriptions(self) -> dict[str, frozenset[S]]:
        """Pattern -> subscribers, consistent as of one instant (read on a read-only
        snapshot). O(size of the trie)."""
        return dict(self.read_only_snapshot()._items())

    def __len__(self) -> int:
        """Number of stored (pattern, subscriber) pairs, as of one instant.

        On a writable trie, O(1) and no snapshot: a validated read of the size counter
        (:mod:`ctrie.size`, where the argument for its linearization point is), retried
        while writes are inside their windows; after ``_LEN_READS`` failed reads it counts
        a read-only snapshot instead, O(size). The first ``len()`` of a writable snapshot
        also counts, once, the frozen part it started from. On a read-only snapshot: O(size).
        """
        size = self._size
        if size is None:
            return self._count_pairs(gcas_read(self._read_root(), self))
        for _ in range(_LEN_READS):
            n = size.read()
            if n is not None:
                # ``frozen`` before ``base``: the thread that counts first stores ``base``
                # and only then drops ``frozen``, so a None here means ``base`` is set.
                # (Read the other way round, a racing first len() could count None as 0.)
                frozen = size.frozen
                base = size.base
                if base is None:
                    # Frozen: no GCAS changes it, so any thread may count it, at any time.
                    base = size.base = self._count_pairs(frozen)
                    size.frozen = None  # nothing else needs it: let it be collected
                return base + n
            time.sleep(0)  # let a write inside its window finish
        return len(self.read_only_snapshot())

    def _count_pairs(self, m: Optional[Main]) -> int:
        """The pairs stored in the frozen subtree of main node ``m``. O(its size)."""
        n = 0
        stack = [m]
        while stack:
            m = stack.pop()
            if type(m) is TNode:
                m = m.cnode  # the C-node it froze (empty, or one pattern)
            elif m is None:
                continue
            n += m.npairs
            if m.kids is not None:
                stack.extend(gcas_read(k, self) for k in m.kids if k is not None)
            for b in m.branches.values():
                if type(b) is Branch and type(c := b.inode) is INode:
                    stack.append(gcas_read(c, self))
        return n

    def __repr__(self) -> str:
        kind = "read-only " if self._readonly else ""
        return f"<{kind}CSTrie dialect={self.dialect.value}>"

    # --- invariants -------------------------------------------------------------------------

    def check(self) -> None:
        """Walk the trie and raise ``AssertionError`` if a structural invariant is broken.

        Meant for quiescent moments (no thread mid-operation). Checks: the root is an I-node
        holding a C-node; no main node has a pending GCAS; every C-node's wildcard caches
        and pair counts agree with its branches; below the root, no tomb and no empty C-node
        is reachable; on a writable trie, the size counter agrees with the pairs stored; a
        word without a child maps to its subscriber set alone, non-empty, and one with an
        S-node and no subscribers to the S-node alone (a Branch always has a child, and
        subscribers beside an S-node); in NATS and MQTT the many-level wildcard never has a
        child; generations are consistent (an I-node of the root's generation never hangs
        below one of an older generation, because renewal works top-down); no I-node is
        reachable twice.
        """
        root = read(self._root)
        assert type(root) is INode, f"root holds {root!r}, not an I-node (RDCSS pending?)"
        gen = root.gen
        seen: set[int] = set()
        # (I-node, path, under the root's generation, (shift, index) if a kid else None);
        # a path is joined only if a message prints it (_Path).
        stack: list[tuple[INode, _Path, bool, Optional[tuple[int, int]]]] = [
            (root, _Path(None, ""), True, None)]
        pairs = 0
        single, multi = self._single, self._multi
        while stack:
            inode, path, in_gen, kid_at = stack.pop()
            assert id(inode) not in seen, f"I-node reachable twice (at {path!r})"
            seen.add(id(inode))
            here = inode.gen is gen
            assert in_gen or not here, f"I-node of the root's generation below an older one at {path!r}"
            m = read(inode.main)
            p = m.prev
            assert p is None or read(p) is None, f"pending GCAS at {path or '<root>'!r}: {m!r}"
            is_root = inode is root
            assert type(m) is CNode or (not is_root and type(m) is TNode), f"bad main node {m!r}"
            assert type(m) is not TNode, f"reachable tomb at {path!r}"
            assert is_root or m.branches or m.kids, f"empty C-node below the root at {path!r}"
            literals = [w for w in m.branches if w != single and w != multi]
            if kid_at is not None:
                shift, j = kid_at
                assert m.shift == shift + FANOUT_BITS, f"hash level with shift {m.shift} at {path!r}"
                assert len(literals) == len(m.branches), f"wildcard branch in a hash level at {path!r}"
                assert all(kid_slot(w, shift) == j for w in literals), \
                    f"word in the wrong hash slice at {path!r}"
            else:
                assert m.shift == 0, f"word level with shift {m.shift} at {path!r}"
            if m.kids is not None:
                assert not literals, f"literal words beside kids at {path!r}: {literals[:3]}"
                assert len(m.kids) == FANOUT and any(m.kids), f"bad kids at {path!r}"
                for j, k in enumerate(m.kids):
                    if k is not None:
                        assert type(k) is INode, f"kid is a {type(k).__name__} at {path!r}"
                        stack.append((k, path, in_gen and here, (m.shift, j)))
            else:
                assert len(literals) <= self._leaf_max or m.shift >= MAX_SHIFT, \
                    f"leaf of {len(literals)} words (> {self._leaf_max}) at {path!r}"
            assert m.pwc is m.branches.get(self._single), f"stale '{self._single}' cache at {path!r}"
            assert m.fwc is m.branches.get(self._multi), f"stale '{self._multi}' cache at {path!r}"
            # (The NATS and MQTT lookup adds the many-level wildcard's value as a set.)
            assert self._amqp or type(m.fwc) not in (Branch, SNode), \
                f"'{self._multi}' goes on at {path!r}"
            assert m.npairs == CNode(m.branches, "", "").npairs, f"stale pair count at {path!r}"
            pairs += m.npairs
            for w, b in m.branches.items():
                # A value (nodes.Value): a Branch only where the word has both subscribers
                # and an S-node, or an I-node; else the one it has, alone.
                if type(b) is SNode:
                    c: Any = b
                elif type(b) is not Branch:
                    _check_subs(b, path + w)
                    assert b, f"leaf branch without subscribers at {path + w!r}"
                    continue
                else:
                    _check_subs(b.subs, path + w)
                    c = b.inode
                    assert c is not None, (f"a Branch without a child at {path + w!r}: "
                                           "its set alone should be the value")
                    assert b.subs or type(c) is not SNode, (
                        f"a Branch of an S-node alone at {path + w!r}: "
                        "the S-node should be the value")
                if type(c) is SNode:
                    where = path + w + self.dialect.separator
                    assert type(c.words) is list and c.words, f"S-node without words at {where!r}"
                    assert all(type(x) is str for x in c.words), f"bad S-node words at {where!r}"
                    _check_subs(c.subs, where)
                    assert c.subs, f"S-node without subscribers at {where!r}"
                else:
                    assert type(c) is INode, f"branch child is a {type(c).__name__} at {path + w!r}"
                    stack.append((c, path + w + self.dialect.separator, in_gen and here, None))
        assert not self._cleanups, \
            f"clean-ups left recorded: {sorted('.'.join(cu.words) for cu in self._cleanups)[:3]}"
        size = self._size
        n = None if size is None else size.read()
        if size is not None and n is not None:  # n None: a window left open; len() counts
            base = size.base if size.base is not None else self._count_pairs(size.frozen)
            assert base + n == pairs, f"size counter says {base + n}, the trie holds {pairs} pairs"


class _Cleanup:
    """The record of an unsubscribe whose tomb may hang on the path of ``words`` (see
    :meth:`CSTrie._clean_path`). Compared by identity (two unsubscribes of one path keep a
    record each), so a record set never calls ``==`` on the word lists."""

    __slots__ = ("words",)

    def __init__(self, words: list[str]) -> None:
        self.words = words


_get = AtomicRef.get


def _records_moved(seen: list[Any]) -> bool:
    """Whether any record of a walk (triples of AtomicRef, main node read, word index) no
    longer holds the main node it read: one pass in C, O(records). By identity (``is_not``,
    not ``!=``, which would call the ``__eq__`` of whatever a bad read returned: see
    ctrie._atomic), so a wrong object only ever reads as "moved"."""
    return True in list(map(is_not, map(_get, seen[::3]), seen[1::3]))


#: The path of the AMQP empty key (zero words) in the trie: the root's branch of the reserved
#: word (:data:`ctrie.topics.EMPTY_KEY_WORD`). Never mutated.
_EMPTY_KEY_PATH = [EMPTY_KEY_WORD]
#: Contraction folds a level into an S-node only while the S-node has fewer words than this:
#: each fold copies the tail, so folding a private tail of d words level by level would cost
#: O(d^2); past this length the levels stay I-nodes (found by review: 6 s at d = 16,000).
_CONTRACT_MAX = 64

#: Walks a lookup validates before it falls back to a frozen root (:meth:`CSTrie._frozen_lookup`).
_MAX_WALKS = 2

# The lookup walk indexes a level's kids with ``hash(w) & 31`` (kid_index at shift 0).
assert KID_MASK == 31
#: At most this many passes of :meth:`CSTrie._revalidate` for each walk it checks.
_REVALIDATIONS = 3


def _same_use(m: CNode, m2: Main, k: int, words: list[str], n: int,
              same_child: bool, ends: bool = False) -> bool:
    """Whether ``m2`` (a later main node of the I-node that held ``m``) has the parts a walk
    used at word index ``k`` unchanged (see :meth:`CSTrie._validate`): the many- and
    one-level wildcard branches and, if ``k < n``, the branch of ``words[k]``; each the
    same value object (nodes.Value), or absent in both with the same insertion token of its
    kind. With ``same_child``, a present branch may also be a new value with the same child
    (only its subscribers changed: two Branches of one child, an S-node alone and a Branch
    of that S-node, or two bare sets, which have none). "None" in both is not an object
    whose identity proves that no child came and went in between, which matters where the
    walk went on below the word (not ``ends``). There the word's insertion token of its
    kind must be the same too: a word that gains a child where it had none takes a new one
    (CNode.updated's ``child_added``), as an absent word does when it is added, and a
    token never returns. (The many-level wildcard's value never has a child in the
    dialects that repair, NATS and MQTT.) O(1)."""
    if type(m2) is not CNode:
        return False
    pairs: list[tuple[Optional[Value | INode], Optional[Value | INode]]] = [
        (m.fwc, m2.fwc), (m.pwc, m2.pwc)]
    if k < n:
        w = words[k]
        br, br2 = m.branches, m2.branches
        b: Optional[Value | INode] = br[w] if w in br else None  # not dict.get: ctrie/_ftdict.py
        b2: Optional[Value | INode] = br2[w] if w in br2 else None
        # On a split C-node (a wide level) the part used for a literal word is the kid its
        # hash leads to: the same kid I-node (its content is validated by its own record),
        # or none in both with the same ``lit`` token (no kid was added in between).
        if b is None and m.kids is not None:
            b = m.kids[kid_index(m, w)]
        if b2 is None and m2.kids is not None:
            b2 = m2.kids[kid_index(m2, w)]
        if b is None and b2 is None and m2.lit is not m.lit:
            return False
        pairs.append((b, b2))
    if (m.fwc is None or m.pwc is None) and m2.wc is not m.wc:
        return False
    for j, (b, b2) in enumerate(pairs):
        if b is b2:
            continue
        # (A kid I-node must be the same object; a bare set's child is None.)
        if b is None or b2 is None or not same_child or type(b) is INode or type(b2) is INode:
            return False
        c = child_of(b)
        if c is not child_of(b2):
            return False
        # (j == 0: the many-level wildcard's pair; j == 1 the one-level's, of token ``wc``.)
        if c is None and j and not ends and (m2.wc is not m.wc if j == 1 else m2.lit is not m.lit):
            return False
    return True


def _swap_hits(hits: list[Subscribers], old: Subscribers, new: Subscribers) -> bool:
    """In a lookup's ``hits``, the subscriber set ``old`` (if the walk took it: only
    non-empty ones are taken) replaced by ``new`` (if non-empty); False if ``old`` is not
    there (its record was swapped already). By identity: an equal set taken elsewhere stays."""
    if old:
        for x in range(len(hits)):
            if hits[x] is old:
                del hits[x]
                break
        else:
            return False
    if new:
        hits.append(new)
    return True


def _path_step(m: CNode, w: str) -> tuple[INode | SNode | None, int]:
    """The next node on the path of word ``w`` from a level's C-node ``m``, and how many
    words that consumes: the child of ``w``'s branch (1), or, at a split C-node, the kid of
    ``w``'s hash slice (0: the same word, one hash level down). The clean-up walks use it."""
    br = m.branches
    b = br[w] if w in br else None  # not dict.get: see ctrie/_ftdict.py
    if b is None and m.kids is not None:
        return m.kids[kid_index(m, w)], 0
    return (None if b is None else child_of(b)), 1


class _Path:
    """A path in :meth:`CSTrie.check`'s messages: ``path + piece`` links a piece (O(1)), and
    the pieces are joined only when the path is printed. (Joining at every level, as str
    paths did, cost O(depth^2) on a deep chain of I-nodes: 3.5 s at 200,000 levels.)"""

    __slots__ = ("up", "piece")

    def __init__(self, up: Optional[_Path], piece: str) -> None:
        self.up, self.piece = up, piece

    def __add__(self, piece: str) -> _Path:
        return _Path(self, piece)

    def __bool__(self) -> bool:  # the root's path is empty
        return self.up is not None or bool(self.piece)

    def __repr__(self) -> str:
        pieces = []
        p: Optional[_Path] = self
        while p is not None:
            pieces.append(p.piece)
            p = p.up
        return repr("".join(reversed(pieces)))


def _check_subs(subs: object, where: object) -> None:
    """check(): a subscriber set is a frozenset of at most SUBS_FLAT, or a SubSet of more
    than SUBS_FLAT // 2 whose count and members agree."""
    if type(subs) is frozenset:
        assert len(subs) <= SUBS_FLAT, f"flat subscriber set of {len(subs)} at {where!r}"
        return
    assert type(subs) is SubSet, f"subscribers are a {type(subs).__name__} at {where!r}"
    assert subs.size > SUBS_FLAT // 2, f"SubSet of {subs.size} at {where!r}"
    members: set[Any] = set()
    for leaf in subs.leaves():
        assert type(leaf) is tuple and leaf, f"bad SubSet leaf at {where!r}"
        assert len(set(leaf)) == len(leaf), f"duplicate in a SubSet leaf at {where!r}"
        members.update(leaf)
    assert len(members) == subs.size, f"SubSet count {subs.size} != {len(members)} at {where!r}"
    assert all(x in subs for x in members), f"SubSet member not found by hash at {where!r}"




# --- matching the words of an S-node against the rest of a topic ------------------------------
# ``t`` is an S-node's words and ``words[i:]`` the rest of the topic. An S-node always sits
# below a branch, so its first word is never the topic's first level: the MQTT '$' rule
# (which concerns only wildcards on the first level) never applies here.


def _snode_ok(c: SNode, words: list[str], i: int, multi_min: int) -> bool:
    """NATS and MQTT: does ``words[i:]`` match the S-node ``c``? One-level wildcards match
    any word; a trailing many-level wildcard matches ``multi_min`` or more words (NATS '>'
    one or more, MQTT '#' zero or more). O(len(c.words)), whatever the topic's length."""
    key = c.key
    k = len(key)
    # The lengths first, then one slice of k words: slicing the whole rest of the topic
    # first would make a long topic cost O(len(topic)) at every S-node it passes.
    if (len(words) - i < k + multi_min) if c.open else (len(words) - i != k):
        return False
    r: list[Any] = words[i:i + k]  # None at c.wild
    for j in c.wild:
        r[j] = None
    return r == key


def _tail_ok_amqp(nfa: Automaton, words: list[str], starts: Collection[int],
                  hash_from: Optional[int]) -> bool:
    """AMQP: does the pattern of an S-node (its ``nfa``, :func:`ctrie.nodes.automaton`: '*'
    one word, '#' zero or more, anywhere) match ``words[j:]`` for some ``j`` in ``starts``,
    or for some ``j >= hash_from`` (an S-node below a '#' branch entered at ``hash_from``)?

    One run of the automaton over the words, bit-parallel: bit ``s`` of ``S`` says that
    pattern position ``s`` is reached. A word moves every reached '*' or equal literal one
    position on and keeps every reached '#'; then each reached '#' may consume nothing,
    which sets the rest of its run of '#' and the position after it: ``((S & H) + H) ^ H``
    does that for all runs at once (the carry of the addition ripples through each run from
    its lowest reached bit). A thread starts at each ``j`` allowed. O((n + 1) x len / 30)
    machine words for all the starts together, never exponential however the '#' nest.
    """
    hashes, stars, lit, start, accept = nfa
    n = len(words)
    first = min(starts) if starts else n + 1
    if hash_from is not None and hash_from < first:
        first = hash_from
    # After ``last`` no thread starts: no state left then means no match.
    last = n if hash_from is not None else max(starts, default=-1)
    S = 0
    for j in range(first, n + 1):
        if j in starts or (hash_from is not None and j >= hash_from):
            S |= start
        if j == n:
            break
        if not S:
            if j >= last:
                return False
            continue
        w = words[j]
        S = (S & hashes) | ((S & (stars | (lit[w] if w in lit else 0))) << 1)  # not dict.get
        S |= ((S & hashes) + hashes) ^ hashes
    return bool(S & accept)


# What help() and inspect.signature show: __init__'s public arguments (inspect would read
# __new__, which only picks the class, and show ``**_kw`` in place of the cache's bounds).
CSTrie.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [p for name, p in inspect.signature(CSTrie.__init__).parameters.items()
     if name != "self" and not name.startswith("_")])


class _CachedCSTrie(CSTrie[S]):
    """A CSTrie whose lookups go through its result cache (``CSTrie(cache=True)`` makes
    one; :mod:`ctrie.cache` has the protocol and the argument)."""

    __slots__ = ()
    _cache: ResultCache  # never None here (cache=True made it)

    def lookup(self, topic: str) -> frozenset[S]:
        """As :meth:`CSTrie.lookup`; a topic looked up before, with no content change
        since, is answered from the cache: one atomic load and one dict probe."""
        # The hit (the protocol is in ctrie.cache; written here, not behind a call, since
        # this is the whole cost of a hit): the state first, then the entry; the same read
        # of the state is the miss's s0.
        if type(topic) is not str:
            # Only plain str topics are cached: the key's own __eq__ and __hash__ must be
            # str's, or a subclass could answer for (or be answered as) another topic; the
            # walk validates anything else (and raises the documented error).
            return CSTrie.lookup(self, topic)
        c = self._cache
        s = c.state.get()
        d = c.entries
        e = None
        if topic in d:  # not dict.get: see ctrie/_ftdict.py
            try:
                e = d[topic]
            except KeyError:  # a store moved it (pop, then set) between the two: a miss
                pass
        if e is not None and e[0] == s:
            return e[1]
        result = CSTrie.lookup(self, topic)
        misses: Any = c.misses  # (Any: AtomicInt64's stub types ``+=`` as int's)
        misses += 1  # one atomic add (ctrie.gcas: a quarter of increment_and_get)
        c.store(topic, s, result)
        return result
