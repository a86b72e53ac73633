"""Deliberately broken variants of ReplicatedTrie's steps, each dropping one thing its
linearizability argument (ctrie/replicated.py) relies on. Tests install one with
``monkeypatch.setattr(ReplicatedTrie, name, variant)`` to show that their schedule catches it.
"""

from __future__ import annotations

from ctrie.replicated import _Entry


def write_without_marks(self, op, pattern, subscriber):
    """``_write`` that marks no other replica (breaks point 1)."""
    r = self._mine()
    e = _Entry(op, pattern, subscriber)
    t = self._tail.get()
    while True:
        nxt = t.next.get()
        if nxt is None:
            e.seq = t.seq + 1
            if t.next.compare_and_set(None, e):
                break
            continue
        t = nxt
    while True:
        h = self._tail.get()
        if h.seq >= e.seq or self._tail.compare_and_set(h, e):
            break
    return self._catch_up(r, e)


def refresh_without_marks(self):
    """``_refresh`` that does not mark the others after applying entries (breaks point 2)."""
    try:
        r = self._local.r
    except AttributeError:
        return self._mine()
    if r.dirty.get():
        r.dirty.set(False)
        self._catch_up(r, self._tail.get())
    return r


def refresh_clearing_late(self):
    """``_refresh`` that reads the hint, then clears its flag (a mark in between is lost)."""
    try:
        r = self._local.r
    except AttributeError:
        return self._mine()
    if r.dirty.get():
        upto = self._tail.get()
        r.dirty.set(False)
        before = r.pos
        self._catch_up(r, upto)
        if r.pos is not before:
            self._mark_others(r)
    return r
