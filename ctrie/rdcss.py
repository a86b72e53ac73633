"""RDCSS on the CS-trie's root (Harris et al.'s restricted double-compare single-swap).

A snapshot must replace the root I-node only if (1) the root is still the I-node it read and
(2) that I-node's main node is still the one it read. The root reference therefore holds
either an :class:`~ctrie.nodes.INode` or an :class:`RDCSSDescriptor`:

1. CAS the root from the old I-node to a descriptor ``(ov, expected_main, nv)``;
2. complete it (:func:`rdcss_complete`): if ``ov``'s committed main node is still
   ``expected_main``, CAS the root from the descriptor to ``nv`` (committed: the snapshot's
   linearization point), else CAS it back to ``ov`` (aborted).

Whoever reads a descriptor completes it, so a snapshotting thread parked mid-RDCSS blocks
nobody. GCAS completion reads the root with ``abort=True``: it rolls the descriptor back
instead of completing it, because completing calls GCAS_READ on the old root, which could
recurse into the GCAS being completed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .gcas import gcas_read
from .nodes import INode, MainNode

if TYPE_CHECKING:  # pragma: no cover
    from .cstrie import CSTrie

__all__ = ["RDCSSDescriptor", "rdcss_read_root", "rdcss_root", "rdcss_complete"]

# The fault-injection hook (see ctrie.faults); None in production.
_fault = None


class RDCSSDescriptor:
    """A root swap in progress: ``ov`` -> ``nv`` provided ``ov``'s main is ``expected``."""

    __slots__ = ("ov", "expected", "nv", "committed")

    def __init__(self, ov: INode, expected: MainNode, nv: INode) -> None:
        self.ov = ov
        self.expected = expected
        self.nv = nv
        self.committed = False


def _cas_root(trie: CSTrie, old: object, new: object) -> bool:
    if _fault is not None and _fault("rdcss", "before"):
        return False
    done = trie._root.compare_and_set(old, new)
    if _fault is not None:
        _fault("rdcss", "after")
    return done


def rdcss_read_root(trie: CSTrie, abort: bool = False) -> INode:
    """RDCSS_READ_ROOT: the root I-node, settling a descriptor first if one is there."""
    r = trie._root.get()
    if type(r) is INode:
        return r
    return rdcss_complete(trie, abort)


def rdcss_complete(trie: CSTrie, abort: bool) -> INode:
    """Settle the descriptor in the root (commit it, or roll it back if ``abort``)."""
    while True:
        r = trie._root.get()
        if type(r) is INode:
            return r
        desc: RDCSSDescriptor = r
        if abort:
            if _cas_root(trie, desc, desc.ov):
                return desc.ov
            continue
        if gcas_read(desc.ov, trie) is desc.expected:
            if _cas_root(trie, desc, desc.nv):
                desc.committed = True
                return desc.nv
        elif _cas_root(trie, desc, desc.ov):
            return desc.ov


def rdcss_root(trie: CSTrie, ov: INode, expected: MainNode, nv: INode) -> bool:
    """RDCSS_ROOT: swap the root ``ov`` for ``nv`` if ``ov``'s main is still ``expected``."""
    desc = RDCSSDescriptor(ov, expected, nv)
    if not _cas_root(trie, ov, desc):
        return False
    rdcss_complete(trie, abort=False)
    return desc.committed
