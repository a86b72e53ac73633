"""``compare``: the matchers on a workload given as files (experiments/measure/compare.py).

Bad files stop the command before anything is measured or written, with every bad line
reported; the file format reads legal patterns that hold spaces, ``#`` and TABs as they are;
the shipped example workloads are exactly what their generator writes; and a tiny run on
each example writes records that load, a table with ratios to the baseline, and a chart.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.compare_files import (EXAMPLES_DIR, SUBSCRIPTIONS, TOPICS, WorkloadError,
                                       read_workload)
from experiments.env import RECORD_FIELDS
from experiments.measure.compare import LATENCY, THROUGHPUT, threaded_workload
from experiments.records import load
from experiments.report.plotting import series_label
from experiments.workloads import EXAMPLES

GOOD_NATS_SUBS = "svc.orders.get\tw1\nsvc.*.get\tw2\n_INBOX.abc.*\tc1\n"
GOOD_NATS_TOPICS = "svc.orders.get\n_INBOX.abc.x1\n"

#: (dialect, subscriptions text, topics text, bad subscription lines, bad topic lines)
BAD = {
    "subscriptions": (
        "nats",
        "svc.orders.get\tw1\n"      # 1 good
        "svc..get\tw2\n"            # 2 empty token
        "\n"                        # 3 empty: skipped
        "foo.>.bar\tw3\n"           # 4 '>' not last
        "has space.x\tw4\n"         # 5 whitespace in a NATS token
        "ok.pattern\t\n"            # 6 empty subscriber after the TAB
        "plain.no.tab\n"            # 7 good: subscriber = line number
        + "a." * 500 + "b c\tw5\n"  # 8 whitespace, 1,000+ characters (abbreviated)
        "svc.orders.get\tw1\n",     # 9 good: a repeated line
        GOOD_NATS_TOPICS, [2, 4, 5, 6, 8], []),
    "topics": (
        "nats", GOOD_NATS_SUBS,
        "svc.orders.get\n"          # 1 good
        "svc.*.get\n"               # 2 wildcard in a topic
        "_INBOX.>\n"                # 3 wildcard in a topic
        "\n"                        # 4 empty: skipped
        "a..b\n"                    # 5 empty token
        "tab\there\n",              # 6 whitespace in a NATS token
        [], [2, 3, 5, 6]),
    "both-mqtt": (
        "mqtt",
        "home/living room/+\talice\n"  # 1 good: a space is part of a filter
        "#\tbob\n"                     # 2 good: '#' is a filter, not a comment
        "a/#/b\tcarol\n"               # 3 '#' not last
        "a+/b\tdave\n"                 # 4 '+' not a whole level
        "x/\ty\tzoe\n"                 # 5 good: pattern 'x/\ty' (TAB legal in MQTT)
        "sport/tennis#\n",             # 6 '#' not a whole level
        "home/living room/lamp\n"      # 1 good
        "home/+/lamp\n"                # 2 wildcard in a topic name
        "$SYS/broker\n"                # 3 good
        "a\x00b\n",                    # 4 NUL
        [3, 4, 6], [2, 4]),
}


def _write(tmp_path: Path, subs: str | bytes, topics: str | bytes) -> tuple[Path, Path]:
    s, t = tmp_path / "subs.txt", tmp_path / "topics.txt"
    for path, text in ((s, subs), (t, topics)):
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return s, t


def _compare(capsys: pytest.CaptureFixture, *args: str | Path) -> tuple[int, str, str]:
    rc = main(["compare", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CSTRIE_NO_PROGRESS", "1")


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_files_report_every_bad_line_and_measure_nothing(case, tmp_path, capsys):
    dialect, subs_text, topics_text, bad_subs, bad_topics = BAD[case]
    subs, topics = _write(tmp_path, subs_text, topics_text)
    out = tmp_path / "results"
    rc, stdout, err = _compare(capsys, "--subscriptions", subs, "--topics", topics,
                               "--dialect", dialect, "--out", out, "--rounds", "1")
    assert rc == 2, err
    for path, bad in ((subs, bad_subs), (topics, bad_topics)):
        reported = [int(n) for n in re.findall(rf"^{re.escape(str(path))}:(\d+): ", err, re.M)]
        assert reported == bad, f"{path.name}: reported lines {reported}, bad {bad}\n{err}"
    assert f"{len(bad_subs) + len(bad_topics)} problems in the workload" in err
    assert "nothing measured" in err
    assert max(map(len, err.splitlines())) < 200, "a long line is quoted whole"
    assert not out.exists(), "something was written although the files are bad"
    assert not stdout


@pytest.mark.parametrize("case", ["missing", "directory", "empty", "blank-lines"])
def test_unreadable_or_empty_files_measure_nothing(case, tmp_path, capsys):
    subs, topics = _write(tmp_path, GOOD_NATS_SUBS, GOOD_NATS_TOPICS)
    if case == "missing":
        topics = tmp_path / "no-such-file.txt"
    elif case == "directory":
        topics = tmp_path
    else:
        subs.write_text("" if case == "empty" else "\n\n\n")
    out = tmp_path / "results"
    rc, _, err = _compare(capsys, "--subscriptions", subs, "--topics", topics, "--out", out)
    assert rc == 2
    expected = {"missing": f"{topics}: cannot read it", "directory": f"{topics}: cannot read it",
                "empty": f"{subs}: no subscriptions", "blank-lines": f"{subs}: no subscriptions"}
    assert expected[case] in err
    assert not out.exists()


def test_the_format_reads_legal_patterns_as_they_are(tmp_path):
    subs, topics = _write(
        tmp_path,
        b"home/living room/+\talice\r\n#\tbob\n\n+/x\n x/\ty\tcarol\n#\tbob\n",
        b"home/living room/lamp\r\n x/\ty\n \n")
    wl = read_workload(subs, topics, "mqtt")
    assert wl.subscriptions == [("home/living room/+", "alice"), ("#", "bob"), ("+/x", 4),
                                (" x/\ty", "carol"), ("#", "bob")]
    assert wl.topics == ["home/living room/lamp", " x/\ty", " "]
    assert wl.duplicates == 1
    assert wl.files["subscriptions"].lines == 6 and wl.files["subscriptions"].entries == 5
    assert wl.max_words == 3
    with pytest.raises(WorkloadError) as info:  # the same files are not NATS
        read_workload(subs, topics, "nats")
    # Whitespace is illegal in NATS: patterns 1 and 5, all three topics.
    assert [p.split(": ")[0].rsplit("/", 1)[1] for p in info.value.problems] == [
        "subs.txt:1", "subs.txt:5", "topics.txt:1", "topics.txt:2", "topics.txt:3"]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_shipped_examples_are_what_the_generator_writes(name, tmp_path, capsys):
    folder = tmp_path / name
    rc, stdout, _ = _compare(capsys, "--write-example", name, folder)
    assert rc == 0 and str(folder / SUBSCRIPTIONS) in stdout
    for file in (SUBSCRIPTIONS, TOPICS):
        shipped = EXAMPLES_DIR / name / file
        assert (folder / file).read_bytes() == shipped.read_bytes(), (
            f"{shipped} differs from what the generator writes: regenerate it with "
            f"python -m experiments compare --write-example {name} examples/{name} "
            "--overwrite")
        assert shipped.stat().st_size < 300_000
    wl = read_workload(folder / SUBSCRIPTIONS, folder / TOPICS, EXAMPLES[name][1])
    assert wl.name == name and len(wl.subscriptions) == 2000 and len(wl.topics) == 5000


def _table_ratios(table: str) -> dict[tuple[str, str], str]:
    """(section title, algorithm label) -> the ratio column of the table ("" if none)."""
    out = {}
    for section in table.split("\n\n")[1:]:
        title, _head, *rows = section.splitlines()
        for row in rows:
            cols = re.split(r"\s{2,}", row.strip())  # label, median, q1 - q3, ratio[, note]
            out[(title.split(" (")[0], cols[0])] = cols[3] if len(cols) > 3 else ""
    return out


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_tiny_run_on_each_example(name, tmp_path, capsys):
    dialect = EXAMPLES[name][1]
    algorithms = ["cstrie", "cstrie_cache", "locked_trie_nocache"]
    if dialect == "mqtt" and importlib.util.find_spec("paho") is not None:
        algorithms.append("paho")
    folder, out, chart = EXAMPLES_DIR / name, tmp_path / "results", tmp_path / "chart.png"
    rc, stdout, err = _compare(
        capsys, "--subscriptions", folder / SUBSCRIPTIONS, "--topics", folder / TOPICS,
        "--dialect", dialect, "--algorithms", ",".join(algorithms), "--baseline", "locked_trie",
        "--threads", "1,2", "--write-shares", "0,0.5", "--rounds", "2", "--ops", "100",
        "--out", out, "--chart", chart)
    assert rc == 0, err
    recs = load(out)
    assert recs and {r["experiment"] for r in recs} == {"compare"}
    assert all(set(RECORD_FIELDS) <= set(r) for r in recs)
    measured = ["cstrie", "cstrie_cache", "locked_trie", *algorithms[2:]]  # baseline added
    cells = {(LATENCY, 1), (THROUGHPUT, 1)} | {
        (threaded_workload(s), n) for n in (1, 2) for s in (0.0, 0.5)}
    by_cell = {(r["algorithm"], r["workload"], r["threads"]): r for r in recs}
    assert set(by_cell) == {(a, w, n) for a in measured for w, n in cells}
    for (alg, workload, n), r in by_cell.items():
        if alg == "paho" and n > 1:
            assert r["status"] == "skipped" and "thread-safe" in r["note"]
            continue
        assert r["status"] == "ok", r
        p = r["params"]
        assert p["q1"] <= r["median"] <= p["q3"] and p["oracle_mismatches"] == 0
        assert len(r["values"]) == (2 if workload != LATENCY else 2 * 50)
        assert p["files"]["topics"]["sha256"] == hashlib.sha256(
            (folder / TOPICS).read_bytes()).hexdigest()
        assert p["workload"] == name and r["dialect"] == dialect
        if workload == threaded_workload(0.5):
            assert 0.3 < p["write_share"] < 0.7
    # The table: a ratio to the baseline on every measured row, computed the documented way.
    ratios = _table_ratios(stdout)
    assert "x locked_trie: ratio to locked_trie, above 1 = better" in stdout
    titles = {LATENCY: "lookup latency, 1 thread", THROUGHPUT: "lookup throughput, 1 thread"}
    for (alg, workload, n), r in by_cell.items():
        title = titles.get(workload) or (
            f"threaded, {n} thread{'s' if n > 1 else ''}, {r['params']['write_share_asked']:.0%} "
            "writes")
        got = ratios[(title, series_label(alg))]
        if r["status"] != "ok":
            continue
        base = by_cell[("locked_trie", workload, n)]
        want = (base["median"] / r["median"] if r["unit"] == "ns"
                else r["median"] / base["median"])
        assert got.startswith(f"{want:.2f}"), (alg, workload, n, got, want)
        if alg == "locked_trie":
            assert got == "1.00 (baseline)"
    if importlib.util.find_spec("matplotlib") is not None:
        assert chart.stat().st_size > 10_000 and str(chart) in stdout
    else:
        assert "no chart: matplotlib is not importable" in err


def test_a_pattern_a_matcher_cannot_take_is_refused_and_reported(tmp_path, capsys):
    """The optimized bitmap refuses an AMQP '#' inside a pattern: counted, said, and its
    threaded writes (here every operation) draw only from the patterns it accepted."""
    subs, topics = _write(tmp_path, "a.#.b\tx\na.*.b\ty\n#.c\tz\nq.r\tw\n",
                          "a.1.b\na.b\nq.r\nk.c\n")
    out = tmp_path / "results"
    rc, stdout, err = _compare(capsys, "--subscriptions", subs, "--topics", topics,
                               "--dialect", "amqp", "--algorithms", "optimized_bitmap",
                               "--baseline", "cstrie", "--threads", "1",
                               "--write-shares", "1", "--rounds", "1", "--ops", "40",
                               "--out", out, "--chart", tmp_path / "c.png")
    assert rc == 0, err
    assert "optimized_bitmap refused 2 of 4 subscriptions" in err
    recs = [r for r in load(out) if r["algorithm"] == "optimized_bitmap"]
    assert len(recs) == 3 and all(r["status"] == "ok" for r in recs)
    assert all(r["params"]["refused_patterns"] == 2 and "refused" in r["note"] for r in recs)
    assert all(r["params"]["oracle_mismatches"] == 0 for r in recs)
    assert "2 subscriptions refused" in stdout


def test_a_baseline_that_cannot_run_in_the_dialect_is_a_usage_error(tmp_path):
    """paho speaks MQTT only: as the baseline of a NATS workload every ratio would be n/a."""
    from experiments.cli import main

    subs, topics = tmp_path / "s.txt", tmp_path / "t.txt"
    subs.write_text("a.b\tx\n")
    topics.write_text("a.b\n")
    out = tmp_path / "out"
    for extra in (["--baseline", "paho"], ["--algorithms", "paho", "--baseline", "paho"]):
        assert main(["compare", "--subscriptions", str(subs), "--topics", str(topics),
                     "--out", str(out), *extra]) == 2
    assert not out.exists()


@pytest.mark.parametrize("dialect", ["amqp", "nats", "mqtt"])
def test_the_empty_key_is_two_quotes_and_blank_lines_are_counted(dialect, tmp_path, capsys):
    """A blank line is skipped, and said (``skipped N blank lines in FILE``); the empty
    string is written as two double quotes (a line of double quotes only loses two of them:
    four stand for the word of two). The empty key is a topic and a pattern in AMQP; in NATS
    and MQTT the line of two quotes is a bad line."""
    sep, multi = {"amqp": (".", "#"), "nats": (".", ">"), "mqtt": ("/", "#")}[dialect]
    subs, topics = _write(tmp_path, f'""\tempty\n\n{multi}\tall\n\na{sep}b\tx\n""""\tq\n',
                          f'""\n\na{sep}b\n""""\n')
    if dialect != "amqp":
        with pytest.raises(WorkloadError) as info:
            read_workload(subs, topics, dialect)
        assert [p.split(": ")[0] for p in info.value.problems] == [f"{subs}:1", f"{topics}:1"]
        assert all(f"invalid {dialect}" in p and "''" in p for p in info.value.problems)
        return
    wl = read_workload(subs, topics, dialect)
    assert wl.subscriptions == [("", "empty"), ("#", "all"), ("a.b", "x"), ('""', "q")]
    assert wl.topics == ["", "a.b", '""']
    out = tmp_path / "results"
    rc, _, err = _compare(capsys, "--subscriptions", subs, "--topics", topics, "--dialect",
                          dialect, "--algorithms", "cstrie", "--baseline", "cstrie",
                          "--threads", "1", "--write-shares", "0", "--rounds", "1", "--ops",
                          "20", "--out", out, "--chart", tmp_path / "c.png")
    assert rc == 0, err
    assert f"skipped 2 blank lines in {subs}\n" in err
    assert f"skipped 1 blank line in {topics}\n" in err
    recs = load(out)
    assert recs and all(r["params"]["oracle_mismatches"] == 0 for r in recs)
    assert recs[0]["params"]["files"]["subscriptions"]["blank_lines"] == 2


@pytest.mark.parametrize("dialect", ["nats", "mqtt", "amqp"])
def test_a_byte_order_mark_is_a_bad_line_not_part_of_the_first_entry(dialect, tmp_path):
    """A file saved as "UTF-8 with BOM" (as some Windows editors do) started its first
    pattern or topic with U+FEFF, invisible and valid in every dialect: the first line was
    silently another subject than the one written."""
    sep = "/" if dialect == "mqtt" else "."
    subs, topics = _write(tmp_path, f"\ufeffa{sep}b\tx\nc\ty\n".encode(),
                          f"\ufeffa{sep}b\nc\n".encode())
    with pytest.raises(WorkloadError) as info:
        read_workload(subs, topics, dialect)
    assert [p.split(": ")[0] for p in info.value.problems] == [f"{subs}:1", f"{topics}:1"]
    assert all("byte order mark" in p for p in info.value.problems), info.value.problems
