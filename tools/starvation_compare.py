"""The ``starvation`` experiment's cells for several checkouts of the matchers, in one run.

For each source tree given (``--tree DIR``, repeatable; default this checkout) the matchers
(``ctrie``, ``baselines``) come from that tree and the reader/writer rounds from this
checkout's ``experiments.measure.starvation``, in a child process of the running interpreter; rounds
are interleaved between trees, so that a change in the machine's load hits every tree alike.

Prints the interpreter, GIL state, CPU count, load, commits and seed; then per tree, algorithm
and workload the reader's lookups per second (median, min-max), the fraction of the rate
without a writer, and the writer's own rate. ``--json FILE`` writes all of it.

    python tools/starvation_compare.py --tree /tmp/before --tree . [--rounds 3] [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchenv import environment, headline

ROOT = Path(__file__).resolve().parent.parent
ALGORITHMS = ("cstrie", "locked_trie_nocache")


def child(tree: str, algorithm: str, workload: str, seconds: float) -> dict:
    """One round of one cell with the matchers of ``tree``."""
    sys.path.insert(0, tree)
    import baselines
    import ctrie

    for mod in (ctrie, baselines):
        assert str(Path(mod.__file__).resolve()).startswith(str(Path(tree).resolve())), mod.__file__
    sys.path.remove(tree)
    sys.path.insert(0, str(ROOT))  # the rounds from this checkout; ctrie stays the tree's
    from experiments.measure.starvation import _round, _setup

    pairs, topic, step = _setup(workload)
    m = ctrie.CSTrie("nats") if algorithm == "cstrie" else baselines.LockedTrie("nats", cache=False)
    for p, s in pairs:
        m.subscribe(p, s)
    reads, writes = _round(m, topic, step, seconds)
    return {"reads": reads, "writes": writes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", help="a source tree holding ctrie/ (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--only", help="only the workloads starting with this (e.g. hot/)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        tree, algorithm, workload = args.child
        print(json.dumps(child(tree, algorithm, workload, args.seconds)))
        return
    sys.path.insert(0, str(ROOT))
    from experiments.measure.starvation import workloads

    trees = args.tree or [str(ROOT)]
    env = environment(trees, rounds=args.rounds, seconds=args.seconds)
    print(f"{headline(env)}, {args.rounds} rounds of {args.seconds} s")
    cells = [(a, w) for a in ALGORITHMS for w in workloads() if w.startswith(args.only or "")]
    out: dict[str, dict[str, list[dict]]] = {t: {f"{a} {w}": [] for a, w in cells} for t in trees}
    done, total = 0, len(cells) * args.rounds * len(trees)
    for r in range(args.rounds):
        for algorithm, workload in cells:
            for tree in trees:
                proc = subprocess.run([sys.executable, __file__, "--seconds", str(args.seconds),
                                       "--child", tree, algorithm, workload],
                                      capture_output=True, text=True, check=True)
                out[tree][f"{algorithm} {workload}"].append(json.loads(proc.stdout))
                done += 1
                print(f"  {done}/{total} round {r + 1} {algorithm} {workload} {tree}",
                      file=sys.stderr, flush=True)
    env["loadavg_1m_end"] = os.getloadavg()[0]
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for tree in trees:
        print(f"\n{tree} ({env['commits'][tree]}) load at end {env['loadavg_1m_end']:.2f}")
        print(f"  {'cell':<40} {'lookups/s median [min-max]':>30} {'fraction':>9}"
              f" {'paired [min-max]':>17} {'writes/s':>10}")
        summary[tree] = {}
        for algorithm, workload in cells:
            rows = out[tree][f"{algorithm} {workload}"]
            reads = [row["reads"] for row in rows]
            base_key = f"{algorithm} {workload.rsplit('/', 1)[0]}/none"
            base = statistics.median(row["reads"] for row in out[tree][base_key])
            med = statistics.median(reads)
            writes = statistics.median(row["writes"] for row in rows)
            # Each round's cell against the same round's writer-less cell (run minutes
            # apart at most): the load drifts less within a round than across rounds.
            paired = [row["reads"] / b["reads"] for row, b in zip(rows, out[tree][base_key])]
            summary[tree][f"{algorithm} {workload}"] = {
                "reads": med, "fraction": med / base, "writes": writes,
                "paired_fractions": paired, "paired_fraction": statistics.median(paired)}
            print(f"  {algorithm + ' ' + workload:<40} {med:>12,.0f} [{min(reads):,.0f}-{max(reads):,.0f}]"
                  f" {med / base:>9.2f} {statistics.median(paired):>5.2f} [{min(paired):.2f}-{max(paired):.2f}]"
                  f" {writes:>10,.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"env": env, "rounds": out, "summary": summary},
                                              indent=1))


if __name__ == "__main__":
    main()
