"""``starvation``: lookups per second of one reader thread beside one writer thread.

The CS-trie's lookup validates what it read and walks again when a write changed it, so a
writer can slow a reader down even on branches the reader does not use; this experiment
measures how much, for the CS-trie and LockedTrie(cache=False) (whose reader and writer take
turns on its lock), in two workloads, each cell a timed round of ``starvation_seconds``:

- ``fork/d<D>/<writer>``: 2**D patterns, every combination of ``b`` and ``*`` for ``D`` words
  below ``a``; the reader looks up ``a.b.b...`` (D words after ``a``), which follows every
  path. The writer does nothing (``none``), or subscribes and unsubscribes ``a.unrelated``
  in a loop (``unrelated``: a sibling the lookup does not use), or is the control ``busy``:
  a thread that loops on arithmetic of its own and touches nothing of the matcher but the
  reference it is called with. Beside it the reader keeps what any thread leaves it: about
  half on the GIL build, which hands the GIL to each runnable thread in turn (so beside a
  writer that never waits, a reader's fraction there is bounded near 0.5 whatever the
  matcher); nearly all of it on a free-threaded build with a core each. The control
  allocates nothing, so a writer's allocations (and the collections they set off) are not
  part of what it leaves out.
- ``hot/<writer>``: 100 subscribers of ``stock.>`` and the patterns ``stock.nyse.ibm``,
  ``stock.nyse.*`` and ``stock.*.ibm``; the reader looks up ``stock.nyse.ibm``. The writer
  does nothing (``none``), churns subscribers of ``stock.>`` (``branch``: a branch the lookup
  reads), an unrelated sibling ``stock.zzz`` (``sibling``), or another root subtree
  ``other.x`` (``other-root``).

Unit: lookups per second (one value per round); ``params.writes_per_s`` holds the writer's
rate in the same round. The figure is the fraction (with writer / without), per algorithm,
within one run. The matcher is built by the main thread, the reader and the writer are two
new threads started together.
"""

from __future__ import annotations

import threading
from time import perf_counter
from collections.abc import Hashable
from typing import Any, Callable

from .. import registry
from ..env import Run
from ..progress import bar

__all__ = ["ALGORITHMS", "FORK_DEPTHS", "HOT_WRITERS", "run_starvation"]

ALGORITHMS = ("cstrie", "locked_trie_nocache")
FORK_DEPTHS = (2, 4, 6)
FORK_WRITERS = ("none", "unrelated", "busy")
HOT_WRITERS = ("none", "branch", "sibling", "other-root")


def _fork_patterns(depth: int) -> list[str]:
    out = [""]
    for _ in range(depth):
        out = [p + "." + w for p in out for w in ("b", "*")]
    return ["a" + p for p in out]


def _busy(m: Any, j: int) -> None:
    """The control writer's step: a short loop of arithmetic on nothing shared."""
    x = j
    for k in range(60):
        x ^= k


def _setup(workload: str) -> tuple[list[tuple[str, Any]], str, Callable[[Any, int], None] | None]:
    """(pairs to subscribe, the reader's topic, one writer step or None)."""
    kind, *rest = workload.split("/")
    writer = rest[-1]
    if kind == "fork":
        depth = int(rest[0][1:])
        pairs: list[tuple[str, Hashable]] = [(p, i) for i, p in enumerate(_fork_patterns(depth))]
        topic = "a." + ".".join(["b"] * depth)
        if writer == "busy":
            return pairs, topic, _busy
        target = {"none": None, "unrelated": "a.unrelated"}[writer]
    else:
        pairs = [("stock.>", f"s{i}") for i in range(100)]
        pairs += [("stock.nyse.ibm", "a"), ("stock.nyse.*", "b"), ("stock.*.ibm", "c")]
        topic = "stock.nyse.ibm"
        target = {"none": None, "branch": "stock.>", "sibling": "stock.zzz",
                  "other-root": "other.x"}[writer]
    if target is None:
        return pairs, topic, None

    def step(m: Any, j: int, _p: str = target) -> None:
        m.subscribe(_p, ("w", j))
        m.unsubscribe(_p, ("w", j))

    return pairs, topic, step


def _round(m: Any, topic: str, step: Callable[[Any, int], None] | None,
           seconds: float) -> tuple[float, float]:
    """Run the reader (and the writer) for ``seconds``; their rates per second."""
    stop = threading.Event()
    barrier = threading.Barrier(2 if step else 1)
    counts = [0, 0]
    spans = [0.0, 0.0]
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            look = m.lookup
            barrier.wait()
            t0 = perf_counter()
            n = 0
            while perf_counter() - t0 < seconds:
                look(topic)
                n += 1
            spans[0], counts[0] = perf_counter() - t0, n
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()
        finally:
            stop.set()

    def writer() -> None:
        try:
            barrier.wait()
            t0 = perf_counter()
            j = 0
            while not stop.is_set():
                step(m, j)  # type: ignore[misc]
                j += 1
            spans[1], counts[1] = perf_counter() - t0, j
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=reader, daemon=True)]
    if step:
        threads.append(threading.Thread(target=writer, daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds * 20 + 60)
        if t.is_alive():
            raise TimeoutError("a starvation round did not finish")
    if errors:
        raise errors[0]
    return counts[0] / spans[0], (counts[1] / spans[1] if step else 0.0)


def workloads() -> list[str]:
    return ([f"fork/d{d}/{w}" for d in FORK_DEPTHS for w in FORK_WRITERS]
            + [f"hot/{w}" for w in HOT_WRITERS])


def run_starvation(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record the reader's lookups per second per (algorithm, workload)."""
    size = run.size
    seconds, rounds = size.starvation_seconds, size.starvation_rounds
    algs = [a for a in algorithms if a in ALGORITHMS]
    cells = [(a, w) for a in algs for w in workloads()]
    with bar(len(cells) * rounds, "starvation") as progress:
        for algorithm, workload in cells:
            progress.set_postfix_str(f"{algorithm} {workload}")
            pairs, topic, step = _setup(workload)
            params: dict[str, Any] = {"seconds": seconds, "topic": topic,
                                      "subscriptions": len(pairs)}
            reads: list[float] = []
            writes: list[float] = []
            try:
                for _ in range(rounds):
                    m = registry.make(algorithm, "nats")
                    for p, s in pairs:
                        m.subscribe(p, s)
                    r, w = _round(m, topic, step, seconds)
                    reads.append(r)
                    writes.append(w)
                    progress.update(1)
            except Exception as exc:
                run.record("starvation", algorithm, "nats", workload, params, unit="ops/s",
                           values=reads, status="failed", note=f"{type(exc).__name__}: {exc}")
                progress.write(f"  starvation {algorithm} {workload}: FAILED {exc!r}")
                progress.update(rounds - len(reads))
                continue
            params["writes_per_s_values"] = writes
            params["writes_per_s"] = sorted(writes)[len(writes) // 2]
            run.record("starvation", algorithm, "nats", workload, params, unit="ops/s",
                       values=reads, threads=2 if step else 1)
