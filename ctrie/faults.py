"""Fault injection at the CS-trie's compare-and-swap sites (for tests only).

Every CAS of the trie calls the installed hook, if any, as ``hook(site, phase)``:

- ``site``: ``"inode_cas"`` (the CAS of an I-node's main node inside GCAS),
  ``"gcas_commit"`` (the CAS of a main node's ``prev`` that commits a GCAS), ``"rdcss"``
  (the CAS of the root, both installing a descriptor and moving it out) or
  ``"rdcss_decide"`` (the CAS of a descriptor's status that decides its outcome, between
  those two);
- ``phase``: ``"before"`` or ``"after"`` the CAS.

At ``"before"``, a hook that returns True makes that CAS fail spuriously (it is not
attempted), which the algorithm must tolerate like any lost race. A hook may also sleep,
yield or block on a barrier to park its thread in the middle of an operation.

With no hook installed each site costs one global load and an ``is None`` test.
``tools/hook_cost.py`` counts what that adds to a subscribe+unsubscribe pair (callgrind
instructions against a copy with the tests stripped): under 1%, below what timing can
resolve on a loaded machine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from . import gcas, rdcss

__all__ = ["FaultHook", "SITES", "set_fault_hook", "get_fault_hook"]

FaultHook = Callable[[str, str], Optional[bool]]
SITES = ("inode_cas", "gcas_commit", "rdcss", "rdcss_decide")


def set_fault_hook(hook: Optional[FaultHook]) -> None:
    """Install ``hook`` at every CAS site (``None`` removes it). Not thread-safe: install it
    before the threads under test start."""
    gcas._fault = hook
    rdcss._fault = hook


def get_fault_hook() -> Optional[FaultHook]:
    """The hook in force, or None."""
    return gcas._fault
