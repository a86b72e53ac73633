"""The node-layout goals that are not a width sweep (tools/level_width.py does that), for
CSTrie against LockedTrie in one run, on whatever interpreter runs this:

- build: seconds to subscribe N subscribers to one pattern (``stock.>``), and N MQTT devices
  under one level (``devices/<i>/telemetry``); median of ``--rounds``, matchers interleaved;
- memory per subscription (tracemalloc, as experiments/measure/memory.py counts it) of the harness's
  distinct 3-word workload at ``--memory-n`` pairs, fresh; and at ``--churn-n`` pairs fresh
  and after one short-lived sibling subscription beside each pattern (subscribed, then
  unsubscribed: same content);
- subscribe-then-publish on a hot subject with N subscribers: one new subscriber, then one
  lookup (LockedTrie with its cache, as a broker runs it).

    python tools/layout_goals.py [--n 40000] [--memory-n 100000] [--churn-n 20000]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchenv import environment, headline  # noqa: E402

from baselines import LockedTrie  # noqa: E402
from ctrie import CSTrie  # noqa: E402
from experiments import workloads  # noqa: E402

MATCHERS = {
    "CSTrie": lambda d: CSTrie(d),
    "LockedTrie(cache=False)": lambda d: LockedTrie(dialect=d, cache=False),
}


def timed(fn) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def build_one_pattern(make, n: int) -> float:
    m = make("nats")
    return timed(lambda: [m.subscribe("stock.>", i) for i in range(n)])


def build_devices(make, n: int) -> float:
    m = make("mqtt")
    return timed(lambda: [m.subscribe(f"devices/{i}/telemetry", i) for i in range(n)])


def memory(make, pats: list[str], churn: bool) -> float:
    """Bytes per subscription held by a matcher holding ``pats`` (subscriber i each)."""
    gc.collect()
    tracemalloc.start()
    try:
        m = make("nats")
        for i, p in enumerate(pats):
            m.subscribe(p, i)
        if churn:
            for p in pats:
                sib = p.rsplit(".", 1)[0] + ".zz-sibling"
                m.subscribe(sib, "tmp")
                m.unsubscribe(sib, "tmp")
        gc.collect()
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(m) == len(pats)
    return size / len(pats)


def sub_then_publish(make, n: int, reps: int = 30) -> float:
    m = make("nats")
    for i in range(n):
        m.subscribe("stock.>", i)
    times = []
    for j in range(reps):
        t0 = time.perf_counter()
        m.subscribe("stock.>", -1 - j)
        m.lookup("stock.nyse.ibm")
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def patterns(n: int, seed: int = 1) -> list[str]:
    alphabet = max(10, math.ceil((10 * n) ** (1 / 3)))
    wl = workloads.throughput_workload(seed, n, n, alphabet)
    return sorted(set(wl.patterns))[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40_000)
    ap.add_argument("--memory-n", type=int, default=100_000)
    ap.add_argument("--churn-n", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tree = str(Path(__file__).resolve().parent.parent)
    env = environment([tree], n=args.n, memory_n=args.memory_n, churn_n=args.churn_n)
    print(f"# {headline(env)}, commit {env['commits'][tree]}", flush=True)
    out: dict[str, dict[str, float]] = {}

    def cell(name: str, fn, rounds: int = args.rounds) -> None:
        vals = {k: [] for k in MATCHERS}
        for _ in range(rounds):
            for k, make in MATCHERS.items():
                vals[k].append(fn(make))
        med = {k: statistics.median(v) for k, v in vals.items()}
        ratio = med["CSTrie"] / med["LockedTrie(cache=False)"]
        out[name] = {**med, "ratio": ratio}
        print(f"{name:44s} " + "  ".join(f"{k} {v:.4g}" for k, v in med.items())
              + f"  CSTrie/LockedTrie {ratio:.2f}", flush=True)

    n = args.n
    cell(f"build {n:,} subscribers of stock.> (s)", lambda mk: build_one_pattern(mk, n))
    cell(f"build {n:,} devices under one level (s)", lambda mk: build_devices(mk, n))
    big = patterns(args.memory_n)
    cell(f"memory fresh, {len(big):,} pairs (B/sub)", lambda mk: memory(mk, big, False), 1)
    del big
    small = patterns(args.churn_n)
    cell(f"memory fresh, {len(small):,} pairs (B/sub)", lambda mk: memory(mk, small, False), 1)
    cell(f"memory after sibling churn, {len(small):,} (B/sub)", lambda mk: memory(mk, small, True), 1)
    # Patterns with a private tail (an S-node each): the sibling expands it into I-nodes.
    dev = [f"devices.{i}.telemetry.temp" for i in range(args.churn_n)]
    cell(f"memory fresh, {len(dev):,} device patterns (B/sub)", lambda mk: memory(mk, dev, False), 1)
    cell(f"memory after sibling churn, {len(dev):,} devices (B/sub)", lambda mk: memory(mk, dev, True), 1)
    MATCHERS["LockedTrie(cache=True)"] = lambda d: LockedTrie(dialect=d, cache=True)
    cell(f"subscribe then publish, {n:,} subscribers (s)", lambda mk: sub_then_publish(mk, n), 1)
    if args.json:
        args.json.write_text(json.dumps({"env": env, "cells": out}, indent=1))


if __name__ == "__main__":
    main()
