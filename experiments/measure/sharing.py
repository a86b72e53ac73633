"""``sharing``: where a matcher shared between threads loses its parallelism, and why.

The scaling experiment shows whether throughput grows with threads; this one separates the
causes. Every cell runs the scaling workload (items ``f"{j % 10}.{j % 50}.{j}"`` beside the
hot population of random 5-word subscriptions; each operation a write with probability
``write share``, which subscribes the item, so writes build the ``j%10.j%50`` subtree as in
the scaling runs) at each thread count, ``sharing_rounds`` rounds of ``sharing_ops``
operations per thread, and records operations per second (all threads together), one value
per round. Each worker builds its own list of operations (fresh topic strings) and makes one
lookup before the barrier (so that a matcher's per-thread state, such as a
:class:`~ctrie.ReplicatedTrie` replica, is made untimed, as a long-lived broker thread makes it
once), except where a mode says otherwise.

Modes (``params.mode``; the record's ``workload`` is ``<mode>/w<percent>/gc-<on|off>``):

- ``shared``: one matcher, built by the main thread, shared by every worker: how every
  concurrent experiment of the study runs;
- ``per-thread-own``: one matcher per worker, built by that worker before the barrier: the
  same code with nothing shared, the physical limit of that code on this machine. Every
  shared result is read as a fraction of it;
- ablations, each changing one thing against ``shared`` or ``per-thread-own``:
  ``per-thread`` (one matcher per worker, all built by the main thread: what the ownership of
  objects costs without sharing), ``shared-exited`` (one shared matcher built by a thread
  that has exited: on free-threaded 3.13 an object remembers the thread that made it, and a
  read of a ``__slots__`` attribute from another thread locks the holder while nothing but
  its maker holds the value), ``shared-topics`` (one shared matcher, and every worker
  looks up the same topic string objects, made by the main thread, as ``scaling`` does),
  ``shared-handle`` (one shared matcher, which each worker calls through a
  ``cereggii.ThreadHandle`` of its own: the handle shields the matcher object's reference
  count, not the nodes inside it), and ``gc-off`` (the garbage collector disabled during
  rounds; the free-threaded collector stops every thread and walks the whole heap).

Besides ops/s, each record holds per round: CPU time per operation
(``params.cpu_per_op_us``), parallelism (CPU time / wall time), context switches of the
workers (``params.ctx_switches``, from ``getrusage(RUSAGE_THREAD)`` where the platform has
it), and for the CS-trie the events of :mod:`ctrie.counters` per operation
(``params.events_per_op``: lookup re-walks and repairs, GCAS failures, write retries). Every
spread is the median with quartiles and extremes.

A last group, ``roundlen/<ops>``, runs ``shared`` and ``per-thread-own`` at the first write
share above zero with growing round lengths (``sharing_round_ops``), to show how the median
and its spread move with the length of a round.

The cells that are compared run their rounds interleaved (see :func:`run_sharing`), and
each record holds its rate over the limit's round by round (``params.over_limit_by_round``):
the tables quote the median of those paired ratios, not a ratio of medians taken minutes
apart.

Hardware counters (``perf stat`` cache misses) are recorded where the kernel offers them:
``params.perf`` says which, or why not (virtual machines often expose none).
"""

from __future__ import annotations

import gc
import statistics
import threading
from collections.abc import Hashable
from time import perf_counter, thread_time
from typing import Any

from .. import registry, workloads
from .rounds import HOT_WORDS, ROUND_TIMEOUT
from ..env import Run
from ..progress import bar

__all__ = ["ABLATIONS", "MODES", "groups", "perf_counters", "run_sharing", "spread"]

#: A cell: (mode, gc off). A group: the cells whose rounds are interleaved, keyed by
#: (algorithm, write share, threads, operations per worker, round-length sweep or not).
Cell = tuple[str, bool]
Group = tuple[str, float, int, int, bool]
LIMIT: Cell = ("per-thread-own", False)
#: Every group measures these; the ablation groups add ABLATIONS, one change each.
MODES: tuple[Cell, ...] = (("shared", False), LIMIT)
ABLATIONS: tuple[Cell, ...] = (("per-thread", False), ("shared-exited", False),
                               ("shared-topics", False), ("shared-handle", False),
                               ("shared", True), ("per-thread-own", True))
#: The algorithms the ablations and round-length sweep run (the full grid runs all).
ABLATION_ALGORITHMS = ("cstrie", "locked_trie_nocache")

try:
    import resource

    _RUSAGE_THREAD = getattr(resource, "RUSAGE_THREAD", None)
except ImportError:  # pragma: no cover - not on Linux
    resource = None  # type: ignore[assignment]
    _RUSAGE_THREAD = None


def spread(values: list[float]) -> dict[str, float]:
    """Median, quartiles and extremes of ``values`` (quartiles by the inclusive method)."""
    v = sorted(values)
    if len(v) == 1:
        return {"median": v[0], "q1": v[0], "q3": v[0], "min": v[0], "max": v[0]}
    q1, med, q3 = statistics.quantiles(v, n=4, method="inclusive")
    return {"median": statistics.median(v), "q1": q1, "q3": q3, "min": v[0], "max": v[-1]}


def _ctx_switches() -> int:
    if _RUSAGE_THREAD is None:
        return 0
    r = resource.getrusage(_RUSAGE_THREAD)
    return r.ru_nvcsw + r.ru_nivcsw


def _plan(write_share: float, worker: int, ops: int, seed: int,
          items: list[str] | None) -> list[tuple[bool, str]]:
    """A worker's operations: (is a write, item). Fresh item strings unless ``items``."""
    r = workloads.rng(seed, f"sharing-{worker}")
    its = items if items is not None else workloads.scaling_items(ops)
    return [(r.random() < write_share, its[j]) for j in range(ops)]


class _Worker(threading.Thread):
    """Prepares its matcher and operations, waits at the barrier, runs them."""

    def __init__(self, k: int, barrier: threading.Barrier, prepare: Any) -> None:
        super().__init__(daemon=True)
        self.k, self.barrier, self.prepare = k, barrier, prepare
        self.span = (0.0, 0.0)
        self.cpu_s = 0.0
        self.ctx = 0
        self.error: BaseException | None = None
        # The matcher, its walked-lookup count before and after (None: no result cache),
        # and the lookups made.
        self.m: Any = None
        self.computed: tuple[int, int] | None = None
        self.lookups = 0

    def run(self) -> None:
        try:
            m, ops, who = self.prepare(self.k)
            sub, look = m.subscribe, m.lookup
            # One lookup before the barrier: a matcher with per-thread state (a replica)
            # makes it on a thread's first use, which a long-lived broker thread pays once.
            look(ops[0][1])
            self.m, self.lookups = m, sum(not w for w, _ in ops)
            before = registry.computed_lookups(m)
            self.barrier.wait()
            c0 = _ctx_switches()
            t0 = perf_counter()
            cpu0 = thread_time()
            for write, item in ops:
                if write:
                    sub(item, who)
                else:
                    look(item)
            self.cpu_s = thread_time() - cpu0
            self.span = (t0, perf_counter())
            self.ctx = _ctx_switches() - c0
            after = registry.computed_lookups(m)
            if before is not None and after is not None:
                self.computed = (before, after)
        except BaseException as exc:  # reported by _round
            self.error = exc
            self.barrier.abort()


def _round(threads: int, prepare: Any, gc_off: bool
           ) -> tuple[float, float, int, float | None]:
    """One round: wall seconds, workers' CPU seconds, workers' context switches, and the
    share of lookups a result cache answered (None without a cache)."""
    barrier = threading.Barrier(threads + 1)
    workers = [_Worker(k, barrier, prepare) for k in range(threads)]
    gc.collect()
    for w in workers:
        w.start()
    was = gc.isenabled()
    try:
        barrier.wait()  # every worker has prepared; from here they run
        if gc_off:
            gc.disable()
        for w in workers:
            w.join(ROUND_TIMEOUT)
            if w.is_alive():
                raise TimeoutError(f"a worker did not finish within {ROUND_TIMEOUT:.0f} s")
    except threading.BrokenBarrierError:
        for w in workers:
            w.join(ROUND_TIMEOUT)
    finally:
        if was:
            gc.enable()
    errors = [w.error for w in workers if w.error is not None]
    if errors:
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)),
                   errors[0])
    wall = max(w.span[1] for w in workers) - min(w.span[0] for w in workers)
    return (wall, sum(w.cpu_s for w in workers), sum(w.ctx for w in workers),
            _hit_share(workers))


def _hit_share(workers: list[_Worker]) -> float | None:
    """The share of the round's lookups answered from a result cache. Workers sharing one
    matcher all read its count before any of them starts and after each finishes, so per
    matcher the walked lookups are the last count less the first."""
    spans: dict[int, list[int]] = {}
    lookups = sum(w.lookups for w in workers)
    for w in workers:
        if w.computed is None:
            return None
        lo, hi = w.computed
        span = spans.setdefault(id(w.m), [lo, hi])
        span[0], span[1] = min(span[0], lo), max(span[1], hi)
    if not lookups:
        return None
    return registry.cache_hit_share(sum(hi - lo for lo, hi in spans.values()), lookups)


def _built_by_exited_thread(make: Any) -> Any:
    box: list[Any] = []
    t = threading.Thread(target=lambda: box.append(make()), daemon=True)
    t.start()
    t.join()
    return box[0]


def _preparer(mode: str, algorithm: str, dialect: str, write_share: float, ops: int,
              seed: int, hot: list[str], items: list[str], threads: int) -> Any:
    """What each worker does before the barrier: ``k -> (matcher, operations, subscriber)``."""
    form = workloads.to_mqtt if dialect == "mqtt" else (lambda s: s)
    subscriber: Hashable = workloads.SCALING_SUBSCRIBER

    def make() -> Any:
        m = registry.make(algorithm, dialect, topic_space=[*items, *hot], max_words=HOT_WORDS)
        registry.populate(m, hot, [f"h{i}" for i in range(len(hot))])
        return m

    def own_ops(k: int) -> list[tuple[bool, str]]:
        plan = _plan(write_share, k, ops, seed, None)
        return [(w, form(i)) for w, i in plan] if dialect == "mqtt" else plan

    if mode in ("shared", "shared-topics", "shared-handle"):
        shared = make()
    elif mode == "shared-exited":
        shared = _built_by_exited_thread(make)
    else:
        shared = None
    if mode == "per-thread":
        mine = [make() for _ in range(threads)]  # built here, by the main thread
    if mode == "shared-topics":
        common = [form(i) for i in items]  # one set of strings, made by the main thread
        plans = [_plan(write_share, k, ops, seed, common) for k in range(threads)]

    def prepare(k: int) -> tuple[Any, list[tuple[bool, str]], Hashable]:
        if mode == "per-thread":
            return mine[k], own_ops(k), subscriber
        if mode == "shared-topics":
            return shared, plans[k], subscriber
        if mode == "shared-handle":  # made here, in the worker: a handle of its own
            from cereggii import ThreadHandle

            return ThreadHandle(shared), own_ops(k), subscriber
        if shared is not None:
            return shared, own_ops(k), subscriber
        return make(), own_ops(k), subscriber  # per-thread-own and its gc-off twin

    return prepare


def perf_counters() -> str:
    """Whether ``perf stat`` can count cache misses here, and if not, why (recorded with
    every cell). This experiment does not read them itself: on a host where they are
    available, run it under ``perf stat -e cache-misses,cache-references``."""
    import shutil
    import subprocess

    if shutil.which("perf") is None:
        return "unavailable: no perf on PATH"
    try:
        out = subprocess.run(["perf", "stat", "-x,", "-e", "cache-misses", "true"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable: perf stat failed ({exc})"
    if "<not supported>" in out.stderr or out.returncode != 0:
        return "unavailable: the kernel exposes no cache-miss counter here (perf stat: not supported)"
    return "available: run under perf stat -e cache-misses,cache-references to read them"


def groups(size: Any, algorithms: list[str]) -> dict[Group, list[Cell]]:
    """Every group of cells the run measures, in order."""
    out: dict[Group, list[Cell]] = {}
    shares = size.sharing_write_shares
    abl_shares = [p for p in shares if p in (0.0, 0.1)] or list(shares[:1])
    for a in algorithms:
        ablate = a in ABLATION_ALGORITHMS
        for p in shares:
            for n in size.sharing_threads:
                cells = [*MODES, *ABLATIONS] if ablate and p in abl_shares else [*MODES]
                out[(a, p, n, size.sharing_ops, False)] = cells
    for a in [x for x in ABLATION_ALGORITHMS if x in algorithms]:
        p = next((s for s in shares if s > 0), shares[0])
        for ops in size.sharing_round_ops:
            for n in size.sharing_threads:
                out[(a, p, n, ops, True)] = [*MODES]
    return out


class _Cell:
    """What the rounds of one cell measured."""

    def __init__(self) -> None:
        self.rates: list[float] = []
        self.cpus: list[float] = []
        self.pars: list[float] = []
        self.ctxs: list[float] = []
        self.events: list[dict[str, int]] = []
        self.hits: list[float] = []  # with a result cache: the share of lookups it answered


def run_sharing(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record operations per second per (algorithm, mode, write share, gc, threads).

    The cells of a group (one algorithm, write share, thread count and round length) run
    their rounds interleaved, round ``k`` of every cell one after another (in an order that
    rotates with ``k``), so that each cell's rate can be divided by the limit's in the same
    round (``params.over_limit_by_round``): a change of load on this shared machine moves
    both."""
    from ctrie import counters

    size = run.size
    plan = groups(size, algorithms)
    perf = perf_counters()
    rounds = size.sharing_rounds
    total = sum(len(cells) for cells in plan.values()) * rounds
    with bar(total, "sharing") as progress:
        for (algorithm, p, n, ops, sweep), cells in plan.items():
            dialect = "mqtt" if algorithm == "paho" else "nats"
            form = workloads.to_mqtt if dialect == "mqtt" else (lambda s: s)
            items = [form(i) for i in workloads.scaling_items(ops)]
            hot = [form(h) for h in workloads.hot_population(run.seed, size.scaling_population,
                                                             HOT_WORDS)]

            def workload(cell: Cell) -> str:
                mode, gc_off = cell
                if sweep:
                    return f"roundlen/{ops}/{mode}/w{round(p * 100)}"
                return f"{mode}/w{round(p * 100)}/gc-{'off' if gc_off else 'on'}"

            def params(cell: Cell) -> dict[str, Any]:
                return {"mode": cell[0], "write_share": p, "gc": "off" if cell[1] else "on",
                        "ops_per_worker": ops, "total_ops": n * ops, "population": len(hot),
                        "perf": perf}

            why = registry.unavailable(algorithm)
            live: list[Cell] = []
            for cell in cells:
                note = why or ("not thread-safe: it cannot be shared between threads"
                               if n > 1 and "shared" in cell[0]
                               and not registry.thread_safe(algorithm) else None)
                if note:
                    run.record("sharing", algorithm, dialect, workload(cell), params(cell),
                               threads=n, unit="ops/s", status="skipped", note=note)
                    progress.update(rounds)
                else:
                    live.append(cell)
            got = {cell: _Cell() for cell in live}
            failed: dict[Cell, str] = {}
            for k in range(rounds):
                order = live[k % len(live):] + live[:k % len(live)] if live else []
                for cell in order:
                    progress.set_postfix_str(f"{algorithm} {workload(cell)} x{n}")
                    progress.update(1)
                    if cell in failed:
                        continue
                    mode, gc_off = cell
                    try:
                        prepare = _preparer(mode, algorithm, dialect, p, ops, run.seed, hot,
                                            items, n)
                        with counters.counting() as c:
                            wall, cpu, ctx, hits = _round(n, prepare, gc_off)
                    except Exception as exc:
                        failed[cell] = f"{type(exc).__name__}: {exc}"
                        progress.write(f"  sharing {algorithm} {workload(cell)} x{n}: "
                                       f"FAILED {exc!r}")
                        continue
                    m = got[cell]
                    if hits is not None:
                        m.hits.append(hits)
                    m.events.append(c.snapshot())
                    m.rates.append(n * ops / wall)
                    m.cpus.append(cpu / (n * ops) * 1e6)
                    m.pars.append(cpu / wall if wall > 0 else 0.0)
                    m.ctxs.append(float(ctx))
            limit = got.get(LIMIT) if LIMIT not in failed else None
            for cell, m in got.items():
                prm = params(cell)
                if cell in failed:
                    run.record("sharing", algorithm, dialect, workload(cell), prm, threads=n,
                               unit="ops/s", values=m.rates, status="failed",
                               note=failed[cell])
                    continue
                prm["ops_per_s"] = spread(m.rates)
                prm["cpu_per_op_us"] = spread(m.cpus)
                prm["parallelism"] = spread(m.pars)
                prm["ctx_switches"] = spread(m.ctxs)
                prm["ctx_switches_source"] = ("getrusage(RUSAGE_THREAD)" if _RUSAGE_THREAD
                                              is not None else "unavailable on this platform")
                if limit is not None:
                    prm["over_limit_by_round"] = [a / b for a, b in zip(m.rates, limit.rates)]
                if m.hits:
                    prm["cache_hit_rate"] = statistics.median(m.hits)
                if algorithm == "cstrie":
                    prm["events_per_op"] = {
                        e: statistics.median(ev[e] for ev in m.events) / (n * ops)
                        for e in counters.EVENTS}
                run.record("sharing", algorithm, dialect, workload(cell), prm, threads=n,
                           unit="ops/s", values=m.rates)
