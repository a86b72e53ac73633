"""``level_width``: the cost of one write, and of one lookup, under a level of growing width;
and of one write to a pattern with as many subscribers.

The inbox pattern of NATS request/reply: ``W`` subjects ``_INBOX.<i>.reply`` (``i < W``),
all siblings under the one level ``_INBOX``. For each width ``W`` of the size
(``width_levels``), the CS-trie and LockedTrie(cache=False) (NATS dialect) each get the level
built once (subscriber ``s``), then ``width_rounds`` rounds are timed with the garbage
collector off, the tries interleaved within each round so that drift hits both alike:

- ``write``: ``subscribe`` + ``unsubscribe`` of each of ``ops`` fresh inboxes
  ``_INBOX.r<k>-<j>.reply`` (round ``k``), the level back at width ``W`` after each pair
  (and the CS-trie's hash levels as they were, but for a leaf that a timed subscribe finds
  full, ``LEAF_MAX`` words, and splits, as a real write would: once per such leaf, and
  few are full even at the peak widths: 6 of 1,605 leaves at 110,000, PYTHONHASHSEED 1);
- ``lookup``: ``ops`` lookups of existing inboxes (``_INBOX.<(j * 7919) % W>.reply``);
- ``crowd``: the other dimension of a write, its subscribers: on a matcher of its own where
  one pattern (``CROWD_PATTERN``, ``stock.>``) has ``W`` subscribers, ``subscribe`` +
  ``unsubscribe`` of each of ``ops`` fresh subscribers of it, the pattern back at ``W``
  subscribers after each pair.

``ops`` is ``width_ops``, lowered to ``OPS_BUDGET // W`` (but not below ``MIN_OPS``) for the
widest levels, where one write may cost O(W); ``crowd`` takes the same ``ops`` (one count per
width keeps a round's three measurements alike in length). Unit: ns per operation (a write
is one subscribe plus one unsubscribe), one value per round; median, and min-max as the
spread. The figure is the CS-trie / LockedTrie ratio per width within one run. ``write`` and
``lookup`` are the method of ``tools/level_width.py`` (standalone, with other CS-trie leaf
sizes), inside the harness. A trie that fails at one width (building, checking or timing)
has its cells of that width recorded as failed, with the error: the level's two
(``write``, ``lookup``) and the crowded pattern's one (``crowd``) apart, so that a failure
of one matcher does not discard what the other measured.
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

__all__ = ["ALGORITHMS", "CROWD_PATTERN", "MIN_OPS", "OPS", "OPS_BUDGET", "WORKLOADS", "build",
           "build_crowd", "ops_for", "run_level_width", "time_crowd_writes", "time_lookups",
           "time_writes"]

ALGORITHMS = ("cstrie", "locked_trie_nocache")
WORKLOADS = ("write", "lookup", "crowd")
#: What each workload times, as its records name it.
OPS = {"write": "subscribe + unsubscribe of a fresh inbox",
       "lookup": "lookup of an existing inbox",
       "crowd": "subscribe + unsubscribe of a fresh subscriber of a crowded pattern"}
#: The one pattern of the ``crowd`` workload, with ``width`` subscribers (0 .. width - 1).
CROWD_PATTERN = "stock.>"
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


def build_crowd(factory: Callable[[], Any], width: int) -> Any:
    """A new matcher from ``factory`` with ``width`` subscribers of ``CROWD_PATTERN``."""
    m = factory()
    sub = m.subscribe
    for i in range(width):
        sub(CROWD_PATTERN, i)
    return m


def ops_for(width: int, most: int) -> int:
    """Operations per round at ``width``: ``most``, fewer for the widest levels."""
    return min(most, max(MIN_OPS, OPS_BUDGET // max(width, 1)))


def _time_pairs(m: Any, pairs: list[tuple[str, str]]) -> float:
    """Seconds per subscribe + unsubscribe of each (pattern, subscriber) of ``pairs``."""
    sub, unsub = m.subscribe, m.unsubscribe
    t0 = perf_counter()
    for p, x in pairs:
        sub(p, x)
        unsub(p, x)
    return (perf_counter() - t0) / len(pairs)


def time_writes(m: Any, ops: int, tag: str) -> float:
    """Seconds per subscribe + unsubscribe of ``ops`` fresh inboxes ``_INBOX.<tag><j>.reply``."""
    return _time_pairs(m, [(inbox(f"{tag}{j}"), WRITE_SUBSCRIBER) for j in range(ops)])


def time_crowd_writes(m: Any, ops: int, tag: str) -> float:
    """Seconds per subscribe + unsubscribe of ``ops`` fresh subscribers ``<tag><j>`` of
    ``CROWD_PATTERN``."""
    return _time_pairs(m, [(CROWD_PATTERN, f"{tag}{j}") for j in range(ops)])


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


def _check_crowd(algorithm: str, m: Any, width: int) -> None:
    """Untimed: the crowded pattern answers with all its subscribers, and a fresh one comes
    and goes."""
    topic = CROWD_PATTERN.replace(">", "nyse.ibm")
    got = len(m.lookup(topic))
    if got != width:
        raise AssertionError(f"{algorithm}: lookup({topic!r}) has {got:,} subscribers, not "
                             f"{width:,}")
    m.subscribe(CROWD_PATTERN, "check")
    if not m.unsubscribe(CROWD_PATTERN, "check") or "check" in m.lookup(topic):
        raise AssertionError(f"{algorithm}: a fresh subscriber of {CROWD_PATTERN!r} was not "
                             f"removed at {width:,} subscribers")


#: The workloads timed on each of a trie's two matchers: the level, and the crowded pattern.
_ON = {"level": ("write", "lookup"), "crowd": ("crowd",)}


def run_level_width(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record ns per write and per lookup at each width, and per write to a pattern of that
    many subscribers, for each trie (NATS dialect only: ``dialects`` does not apply)."""
    size = run.size
    algs = [a for a in algorithms if a in ALGORITHMS]
    rounds = size.width_rounds
    with bar(len(size.width_levels) * rounds, "level_width") as progress:
        for width in size.width_levels:
            progress.set_postfix_str(f"width {width:,}")
            ops = ops_for(width, size.width_ops)
            level = {"width": width, "ops": ops, "subject": inbox("<i>"),
                     "fresh": inbox("r<k>-<j>")}
            params: dict[str, dict[str, Any]] = {
                "write": level, "lookup": level,
                "crowd": {"width": width, "ops": ops, "subject": CROWD_PATTERN,
                          "fresh": "r<k>-<j>"}}
            # (trie, "level" | "crowd") -> its matcher: the level of ``width`` inboxes, or the
            # pattern of ``width`` subscribers. A failure takes out that one matcher.
            matchers: dict[tuple[str, str], Any] = {}
            values: dict[tuple[str, str], list[float]] = {(a, w): [] for a in algs
                                                          for w in WORKLOADS}
            failed: dict[tuple[str, str], str] = {}

            def fail(key: tuple[str, str], exc: Exception) -> None:
                failed[key] = f"{type(exc).__name__}: {exc}"
                matchers.pop(key, None)
                progress.write(f"  level_width {key[0]} ({key[1]}) at {width:,}: FAILED {exc!r}")

            for a in algs:
                make = partial(registry.make, a, "nats")
                for kind, builder, check in (("level", build, _check),
                                             ("crowd", build_crowd, _check_crowd)):
                    try:
                        matchers[(a, kind)] = builder(make, width)
                        check(a, matchers[(a, kind)], width)
                    except Exception as exc:
                        fail((a, kind), exc)
            gc.collect()
            gc.disable()
            try:
                for k in range(rounds):
                    for (a, kind), m in list(matchers.items()):
                        try:
                            if kind == "level":
                                values[(a, "write")].append(time_writes(m, ops, f"r{k}-") * 1e9)
                                values[(a, "lookup")].append(time_lookups(m, width, ops) * 1e9)
                            else:
                                values[(a, "crowd")].append(
                                    time_crowd_writes(m, ops, f"r{k}-") * 1e9)
                        except Exception as exc:
                            fail((a, kind), exc)
                    progress.update(1)
            finally:
                gc.enable()
            for a in algs:
                for kind, workloads in _ON.items():
                    for w in workloads:
                        ps = {**params[w], "op": OPS[w]}
                        if (a, kind) in failed:
                            run.record("level_width", a, "nats", w, ps, unit="ns",
                                       status="failed", note=failed[(a, kind)])
                        else:
                            run.record("level_width", a, "nats", w, ps, values=values[(a, w)],
                                       unit="ns")
            del matchers
