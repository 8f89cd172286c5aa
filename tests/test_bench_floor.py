"""benchmarks/bench_floor.py measures the floor under convlab's per-case path: its figure
means something only while its loop writes convlab's own line. If the line changes and the
floor does not follow, this test says so (the benchmark checks it too, before it times)."""

from __future__ import annotations

from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def test_the_floor_writes_convlabs_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    from bench_engine import _suite
    from bench_floor import _same_work, floor

    import convlab as cl

    async def reply(messages: list[dict[str, str]]) -> str:
        return "ok"

    suite = _suite(5)
    kept = floor(suite, tmp_path / "floor.jsonl", parallel=2)
    cl.run(suite, reply, store=tmp_path / "run.jsonl", progress=False)
    ours = (tmp_path / "floor.jsonl").read_bytes().splitlines()
    stored = (tmp_path / "run.jsonl").read_bytes().splitlines()[1:-1]  # header, summary
    assert len(ours) == len(stored) == len(kept) == 5
    for line in ours:
        case = line.split(b'"case_id":"')[1].split(b'"')[0]
        (match,) = [s for s in stored if b'"case_id":"' + case + b'"' in s]
        _same_work(line, match)  # raises naming both lines when they differ
    assert kept.statuses() == ["passed"] * 5
