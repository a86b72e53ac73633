"""Smoke test of the experiment harness: every experiment at its smallest size, then charts
and summary on the records it wrote.

The runs go through the real command line (``python -m experiments``, in a subprocess) into
a temporary directory. The checks are meant to fail when the harness rots: every record
carries every field with plausible values, every matcher appears in every experiment, and
only the documented cells (paho's ``MQTTMatcher`` under threads, the ``atomics`` package
where it is missing) are skipped. The dense wildcard lookup (in ``latency``) and the level
width experiment are followed from their records to the summary, the paper and the figure.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.env import RECORD_FIELDS
from experiments.records import load
from experiments.registry import ALGORITHMS, thread_safe, unavailable

ROOT = Path(__file__).resolve().parent.parent
SEED = 7
MEASURED = ("latency", "throughput", "memory", "scaling", "lockfree", "contention",
            "sharing", "ownership", "starvation", "level_width", "primitives")
UNITS = {"latency": "ns", "throughput": "msg/s", "memory": "bytes", "scaling": "ops/s",
         "lockfree": "s", "contention": "us", "sharing": "ops/s", "ownership": "ops/s",
         "starvation": "ops/s", "level_width": "ns", "primitives": "ns"}
LATENCY_CELLS = {f"{op}/{state}/{variant}"
                 for state in ("cold", "hot")
                 for op, variants in (("subscribe", ("faithful", "real")),
                                      ("unsubscribe", ("faithful", "real")),
                                      ("lookup", ("faithful", "distinct")))
                 for variant in variants}
DENSE_CELL = "lookup/dense/distinct"
DENSE_TARGETS = ("dense_lookup_vs_paho", "dense_lookup_vs_lockedtrie")


def latency_cells(algorithm: str, dialect: str) -> set[str]:
    """The latency workloads of one group: the 12 cells, and the dense lookup for its three
    matchers on the MQTT form."""
    from experiments.measure.latency import DENSE_ALGORITHMS

    dense = algorithm in DENSE_ALGORITHMS and dialect == "mqtt"
    return LATENCY_CELLS | ({DENSE_CELL} if dense else set())


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``python -m experiments *args`` from the checkout; return the finished process."""
    env = dict(os.environ, CSTRIE_NO_PROGRESS="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                          if p))
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def ok_or_fail(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """``all --smoke`` (stdlib timing, so it takes seconds) into a fresh directory."""
    out = tmp_path_factory.mktemp("results")
    ok_or_fail(cli("all", "--smoke", "--method", "timeit", "--seed", str(SEED),
                   "--out", str(out)))
    return out, load(out)


def by_experiment(recs: list[dict], experiment: str) -> list[dict]:
    return [r for r in recs if r["experiment"] == experiment]


def test_every_record_has_every_field_with_plausible_values(results):
    _, recs = results
    assert recs, "no records written"
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    for r in recs:
        missing = [f for f in RECORD_FIELDS if f not in r]
        assert not missing, f"{r['experiment']} {r.get('algorithm')}: missing {missing}"
        assert r["seed"] == SEED and r["size"] == "smoke"
        assert r["python"] == platform.python_version()
        assert r["gil_enabled"] is gil
        assert r["cpu_count"] == os.cpu_count()
        assert r["unit"] == UNITS[r["experiment"]], r
        assert r["threads"] >= 1 and isinstance(r["params"], dict)
        assert r["git_commit"] and r["package_version"]
        if r["status"] == "ok":
            assert 0 < r["min"] <= r["median"] <= r["max"], r
            assert r["rounds"] == len(r["values"]) >= 1
        else:
            assert r["status"] in ("skipped", "failed") and r["note"], r
            assert r["median"] is None


def test_every_matcher_appears_in_every_experiment(results):
    _, recs = results
    for experiment in ("latency", "throughput", "memory", "scaling", "lockfree", "contention",
                       "sharing", "ownership"):
        seen = {r["algorithm"] for r in by_experiment(recs, experiment)} - {"attribute-read"}
        assert seen == set(ALGORITHMS), f"{experiment}: missing {set(ALGORITHMS) - seen}"


def test_contention_pairs_shared_with_per_thread_rounds(results):
    _, recs = results
    cells = {(r["algorithm"], r["workload"], r["threads"]): r
             for r in by_experiment(recs, "contention")}
    for alg in [*ALGORITHMS, "attribute-read"]:
        for sharing in ("shared", "per-thread"):
            for n in (1, 2):
                r = cells[(alg, sharing, n)]
                if r["status"] != "ok":
                    continue
                p = r["params"]
                assert p["sharing"] == sharing and r["workload"] == sharing
                # The value is CPU per operation: total CPU over every thread's operations.
                ops = p.get("total_ops", n * p.get("reads_per_thread", 0))
                assert r["values"] == pytest.approx([c / ops * 1e6 for c in p["cpu_s_values"]])
                assert len(r["values"]) == len(p["wall_s_values"]) == r["rounds"]


def test_sharing_measures_every_mode_with_its_counters(results):
    """Every algorithm shared and owner-built at every write share and thread count; the
    ablations and the round-length sweep for the CS-trie and LockedTrie; the CS-trie's
    event counters and the context switches beside each measured cell."""
    from experiments.config import SIZES
    from experiments.measure.sharing import ABLATION_ALGORITHMS, ABLATIONS

    size = SIZES["smoke"]
    _, recs = results
    cells = {(r["algorithm"], r["workload"], r["threads"]): r for r in by_experiment(recs, "sharing")}
    for alg in ALGORITHMS:
        for mode in ("shared", "per-thread-own"):
            for p in size.sharing_write_shares:
                for n in size.sharing_threads:
                    r = cells[(alg, f"{mode}/w{round(p * 100)}/gc-on", n)]
                    if r["status"] != "ok":
                        continue
                    assert r["params"]["write_share"] == p and r["params"]["mode"] == mode
                    assert r["params"]["ops_per_s"]["q1"] <= r["median"] <= r["params"]["ops_per_s"]["q3"]
                    assert r["params"]["ctx_switches"]["min"] >= 0
                    assert ("events_per_op" in r["params"]) is (alg == "cstrie"), r
                    # Paired with the limit round by round (their rounds interleave).
                    paired = r["params"]["over_limit_by_round"]
                    assert len(paired) == r["rounds"]
                    if mode == "per-thread-own":
                        assert paired == [1.0] * r["rounds"]
    for alg in ABLATION_ALGORITHMS:
        measured = {(r["params"]["mode"], r["params"]["gc"] == "off")
                    for (a, _, _), r in cells.items() if a == alg}
        assert set(ABLATIONS) <= measured, set(ABLATIONS) - measured
        assert {"per-thread", "shared-exited", "shared-topics", "shared-handle"} <= {
            m for m, _ in measured}
        assert {int(w.split("/")[1]) for (a, w, _) in cells
                if a == alg and w.startswith("roundlen/")} == set(size.sharing_round_ops)


def test_every_throughput_figure_carries_a_result_caches_hit_rate(results):
    _, recs = results
    for r in [x for e in ("throughput", "scaling", "lockfree", "sharing")
              for x in by_experiment(recs, e)]:
        if r["status"] != "ok":
            continue
        if r["params"].get("write_share") == 1.0:
            continue  # no lookup in the round: no hit rate to give
        cached = r["algorithm"] in ("cstrie_cache", "locked_trie")
        assert ("cache_hit_rate" in r["params"]) is cached, (r["experiment"], r["algorithm"])
        if cached:
            assert 0.0 <= r["params"]["cache_hit_rate"] <= 1.0


def test_ownership_pairs_builder_with_other_reader(results):
    _, recs = results
    cells = {(r["algorithm"], r["params"]["reader"]): r for r in by_experiment(recs, "ownership")}
    for alg in ALGORITHMS:
        builder, other = cells[(alg, "builder")], cells[(alg, "other")]
        assert builder["status"] == other["status"], (builder, other)
        if builder["status"] == "ok":
            # Both readers read the same matcher of every round: as many values each.
            assert builder["rounds"] == other["rounds"] >= 1
            assert builder["params"]["width"] == other["params"]["width"]


def test_starvation_records_every_workload_with_the_writer_rate(results):
    from experiments.measure.starvation import ALGORITHMS as STARVED, workloads

    _, recs = results
    cells = {(r["algorithm"], r["workload"]): r for r in by_experiment(recs, "starvation")}
    assert set(cells) == {(a, w) for a in STARVED for w in workloads()}
    for (alg, workload), r in cells.items():
        assert r["status"] == "ok", r
        has_writer = not workload.endswith("/none")
        assert r["threads"] == (2 if has_writer else 1)
        assert (r["params"]["writes_per_s"] > 0) is has_writer, r


def test_only_documented_cells_are_not_measured(results):
    _, recs = results
    for r in recs:
        if r["status"] == "ok":
            continue
        assert r["status"] == "skipped", f"failed cell: {r['experiment']} {r['algorithm']} " \
                                         f"{r['workload']}: {r['note']}"
        alg = r["algorithm"]
        if r["experiment"] == "primitives":
            assert alg.startswith("atomics_") and r["note"].startswith("not available"), r
        elif alg == "paho":
            assert (unavailable("paho") or r["experiment"] == "lockfree"
                    or (r["experiment"] == "scaling" and r["threads"] > 1)
                    or (r["experiment"] == "contention" and r["threads"] > 1
                        and r["workload"] == "shared")
                    or (r["experiment"] == "sharing" and r["threads"] > 1
                        and r["params"]["mode"].startswith("shared"))), r
        else:
            # The inverted bitmap may skip a memory or ownership cell over its scan budget,
            # saying so.
            assert alg == "inverted_bitmap" and r["experiment"] in ("memory", "ownership"), r
            assert "budget" in r["note"]


def test_latency_cells_and_dialects(results):
    _, recs = results
    lat = by_experiment(recs, "latency")
    for alg in ALGORITHMS:
        dialects = ("mqtt",) if alg == "paho" else ("nats", "mqtt")
        for d in dialects:
            got = {r["workload"] for r in lat if r["algorithm"] == alg and r["dialect"] == d}
            want = latency_cells(alg, d)
            assert got == want, f"{alg}:{d}: {want ^ got}"
    methods = {r["params"].get("method") for r in lat if r["status"] == "ok"}
    assert methods == {"timeit"}


def test_dense_lookup_runs_beside_the_sparse_one(results):
    from experiments.measure.latency import DENSE_ALGORITHMS
    from experiments.config import SIZES

    _, recs = results
    size = SIZES["smoke"]
    lat = by_experiment(recs, "latency")
    dense = {r["algorithm"]: r for r in lat if r["workload"] == DENSE_CELL}
    assert set(dense) == set(DENSE_ALGORITHMS)
    sparse = {r["algorithm"]: r for r in lat if r["workload"] == "lookup/hot/faithful"}
    for alg, r in dense.items():
        if alg == "paho" and unavailable("paho"):
            assert r["status"] == "skipped"
            continue
        assert r["status"] == "ok" and r["dialect"] == "mqtt", r
        assert r["run_id"] == sparse[alg]["run_id"]  # one run: the ratios are within it
        p = r["params"]
        assert (p["filters"], p["topics"]) == (size.dense_filters, size.dense_topics)
        # Answers checked against ctrie.matches, and wildcards that do match several filters.
        assert p["oracle_checked"] > 0 and p["matches_per_topic"] > 1
        assert p["matches_per_topic"] == dense["cstrie"]["params"]["matches_per_topic"]


def test_dense_workload_is_seeded_distinct_and_dense():
    from experiments.workloads import DENSE_LEVELS, dense_workload, to_mqtt

    wl = dense_workload(SEED)
    assert wl == dense_workload(SEED) and wl != dense_workload(SEED + 1)
    assert len(wl.filters) == len(set(wl.filters)) == 850 and len(wl.topics) == 2000
    for f in map(to_mqtt, wl.filters):
        levels = f.split("/")
        assert 1 <= len(levels) <= DENSE_LEVELS and "#" not in levels[:-1]
        assert len(levels) < DENSE_LEVELS or levels[-1] != "#"
    assert all(len(t.split(".")) == DENSE_LEVELS for t in wl.topics)
    from ctrie import CSTrie

    m = CSTrie(dialect="mqtt")
    for i, f in enumerate(wl.filters):
        m.subscribe(to_mqtt(f), i)
    per_topic = sum(len(m.lookup(to_mqtt(t))) for t in wl.topics) / len(wl.topics)
    assert 7 <= per_topic <= 12, per_topic  # "about 9 matches per topic"


def test_level_width_measures_both_tries_at_every_width(results):
    from experiments.config import SIZES
    from experiments.measure.level_width import (ALGORITHMS as WIDTH_ALGORITHMS, CROWD_PATTERN,
                                                 WORKLOADS, ops_for)

    _, recs = results
    size = SIZES["smoke"]
    got = {(r["algorithm"], r["workload"], r["params"]["width"]): r
           for r in by_experiment(recs, "level_width")}
    assert set(got) == {(a, w, n) for a in WIDTH_ALGORITHMS for w in WORKLOADS
                        for n in size.width_levels}
    for (alg, workload, width), r in got.items():
        assert r["status"] == "ok" and r["dialect"] == "nats", r
        assert r["rounds"] == len(r["values"]) == size.width_rounds
        assert r["params"]["ops"] == ops_for(width, size.width_ops)
        # The crowd workload writes to one pattern of ``width`` subscribers, not the level.
        assert (r["params"]["subject"] == CROWD_PATTERN) == (workload == "crowd"), r
    assert len({r["run_id"] for r in got.values()}) == 1


def test_level_width_chart_draws_a_line_per_trie_and_build(results):
    pytest.importorskip("matplotlib")
    from experiments.report.charts import fig_level_width
    from experiments.measure.level_width import ALGORITHMS as WIDTH_ALGORITHMS, WORKLOADS

    _, recs = results
    mine = by_experiment(recs, "level_width")
    # The same records again as a free-threaded build's: one figure, both builds.
    other = [{**r, "build": "3.99.0-ft", "python": "3.99.0", "free_threaded_build": True,
              "gil_enabled": False, "run_id": r["run_id"] + "-ft"} for r in mine]
    for records, builds in ((mine, 1), (mine + other, 2)):
        fig = fig_level_width(records)
        assert len(fig.axes) == len(WORKLOADS)
        for ax in fig.axes:
            _, labels = ax.get_legend_handles_labels()
            assert len(labels) == len(set(labels)) == len(WIDTH_ALGORITHMS) * builds, labels
            assert ax.get_xscale() == ax.get_yscale() == "log"
        if builds == 2:
            assert any("free-threaded" in lab for lab in labels)


def test_throughput_answers_agree_with_the_reference(results):
    _, recs = results
    for r in by_experiment(recs, "throughput"):
        if r["status"] == "ok":
            assert r["params"]["oracle_checked"] > 0
            assert r["params"]["oracle_mismatches"] == 0, r["params"].get("oracle_first_mismatch")


def test_every_shared_scaling_cell_has_the_owner_built_limit_beside_it(results):
    """Issue 19: beside each shared result, one matcher per thread built by its reader."""
    _, recs = results
    scaling = by_experiment(recs, "scaling")
    cells = {(r["algorithm"], r["workload"], r["threads"]): r for r in scaling}
    shared = [k for k in cells if not k[1].endswith("/own")]
    assert shared
    for a, w, n in shared:
        s, o = cells[(a, w, n)], cells[(a, f"{w}/own", n)]
        assert (s["params"]["sharing"], o["params"]["sharing"]) == ("shared", "own")
        assert o["status"] == s["status"], (a, w, n)
        assert o["params"]["write_share"] == s["params"]["write_share"]
        if o["status"] == "ok":
            assert o["rounds"] == s["rounds"] and o["median"] > 0
    assert len(cells) == 2 * len(shared)


def test_scaling_records_the_real_write_share(results):
    _, recs = results
    for r in by_experiment(recs, "scaling"):
        share, n = r["params"]["write_share"], r["threads"]
        workload = r["workload"].removesuffix("/own")
        if workload == "50/50":
            assert share == 0.5
        elif workload == "90/10-faithful":
            assert share == pytest.approx(-(-n // 10) / n)  # ceil(n / 10) writers of n
        else:
            assert 0.0 <= share <= 0.3
        if r["status"] == "ok":
            p = r["params"]
            assert p["wall_s"]["min"] > 0
            # One CPU-time sum per round, and no round can use more CPU than its threads had.
            assert len(p["cpu_s_values"]) == len(p["wall_s_values"]) == r["rounds"]
            assert 0 < p["cpu_per_op_us"]["min"] <= p["cpu_per_op_us"]["max"]
            assert 0 < p["parallelism"]["max"] <= n * 1.05 + 0.05
        if thread_safe(r["algorithm"]) or n == 1:
            assert r["status"] == "ok" or unavailable(r["algorithm"]), r


def test_memory_grows_with_subscriptions(results):
    _, recs = results
    for alg in ("cstrie", "locked_trie"):
        cells = sorted((r for r in by_experiment(recs, "memory")
                        if r["algorithm"] == alg and r["dialect"] == "nats"
                        and r["workload"] == "3-digit/distinct"),
                       key=lambda r: r["params"]["subscriptions"])
        assert len(cells) >= 2
        assert cells[0]["median"] < cells[-1]["median"]


def test_charts_and_summary_from_the_records(results, tmp_path):
    pytest.importorskip("matplotlib")
    out, _ = results
    figs = tmp_path / "figures"
    ok_or_fail(cli("charts", "--from", str(out), "--out", str(figs)))
    from experiments.report.charts import FIGURES

    for name in FIGURES:
        for fmt in ("png", "svg"):
            path = figs / f"{name}.{fmt}"
            assert path.is_file() and path.stat().st_size > 1000, path
    proc = cli("summary", "--from", str(out))
    ok_or_fail(proc)
    table = json.loads((out / "summary-latest.json").read_text())
    keys = {row["target"] for row in table["rows"]}
    from experiments.report.summary import TARGETS

    assert keys == {t.key for t in TARGETS}
    for row in table["rows"]:
        assert row["status"] in ("met", "missed", "no data")
        assert row["label"] in proc.stdout
    # A GIL-only result set cannot answer the free-threaded target, and says so.
    ft = [row for row in table["rows"] if row["target"] == "ft_9010_2v1"]
    if getattr(sys, "_is_gil_enabled", lambda: True)():
        assert ft[0]["status"] == "no data"
    # The dense lookup ratios stand beside the sparse ones, from the same run.
    rows = {row["target"]: row for row in table["rows"]}
    if not unavailable("paho"):
        for key in DENSE_TARGETS:
            assert rows[key]["status"] in ("met", "missed"), rows[key]
            assert rows[key]["run_id"] == rows["hot_lookup_vs_paho"]["run_id"]
    # The paper, from the same records: both lookup ratios and the level-width table.
    paper = tmp_path / "paper.md"
    ok_or_fail(cli("paper", "--from", str(out), "--out", str(paper)))
    text = paper.read_text()
    assert "{{" not in text
    for key in ("hot_lookup_vs_lockedtrie", "hot_lookup_vs_paho", *DENSE_TARGETS):
        if rows[key]["value"] is not None:
            assert f"{rows[key]['value']:.2f} ({rows[key]['margin']}" in text, key
    dense_line = next(line for line in text.splitlines() if line.startswith("| dense wildcard"))
    assert "matches each" in dense_line
    from experiments.config import SIZES

    for width in SIZES["smoke"].width_levels:
        assert f"\n| {width:,} | " in text, width
    assert "\n| subscribers | " in text  # the crowded-pattern table beside it
    assert "figures/level_width.png" in text


def test_pyperf_path(tmp_path):
    pytest.importorskip("pyperf")
    proc = cli("latency", "--smoke", "--method", "pyperf", "--algorithms", "cstrie",
               "--dialects", "nats,mqtt", "--out", str(tmp_path))
    ok_or_fail(proc)
    recs = load(tmp_path)
    for d in ("nats", "mqtt"):
        assert {r["workload"] for r in recs if r["dialect"] == d} == latency_cells("cstrie", d)
    for r in recs:
        assert r["status"] == "ok", r
        assert r["params"]["method"] == "pyperf"
        assert (tmp_path / r["build"] / r["params"]["pyperf_file"]).is_file()


def test_python_option_reruns_under_the_given_interpreter(tmp_path):
    proc = cli("primitives", "--smoke", "--method", "timeit", "--python", sys.executable,
               "--out", str(tmp_path))
    ok_or_fail(proc)
    assert "running under" in proc.stderr
    assert by_experiment(load(tmp_path), "primitives")


def test_summary_arithmetic():
    from experiments.report.summary import compute

    def rec(alg: str, median: float, **kw: object) -> dict:
        base = {"experiment": "latency", "algorithm": alg, "dialect": "mqtt",
                "workload": "lookup/hot/faithful", "params": {}, "threads": 1,
                "median": median, "min": median, "max": median, "unit": "ns",
                "status": "ok", "build": "3.x-gil", "run_id": "r1", "size": "quick",
                "free_threaded_build": False, "gil_enabled": True, "timestamp": "t"}
        base.update(kw)
        return base

    rows = compute([rec("cstrie", 40.0), rec("paho", 100.0),
                    # a paho cell of another run must not be paired with r1's CS-trie
                    rec("paho", 1.0, run_id="r0")])
    row = next(r for r in rows if r["target"] == "hot_lookup_vs_paho")
    assert row["status"] == "met" and row["value"] == pytest.approx(0.4)
    assert row["margin"] == "met by 20%"
    rows = compute([rec("cstrie", 60.0), rec("paho", 100.0)])
    row = next(r for r in rows if r["target"] == "hot_lookup_vs_paho")
    assert row["status"] == "missed" and row["margin"] == "missed by 20%"
    assert next(r for r in rows if r["target"] == "throughput_vs_paho")["status"] == "no data"


@pytest.mark.parametrize("args, option", [
    (("latency", "--seed", "-1"), "--seed"),
    (("scaling", "--algorithms", "cstrie,nope"), "--algorithms"),
    (("all", "--quick", "--smoke"), "--smoke"),
    (("memory", "--python", "/nonexistent/python"), "--python"),
    (("charts", "--from", "/nonexistent/results"), "--from"),
])
def test_bad_arguments_name_the_option(args, option):
    proc = cli(*args)
    assert proc.returncode == 2
    assert option in proc.stderr and "error" in proc.stderr


# --- the main job leaves the checkout alone; publish is the one step that changes it --------

#: The tracked files that results are drawn into: only ``publish`` may change them.
PUBLISHED = ("README.md", "paper/paper.md", "paper/figures")


def _published_snapshot() -> dict[str, bytes]:
    out = {}
    for rel in PUBLISHED:
        path = ROOT / rel
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if f.is_file():
                out[str(f.relative_to(ROOT))] = hashlib.sha256(f.read_bytes()).digest()
    return out


def test_reproduce_steps_write_below_the_results_root_only(results):
    """``make reproduce`` runs charts, paper and summary with their defaults after measuring:
    they must write beside the records, never into the checkout's README, paper or figures."""
    pytest.importorskip("matplotlib")
    out, _ = results
    before = _published_snapshot()
    for command in ("charts", "paper", "summary"):
        ok_or_fail(cli(command, "--from", str(out)))
    assert _published_snapshot() == before
    assert (out / "paper" / "figures" / "throughput.png").is_file()
    assert "figures/throughput.png" in (out / "paper" / "paper.md").read_text()


def test_only_publish_writes_the_readme_table(results):
    proc = cli("summary", "--from", str(results[0]), "--readme", "README.md")
    assert proc.returncode == 2 and "unrecognized arguments: --readme" in proc.stderr


def test_publish_refuses_runs_below_publication_size(results):
    out, _ = results
    before = _published_snapshot()
    proc = cli("publish", "--from", str(out))
    assert proc.returncode != 0
    assert "is of size 'smoke'" in proc.stderr and "make reproduce-full" in proc.stderr
    assert _published_snapshot() == before


def test_publish_redraws_the_checkouts_results(results, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from experiments.report import publish
    from experiments.report.summary import README_BEGIN, README_END

    out, _ = results
    fake = tmp_path / "checkout"
    (fake / "paper").mkdir(parents=True)
    (fake / "pyproject.toml").write_text("")
    (fake / "README.md").write_text(f"intro\n{README_BEGIN}\nstale table\n{README_END}\nend\n")
    shutil.copy(ROOT / "paper" / "paper.template.md", fake / "paper" / "paper.template.md")
    monkeypatch.setattr(publish, "PROJECT_ROOT", fake)
    with pytest.raises(SystemExit, match="size 'smoke'"):
        publish.run_publish(out)
    # A GIL-only result set has no data for the free-threaded target: publishing it would
    # replace committed rows with 'no data', so it takes saying so.
    with pytest.raises(SystemExit, match="no data there"):
        publish.run_publish(out, ["smoke"])
    assert "stale table" in (fake / "README.md").read_text()
    publish.run_publish(out, ["smoke"], allow_missing=True)
    figures = fake / "paper" / "figures"
    assert (figures / "throughput.png").is_file() and not list(figures.glob("*.svg"))
    readme = (fake / "README.md").read_text()
    assert readme.startswith("intro\n") and readme.endswith("end\n")
    assert "stale table" not in readme and "(smoke)" in readme
    assert "{{" not in (fake / "paper" / "paper.md").read_text()


def test_a_newcomers_first_command_is_quick():
    from experiments.cli import build_parser

    for command in ("all", "latency", "sharing"):
        assert build_parser().parse_args([command]).size == "quick"
    assert build_parser().parse_args(["all", "--full"]).size == "full"


def test_console_script_runs_this_package_beside_a_folder_named_experiments(tmp_path):
    """``experiments`` is a common name: in a directory with a package of that name,
    ``python -m experiments`` runs that one, the console script and its ``--python``
    re-exec must still run this one."""
    script = Path(sys.executable).with_name("cstrie-experiments")
    if not script.exists():
        pytest.skip(f"no console script beside {sys.executable} (pip install -e . installs it)")
    impostor = tmp_path / "experiments"
    impostor.mkdir()
    (impostor / "__init__.py").write_text("")
    (impostor / "__main__.py").write_text("print('IMPOSTOR')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["CSTRIE_NO_PROGRESS"] = "1"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(script), *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)

    proc = run("--help")
    ok_or_fail(proc)
    assert proc.stdout.startswith("usage: cstrie-experiments") and "IMPOSTOR" not in proc.stdout
    out = tmp_path / "results"
    proc = run("primitives", "--smoke", "--method", "timeit", "--python", sys.executable,
               "--out", str(out))
    ok_or_fail(proc)
    assert "IMPOSTOR" not in proc.stdout
    assert {r["experiment"] for r in load(out)} == {"primitives"}


def test_a_run_prints_its_estimate_from_the_last_run_of_its_size(tmp_path):
    first = cli("primitives", "--smoke", "--method", "timeit", "--out", str(tmp_path))
    ok_or_fail(first)
    assert "no earlier smoke run of primitives" in first.stderr
    second = cli("all", "--smoke", "--method", "timeit", "--out", str(tmp_path),
                 "--algorithms", "cstrie")
    ok_or_fail(second)
    line = next(x for x in second.stderr.splitlines() if "estimate:" in x)
    assert "as the last smoke runs here took" in line
    assert "plus latency, throughput" in line  # never run at this size here: said, not guessed


def test_latency_chart_draws_the_dialect_measured(tmp_path):
    """A run with --dialects mqtt: every row has its points (the CS-trie and LockedTrie rows
    were drawn empty, fixed to NATS), and the title names the dialect drawn."""
    pytest.importorskip("matplotlib")
    from experiments.report.charts import fig_latency

    ok_or_fail(cli("latency", "--smoke", "--method", "timeit", "--dialects", "mqtt",
                   "--algorithms", "cstrie,locked_trie,paho", "--out", str(tmp_path)))
    recs = load(tmp_path)
    for state in ("cold", "hot"):
        fig = fig_latency(recs, state)
        for ax in fig.axes:
            labels = [t.get_text() for t in ax.get_yticklabels()]
            rows = {round(y) for line in ax.lines for y in line.get_ydata()}
            assert len(labels) == 3 - bool(unavailable("paho")), labels
            assert rows == set(range(len(labels))), (ax.get_title(), labels, rows)
        assert "MQTT dialect" in fig._suptitle.get_text()
        assert not fig.missing_cells, fig.missing_cells


#: Per figure, one measured cell to take away (experiment, fields): the figure must say so.
TAKEN = {
    "latency_cold": ("latency", {"algorithm": "cstrie", "workload": "subscribe/cold/faithful"}),
    "latency_hot": ("latency", {"algorithm": "cstrie", "workload": "lookup/hot/distinct"}),
    "throughput": ("throughput", {"algorithm": "cstrie", "dialect": "mqtt"}),
    "memory": ("memory", {"algorithm": "cstrie", "workload": "3-digit/digits"}),
    "scaling_50-50": ("scaling", {"algorithm": "cstrie", "workload": "50/50", "threads": 2}),
    "scaling_90-10-faithful": ("scaling", {"algorithm": "cstrie", "workload": "90/10-faithful",
                                           "threads": 2}),
    "scaling_90-10-true": ("scaling", {"algorithm": "cstrie", "workload": "90/10-true",
                                       "threads": 2}),
    "lockfree": ("lockfree", {"algorithm": "cstrie", "workload": "1:3"}),
    "contention": ("contention", {"algorithm": "cstrie", "workload": "shared", "threads": 2}),
    "sharing": ("sharing", {"algorithm": "cstrie", "workload": "shared/w10/gc-on",
                            "threads": 2}),
    "level_width": ("level_width", {"algorithm": "cstrie", "workload": "write"}),
    "primitives": ("primitives", {"algorithm": "atomicref_get"}),
}


def _taken(recs: list[dict], name: str) -> list[dict]:
    experiment, fields = TAKEN[name]
    return [r for r in recs if r["experiment"] == experiment
            and all(r.get(k) == v for k, v in fields.items())]


def test_every_figure_says_which_cells_it_has_no_data_for(results):
    """Take one measured cell away from the records: the figure lists it under itself."""
    pytest.importorskip("matplotlib")
    from experiments.registry import LABELS
    from experiments.report.charts import FIGURES
    from experiments.report.plotting import pyplot

    assert set(TAKEN) == set(FIGURES)
    _, recs = results
    for name, func in FIGURES.items():
        gone = _taken(recs, name)
        assert gone and all(r["status"] == "ok" for r in gone), name
        whole = func(recs)
        fig = func([r for r in recs if not any(r is g for g in gone)])
        assert fig.missing_count > whole.missing_count, name
        notes = [t.get_text() for t in fig.texts if t.get_gid() == "missing-cells"]
        what = LABELS.get(gone[0]["algorithm"], gone[0]["algorithm"])
        assert len(notes) == 1 and what in notes[0] and "no record" in notes[0], (name, notes)
        pyplot().close(whole)
        pyplot().close(fig)


def test_charts_warn_once_per_figure_with_missing_cells(results, tmp_path):
    pytest.importorskip("matplotlib")
    import shutil

    out, _ = results
    root = tmp_path / "results"
    shutil.copytree(out, root)
    experiment, fields = TAKEN["latency_hot"]
    for path in root.rglob(f"{experiment}-*.jsonl"):
        kept = [line for line in path.read_text().splitlines(keepends=True)
                if not all(json.loads(line).get(k) == v for k, v in fields.items())]
        path.write_text("".join(kept))
    proc = cli("charts", "--from", str(root), "--out", str(tmp_path / "figures"))
    ok_or_fail(proc)
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith("warning: latency_hot:"), proc.stderr
