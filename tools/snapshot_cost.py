"""What a snapshot costs: ``read_only_snapshot()`` followed by one ``subscribe``, per pair,
and ``read_only_snapshot()`` alone.

The subscribe after a snapshot pays the snapshot's lazy part: it renews the I-nodes it passes
into the new generation. Each checkout given (a directory holding a ``ctrie`` package, e.g. a
worktree before and after a change) is timed in its own interpreter process, the checkouts
interleaved round by round so that a change in the machine's load hits both alike; prints the
median of each and the spread (min-max of the per-round medians).

    python tools/snapshot_cost.py /work/wt-before /work/wt-after [--rounds 7] [--pairs 2000]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from hook_cost import PRELUDE  # tools/ is on sys.path when this runs as a script

WORKLOAD = PRELUDE + """
pairs = n
snap = t.read_only_snapshot
pair, alone = [], []
for rep in range(5):
    t0 = time.perf_counter()
    for i in range(pairs):
        snap()
        t.subscribe(f"{i % 10}.{i % 50}.x{rep}", i)
    t1 = time.perf_counter()
    for i in range(pairs):
        snap()
    t2 = time.perf_counter()
    pair.append((t1 - t0) / pairs * 1e6)
    alone.append((t2 - t1) / pairs * 1e6)
print(sorted(pair)[2], sorted(alone)[2])
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="+", help="directories that each hold a ctrie package")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=2000)
    args = ap.parse_args()
    runs: dict[str, list[list[float]]] = {c: [] for c in args.checkouts}
    for _ in range(args.rounds):
        for c in args.checkouts:
            out = subprocess.run([sys.executable, "-c", WORKLOAD, c, str(args.pairs)],
                                 capture_output=True, text=True, check=True).stdout
            runs[c].append([float(x) for x in out.split()])
    print(f"Python {sys.version.split()[0]}, {args.rounds} rounds x 5 x {args.pairs}; us per call, "
          "median of the rounds' medians (spread min-max)")
    for c, rows in runs.items():
        cells = []
        for label, xs in zip(("snapshot+subscribe", "snapshot alone"), zip(*rows)):
            cells.append(f"{label} {statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})")
        print(f"  {c}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
