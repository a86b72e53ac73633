"""A Wing-Gong-Lowe linearizability checker for matcher histories.

A *history* is a list of :class:`Op`: who called what, with which arguments, what it
returned, and the ``time.monotonic_ns()`` of the call and of the return. The history is
linearizable if the operations can be put in one sequence that (a) respects real time -- an
operation that returned before another was called comes first -- and (b) is a legal run of
the sequential specification, here a set of (pattern, subscriber) pairs.

The search is Wing and Gong's, with Lowe's memoisation: walk the time-ordered list of call
and return events; at a call, try to linearize that operation now (its result must match the
model); at a return whose operation is not yet linearized, undo the last choice and try the
next one. Configurations already explored -- (set of linearized operations, model state) --
are skipped, so the state must be hashable (a frozenset). The step count is capped, and a
history that hits the cap is reported as ``None`` ("unknown"), never as a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Optional

State = frozenset  # of (pattern, subscriber) pairs


@dataclass
class Op:
    """One completed operation of a history."""

    thread: int
    name: str  # "subscribe", "unsubscribe", "lookup", "snapshot" or "len"
    arg: Any  # (pattern, subscriber) for updates, topic for lookup, None for snapshot and len
    result: Any
    call: int
    ret: int
    index: int = field(default=-1)


def make_spec(matches: Callable[[str, str], bool]) -> Callable[[State, Op], Optional[State]]:
    """The sequential specification of a matcher as a step function: the state after
    ``op`` if ``op``'s recorded result is legal in ``state``, else None.

    ``matches(pattern, topic)`` is the reference matcher (memoise it: it is called often).
    A read-only snapshot's result is the frozenset of (pattern, subscriber) pairs it holds;
    ``len``'s is their number.
    """

    def step(state: State, op: Op) -> Optional[State]:
        name = op.name
        if name == "lookup":
            expected = frozenset(s for p, s in state if matches(p, op.arg))
            return state if op.result == expected else None
        if name == "subscribe":
            return state | {op.arg}
        if name == "unsubscribe":
            present = op.arg in state
            if op.result != present:
                return None
            return state - {op.arg} if present else state
        if name == "snapshot":
            return state if op.result == state else None
        if name == "len":
            return state if op.result == len(state) else None
        raise ValueError(f"unknown operation {name!r}")

    return step


class _Event:
    __slots__ = ("op", "is_call", "match", "prev", "next")

    def __init__(self, op: Optional[Op], is_call: bool) -> None:
        self.op = op
        self.is_call = is_call
        self.match: Optional[_Event] = None  # a call's return event
        self.prev: Optional[_Event] = None
        self.next: Optional[_Event] = None


def check(history: list[Op], step: Callable[[State, Op], Optional[State]],
          initial: State = frozenset(), max_steps: int = 1_000_000) -> Optional[bool]:
    """True if ``history`` is linearizable, False if not, None if the search hit
    ``max_steps`` before deciding."""
    events: list[tuple[int, int, _Event]] = []
    for i, op in enumerate(history):
        op.index = i
        call, ret = _Event(op, True), _Event(op, False)
        call.match = ret
        # A return sorts before a call at the same instant: the stricter real-time order.
        events.append((op.call, 1, call))
        events.append((op.ret, 0, ret))
    events.sort(key=lambda e: (e[0], e[1]))
    head = _Event(None, False)
    last = head
    for _, _, ev in events:
        last.next, ev.prev, last = ev, last, ev

    def lift(call: _Event) -> None:
        # Take an operation's call and return events out of the list (it is linearized).
        for ev in (call, call.match):
            ev.prev.next = ev.next
            if ev.next is not None:
                ev.next.prev = ev.prev

    def unlift(call: _Event) -> None:
        for ev in (call.match, call):
            ev.prev.next = ev
            if ev.next is not None:
                ev.next.prev = ev

    state = initial
    linearized = 0  # bit i set: history[i] is linearized
    seen: set[tuple[int, State]] = set()
    stack: list[tuple[_Event, State]] = []
    entry = head.next
    steps = 0
    while head.next is not None:
        steps += 1
        if steps > max_steps:
            return None
        if entry.is_call:
            op = entry.op
            new_state = step(state, op)
            if new_state is not None:
                config = (linearized | (1 << op.index), new_state)
                if config not in seen:
                    seen.add(config)
                    stack.append((entry, state))
                    state = new_state
                    linearized = config[0]
                    lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            # The return of an operation not yet linearized: the last choice was wrong.
            if not stack:
                return False
            entry, state = stack.pop()
            linearized &= ~(1 << entry.op.index)
            unlift(entry)
            entry = entry.next
    return True


def explain(history: list[Op]) -> str:
    """A readable listing of a history, in call order, for failure messages."""
    t0 = min(op.call for op in history)
    lines = []
    for op in sorted(history, key=lambda o: o.call):
        res = sorted(op.result, key=repr) if isinstance(op.result, frozenset) else op.result
        lines.append(f"  t{op.thread} [{op.call - t0:>9} .. {op.ret - t0:>9}] "
                     f"{op.name}({op.arg!r}) -> {res!r}")
    return "\n".join(lines)


def pairs_of(subscriptions: dict[str, frozenset]) -> frozenset[tuple[str, Hashable]]:
    """The (pattern, subscriber) pairs of a ``subscriptions()`` result."""
    return frozenset((p, s) for p, subs in subscriptions.items() for s in subs)
