"""``compare``'s workload files (experiments/compare_files.py): the format reads legal
patterns that hold spaces, ``#`` and TABs as they are, and the shipped example workloads are
exactly what their generator writes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.compare_files import (EXAMPLES_DIR, SUBSCRIPTIONS, TOPICS, WorkloadError,
                                       read_workload, write_example)
from experiments.workloads import EXAMPLES

def _write(tmp_path: Path, subs: str | bytes, topics: str | bytes) -> tuple[Path, Path]:
    s, t = tmp_path / "subs.txt", tmp_path / "topics.txt"
    for path, text in ((s, subs), (t, topics)):
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return s, t


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
def test_the_shipped_examples_are_what_the_generator_writes(name, tmp_path):
    folder = tmp_path / name
    assert write_example(name, folder) == [folder / SUBSCRIPTIONS, folder / TOPICS]
    for file in (SUBSCRIPTIONS, TOPICS):
        shipped = EXAMPLES_DIR / name / file
        assert (folder / file).read_bytes() == shipped.read_bytes(), (
            f"{shipped} differs from what the generator writes: regenerate it")
        assert shipped.stat().st_size < 300_000
    wl = read_workload(folder / SUBSCRIPTIONS, folder / TOPICS, EXAMPLES[name][1])
    assert wl.name == name and len(wl.subscriptions) == 2000 and len(wl.topics) == 5000
