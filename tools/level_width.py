"""Write and lookup cost under one wide level, as the level grows: the inbox pattern of NATS
(``_INBOX.<i>.reply``, W siblings under ``_INBOX``), one thread.

For each width W it builds the level in each matcher, then times rounds of ``subscribe`` +
``unsubscribe`` of fresh inboxes and of lookups of existing ones, and prints the median
per-operation time and the CSTrie / LockedTrie(cache=False) ratio measured in that same run
(medians of ``--rounds`` interleaved rounds; spread as min-max). ``--leaf`` adds CSTrie
variants with other leaf sizes (``ctrie.nodes.LEAF_MAX``), to find the crossover between a
flat level and a hash-split one. With ``--json`` it writes the records (with the
environment, see tools/benchenv.py) for charts.

    python tools/level_width.py --widths 1,100,1000,3500,10000,100000,110000 --leaf 8,32,128
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import environment, headline  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baselines import LockedTrie  # noqa: E402
from ctrie import CSTrie  # noqa: E402
from ctrie import nodes as _nodes  # noqa: E402

LEAF_MAX = getattr(_nodes, "LEAF_MAX", None)  # None: a checkout from before hash levels
from experiments.config import SIZES  # noqa: E402
from experiments.measure.level_width import build, ops_for, time_lookups, time_writes  # noqa: E402  (the harness's method)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--widths", default=",".join(map(str, SIZES["full"].width_levels)),
                    help="default: the full run's, with the leaf peaks (experiments.config)")
    ap.add_argument("--leaf", default="", help="extra CSTrie leaf sizes, e.g. 8,128")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--json", type=Path, help="write the records here")
    args = ap.parse_args()
    widths = [int(x) for x in args.widths.split(",")]
    factories = {"CSTrie": lambda: CSTrie("nats"),
                 "LockedTrie(cache=False)": lambda: LockedTrie(dialect="nats", cache=False)}
    for leaf in (int(x) for x in args.leaf.split(",") if x):
        if leaf != LEAF_MAX:
            factories[f"CSTrie(leaf={leaf})"] = lambda leaf=leaf: CSTrie("nats", _leaf_max=leaf)
    tree = str(Path(__file__).resolve().parent.parent)
    env = environment([tree], leaf_max=LEAF_MAX, rounds=args.rounds)
    print(f"# {headline(env)}, commit {env['commits'][tree]}, LEAF_MAX {LEAF_MAX}", flush=True)
    records = []
    for width in widths:
        tries = {name: build(f, width) for name, f in factories.items()}
        ops = ops_for(width, args.ops)
        w = {name: [] for name in tries}
        r = {name: [] for name in tries}
        gc.disable()
        try:
            for k in range(args.rounds):
                for name, m in tries.items():  # interleaved: drift hits every matcher alike
                    w[name].append(time_writes(m, ops, f"r{k}-"))
                    r[name].append(time_lookups(m, width, ops))
        finally:
            gc.enable()
        base_w = statistics.median(w["LockedTrie(cache=False)"])
        base_r = statistics.median(r["LockedTrie(cache=False)"])
        for name in tries:
            mw, mr = statistics.median(w[name]), statistics.median(r[name])
            rec = {"width": width, "matcher": name, "write_us": mw * 1e6,
                   "write_us_min": min(w[name]) * 1e6, "write_us_max": max(w[name]) * 1e6,
                   "lookup_us": mr * 1e6, "write_ratio": mw / base_w, "lookup_ratio": mr / base_r}
            records.append(rec)
            print(f"W={width:>7,}  {name:24s} sub+unsub {mw * 1e6:8.2f} us "
                  f"[{min(w[name]) * 1e6:.2f}-{max(w[name]) * 1e6:.2f}]  x{mw / base_w:5.2f}   "
                  f"lookup {mr * 1e6:6.2f} us  x{mr / base_r:5.2f}", flush=True)
        del tries
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"env": env, "records": records}, indent=1))


if __name__ == "__main__":
    main()
