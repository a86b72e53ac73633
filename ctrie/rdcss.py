"""RDCSS on the CS-trie's root (Harris et al.'s restricted double-compare single-swap).

A snapshot must replace the root I-node only if (1) the root is still the I-node it read and
(2) that I-node's main node is still the one it read. The root reference therefore holds
either an :class:`~ctrie.nodes.INode` or an :class:`RDCSSDescriptor` ``(ov, expected, nv)``
with a status word, as in Harris's RDCSS:

1. *install*: CAS the root from ``ov`` to the descriptor (fails: the root moved; retry);
2. *decide*: CAS the status once from UNDECIDED to COMMITTED, if ``ov``'s committed main node
   is still ``expected``, else to ABORTED (:func:`_verdict`);
3. *move*: CAS the root from the descriptor to ``nv`` if COMMITTED, to ``ov`` if ABORTED. A
   mover of a COMMITTED swap first copies the trie's records of clean-ups in flight into the
   descriptor (``taken``; the first copy stands): the tombs the frozen state may hold, which
   the snapshot cleans in its own copy (``CSTrie._clean_path``).

Whoever reads a descriptor does steps 2 and 3 (:func:`rdcss_complete`); the initiator's
answer is the status, read after the descriptor has left the root.

Why this is correct, step by step:

- *What each CAS decides.* Step 1 decides that this RDCSS, and no other, owns the root. Step 2
  decides its outcome: the first status CAS wins and the status never changes again. Step 3
  decides nothing: every thread moves the root to the same decided target, so only the first
  such CAS succeeds and the others fail harmlessly (the root no longer holds the descriptor,
  which is never installed twice).
- *Why COMMITTED is right.* It is decided only after a GCAS_READ of ``ov`` returned
  ``expected``, and ``ov``'s main cannot change between that read and the status CAS. A
  GCAS on ``ov`` commits only after reading the root as ``ov`` (no other root has its
  generation): either before the descriptor went in -- then its pending node was already in
  ``ov`` when the decider read it, and GCAS_READ settled it -- or while the descriptor is in
  the root, and that read (``abort=True``) decides ABORTED first, so our status CAS fails.
  The snapshot linearizes at the status CAS to COMMITTED.
- *Aborting.* GCAS completion reads the root with ``abort=True``: deciding COMMITTED would call
  GCAS_READ on ``ov``, which could recurse into the very GCAS being completed. An aborter
  CASes UNDECIDED -> ABORTED. If it finds COMMITTED instead, the snapshot has happened: it
  moves the root *forward* to ``nv`` and its GCAS, of the old generation, then aborts. Moving
  the root back to ``ov`` would let that write land in the frozen snapshot.
- *A helper stopping between two steps blocks nobody.* Stopped after step 1 or 2, the
  descriptor stays in the root and the next reader does the rest with the same outcome
  (after step 2 it is fixed). Stopped after step 3, there is nothing left to do: no flag is
  published after the root moves, so nobody can read a stale answer.
- *Why the initiator's answer is right.* :func:`rdcss_root` returns only once the descriptor
  has left the root, which happens only at step 3, after step 2: the status it reads then
  is the decided one, and the root went to ``nv`` exactly when it is COMMITTED. (Reading a
  flag set *after* the root CAS, as the Ctrie paper and Scala's ``TrieMap`` do, can answer
  "failed" for a swap a helper already made; the snapshot then swaps again, and an
  adversarial schedule keeps snapshots and writers restarting forever: team issue 17.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from cereggii import AtomicRef

from ._atomic import read
from .gcas import gcas_read
from .nodes import INode, Main

if TYPE_CHECKING:  # pragma: no cover
    from .cstrie import CSTrie
    from .faults import FaultHook

__all__ = ["RDCSSDescriptor", "Root", "UNDECIDED", "COMMITTED", "ABORTED", "rdcss_read_root",
           "rdcss_root", "rdcss_swap", "rdcss_complete"]

# The fault-injection hook (see ctrie.faults); None in production.
_fault: Optional[FaultHook] = None


class _Status:
    """A value of a descriptor's status word; compared by identity."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNDECIDED = _Status("UNDECIDED")
COMMITTED = _Status("COMMITTED")
ABORTED = _Status("ABORTED")


class RDCSSDescriptor:
    """A root swap in progress: ``ov`` -> ``nv`` provided ``ov``'s main is ``expected``.
    ``status`` (an ``AtomicRef``) goes once from UNDECIDED to COMMITTED or ABORTED."""

    __slots__ = ("ov", "expected", "nv", "status", "taken")

    def __init__(self, ov: INode, expected: Main, nv: INode) -> None:
        self.ov = ov
        self.expected = expected
        self.nv = nv
        self.status: AtomicRef[_Status] = AtomicRef(UNDECIDED)
        # The trie's clean-ups in flight when the swap committed, set once before the root
        # moves (see CSTrie._capture_cleanups): the tombs the frozen state may hold.
        self.taken: AtomicRef[Optional[tuple[Any, ...]]] = AtomicRef(None)


#: What a trie's root reference holds: the root I-node, or a swap in progress.
Root = Union[INode, RDCSSDescriptor]


def _cas_root(trie: CSTrie[Any], old: Root, new: Root) -> bool:
    if _fault is not None and _fault("rdcss", "before"):
        return False
    done = trie._root.compare_and_set(old, new)
    if _fault is not None:
        _fault("rdcss", "after")
    return done


def _verdict(trie: CSTrie[Any], desc: RDCSSDescriptor, abort: bool) -> _Status:
    """Step 2: the descriptor's outcome, deciding it first if nobody has. One status CAS
    wins; a loser (or a spurious failure) reads the winner's verdict."""
    status = desc.status
    s = status.get()
    while s is UNDECIDED:
        if abort:
            v = ABORTED  # no GCAS_READ here: it could recurse into the GCAS being completed
        else:
            v = COMMITTED if gcas_read(desc.ov, trie) is desc.expected else ABORTED
        if _fault is None or not _fault("rdcss_decide", "before"):
            status.compare_and_set(UNDECIDED, v)
            if _fault is not None:
                _fault("rdcss_decide", "after")
        s = status.get()
    return s


def rdcss_read_root(trie: CSTrie[Any], abort: bool = False) -> INode:
    """RDCSS_READ_ROOT: the root I-node, settling a descriptor first if one is there."""
    r = read(trie._root)
    if type(r) is INode:
        return r
    return rdcss_complete(trie, abort)


def rdcss_complete(trie: CSTrie[Any], abort: bool) -> INode:
    """Settle whatever descriptor is in the root (steps 2 and 3) until the root holds an
    I-node, and return it. With ``abort``, decide an undecided descriptor ABORTED instead
    of reading ``ov`` (a decided one is moved on as decided, forward if COMMITTED)."""
    while True:
        r = read(trie._root)
        if type(r) is INode:
            return r
        desc: RDCSSDescriptor = r
        # Step 3: the root's target follows the verdict; if our CAS loses, another thread
        # moved it there (or a spurious failure): loop and read the root again. Before a
        # committed swap moves the root, every mover copies the trie's clean-ups in flight
        # into the descriptor (the first copy stands): whoever then sees the new root knows
        # the copy is made (CSTrie._clean_path says why that matters).
        if _verdict(trie, desc, abort) is COMMITTED:
            if desc.taken.get() is None:
                trie._capture_cleanups(desc.taken)
            target = desc.nv
        else:
            target = desc.ov
        if _cas_root(trie, desc, target):
            return target


def rdcss_root(trie: CSTrie[Any], ov: INode, expected: Main, nv: INode) -> bool:
    """RDCSS_ROOT: swap the root ``ov`` for ``nv`` if ``ov``'s main is still ``expected``.
    True exactly when the root went to ``nv``; the root holds an I-node on return."""
    return rdcss_swap(trie, ov, expected, nv) is not None


def rdcss_swap(trie: CSTrie[Any], ov: INode, expected: Main,
               nv: INode) -> Optional[RDCSSDescriptor]:
    """:func:`rdcss_root`, answering with the committed descriptor (its ``taken`` set), or
    None when the root did not go to ``nv``."""
    desc = RDCSSDescriptor(ov, expected, nv)
    if not _cas_root(trie, ov, desc):
        return None
    # The descriptor leaves the root only at step 3, after step 2: once the root holds an
    # I-node again, the status is decided and says where the root went.
    rdcss_complete(trie, abort=False)
    return desc if desc.status.get() is COMMITTED else None
