"""What the fault-injection hook costs when no hook is installed.

Builds a copy of ``ctrie`` with every hook test removed from ``gcas.py`` and ``rdcss.py``
(the CAS calls themselves untouched), then counts the machine instructions of a
subscribe+unsubscribe pair (four GCAS per pair) in both copies with valgrind's callgrind:
instruction counts repeat exactly whatever else the machine is doing, where timings on a
loaded two-core machine differ by several percent from run to run. Without valgrind it
falls back to interleaved timings and says so.

    python tools/hook_cost.py [--pairs 2000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The measured trie, shared with tools/snapshot_cost.py: argv[1] holds the ctrie package, n
# is argv[2].
PRELUDE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from ctrie import CSTrie
n = int(sys.argv[2])
t = CSTrie()
for i in range(1000):
    t.subscribe(f"{i % 10}.{i % 50}.{i}", i)
"""

WORKLOAD = PRELUDE + """
t0 = time.perf_counter()
for _ in range(n):
    t.subscribe("foo.*.baz.qux.quux", 1)
    t.unsubscribe("foo.*.baz.qux.quux", 1)
print((time.perf_counter() - t0) / max(n, 1) * 1e9)
"""


def strip_hooks(src: str) -> str:
    """The module without its hook tests: 'before' tests become constant, 'after' calls go."""
    out = re.sub(r'if _fault is not None and _fault\("[a-z_]+", "before"\):', "if False:", src)
    out = re.sub(r'if _fault is None or not _fault\("[a-z_]+", "before"\):', "if True:", out)
    out = re.sub(r'\n(\s*)if _fault is not None:\n\s*_fault\("[a-z_]+", "after"\)\n', "\n", out)
    return out


def make_stripped(dest: Path) -> None:
    shutil.copytree(ROOT / "ctrie", dest / "ctrie", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("gcas.py", "rdcss.py"):
        path = dest / "ctrie" / name
        src = path.read_text()
        stripped = strip_hooks(src)
        left = [ln for ln in stripped.splitlines() if "_fault(" in ln]
        if stripped == src or left:
            sys.exit(f"hook_cost: could not strip the hook tests from {name}: {left}")
        path.write_text(stripped)


def instructions(path: Path, pairs: int) -> int:
    """Instructions per pair: a run with ``pairs`` pairs minus a run with none."""

    def total(n: int) -> int:
        env = dict(os.environ, PYTHONHASHSEED="0")
        res = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             sys.executable, "-c", WORKLOAD, str(path), str(n)],
            capture_output=True, text=True, env=env, check=True,
        )
        m = re.search(r"Collected : (\d+)", res.stderr)
        if not m:
            sys.exit(f"hook_cost: no instruction count in valgrind's output:\n{res.stderr[-2000:]}")
        return int(m.group(1))

    return (total(pairs) - total(0)) // pairs


def timing(path: Path, pairs: int) -> float:
    res = subprocess.run([sys.executable, "-c", WORKLOAD, str(path), str(pairs)],
                         capture_output=True, text=True, check=True)
    return float(res.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2000, help="subscribe+unsubscribe pairs")
    args = ap.parse_args()
    if args.pairs < 1:
        ap.error(f"--pairs must be at least 1, not {args.pairs}")
    with tempfile.TemporaryDirectory() as tmp:
        stripped = Path(tmp)
        make_stripped(stripped)
        if shutil.which("valgrind"):
            with_hooks = instructions(ROOT, args.pairs)
            without = instructions(stripped, args.pairs)
            print(f"instructions per subscribe+unsubscribe pair: with hook tests {with_hooks:,}, "
                  f"stripped {without:,}; the tests cost {with_hooks - without:,} "
                  f"({(with_hooks - without) / without:.2%})")
        else:
            print("valgrind not found: interleaved timings instead (noisy on a loaded machine)")
            runs: dict[str, list[float]] = {"with hook tests": [], "stripped": []}
            for _ in range(8):
                runs["with hook tests"].append(timing(ROOT, args.pairs))
                runs["stripped"].append(timing(stripped, args.pairs))
            for k, v in runs.items():
                print(f"{k:16s} median {statistics.median(v):8.0f} ns per pair "
                      f"[min {min(v):.0f}, max {max(v):.0f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
