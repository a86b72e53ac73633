"""What a lookup walk costs as patterns and topics grow: CSTrie against LockedTrie(cache=False).

For each source tree given (``--tree DIR``, repeatable; default this checkout), in a child
process of the running interpreter, rounds interleaved between trees, both matchers built in
the same child so that their ratio comes from one run:

- ``amqp``: a random AMQP workload, 1,000 subscriptions over a 12-word vocabulary (each
  pattern word '*' with probability 0.15, '#' with 0.1), 1,000 random topics of 3-8 words;
  time per lookup (goal: CSTrie / LockedTrie at most 1.3);
- ``hash_snode_<n>`` / ``hash_chain_<n>``: the pattern of 30 '#' words then ``x`` (alone,
  so stored as one S-node; or beside the same chain then ``y``, so stored as 30 levels of
  I-nodes), looked up with an ``n``-word topic ending in ``x`` and one that does not match
  (goal at n=400: within 2x of LockedTrie; the growth with n shows whether the walk is
  linear in n);
- ``hot_faithful`` / ``hot_distinct``: the latency benchmark's lookups (NATS): the hot
  population (1,000 random 5-word patterns, so the root is a wide level) and
  ``foo.*.baz.qux.quux``, looked up with ``foo.bar.baz.qux.quux`` or cycling through 1,000
  distinct matching topics; ``cold_faithful``: the same lookup beside that pattern alone;
- ``stock``: the starvation experiment's hot subject without a writer (100 subscribers of
  ``stock.>`` and three more patterns, looked up with ``stock.nyse.ibm``: a 103-member union);
- ``dense``: the dense workload (850 wildcard filters over 5 words per level, 2,000 topics);
- ``long_topic_<n>``: NATS, the topic ``w.w...w`` of n words and a pattern ``w^d.*.z`` for
  every depth d below it, so that the walk passes an S-node at every level (the S-node
  check must not copy the rest of the topic: CSTrie / LockedTrie should stay flat in n).

Prints the interpreter, GIL state, CPU count, commit of each tree and seed, then per case the
median time per lookup with min-max over the rounds and the median CSTrie / LockedTrie ratio.
``--leaf N`` adds a CSTrie whose levels split past N words instead of ``LEAF_MAX`` (the
trade-off of ``tools/level_width.py --leaf``: the hot population's root of 1,001 words is
one flat level at N >= 1,001, a top and a kid below that). ``--json FILE`` also writes all
of it.

    python tools/walk_cost.py --tree /tmp/before --tree . [--rounds 5] [--cases hot,stock]
    python tools/walk_cost.py --cases hot --leaf 1024
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchenv import environment, headline

ROOT = Path(__file__).resolve().parent.parent
CHAIN_TOPICS = (100, 200, 400)
LONG_TOPICS = (250, 500, 1000, 2000)


def _per_lookup(m, topics: list[str], budget: float = 0.2) -> float:
    """Seconds per lookup: passes over ``topics`` until ``budget`` seconds, at least one."""
    clock = time.perf_counter
    lookup = m.lookup
    passes = 0
    t0 = clock()
    while True:
        for t in topics:
            lookup(t)
        passes += 1
        el = clock() - t0
        if el >= budget:
            return el / (passes * len(topics))


def child(tree: str, seed: int, cases: str, leaf: int = 0) -> dict:
    """One round on the ``ctrie`` and ``baselines`` of ``tree``; returns seconds per lookup."""
    sys.path.insert(0, tree)
    import random

    import ctrie
    from baselines import LockedTrie
    from ctrie import CSTrie

    assert str(Path(ctrie.__file__).resolve()).startswith(str(Path(tree).resolve())), ctrie.__file__
    sys.path.insert(0, str(ROOT))  # the workloads from this checkout; ctrie stays the tree's
    from experiments import workloads

    rnd = random.Random(seed)
    out: dict[str, float] = {}
    wanted = cases.split(",") if cases else None

    def both(case: str, dialect: str, patterns: list, topics: list[str]) -> None:
        """``patterns``: strings (subscriber: their index) or (pattern, subscriber) pairs."""
        if wanted and not any(case.startswith(w) for w in wanted):
            return
        if patterns and type(patterns[0]) is str:
            patterns = [(p, i) for i, p in enumerate(patterns)]
        matchers: list[tuple[str, Any]] = [("CSTrie", CSTrie(dialect)),
                                           ("LockedTrie", LockedTrie(dialect, cache=False))]
        if leaf and hasattr(ctrie.nodes, "LEAF_MAX"):  # (a tree from before hash levels: none)
            matchers.append(("CSTrie(leaf)", CSTrie(dialect, _leaf_max=leaf)))
        for name, m in matchers:
            for p, i in patterns:
                m.subscribe(p, i)
            out[f"{case}/{name}"] = _per_lookup(m, topics)
        assert CSTrie  # both built from this tree

    hot = workloads.hot_population(seed, 1000, 5)
    pat = workloads.LATENCY_PATTERN
    both("hot_faithful", "nats", [*hot, pat], [workloads.LATENCY_TOPIC])
    both("hot_distinct", "nats", [*hot, pat], workloads.lookup_pool(1000))
    both("cold_faithful", "nats", [pat], [workloads.LATENCY_TOPIC])
    both("stock", "nats", [("stock.>", f"s{i}") for i in range(100)]
         + [("stock.nyse.ibm", "a"), ("stock.nyse.*", "b"), ("stock.*.ibm", "c")], ["stock.nyse.ibm"])
    dense = workloads.dense_workload(seed)
    both("dense", "nats", dense.filters, dense.topics)
    vocab = [f"w{i}" for i in range(12)]

    def amqp_word() -> str:
        r = rnd.random()
        return "*" if r < 0.15 else "#" if r < 0.25 else rnd.choice(vocab)

    patterns = [".".join(amqp_word() for _ in range(rnd.randint(1, 6))) for _ in range(1000)]
    topics = [".".join(rnd.choice(vocab) for _ in range(rnd.randint(3, 8))) for _ in range(1000)]
    both("amqp", "amqp", patterns, topics)
    chain = ["#"] * 30
    for n in CHAIN_TOPICS:
        hit, miss = ".".join(["w"] * (n - 1) + ["x"]), ".".join(["w"] * n)
        # One pattern: stored as an S-node below the root's '#' branch.
        both(f"hash_snode_{n}", "amqp", [".".join(chain + ["x"])], [hit, miss])
        # Two that share the chain: 30 levels of I-nodes, each with a '#' branch.
        both(f"hash_chain_{n}", "amqp", [".".join(chain + ["x"]), ".".join(chain + ["y"])],
             [hit, miss])
    for n in LONG_TOPICS:
        pats = [".".join(["w"] * d + ["*", "z"]) for d in range(n - 1)] + [".".join(["w"] * n)]
        both(f"long_topic_{n}", "nats", pats, [".".join(["w"] * n)])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", help="a source tree holding ctrie/ (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--cases", default="", help="only the cases starting with one of these "
                    "comma-separated names (e.g. hot,stock,dense)")
    ap.add_argument("--leaf", type=int, default=0,
                    help="also a CSTrie whose levels split past this many words")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.leaf < 0:
        ap.error(f"--leaf must be a number of words (0: no such variant), not {args.leaf}")
    if args.child:
        print(json.dumps(child(args.child, args.seed, args.cases, args.leaf)))
        return
    trees = args.tree or [str(ROOT)]
    env = environment(trees, seed=args.seed, rounds=args.rounds, leaf=args.leaf or None)
    print(f"{headline(env)}, seed {args.seed}, {args.rounds} rounds")
    results: dict[str, list[dict]] = {tree: [] for tree in trees}
    for r in range(args.rounds):
        for tree in trees:  # interleaved, so that a load change hits every tree alike
            print(f"  round {r + 1}/{args.rounds}: {tree}", file=sys.stderr, flush=True)
            proc = subprocess.run([sys.executable, __file__, "--child", tree, "--seed",
                                   str(args.seed + r), "--cases", args.cases, "--leaf", str(args.leaf)],
                                  capture_output=True, text=True, check=True)
            results[tree].append(json.loads(proc.stdout))
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for tree, rows in results.items():
        print(f"\n{tree} ({env['commits'][tree]}): us per lookup, median [min-max]; ratio CSTrie/LockedTrie")
        cases = list(dict.fromkeys(key.split("/")[0] for key in rows[0]))
        summary[tree] = {}
        for case in cases:
            cs = [row[f"{case}/CSTrie"] * 1e6 for row in rows]
            lt = [row[f"{case}/LockedTrie"] * 1e6 for row in rows]
            ratio = statistics.median(c / x for c, x in zip(cs, lt))
            summary[tree][case] = {"cstrie_us": statistics.median(cs), "lockedtrie_us": statistics.median(lt),
                                   "ratio": ratio}
            print(f"  {case:<18} CSTrie {statistics.median(cs):>10.2f} [{min(cs):.2f}-{max(cs):.2f}]"
                  f"   LockedTrie {statistics.median(lt):>10.2f} [{min(lt):.2f}-{max(lt):.2f}]"
                  f"   ratio {ratio:6.2f}")
            if f"{case}/CSTrie(leaf)" in rows[0]:
                lf = [row[f"{case}/CSTrie(leaf)"] * 1e6 for row in rows]
                lratio = statistics.median(c / x for c, x in zip(lf, lt))
                summary[tree][case].update(leaf_cstrie_us=statistics.median(lf), leaf_ratio=lratio)
                print(f"  {'':<11}leaf {args.leaf:<5} CSTrie {statistics.median(lf):>10.2f}"
                      f" [{min(lf):.2f}-{max(lf):.2f}]   ratio {lratio:6.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"env": env, "rounds": results, "summary": summary},
                                              indent=1))


if __name__ == "__main__":
    main()
