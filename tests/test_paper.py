"""The paper generator fills every placeholder from result files and refuses unknown ones."""

from __future__ import annotations

import pytest

from experiments.paper import PUBLISHED_LATENCY, render


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
