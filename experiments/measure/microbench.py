"""Per-operation timing of benchmark groups: pyperf in a subprocess, or a stdlib fallback.

For each group (a latency ``algorithm:dialect``, or ``primitives``):

1. *preflight*: every benchmark is built and run for one loop in this process; one that
   raises is recorded as ``failed`` (with the error) and left out, so that one broken cell
   cannot take its group down; a benchmark with a ``skip`` reason is recorded as
   ``skipped``;
2. *pyperf* (when importable, or ``--method pyperf``): ``python -m
   experiments.measure._pyperf_worker`` runs the group and writes pyperf JSON under
   ``<build>/pyperf/``; its console output goes to a ``.log`` beside it;
3. *timeit* (``--method timeit``, or no pyperf): the same time functions run in this
   process: loops calibrated to the size's minimum time, warm-ups, then values.

Either way each benchmark gets one JSON-lines record (unit ``ns`` per operation; ``values``
are pyperf's values, or the fallback's) whose ``params.method`` says how it was measured.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import registry
from ..config import SIZES
from ..env import PROJECT_ROOT, Run
from ..progress import bar
from ..writing import WriteError, writing
from .bench import Bench
from .latency import latency_benches
from .primitives import primitive_benches

__all__ = ["benches", "pyperf_unavailable", "run_groups"]

_NS = 1e9


def benches(suite: str, group: str, seed: int, size_name: str) -> list[Bench]:
    """The benchmarks of one group: ``latency`` ``<algorithm>:<dialect>``, or ``primitives``."""
    size = SIZES[size_name]
    if suite == "latency":
        algorithm, _, dialect = group.partition(":")
        return latency_benches(algorithm, dialect, seed, size.hot_population,
                               size.latency_batch, size.lookup_pool, size.dense_filters,
                               size.dense_topics)
    if suite == "primitives":
        return primitive_benches()
    raise ValueError(f"unknown suite {suite!r}")


def pyperf_unavailable() -> str | None:
    """Why pyperf cannot be used in this interpreter, or None."""
    try:
        import pyperf  # noqa: F401
    except ImportError as exc:
        return f"pyperf not importable: {exc} (pip install 'cstrie[bench]')"
    return None


def _subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _measure_inprocess(bench: Bench, warmups: int, values: int, min_time: float
                       ) -> tuple[list[float], int]:
    """Calibrate loops to ``min_time``, warm up, then return per-operation seconds."""
    loops = bench.loops or 1
    if bench.loops is None:
        while True:
            elapsed = bench(loops)
            if elapsed >= min_time or loops >= 1 << 30:
                break
            # Aim a little over min_time, growing at most 10x per step.
            grow = min(10.0, max(2.0, 1.2 * min_time / max(elapsed, 1e-9)))
            loops = int(loops * grow) + 1
    for _ in range(warmups):
        bench(loops)
    out = [bench(loops) / (loops * bench.inner_loops) for _ in range(values)]
    return out, loops


def _parse_pyperf(path: Path) -> dict[str, dict[str, Any]]:
    """name -> {values (s), loops, runs} from a pyperf JSON file (plain json, no pyperf)."""
    data = json.loads(path.read_text())
    common = data.get("metadata", {})
    out: dict[str, dict[str, Any]] = {}
    for bench in data.get("benchmarks", []):
        meta = {**common, **bench.get("metadata", {})}
        name = str(meta.get("name"))
        values: list[float] = []
        loops = meta.get("loops")
        runs = 0
        for run in bench.get("runs", []):
            vals = run.get("values") or []
            if vals:
                runs += 1
                values.extend(vals)
                loops = run.get("metadata", {}).get("loops", loops)
        out[name] = {"values": values, "loops": loops, "runs": runs}
    return out


def _run_pyperf(run: Run, experiment: str, suite: str, group: str, names: list[str],
                loops: int | None, progress: Any) -> tuple[Path, dict[str, list[str]], str]:
    """Run one pyperf subprocess; return its JSON path, warnings per benchmark and a tail."""
    stem = f"{experiment}-{group.replace(':', '-')}" + (f"-loops{loops}" if loops else "")
    out = run.new_path(stem, ".json", subdir="pyperf")
    log = out.with_suffix(".log")
    run.files.append(log)
    cmd = [sys.executable, "-P", "-m", "experiments.measure._pyperf_worker", "--suite", suite,
           "--group", group, "--bench-seed", str(run.seed), "--bench-size", run.size.name,
           "--only", ",".join(names), *run.size.pyperf_args, "-o", str(out)]
    if loops:
        cmd += ["--loops", str(loops)]
    warnings: dict[str, list[str]] = {}
    pending: list[str] = []
    tail: list[str] = []
    with writing(log):
        logf = open(log, "w", encoding="utf-8")
    with logf:
        logf.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=_subprocess_env(), cwd=str(PROJECT_ROOT))
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                logf.write(line)
                tail = (tail + [line.rstrip()])[-15:]
                stripped = line.strip().lstrip(".")
                hit = next((n for n in names if stripped.startswith(n + ":")), None)
                if hit is not None:
                    warnings[hit] = [w for w in pending if w.startswith(("WARNING", "* "))]
                    pending = []
                    progress.update(1)
                elif stripped and not stripped.startswith("$"):
                    pending.append(stripped)
        except BaseException:  # Ctrl-C or SIGTERM here: pyperf does not outlive the run
            proc.kill()
            proc.wait()
            raise
        rc = proc.wait()
    if rc != 0:
        raise RuntimeError(f"pyperf exited with {rc}; log {log}:\n" + "\n".join(tail))
    return out, warnings, "\n".join(tail)


def run_groups(run: Run, experiment: str, suite: str,
               groups: Sequence[tuple[str, str, str | None]],
               method: str) -> None:
    """Measure ``groups`` (``(group id, algorithm, dialect)``) and record every benchmark.

    ``method`` is ``auto`` (pyperf if importable), ``pyperf`` or ``timeit``.
    """
    why_not = pyperf_unavailable()
    if method == "pyperf" and why_not:
        raise SystemExit(f"error: --method pyperf: {why_not}")
    use_pyperf = method == "pyperf" or (method == "auto" and why_not is None)
    size = run.size
    plan = [(g, alg, d, benches(suite, g, run.seed, size.name)) for g, alg, d in groups]
    total = sum(len(bs) for *_, bs in plan)
    how = "pyperf" if use_pyperf else f"timeit fallback ({why_not or 'requested'})"
    with bar(total, f"{experiment} [{how}]") as progress:
        for group, algorithm, dialect, bench_list in plan:
            progress.set_postfix_str(group)
            _run_group(run, experiment, suite, group, algorithm, dialect, bench_list,
                       use_pyperf, progress)


def _record(run: Run, experiment: str, algorithm: str, dialect: str | None, bench: Bench,
            **kw: Any) -> None:
    params = dict(bench.params)
    params.update(kw.pop("extra", {}))
    rec = run.record(experiment, algorithm, dialect, bench.name, params, unit="ns", **kw)
    if experiment == "primitives" and rec["median"] is not None:
        print(f"  {bench.name}: {rec['median']:.1f} ns (min {rec['min']:.1f}, max "
              f"{rec['max']:.1f}) - {params.get('op', '')}", file=sys.stderr)


def _run_group(run: Run, experiment: str, suite: str, group: str, algorithm: str,
               dialect: str | None, bench_list: list[Bench], use_pyperf: bool,
               progress: Any) -> None:
    size = run.size
    algorithm_missing = registry.unavailable(algorithm) if suite == "latency" else None
    ready: list[Bench] = []
    for bench in bench_list:
        reason = algorithm_missing or bench.skip
        if reason:
            _record(run, experiment, algorithm if suite == "latency" else bench.name, dialect,
                    bench, status="skipped", note=reason)
            if suite == "primitives":
                progress.write(f"  {bench.name}: {reason}")
            progress.update(1)
            continue
        try:
            bench(1)  # builds the state and runs one loop
        except Exception as exc:
            _record(run, experiment, algorithm if suite == "latency" else bench.name, dialect,
                    bench, status="failed",
                    note=f"{type(exc).__name__}: {exc}",
                    extra={"traceback": traceback.format_exc(limit=6)})
            progress.write(f"  {group} {bench.name}: FAILED {type(exc).__name__}: {exc}")
            progress.update(1)
            continue
        ready.append(bench)

    if not use_pyperf:
        for bench in ready:
            vals, loops = _measure_inprocess(bench, size.timeit_warmups, size.timeit_values,
                                             size.timeit_min_time)
            bench._func = None  # drop the state
            gc.collect()
            _record(run, experiment, algorithm if suite == "latency" else bench.name, dialect,
                    bench, values=[v * _NS for v in vals],
                    extra={"method": "timeit", "loops": loops, "inner_loops": bench.inner_loops,
                           "warmups": size.timeit_warmups, "min_time_s": size.timeit_min_time})
            progress.update(1)
        return

    for bench in ready:
        bench._func = None
    gc.collect()
    # Calibrated benchmarks in one subprocess; each fixed-loop count in its own.
    batches: dict[int | None, list[Bench]] = {}
    for bench in ready:
        batches.setdefault(bench.loops, []).append(bench)
    for fixed, members in batches.items():
        names = [b.name for b in members]
        warnings: dict[str, list[str]] = {}
        try:
            path, warnings, _ = _run_pyperf(run, experiment, suite, group, names, fixed,
                                            progress)
            parsed = _parse_pyperf(path)
        except WriteError:
            raise  # the run's folder refuses its files: no cell can be recorded either
        except Exception as exc:
            progress.update(len(members) - len(warnings))
            for bench in members:
                _record(run, experiment, algorithm if suite == "latency" else bench.name,
                        dialect, bench, status="failed", note=f"pyperf run failed: {exc}")
            progress.write(f"  {group}: pyperf FAILED: {exc}")
            continue
        progress.update(len(members) - len(warnings))  # result lines not recognised
        rel = str(path.relative_to(run.dir))
        for bench in members:
            got = parsed.get(bench.name)
            name = algorithm if suite == "latency" else bench.name
            if not got or not got["values"]:
                _record(run, experiment, name, dialect, bench, status="failed",
                        note=f"no values for {bench.name!r} in {rel}")
                continue
            extra = {"method": "pyperf", "pyperf_file": rel, "loops": got["loops"],
                     "inner_loops": bench.inner_loops, "processes": got["runs"],
                     "pyperf_args": " ".join(run.size.pyperf_args)}
            if warnings.get(bench.name):
                extra["pyperf_warnings"] = warnings[bench.name]
            _record(run, experiment, name, dialect, bench,
                    values=[v * _NS for v in got["values"]], extra=extra)
