"""Deliberately broken variants of ReplicatedTrie's steps, each dropping one thing its
linearizability argument (ctrie/replicated.py) relies on. Tests install one with
``monkeypatch.setattr(ReplicatedTrie, name, variant)`` to show that their schedule catches it.
Each is a copy of the method it replaces with that one thing changed.
"""

from __future__ import annotations

from ctrie.replicated import _BUSY, _Entry


def write_without_marks(self, op, words, subscriber):
    """``_write`` that marks no other replica (breaks point 1)."""
    r = self._mine()
    r.busy = True
    try:
        start = self._place(r)
        e = self._append(_Entry(op, words, subscriber))
        return self._catch_up(r, start, e)
    finally:
        r.busy = False


def _refresh(self, mark: bool, clear_first: bool):
    try:
        r = self._local.r
    except AttributeError:
        return self._mine()
    if r.dirty.get():
        if clear_first:
            r.dirty.set(_BUSY)
            upto = self._tail.get()
        else:
            upto = self._tail.get()
            r.dirty.set(_BUSY)
        r.busy = True
        try:
            if upto.seq > r.seq:
                if mark:
                    self._mark_others(r)
                self._catch_up(r, self._place(r), upto)
        finally:
            r.busy = False
        r.dirty.compare_and_set(_BUSY, False)
    return r


def refresh_without_marks(self):
    """``_refresh`` that does not mark the others before it applies entries (breaks
    point 2)."""
    return _refresh(self, mark=False, clear_first=True)


def refresh_clearing_late(self):
    """``_refresh`` that reads the hint, then sets its flag (a mark in between is lost)."""
    return _refresh(self, mark=True, clear_first=False)
