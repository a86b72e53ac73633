"""The time estimate printed before a run comes only from earlier runs that did the same
work: a run that selects other algorithms, dialects, thread counts, round lengths or
workload options says plainly that the earlier run is not comparable, and a later run
with the first selection again is estimated from the run that matched it.
"""

from __future__ import annotations

import pytest

from test_experiments_smoke import ROOT, cli, ok_or_fail

EXAMPLE = ROOT / "examples" / "nats-inbox"
COMPARE = ("compare", "--subscriptions", str(EXAMPLE / "subscriptions.txt"), "--topics",
           str(EXAMPLE / "topics.txt"), "--rounds", "1", "--ops", "20", "--threads", "1",
           "--write-shares", "0", "--baseline", "cstrie")

#: command -> (its arguments, the options of the first selection, those of another, words
#: the not-comparable line must hold).
CASES = {
    "throughput": (("throughput", "--smoke"), ("--algorithms", "cstrie,locked_trie"),
                   ("--algorithms", "cstrie"), ("2 algorithms", "1 algorithm")),
    "memory": (("memory", "--smoke", "--algorithms", "cstrie"), ("--dialects", "nats"),
               ("--dialects", "nats,mqtt"), ("nats", "nats,mqtt")),
    "scaling": (("scaling", "--smoke", "--algorithms", "cstrie"), ("--threads", "1"),
                ("--threads", "1,2"), ("--threads 1", "--threads 1,2")),
    "compare": (COMPARE, ("--algorithms", "cstrie"), ("--algorithms", "cstrie,naive"),
                ("1 algorithm", "2 algorithms")),
}


def _estimate_line(stderr: str) -> str:
    lines = [x for x in stderr.splitlines() if "estimate" in x]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize("command", sorted(CASES))
def test_a_run_is_timed_only_from_the_same_selection(command, tmp_path):
    args, first, other, words = CASES[command]
    out = ("--out", str(tmp_path))
    proc = cli(*args, *first, *out)
    ok_or_fail(proc)
    line = _estimate_line(proc.stderr)
    assert "no earlier" in line and command in line, line
    proc = cli(*args, *other, *out)
    ok_or_fail(proc)
    line = _estimate_line(proc.stderr)
    assert "not comparable" in line and "about" not in line, line
    for word in words:
        assert word in line, line
    proc = cli(*args, *first, *out)
    ok_or_fail(proc)
    line = _estimate_line(proc.stderr)
    assert "estimate: about" in line and "not comparable" not in line, line


@pytest.mark.parametrize("junk", [
    "[]", '"text"', '{"run_id": "20000101T000000Z-0000", "size": "smoke"}',
    '{"run_id": "20000101T000000Z-0000", "size": {"name": "smoke"}, "seconds": [1]}',
    '{"run_id": "20000101T000000Z-0000", "size": {"name": "smoke"}, "method": "timeit", '
    '"seconds": {"primitives": "abc"}}',
    '{"run_id": "20000101T000000Z-0000", "size": {"name": "smoke"}, "method": "timeit", '
    '"seconds": {"primitives": null}}',
    '{"run_id": "20000101T000000Z-0000", "size": {"name": "smoke"}, "method": "timeit", '
    '"seconds": {"primitives": -500}}',
])
def test_a_run_file_of_another_shape_is_passed_over(junk, tmp_path):
    """A run file that is JSON but not a run's (edited, or another tool's) gives no
    estimate; it stopped the run before it measured anything (a traceback)."""
    from experiments.config import SIZES
    from experiments.env import Run
    from experiments.estimate import estimate_line

    run = Run(tmp_path, 1, SIZES["smoke"], [], plan={"method": "timeit"})
    (run.dir / "run-junk.json").write_text(junk)
    line = estimate_line(run, ["primitives"])
    assert line.startswith("no earlier smoke run of primitives"), line


def test_a_scaling_run_from_before_the_owner_built_cells_is_not_comparable(tmp_path):
    """Since e9c0b16 scaling measures every cell shared and owner-built: twice the work of a
    run file without ``scaling_layout``, whose time must not be the estimate."""
    import json

    args = ("scaling", "--smoke", "--algorithms", "cstrie", "--threads", "1",
            "--out", str(tmp_path))
    ok_or_fail(cli(*args))
    (run_file,) = tmp_path.glob("*/run-*.json")
    data = json.loads(run_file.read_text())
    assert data.pop("scaling_layout") == "shared+own"
    run_file.write_text(json.dumps(data))
    proc = cli(*args)
    ok_or_fail(proc)
    line = _estimate_line(proc.stderr)
    assert "not comparable" in line and "cells unknown" in line and "about" not in line, line


def test_a_level_width_run_of_other_widths_is_not_comparable(tmp_path):
    """The widths set level_width's work (the full size gained the leaf peaks, the widest
    of them its costliest width): a run file of other widths must not be the estimate."""
    import json

    args = ("level_width", "--smoke", "--algorithms", "cstrie", "--out", str(tmp_path))
    ok_or_fail(cli(*args))
    (run_file,) = tmp_path.glob("*/run-*.json")
    data = json.loads(run_file.read_text())
    data["size"]["width_levels"] = [1, 100]
    run_file.write_text(json.dumps(data))
    proc = cli(*args)
    ok_or_fail(proc)
    line = _estimate_line(proc.stderr)
    assert "not comparable" in line and "widths 1,100" in line and "about" not in line, line
