"""``level_width``: the cost of one write, and of one lookup, under a level of growing width.

The inbox pattern of NATS request/reply: ``W`` subjects ``_INBOX.<i>.reply`` (``i < W``),
all siblings under the one level ``_INBOX``. For each width ``W`` of the size
(``width_levels``), the CS-trie and LockedTrie(cache=False) (NATS dialect) each get the level
built once (subscriber ``s``), then ``width_rounds`` rounds are timed with the garbage
collector off, the tries interleaved within each round so that drift hits both alike:

- ``write``: ``subscribe`` + ``unsubscribe`` of each of ``ops`` fresh inboxes
  ``_INBOX.r<k>-<j>.reply`` (round ``k``), the level back at width ``W`` after each pair;
- ``lookup``: ``ops`` lookups of existing inboxes (``_INBOX.<(j * 7919) % W>.reply``).

``ops`` is ``width_ops``, lowered to ``OPS_BUDGET // W`` (but not below ``MIN_OPS``) for the
widest levels, where one write may cost O(W). Unit: ns per operation (a write is one
subscribe plus one unsubscribe), one value per round; median, and min-max as the spread. The
figure is the CS-trie / LockedTrie ratio per width within one run. This is the method of
``tools/level_width.py`` (standalone, with other CS-trie leaf sizes), inside the harness.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from functools import partial
from time import perf_counter
from typing import Any

from .. import registry
from ..env import Run
from ..progress import bar
from ..workloads import inbox

__all__ = ["ALGORITHMS", "MIN_OPS", "OPS_BUDGET", "WORKLOADS", "build", "ops_for",
           "run_level_width", "time_lookups", "time_writes"]

ALGORITHMS = ("cstrie", "locked_trie_nocache")
WORKLOADS = ("write", "lookup")
#: Fewer operations per round for wide levels: at most ``OPS_BUDGET // width``...
OPS_BUDGET = 2_000_000
#: ... but never fewer than this.
MIN_OPS = 200
#: Subscriber of the level's inboxes, and of the fresh ones written.
LEVEL_SUBSCRIBER, WRITE_SUBSCRIBER = "s", "x"


def build(factory: Callable[[], Any], width: int) -> Any:
    """A new matcher from ``factory`` with the ``width`` inboxes subscribed."""
    m = factory()
    sub = m.subscribe
    for i in range(width):
        sub(inbox(i), LEVEL_SUBSCRIBER)
    return m


def ops_for(width: int, most: int) -> int:
    """Operations per round at ``width``: ``most``, fewer for the widest levels."""
    return min(most, max(MIN_OPS, OPS_BUDGET // max(width, 1)))


def time_writes(m: Any, ops: int, tag: str) -> float:
    """Seconds per subscribe + unsubscribe of ``ops`` fresh inboxes ``_INBOX.<tag><j>.reply``."""
    names = [inbox(f"{tag}{j}") for j in range(ops)]
    sub, unsub = m.subscribe, m.unsubscribe
    t0 = perf_counter()
    for p in names:
        sub(p, WRITE_SUBSCRIBER)
        unsub(p, WRITE_SUBSCRIBER)
    return (perf_counter() - t0) / ops


def time_lookups(m: Any, width: int, ops: int) -> float:
    """Seconds per lookup of ``ops`` existing inboxes, spread over the level."""
    topics = [inbox((j * 7919) % max(width, 1)) for j in range(ops)]
    look = m.lookup
    t0 = perf_counter()
    for t in topics:
        look(t)
    return (perf_counter() - t0) / ops


def _check(algorithm: str, m: Any, width: int) -> None:
    """Untimed: the level answers lookups, and a fresh inbox comes and goes."""
    for i in {0, width // 2, width - 1}:
        got = m.lookup(inbox(i))
        if got != {LEVEL_SUBSCRIBER}:
            raise AssertionError(f"{algorithm}: lookup({inbox(i)!r}) = {sorted(got)} at width "
                                 f"{width:,}")
    fresh = inbox("check")
    m.subscribe(fresh, WRITE_SUBSCRIBER)
    if not m.unsubscribe(fresh, WRITE_SUBSCRIBER) or m.lookup(fresh):
        raise AssertionError(f"{algorithm}: {fresh!r} was not removed at width {width:,}")


def run_level_width(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record ns per write and per lookup at each width, for each trie (NATS dialect only:
    ``dialects`` does not apply)."""
    size = run.size
    algs = [a for a in algorithms if a in ALGORITHMS]
    rounds = size.width_rounds
    with bar(len(size.width_levels) * rounds, "level_width") as progress:
        for width in size.width_levels:
            progress.set_postfix_str(f"width {width:,}")
            ops = ops_for(width, size.width_ops)
            params: dict[str, Any] = {"width": width, "ops": ops, "subject": inbox("<i>"),
                                      "fresh": inbox("r<k>-<j>")}
            tries: dict[str, Any] = {}
            values: dict[tuple[str, str], list[float]] = {(a, w): [] for a in algs
                                                          for w in WORKLOADS}
            failed: dict[str, str] = {}
            for a in algs:
                try:
                    tries[a] = build(partial(registry.make, a, "nats"), width)
                    _check(a, tries[a], width)
                except Exception as exc:
                    failed[a] = f"{type(exc).__name__}: {exc}"
                    tries.pop(a, None)
                    progress.write(f"  level_width {a} at {width:,}: FAILED {exc!r}")
            gc.collect()
            gc.disable()
            try:
                for k in range(rounds):
                    for a, m in list(tries.items()):
                        try:
                            values[(a, "write")].append(time_writes(m, ops, f"r{k}-") * 1e9)
                            values[(a, "lookup")].append(time_lookups(m, width, ops) * 1e9)
                        except Exception as exc:
                            failed[a] = f"{type(exc).__name__}: {exc}"
                            del tries[a]
                            progress.write(f"  level_width {a} at {width:,}: FAILED {exc!r}")
                    progress.update(1)
            finally:
                gc.enable()
            for a in algs:
                for w in WORKLOADS:
                    op = ("subscribe + unsubscribe of a fresh inbox" if w == "write"
                          else "lookup of an existing inbox")
                    if a in failed:
                        run.record("level_width", a, "nats", w, {**params, "op": op},
                                   unit="ns", status="failed", note=failed[a])
                    else:
                        run.record("level_width", a, "nats", w, {**params, "op": op},
                                   values=values[(a, w)], unit="ns")
            del tries
