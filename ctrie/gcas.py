"""GCAS: generation compare-and-swap of an I-node's main node (Prokopec et al., section 4).

A write to an I-node must succeed only if (1) the I-node still holds the main node the writer
read and (2) the trie's root still has the I-node's generation, i.e. no snapshot was taken
since the writer started. One hardware CAS cannot check both, so GCAS proceeds in steps:

1. write ``prev`` of the new node: a fresh ``AtomicRef`` holding the old node (the new node is
   not yet visible, so a plain write is enough);
2. CAS the I-node's main from the old node to the new one (the node is now *pending*);
3. complete (:func:`gcas_complete`): read the root; if its generation is the I-node's and the
   trie is writable, CAS ``prev`` to None (*committed*: the linearization point of the
   write); otherwise CAS ``prev`` to a :class:`~ctrie.nodes.FailedNode` and CAS the I-node
   back to the old node (*aborted*).

Any thread that reads a pending node completes it first (:func:`gcas_read`), so a writer
parked between steps 2 and 3 never blocks others: that is what keeps the trie lock-free.

Readers test ``node.prev is None`` first: after a commit the completing thread also sets the
plain attribute ``prev`` to None, a hint that turns later reads into one attribute test. The
hint is safe because a committed ``prev`` never changes again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from cereggii import AtomicRef

from ._atomic import FREE_THREADED_BUILD as _FT
from ._atomic import read
from .nodes import FailedNode, INode, Main, Prev
from .size import WINDOWS

if TYPE_CHECKING:  # pragma: no cover
    from .counters import Counters
    from .cstrie import CSTrie
    from .faults import FaultHook

__all__ = ["GCAS", "gcas_read", "gcas_complete"]

# The fault-injection hook (see ctrie.faults); None in production.
_fault: Optional[FaultHook] = None
# Event counters (see ctrie.counters); None unless a contention experiment installed them.
_count: Optional[Counters] = None


def gcas_read(inode: INode, trie: CSTrie[Any]) -> Main:
    """GCAS_READ: the committed main node of ``inode``, completing a pending GCAS first."""
    m = inode.main.get()
    if _FT and inode.main.get() is not m:  # (ctrie._atomic)
        m = read(inode.main)
    if m.prev is None:
        return m
    return gcas_complete(inode, m, trie)


def gcas_complete(inode: INode, m: Main, trie: CSTrie[Any]) -> Main:
    """GCAS_COMPLETE: settle the GCAS that installed ``m`` (if still pending) and return
    the I-node's committed main node."""
    while True:
        p = m.prev
        if p is None:
            return m
        pv = read(p)
        if pv is None:
            m.prev = None  # the hint: committed for good
            return m
        if type(pv) is FailedNode:
            # Aborted: restore the node it replaced. If our CAS loses, someone else restored
            # it (or moved on); re-read the I-node and settle whatever is there now.
            if _fault is not None and _fault("inode_cas", "before"):
                m = read(inode.main)
                continue
            restored = inode.main.compare_and_set(m, pv.old)
            if _fault is not None:
                _fault("inode_cas", "after")
            if restored:
                return pv.old
            m = read(inode.main)
            continue
        # Pending. Read the root aborting any RDCSS in progress (completing it could recurse
        # into this very I-node). A reader can only reach I-nodes of generations no newer
        # than the root it started from, and the root's generation only moves forward, so
        # "root gen is the I-node's gen" means no snapshot intervened: commit. Else abort.
        root = trie._read_root(abort=True)
        if root.gen is inode.gen and not trie._readonly:
            if _fault is not None and _fault("gcas_commit", "before"):
                continue
            committed = p.compare_and_set(pv, None)
            if _fault is not None:
                _fault("gcas_commit", "after")
            if committed:
                m.prev = None
                return m
            # Lost to a helper that committed or aborted: loop and read its verdict.
        else:
            if _fault is None or not _fault("gcas_commit", "before"):
                p.compare_and_set(pv, FailedNode(pv))
                if _fault is not None:
                    _fault("gcas_commit", "after")
            m = read(inode.main)


def GCAS(inode: INode, old: Main, new: Main, trie: CSTrie[Any], neutral: bool = False,
         delta: Optional[int] = None) -> bool:
    """Replace ``old`` by ``new`` in ``inode`` if the root's generation is still the
    I-node's. True when ``new`` is committed (the write's linearization point), False when
    the I-node changed first or a snapshot intervened: the caller re-reads and retries.

    A GCAS that changes the number of stored pairs (``new.npairs != old.npairs``; pass
    ``neutral=True`` for one that only moves pairs, as an S-node's expansion does) runs
    inside the trie's size window, so that ``len()`` never reads a count between a commit
    and its bump (see :mod:`ctrie.size`); a second window moves the trie's content version
    on (the same module), which the result cache and unrecorded lookups read. ``delta``
    overrides the difference where pairs move between I-nodes that ``new`` does not count (a
    new kid of a split level, a tomb's pairs taken up by its parent). An exception escaping the GCAS (only a fault hook can
    raise there) leaves both windows open for good: ``len()`` then always counts a
    snapshot, lookups always record their walks and the result cache always misses; slower
    but never wrong."""
    if delta is None:
        delta = 0 if neutral else new.npairs - old.npairs
    if delta:
        # (``_size`` is None only in a read-only trie, which never writes.)
        # Open both windows before ``new`` can be seen by anyone. (``+=`` on an AtomicInt64
        # is one atomic add, and a quarter of the cost of increment_and_get, which builds
        # its result: 22 against 84 ns on 3.11, 30 against 105 on 3.13t.)
        # (Both Any: AtomicInt64's stub types ``+=`` as int's. A writable trie has both.)
        state: Any = trie._size.state  # type: ignore[union-attr]
        state += 1
        version: Any = trie._version  # the content version (ctrie.size), the same way
        version += 1
    pv: AtomicRef[Prev] = AtomicRef(old)
    new.prev = pv
    if _fault is not None and _fault("inode_cas", "before"):
        new.prev = None
        committed = False
    elif inode.main.compare_and_set(old, new):
        # gcas_complete's commit step, inlined (every write takes it: two calls less). The
        # same test and the same CAS: the root a plain I-node (no RDCSS in flight) of this
        # I-node's generation, the trie writable, and ``prev`` still pending. That last one
        # is the CAS's own test: it fails if a helper already decided (``prev`` then holds
        # None or a FailedNode, and never ``old`` again), so no read comes before it.
        # Anything else (a descriptor, a snapshot since, a helper's verdict) goes to
        # gcas_complete; so does every GCAS while a fault hook is installed, so that the
        # fault schedules drive the very code they were written against.
        root = trie._root.get()
        if _FT and trie._root.get() is not root:  # (ctrie._atomic)
            root = read(trie._root)
        if (_fault is None and type(root) is INode and root.gen is inode.gen
                and not trie._readonly and pv.compare_and_set(old, None)):
            new.prev = None
            committed = True
        else:
            if _fault is not None:
                _fault("inode_cas", "after")
            gcas_complete(inode, new, trie)
            # The verdict, from our AtomicRef (not from ``new.prev``, which the commit hint
            # may already have cleared): None means committed.
            committed = pv.get() is None
    else:
        if _fault is not None:
            _fault("inode_cas", "after")
        new.prev = None  # never published: plain again, so it can be retried or dropped
        committed = False
    if not committed and _count is not None:
        _count("gcas_fail")
    if delta:
        # Count and close in one atomic step (a count bumped apart would not linearize).
        state += delta * WINDOWS - 1 if committed else -1
        version += WINDOWS - 1 if committed else -1
    return committed
