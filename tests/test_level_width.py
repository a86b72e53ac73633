"""The level-width experiment keeps what one matcher measured when the other one fails.

Each trie has two matchers at each width: the level of inboxes (``write``, ``lookup``) and
the crowded pattern (``crowd``). A failure of one must mark only its own cells as failed,
with its error, and keep the other's values.
"""

from __future__ import annotations

import pytest

from experiments.config import SIZES
from experiments.env import Run
from experiments.measure import level_width
from experiments.records import load


@pytest.mark.parametrize("breaks", ["crowd", "level"])
def test_a_failing_matcher_fails_only_its_own_cells(tmp_path, monkeypatch, breaks):
    real = {"crowd": level_width.time_crowd_writes, "level": level_width.time_writes}
    calls = {"n": 0}

    def flaky(m, ops, tag):
        # The CS-trie's matcher of this kind fails in its second round at every width.
        if type(m).__name__ == "CSTrie":
            calls["n"] += 1
            if tag == "r1-":
                raise RuntimeError(f"injected {breaks} failure")
        return real[breaks](m, ops, tag)

    monkeypatch.setattr(level_width, "time_crowd_writes" if breaks == "crowd" else "time_writes",
                        flaky)
    run = Run(tmp_path / "r", 1, SIZES["smoke"], [])
    level_width.run_level_width(run, list(level_width.ALGORITHMS), ["nats"])
    run.finish("complete")
    recs = [r for r in load(tmp_path / "r") if r["experiment"] == "level_width"]
    assert calls["n"] >= 2
    hit = {"crowd": {"crowd"}, "level": {"write", "lookup"}}[breaks]
    for r in recs:
        if r["algorithm"] == "cstrie" and r["workload"] in hit:
            assert r["status"] == "failed" and f"injected {breaks} failure" in r["note"], r
        else:
            assert r["status"] == "ok" and len(r["values"]) == SIZES["smoke"].width_rounds, r
    assert {r["workload"] for r in recs} == set(level_width.WORKLOADS)
