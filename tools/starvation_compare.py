"""The ``starvation`` experiment's cells for several checkouts of the matchers, in one run.

For each source tree given (``--tree DIR``, repeatable; default this checkout) the matchers
(``ctrie``, ``baselines``) come from that tree and the reader/writer rounds from this
checkout's ``experiments.measure.starvation``, in a child process of the running interpreter; rounds
are interleaved between trees, so that a change in the machine's load hits every tree alike.

Prints the interpreter, GIL state, CPU count, load, commits and seed; then per tree, algorithm
and workload the reader's lookups per second (median, min-max), the fraction of the rate
without a writer, and the writer's own rate. ``--json FILE`` writes all of it.

    python tools/starvation_compare.py --tree /tmp/before --tree . [--rounds 3] [--seconds 2]

``--serial N`` runs no threads. In one thread, per cell with a writer, it times N lookups
alone, N writer steps alone, and N times a step followed by a lookup; a lookup right after
a step costs the difference of the last two. Nothing runs beside the lookup, so that ratio
(after a step / alone) is what the writer's changes cost the lookup's own work: the walk
records its reads, since the content version has moved (see ``CSTrie.lookup``), and reads
the nodes the step has just built. A threaded cell's fraction lost beyond it comes from
running beside the writer: cores sharing the cache lines both threads touch, on a
free-threaded build, or the share of the GIL. The ``busy`` writer, which touches no trie,
is the control: its ratio is 1 up to noise.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchenv import environment, headline

ROOT = Path(__file__).resolve().parent.parent
ALGORITHMS = ("cstrie", "locked_trie_nocache")


def child(tree: str, algorithm: str, workload: str, seconds: float, serial: int = 0) -> dict:
    """One round of one cell with the matchers of ``tree`` (``serial``: see the module)."""
    sys.path.insert(0, tree)
    import baselines
    import ctrie

    for mod in (ctrie, baselines):
        assert str(Path(str(mod.__file__)).resolve()).startswith(str(Path(tree).resolve())), mod.__file__
    sys.path.remove(tree)
    sys.path.insert(0, str(ROOT))  # the rounds from this checkout; ctrie stays the tree's
    from experiments.measure.starvation import _round, _setup

    pairs, topic, step = _setup(workload)
    m = ctrie.CSTrie("nats") if algorithm == "cstrie" else baselines.LockedTrie("nats", cache=False)
    for p, s in pairs:
        m.subscribe(p, s)
    if serial:
        return _serial(m, topic, step, serial)
    reads, writes = _round(m, topic, step, seconds)
    return {"reads": reads, "writes": writes}


def _serial(m: Any, topic: str, step: Any, n: int) -> dict:
    """Seconds per lookup alone, per writer step, and per lookup right after a step, in
    this thread (see the module). The step leaves the trie as it found it (it subscribes,
    then unsubscribes), so the three loops see the same content."""
    from time import perf_counter

    look = m.lookup
    gc.disable()
    try:
        t0 = perf_counter()
        for _ in range(n):
            look(topic)
        alone = (perf_counter() - t0) / n
        t0 = perf_counter()
        for j in range(n):
            step(m, j)
        steps = (perf_counter() - t0) / n
        t0 = perf_counter()
        for j in range(n):
            step(m, j)
            look(topic)
        both = (perf_counter() - t0) / n
    finally:
        gc.enable()
    return {"alone": alone, "step": steps, "after": both - steps}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", help="a source tree holding ctrie/ (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--only", help="only the workloads starting with this (e.g. hot/)")
    ap.add_argument("--serial", type=int, default=0, metavar="N",
                    help="no threads: N lookups alone, and N right after a writer step")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        tree, algorithm, workload = args.child
        print(json.dumps(child(tree, algorithm, workload, args.seconds, args.serial)))
        return
    if args.serial < 0:
        ap.error(f"--serial must be a count of lookups, 0 (threaded) or more, got {args.serial}")
    sys.path.insert(0, str(ROOT))
    from experiments.measure.starvation import workloads

    trees = args.tree or [str(ROOT)]
    env = environment(trees, rounds=args.rounds, seconds=args.seconds)
    cells = [(a, w) for a in ALGORITHMS for w in workloads() if w.startswith(args.only or "")]
    if args.serial:
        print(f"{headline(env)}, {args.rounds} rounds of {args.serial} lookups, serial")
        cells = [(a, w) for a, w in cells if not w.endswith("/none")]
    else:
        print(f"{headline(env)}, {args.rounds} rounds of {args.seconds} s")
        # A fraction needs its group's writer-less cell: ``--only hot/branch`` runs
        # ``hot/none`` too (without it the summary had nothing to divide by).
        groups = {w.rsplit("/", 1)[0] for _, w in cells}
        cells = [(a, w) for a in ALGORITHMS for w in workloads()
                 if (a, w) in cells or w.endswith("/none") and w.rsplit("/", 1)[0] in groups]
    if not cells:
        ap.error(f"--only {args.only!r} selects no cell"
                 + (" with a writer (--serial needs one)" if args.serial else ""))
    out: dict[str, dict[str, list[dict]]] = {t: {f"{a} {w}": [] for a, w in cells} for t in trees}
    done, total = 0, len(cells) * args.rounds * len(trees)
    for r in range(args.rounds):
        for algorithm, workload in cells:
            for tree in trees:
                proc = subprocess.run([sys.executable, __file__, "--seconds", str(args.seconds),
                                       "--serial", str(args.serial),
                                       "--child", tree, algorithm, workload],
                                      capture_output=True, text=True, check=True)
                out[tree][f"{algorithm} {workload}"].append(json.loads(proc.stdout))
                done += 1
                print(f"  {done}/{total} round {r + 1} {algorithm} {workload} {tree}",
                      file=sys.stderr, flush=True)
    env["loadavg_1m_end"] = os.getloadavg()[0]
    summary = _summary(trees, cells, out, env, bool(args.serial))
    if args.json:
        Path(args.json).write_text(json.dumps({"env": env, "rounds": out, "summary": summary},
                                              indent=1))


def _summary(trees: list[str], cells: list[tuple[str, str]],
             out: dict[str, dict[str, list[dict]]], env: dict, serial: bool) -> dict:
    """Print and return, per tree and cell, the medians over the rounds."""
    if serial:
        header = (f"{'alone us':>9} {'after a step us':>16} {'ratio [min-max]':>18}"
                  f" {'step us':>8}")
    else:
        header = (f"{'lookups/s median [min-max]':>30} {'fraction':>9}"
                  f" {'paired [min-max]':>17} {'writes/s':>10}")
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for tree in trees:
        print(f"\n{tree} ({env['commits'][tree]}) load at end {env['loadavg_1m_end']:.2f}")
        print(f"  {'cell':<40} {header}")
        summary[tree] = {}
        for algorithm, workload in cells:
            rows = out[tree][f"{algorithm} {workload}"]
            if serial:
                cell, line = _serial_cell(rows)
            else:
                base_rows = out[tree][f"{algorithm} {workload.rsplit('/', 1)[0]}/none"]
                cell, line = _threaded_cell(rows, base_rows)
            summary[tree][f"{algorithm} {workload}"] = cell
            print(f"  {algorithm + ' ' + workload:<40} {line}")
    return summary


def _serial_cell(rows: list[dict]) -> tuple[dict[str, Any], str]:
    """A serial cell's medians (in us) and its printed line."""
    ratios = [row["after"] / row["alone"] for row in rows]
    med = {k: statistics.median(row[k] for row in rows) * 1e6 for k in ("alone", "after", "step")}
    ratio = statistics.median(ratios)
    return ({**med, "ratios": ratios, "ratio": ratio},
            f"{med['alone']:>9.2f} {med['after']:>16.2f}"
            f" {ratio:>6.2f} [{min(ratios):.2f}-{max(ratios):.2f}] {med['step']:>8.2f}")


def _threaded_cell(rows: list[dict], base_rows: list[dict]) -> tuple[dict[str, Any], str]:
    """A threaded cell's medians, its fraction of the writer-less cell ``base_rows``, and
    its printed line."""
    reads = [row["reads"] for row in rows]
    base = statistics.median(row["reads"] for row in base_rows)
    med = statistics.median(reads)
    writes = statistics.median(row["writes"] for row in rows)
    # Each round's cell against the same round's writer-less cell (run minutes apart at
    # most): the load drifts less within a round than across rounds.
    paired = [row["reads"] / b["reads"] for row, b in zip(rows, base_rows)]
    return ({"reads": med, "fraction": med / base, "writes": writes,
             "paired_fractions": paired, "paired_fraction": statistics.median(paired)},
            f"{med:>12,.0f} [{min(reads):,.0f}-{max(reads):,.0f}] {med / base:>9.2f}"
            f" {statistics.median(paired):>5.2f} [{min(paired):.2f}-{max(paired):.2f}]"
            f" {writes:>10,.0f}")


if __name__ == "__main__":
    main()
