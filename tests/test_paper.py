"""The paper generator fills every placeholder from result files and refuses unknown ones."""

from __future__ import annotations

import json

import pytest

from experiments.report.paper import render
from experiments.report.tables import PUBLISHED_LATENCY


def _rec(**kw):
    base = {"status": "ok", "build": "3.11.7-gil", "run_id": "r1", "size": "smoke",
            "gil_enabled": True, "free_threaded_build": False, "python": "3.11.7",
            "cpu_count": 2, "git_commit": "abc", "seed": 1, "timestamp": "t", "min": 1,
            "max": 1, "threads": 1, "params": {}}
    base.update(kw)
    return base


def test_latency_table_gives_ratios_to_the_cstrie_and_the_published_rows():
    recs = [_rec(experiment="latency", algorithm=a, dialect="nats",
                 workload=f"{op}/{st}/faithful", median=m, unit="ns")
            for a, m in (("cstrie", 1000.0), ("locked_trie_nocache", 1500.0))
            for op in ("subscribe", "unsubscribe", "lookup") for st in ("cold", "hot")]
    out = render("{{latency_tables}}\n{{published_latency}}\n{{runs}}", recs)
    assert "| CS-trie (lock-free) | 1,000 (1x)" in out
    assert "| LockedTrie (no cache) | 1,500 (1.5x)" in out
    assert f"| trie (global lock) | {PUBLISHED_LATENCY['locked_trie'][0]:,}" in out
    assert "`r1`: smoke size, Python 3.11.7 (GIL on)" in out


def test_unknown_placeholder_is_an_error():
    with pytest.raises(SystemExit, match="nonsense"):
        render("{{nonsense}}", [_rec(experiment="latency", algorithm="cstrie",
                                     dialect="nats", workload="lookup/hot/faithful",
                                     median=1.0, unit="ns")])


def _contention(alg, sharing, threads, median, build="3.13.5-ft"):
    return _rec(experiment="contention", algorithm=alg, dialect="nats", workload=sharing,
                threads=threads, median=median, unit="us", build=build, run_id="c1",
                gil_enabled=False, free_threaded_build=True, python="3.13.5",
                params={"sharing": sharing, "parallelism": {"median": 1.9}})


def test_contention_table_and_facts_give_the_growth_from_one_to_two_threads():
    recs = [_contention("cstrie", "shared", 1, 5.0), _contention("cstrie", "shared", 2, 12.5),
            _contention("cstrie", "per-thread", 1, 5.0),
            _contention("cstrie", "per-thread", 2, 5.5)]
    out = render("{{contention_table}}\nshared {{fact:ft_cstrie_shared_growth}}, own "
                 "{{fact:ft_cstrie_per_thread_growth}}, par "
                 "{{fact:ft_cstrie_shared_parallelism}}", recs)
    assert "| 5 | 12.5 | **2.50x** | 5 | 5.5 | **1.10x** |" in out
    assert "shared 2.50, own 1.10, par 1.90" in out


def test_unknown_fact_is_an_error():
    with pytest.raises(SystemExit, match="no_such_fact"):
        render("{{fact:no_such_fact}}", [_contention("cstrie", "shared", 1, 5.0)])


def test_shape_table_counts_pairs_ordered_as_the_published_figures():
    # Published hot lookup: CS-trie 1,637 < trie 2,278 < optimized 3,337 (ns). Here the
    # optimized bitmap comes first: it is ahead of both, which flips two of three pairs.
    recs = [_rec(experiment="latency", algorithm=a, dialect="nats",
                 workload="lookup/hot/faithful", median=m, unit="ns")
            for a, m in (("cstrie", 1000.0), ("locked_trie_nocache", 2000.0),
                         ("optimized_bitmap", 500.0))]
    out = render("{{shape_table}}", recs)
    assert "| lookup hot latency | Python 3.11.7 (GIL) | 1 of 3 |" in out
    assert "optimized bitmap ahead of CS-trie (lock-free) (by 100%)" in out
    assert "optimized bitmap ahead of LockedTrie (no cache) (by 300%)" in out


def test_spark_and_correctness_tables_read_their_json_files(tmp_path):
    (tmp_path / "pipeline" / "r").mkdir(parents=True)
    (tmp_path / "pipeline" / "r" / "summary.json").write_text(json.dumps({
        "command": "route", "messages_in": 1000, "subscriptions_in": 10, "matcher": "cstrie",
        "impl": "arrow", "cores": 2, "messages_per_second": 1234.5, "deliveries": 4321,
        "messages_rejected": 3, "inprocess": {"per_core_ratio": 0.25},
        "baseline": {"messages": 100, "speedup": 63.2, "equal": True},
        "spark_version": "4.3.0", "master": "local[*]", "python": "3.11.7"}))
    (tmp_path / "test-figures").mkdir()
    (tmp_path / "test-figures" / "gil.json").write_text(json.dumps({
        "python": "3.11.7", "gil_enabled": True, "git_commit": "abcdef0123456",
        "tests_collected": 700, "tests_failed": 0,
        "figures": {"linearizability histories x4 threads (gil)": 1000, "validation cases nats": 2}}))
    recs = [_rec(experiment="latency", algorithm="cstrie", dialect="nats",
                 workload="lookup/hot/faithful", median=1.0, unit="ns")]
    out = render("{{spark_table}}\n{{correctness_table}}", recs, tmp_path)
    assert "| 1,000 | 10 | cstrie | arrow | 2 | 1,234 | 4,321 | 3 | 0.25 | 100, 63x, yes |" in out
    assert "| linearizability histories x4 threads (gil) | 1,000 |" in out
    assert "validation cases" not in out and "1 more" in out
    assert "| tests collected / failed | 700 / 0 |" in out


def test_missing_spark_and_test_figures_say_how_to_make_them(tmp_path):
    recs = [_rec(experiment="latency", algorithm="cstrie", dialect="nats",
                 workload="lookup/hot/faithful", median=1.0, unit="ns")]
    out = render("{{spark_table}}\n{{correctness_table}}", recs, tmp_path)
    assert "make pipeline-bench" in out and "make test" in out


def _sharing(alg, mode, threads, rate, cpu, build="3.13.5-ft", share=0.1):
    ft = build.endswith("-ft")
    s = {"median": rate, "q1": rate * 0.9, "q3": rate * 1.1, "min": rate * 0.8, "max": rate * 1.2}
    return _rec(experiment="sharing", algorithm=alg, dialect="nats", threads=threads,
                workload=f"{mode}/w{round(share * 100)}/gc-on", median=rate, unit="ops/s",
                build=build, run_id="s-" + build, gil_enabled=not ft, free_threaded_build=ft,
                python="3.13.5" if ft else "3.11.7",
                params={"mode": mode, "write_share": share, "gc": "on", "ops_per_s": s,
                        "cpu_per_op_us": {"median": cpu},
                        "events_per_op": {"rewalk": 0.002, "gcas_fail": 0.0005}})


def test_sharing_table_reads_shared_against_the_owner_built_limit_and_the_gil_build():
    recs = [_sharing("cstrie", "shared", 1, 100_000, 10.0),
            _sharing("cstrie", "shared", 2, 150_000, 13.0),
            _sharing("cstrie", "per-thread-own", 2, 200_000, 10.0),
            _sharing("cstrie", "shared", 2, 120_000, 8.0, build="3.11.7-gil")]
    out = render("{{sharing_table}}\n{{fact:ft_sharing_cstrie_w10_shared_over_own}} "
                 "{{fact:ft_sharing_cstrie_w10_2v1}}\n{{sharing_model_table}}", recs)
    ft_row = next(line for line in out.splitlines() if "free-threaded" in line and "CS-trie" in line)
    # shared / own = 150k / 200k; 2 threads / 1 = 1.5; the GIL build's shared 2-thread rate.
    assert "| 0.75 | 1.50 | 120k [108k–132k] |" in ft_row
    assert "13.00 / 10.00" in ft_row and "| 2.00, 0.50 |" in ft_row
    assert "0.75 1.50" in out
    # Model: c1 = 10, c2 = 13 µs: at 16 threads 16 / (10 + 3 * 2 * 15/16) µs = 1,024k ops/s.
    model_row = next(line for line in out.splitlines() if line.startswith("| Python 3.13.5")
                     and "model" not in line and "1,024k" in line)
    assert "A model, not a measurement" in out and model_row
    # With rounds paired with the limit's, shared / own is the median of the round ratios.
    recs[1]["params"]["over_limit_by_round"] = [0.5, 0.6, 0.9]
    assert "| 0.60 | 1.50 |" in render("{{sharing_table}}", recs)


def test_scaling_table_gives_quartiles_and_the_gil_rate_beside_a_free_threaded_result():
    def rec(build, threads, values):
        ft = build.endswith("-ft")
        return _rec(experiment="scaling", algorithm="cstrie", dialect="nats",
                    workload="90/10-true", threads=threads, unit="ops/s", build=build,
                    run_id="s-" + build, gil_enabled=not ft, free_threaded_build=ft,
                    values=values, median=sorted(values)[len(values) // 2],
                    params={"wall_s": {"median": 0.01}})
    recs = [rec("3.13.5-ft", 1, [90.0, 100.0, 110.0]), rec("3.13.5-ft", 2, [150.0, 160.0, 250.0]),
            rec("3.11.7-gil", 2, [70.0, 80.0, 90.0])]
    own = rec("3.13.5-ft", 2, [300.0, 320.0, 340.0])
    own["workload"] = "90/10-true/own"
    out = render("{{scaling_tables}}", [*recs, own])
    ft = out[out.index("3.13.5-ft"):]
    # 2 threads: median 160, quartiles 155-205, 1.60x over 1 thread; the owner-built limit,
    # 320, of which shared is 0.50; the GIL build's 80.
    assert "160 [155–205] (1.60x)<br>own: 320 (shared / own 0.50)<br>GIL build: 80" in ft
    gil = out[out.index("3.11.7-gil"):out.index("3.13.5-ft")]
    assert "GIL build" not in gil.split("|---")[1]


def test_every_threaded_table_with_a_locked_trie_says_which_lock_it_holds():
    """Issue 19, point 4: the locked baseline is the faster lock, and every table says which."""
    from experiments.registry import LOCK_NOTE

    sharing = [_sharing(a, "shared", n, 100_000, 10.0) for a in ("cstrie", "locked_trie_nocache")
               for n in (1, 2)]
    contention = [_contention(a, "shared", n, 5.0) for a in ("cstrie", "locked_trie") for n in (1, 2)]
    scaling = [_rec(experiment="scaling", algorithm=a, dialect="nats", workload="90/10-true",
                    threads=1, unit="ops/s", values=[1.0], median=1.0,
                    params={"wall_s": {"median": 0.01}}) for a in ("cstrie", "locked_trie")]
    for template, recs in (("{{sharing_table}}", sharing), ("{{contention_table}}", contention),
                           ("{{scaling_tables}}", scaling)):
        assert LOCK_NOTE in render(template, recs), template
        without = [r for r in recs if not r["algorithm"].startswith("locked_trie")]
        assert LOCK_NOTE not in render(template, without), template


def test_scaling_chart_draws_quartiles_the_owner_built_limit_and_the_gil_rate():
    """Issue 19: the scaling chart, like its table, shows quartiles, and beside each shared
    curve the owner-built limit and (in a free-threaded panel) the GIL build's rate."""
    pytest.importorskip("matplotlib")
    from experiments.report.charts_threads import fig_scaling

    def rec(build, workload, threads, values):
        ft = build.endswith("-ft")
        return _rec(experiment="scaling", algorithm="cstrie", dialect="nats", workload=workload,
                    threads=threads, unit="ops/s", build=build, run_id="s-" + build,
                    gil_enabled=not ft, free_threaded_build=ft, values=values,
                    median=sorted(values)[len(values) // 2], min=min(values), max=max(values),
                    params={"wall_s": {"median": 0.01}, "write_share": 0.1})
    recs = [rec(b, w, n, v) for b in ("3.11.7-gil", "3.13.5-ft") for n in (1, 2)
            for w, v in (("90/10-true", [90.0, 100.0, 110.0, 200.0]),
                         ("90/10-true/own", [300.0, 320.0, 340.0]))]
    fig = fig_scaling(recs, "90/10-true")
    ft_tries = fig.axes[3]
    labels = [line.get_label() for line in ft_tries.get_lines()]
    assert "CS-trie (lock-free), own per thread" in labels
    assert "CS-trie (lock-free), GIL build" in labels
    assert "CS-trie (lock-free), GIL build" not in [x.get_label() for x in fig.axes[2].get_lines()]
    # Quartile whiskers: [90, 100, 110, 200] has quartiles 97.5 and 132.5 around its
    # median 110 (min-max would reach 90 and 200).
    caps = sorted({round(y, 1) for line in ft_tries.get_lines() for y in line.get_ydata()})
    assert 97.5 in caps and 132.5 in caps and 200.0 not in caps, caps


def test_level_width_facts_name_the_worst_width_apart_from_the_widest():
    # A sawtooth (experiments.config.LEAF_PEAKS): the highest CS-trie / LockedTrie ratio
    # lies at a middle width, which the 'worst' facts name; 'widest' stays the last width.
    ratios = {1: 1.5, 3500: 2.8, 10_000: 1.7, 100_000: 2.1}
    recs = [_rec(experiment="level_width", algorithm=a, dialect="nats", workload="write",
                 median=m, unit="ns", params={"width": w})
            for w, r in ratios.items()
            for a, m in (("cstrie", 1000.0 * r), ("locked_trie_nocache", 1000.0))]
    out = render("{{fact:gil_width_worst}} {{fact:gil_width_write_ratio_worst}} "
                 "{{fact:gil_width_widest}} {{fact:gil_width_write_ratio_widest}} "
                 "{{fact:leaf_peaks}}", recs)
    # (Of the peaks, only those the run measured: 3,500, not 110,000.)
    assert out == "3,500 2.80 100,000 2.10 3,500"
