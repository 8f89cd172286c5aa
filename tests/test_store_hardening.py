"""Stores and secrets: one writer per store, torn headers refused, results independent,
replies capped and stored once, echoed Basic credentials never shown."""

from __future__ import annotations

import asyncio
import base64
import http.server
import io
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.engine.events import TurnCompleted
from convlab.engine.store import StoreError
from convlab.model import Case, Message, Suite
from convlab.model.codec import encode
from convlab.report.console import ConsoleProgress


def _suite(n: int = 6) -> Suite:
    return Suite(
        id="hard",
        cases=[
            Case(
                id=f"c{i}",
                input=[Message(content=f"m{i}")],
                assertions=[{"kind": "contains", "value": "ok"}],
            )
            for i in range(n)
        ],
    )


async def _slow_ok(messages: list[dict[str, str]]) -> str:
    await asyncio.sleep(0.05)
    return "ok"


def test_two_runs_on_one_store_exactly_one_store_error(tmp_path: Path) -> None:
    store = tmp_path / "results.jsonl"
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def go() -> None:
        barrier.wait()
        try:
            outcomes.append(cl.run(_suite(), _slow_ok, store=store, progress=False))
        except StoreError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    errors = [o for o in outcomes if isinstance(o, StoreError)]
    assert len(outcomes) == 2 and len(errors) == 1
    message = str(errors[0])
    assert str(store) in message and "process" in message
    run = cl.load_run(store)
    assert len(run.results) == 6 and all(r.status == "passed" for r in run.results)


def test_store_lock_names_owner_pid_and_is_released(tmp_path: Path) -> None:
    import os

    store = tmp_path / "r.jsonl"
    handle = cl.start(_suite(40), _slow_ok, store=store, parallel=1, progress=False)
    try:
        deadline = time.monotonic() + 30
        while not handle.results and time.monotonic() < deadline:
            time.sleep(0.01)  # the first result is written: the handle holds the lock
        with pytest.raises(StoreError, match=rf"process {os.getpid()}"):
            cl.run(_suite(40), _slow_ok, store=store, progress=False)
    finally:
        handle.stop()
    again = cl.run(_suite(40), _slow_ok, store=store, resume=True, parallel=8, progress=False)
    assert len(again.results) == 40


def test_torn_header_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "r.jsonl"
    store.write_text('{"type":"header","run":{"id":"x","fingerp', encoding="utf-8")
    with pytest.raises(StoreError, match="header"):
        cl.run(_suite(1), _slow_ok, store=store, resume=True, progress=False)
    assert store.read_text(encoding="utf-8").startswith('{"type":"header"')


def test_results_read_back_stay_independent() -> None:
    a, b = cl.run(_suite(2), _slow_ok, progress=False).results
    before = b.to_dict()
    assert "metadata" not in a.to_dict()
    a.metadata["changed"] = True
    assert a.to_dict()["metadata"] == {"changed": True}
    assert b.to_dict() == before


class _JSONHandler(http.server.BaseHTTPRequestHandler):
    """A test endpoint's handler: answers with a JSON body, logs nothing."""

    def answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _EchoHeaders(_JSONHandler):
    """Answers every POST with 401 echoing the request's Authorization, as some servers do."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        auth = self.headers.get("authorization") or ""
        token = auth.partition(" ")[2]
        body = json.dumps({"error": f"bad credentials {token}", "authorization": auth}).encode()
        self.answer(401, body)


@pytest.fixture
def echo_server() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoHeaders)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


PASSWORD = "pw-Basic-9f3c"


@pytest.mark.parametrize("how", ["url", "header"])
def test_echoed_basic_authorization_never_shows(
    echo_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    b64 = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    if how == "url":
        agent = cl.agents.openai("m", base_url=f"http://alice:{PASSWORD}@{echo_server}/v1")
    else:
        agent = cl.agents.http(
            f"http://{echo_server}/chat", headers={"Authorization": f"Basic {b64}"}
        )
    store = tmp_path / "r.jsonl"
    run = cl.run(_suite(1), agent, store=store, retries=0, progress=True)
    result = run.results[0]
    assert result.status == "error" and result.error and "401" in result.error
    assert "bad credentials ***" in result.error  # the echo arrived, masked
    run.save(tmp_path / "saved.json")
    run.save(tmp_path / "saved.jsonl")
    out = capsys.readouterr()
    shown = [
        result.error,
        store.read_text(encoding="utf-8"),
        (tmp_path / "saved.json").read_text(encoding="utf-8"),
        (tmp_path / "saved.jsonl").read_text(encoding="utf-8"),
        out.out,
        out.err,
    ]
    for text in shown:
        assert b64 not in text and b64.rstrip("=") not in text and PASSWORD not in text


def test_a_long_reply_is_cut_to_max_reply_bytes_and_marked(tmp_path: Path) -> None:
    big = "é" + "x" * 3_000_000  # 3 MB; the cut falls on a character boundary

    def agent(messages: list[dict[str, str]]) -> str:
        return big

    store = tmp_path / "r.jsonl"
    run = cl.run(_suite(1), agent, store=store, progress=False)
    obs = run.results[0].turns[0].observation
    assert obs is not None and obs.text is not None
    assert len(obs.text.encode("utf-8")) <= 1_000_000 and obs.text.startswith("éxxx")
    assert obs.truncated_from == len(big.encode("utf-8"))
    assert obs.messages[-1].content == obs.text
    back = cl.load_run(store).results[0].turns[0].observation
    assert back is not None and back.truncated_from == obs.truncated_from
    small = cl.run(_suite(1), agent, max_reply_bytes=None, progress=False)
    kept = small.results[0].turns[0].observation
    assert kept is not None and kept.text == big and kept.truncated_from is None


def test_a_long_reply_is_not_copied_into_its_checks_and_reads_back_whole(tmp_path: Path) -> None:
    reply = "ok " + "".join(f"word{i} " for i in range(20_000))

    def agent(messages: list[dict[str, str]]) -> str:
        return reply

    store = tmp_path / "r.jsonl"
    run = cl.run(_suite(1), agent, store=store, progress=False)
    assert run.results[0].status == "passed"
    line = store.read_text(encoding="utf-8").splitlines()[1]
    # the reply's text and the assistant message holding it; the check's `actual` points there
    assert line.count("word19999") == 2
    for name in ("saved.json", "saved.jsonl"):
        run.save(tmp_path / name)
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert text.count("word19999") <= 3  # the record's two, and Yao's `output`
    for path in (store, tmp_path / "saved.json", tmp_path / "saved.jsonl"):
        back = cl.load_run(path).results[0].turns[0]
        assert back.observation is not None and back.observation.text == reply
        assert back.observation.messages[-1].content == reply


def test_a_store_with_crlf_line_ends_reads_back_and_resumes_whole(tmp_path: Path) -> None:
    """A store saved again with Windows line ends (an editor, a checkout with autocrlf)
    reads back the same results, and a resume of it runs nothing again."""
    store = tmp_path / "s.jsonl"

    def agent(messages: list[dict[str, str]]) -> str:
        return "ok " + messages[-1]["content"] if messages[-1]["content"] != "m3" else "no"

    first = cl.run(_suite(), agent, store=store, progress=False)
    store.write_bytes(store.read_bytes().replace(b"\n", b"\r\n"))
    back = cl.load_run(store)  # its results in the order they finished, its df in plan order
    assert {r.case_id: r.to_dict() for r in back.results} == {
        r.case_id: r.to_dict() for r in first.results
    }
    assert back.df["status"].tolist() == ["passed"] * 3 + ["failed"] + ["passed"] * 2

    calls: list[str] = []

    def counted(messages: list[dict[str, str]]) -> str:
        calls.append(messages[-1]["content"])
        return agent(messages)

    again = cl.run(_suite(), counted, store=store, resume=True, progress=False)
    assert calls == []
    assert {r.case_id: r.status for r in again.results} == {
        r.case_id: r.status for r in first.results
    }


# --- files that are never written over ------------------------------------------------------


def _ok(messages: list[dict[str, str]]) -> str:
    return "ok"


def test_an_existing_store_needs_resume_or_overwrite(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    first = cl.run(_suite(2), _ok, store=store, progress=False)
    before = store.read_bytes()
    with pytest.raises(StoreError, match=r"already exists.*resume.*overwrite"):
        cl.run(_suite(2), _ok, store=store, progress=False)
    assert store.read_bytes() == before
    again = cl.run(_suite(2), _ok, store=store, overwrite=True, progress=False)
    assert again.id != first.id and cl.load_run(store).id == again.id


@pytest.mark.parametrize("what", ["the suite itself", "another suite's store", "a report"])
def test_a_file_that_is_not_a_store_of_this_suite_is_never_written_over(
    tmp_path: Path, what: str
) -> None:
    target = tmp_path / "target.jsonl"
    if what == "the suite itself":
        target.write_text('{"id": "a", "input": "hi"}\n', encoding="utf-8")
        suite = cl.load(target)
    elif what == "another suite's store":
        cl.run(_suite(3), _ok, store=target, progress=False)
        suite = _suite(2)
    else:
        target.write_text('{"type": "summary", "total": 2}\n', encoding="utf-8")
        suite = _suite(2)
    before = target.read_bytes()
    with pytest.raises(StoreError, match="not a results store of this suite"):
        cl.run(suite, _ok, store=target, overwrite=True, progress=False)
    assert target.read_bytes() == before


def test_the_cli_never_writes_a_store_over_its_own_suite(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    victim = tmp_path / "victim.jsonl"
    victim.write_text('{"id": "a", "input": "hi"}\n', encoding="utf-8")
    before = victim.read_bytes()
    root = Path(__file__).resolve().parent.parent
    for extra in ([], ["--overwrite"]):
        done = subprocess.run(
            [sys.executable, "-m", "convlab.cli", "run", "-i", str(victim), "-n", "demo:expense",
             "--store", str(victim), *extra],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(root)},
        )  # fmt: skip
        assert done.returncode != 0, done.stdout
        assert str(victim) in done.stderr and "Traceback" not in done.stderr
        assert victim.read_bytes() == before


def test_a_store_that_does_not_say_its_suite_is_not_resumed(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    cl.run(_suite(2), _ok, store=store, progress=False)
    lines = store.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    del header["run"]["fingerprint"]
    store.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    before = store.read_bytes()
    with pytest.raises(StoreError, match="no fingerprint"):
        cl.run(_suite(3), _ok, store=store, resume=True, progress=False)
    assert store.read_bytes() == before


def _full_disk_after(limit: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's header writes fail with ENOSPC once `limit` bytes are written, as a disk
    that fills mid-header does (no root, no tmpfs: the write itself refuses)."""
    import errno

    from convlab.engine import store as store_module

    real = store_module.write_header

    def filling(run: Any, write: Any) -> str:
        written = 0

        def limited(data: bytes) -> None:
            nonlocal written
            if written + len(data) > limit:
                raise OSError(errno.ENOSPC, "No space left on device")
            written += len(data)
            write(data)

        return real(run, limited)

    monkeypatch.setattr(store_module, "write_header", filling)


def test_a_disk_that_fills_while_the_header_is_written_leaves_nothing_torn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "r.jsonl"
    with monkeypatch.context() as patched:
        _full_disk_after(2_000, patched)
        with pytest.raises(OSError, match="No space left on device") as raised:
            cl.run(_suite(40), _slow_ok, store=store, progress=False)
    assert raised.value.filename == str(store) and str(store) in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no torn store, lock or temp file
    run = cl.run(_suite(40), _slow_ok, store=store, resume=True, progress=False)
    assert run.status == "completed" and len(run.results) == 40


def test_overwriting_a_store_on_a_full_disk_keeps_the_earlier_one_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "r.jsonl"
    cl.run(_suite(3), _slow_ok, store=store, progress=False)
    before = store.read_bytes()
    with monkeypatch.context() as patched:
        _full_disk_after(500, patched)
        with pytest.raises(OSError, match="No space left on device"):
            cl.run(_suite(3), _slow_ok, store=store, overwrite=True, progress=False)
    assert store.read_bytes() == before
    assert cl.load_run(store).status == "completed"


def test_a_variant_name_of_5000_characters_gets_a_safe_store_name(tmp_path: Path) -> None:
    long, longer = "v" * 5000, "v" * 5000 + "w"
    exp = cl.run(
        _suite(1), {long: _slow_ok, longer: _slow_ok}, store=tmp_path / "out.jsonl", progress=False
    )
    stores = exp.settings["stores"]
    assert len(set(stores.values())) == 2  # two names that differ only past the cut: two files
    for path in stores.values():
        assert len(Path(path).name.encode()) < 255 and Path(path).exists()
        assert Path(path).name.startswith("out." + "v" * 40)
    assert [cl.load_run(stores[n]).status for n in (long, longer)] == ["completed", "completed"]


class _EchoRequestHeaders(_JSONHandler):
    """A chat-completions endpoint whose reply text is the request's headers, as a debugging
    proxy's is."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        said = f"{self.headers.get('authorization')} {self.headers.get('x-team')} "
        text = said + json.dumps(dict(self.headers.items()))
        reply = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        body = json.dumps(reply).encode()
        self.answer(200, body)


KEY, HEADER, TOKEN = "sk-live-4f1c9e2ab7d3", "hdr-value-83ac51e0", "env-token-2b7f90ce"


def _everything_written(run: cl.Run, tmp_path: Path, store: Path) -> dict[str, str]:
    """Every text convlab writes or shows for `run`: the store, run.json, run.html, the card,
    the history's copy, its repr."""
    import gzip

    from convlab._history import _record
    from convlab.notebook._cards import run_card

    html = Path(run.save(tmp_path / "run.html")).read_text(encoding="utf-8")
    saved = Path(run.save(tmp_path / "run.json")).read_text(encoding="utf-8")
    text, card = run_card(run)
    copies = sorted(_record.runs_folder().glob("*.jsonl.gz"))
    kept = "".join(gzip.decompress(p.read_bytes()).decode() for p in copies)
    return {
        "store": store.read_text(encoding="utf-8") if store.exists() else "",
        "run.json": saved,
        "run.html": html,
        "card": text + card,
        "history copy": kept,
        "repr": repr(run) + str(run.results[0]),
    }


def test_every_known_secret_is_masked_everywhere_and_the_result_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoRequestHeaders)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.setenv("MY_SERVICE_TOKEN", TOKEN)
    try:
        base = f"http://127.0.0.1:{srv.server_address[1]}/v1"
        echo = cl.agents.openai("m", base_url=base, api_key=KEY, headers={"X-Team": HEADER})
        store = tmp_path / "echo.jsonl"
        shown = io.StringIO()  # the console, verbose: every turn's reply
        console = ConsoleProgress(stream=shown, verbose=True, color=False)
        events: list[Any] = []  # what every view (the live tree, the console) is told

        def listen(event: Any) -> None:
            console(event)
            events.append(event)

        run = cl.run(_suite(1), echo, store=store, progress=listen)
    finally:
        srv.shutdown()
        srv.server_close()
    [result] = run.results
    reply = result.turns[0].observation
    assert reply is not None and reply.text is not None
    assert '"authorization": "Bearer ***"' in reply.text and '"x-team": "***"' in reply.text
    assert "turns[0].observation.text" in result.metadata["masked"]
    assert any("1 result(s)" in note for note in run.settings["masked"])
    told = "".join(encode(e.turn).decode() for e in events if isinstance(e, TurnCompleted))
    written = _everything_written(run, tmp_path, store) | {
        "console": shown.getvalue(),
        "turns as they finished": told,
    }
    assert "Bearer ***" in told
    assert '"m0" → "Bearer *** *** {' in written["console"]  # the echoed reply, masked
    for where, text in written.items():
        assert KEY not in text and HEADER not in text, where

    def leaks(messages: list[dict[str, str]]) -> str:
        raise PermissionError(f"the service refused token {os.environ['MY_SERVICE_TOKEN']}")

    run = cl.run(_suite(1), leaks, progress=False)  # no store: the history keeps a copy
    [result] = run.results
    assert result.error == "agent error at turn 1: PermissionError: the service refused token ***"
    assert "error_info.traceback" in result.metadata["masked"]
    for where, text in _everything_written(run, tmp_path, tmp_path / "none").items():
        assert TOKEN not in text, where

    from convlab._cli_run import notes

    notes(run.settings)  # what `convlab run` prints at its end
    said = capsys.readouterr().err
    assert "secrets masked (***) in: 1 result(s): see each result's metadata['masked']" in said


def test_a_short_key_is_never_masked_in_free_text(tmp_path: Path) -> None:
    def says(messages: list[dict[str, str]]) -> str:
        return "x marks the spot"

    short = cl.agents.openai("m", base_url="http://127.0.0.1:9/v1", api_key="x")
    del short  # a live Secret of one character: SHORTEST_SECRET keeps it out of the masking
    run = cl.run(_suite(1), says, progress=False)
    assert run.results[0].turns[0].observation.text == "x marks the spot"  # type: ignore[union-attr]
    assert "masked" not in run.results[0].metadata
