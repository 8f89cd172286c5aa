"""HoloDeck 0.7.1 and convlab on the same agent.yaml files and the same scripted model.

`holodeck_python()` finds or builds the second venv (HoloDeck never goes into convlab's),
`run_holodeck()` runs HoloDeck's own `holodeck test` on the files (tests/parity/holodeck_driver.py),
`run_convlab()` runs `cl.run` on them, and `outcomes_*()` reduce both to the same record per
case and turn, which `differences()` compares field by field.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from parity.scripted_openai import JOIN, Step

import convlab as cl
from convlab.checks.tools import holodeck_arguments
from convlab.model.records import AssertionResult, CaseResult
from convlab.model.run import Run

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PINS = ("holodeck-ai==0.7.1", "openai-agents==0.17.4", "exceptiongroup", "openai==2.44.0")
VENV = REPO / ".venv-holodeck"
"""Default home of the HoloDeck venv: git-ignored, built by `holodeck_python()` when absent."""
_CHECK = "import importlib.metadata as m; print(m.version('holodeck-ai'), m.version('openai'))"


def holodeck_python(env: dict[str, str] | None = None) -> Path:
    """The python of a venv with HoloDeck 0.7.1; builds `.venv-holodeck` with pip if needed.

    `CONVLAB_HOLODECK_PYTHON` names an existing one. Raises RuntimeError with pip's output
    when the venv cannot be built: the parity test fails then, it never skips.
    """
    env = dict(os.environ if env is None else env)
    given = env.get("CONVLAB_HOLODECK_PYTHON")
    python = Path(given) if given else VENV / "bin" / "python"
    if _has_holodeck(python):
        return python
    if given:
        raise RuntimeError(f"CONVLAB_HOLODECK_PYTHON={given} has no HoloDeck 0.7.1 ({_CHECK})")
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(VENV)],
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PINS],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr)[-3000:]
            raise RuntimeError(f"could not build the HoloDeck venv: {' '.join(step)}\n{tail}")
    if not _has_holodeck(python):
        raise RuntimeError(f"{VENV} was built but has no HoloDeck 0.7.1")
    return python


def _has_holodeck(python: Path) -> bool:
    if not python.exists():
        return False
    done = subprocess.run([str(python), "-c", _CHECK], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.split() == ["0.7.1", "2.44.0"]


def cases_of(agent_yaml: Path) -> list[dict[str, Any]]:
    """The test cases of an agent.yaml (`test_cases` or its `test_cases_file`), `${VAR}`s
    replaced from the environment first, as both tools do."""
    text = re.sub(r"\$\{(\w+)\}", lambda m: os.environ[m[1]], agent_yaml.read_text("utf-8"))
    doc = yaml.safe_load(text)
    if doc.get("test_cases_file"):
        payload = agent_yaml.parent / doc["test_cases_file"]
        return list(yaml.safe_load(payload.read_text(encoding="utf-8")))
    return list(doc.get("test_cases") or [])


def inputs_of(case: dict[str, Any]) -> list[str]:
    """A case's user inputs in order (one for a single-turn case)."""
    return [t["input"] for t in case["turns"]] if case.get("turns") else [case["input"]]


def _steps(turn: Any) -> list[Step]:
    if isinstance(turn, str):
        return [{"text": turn}]
    return [s if isinstance(s, dict) else {"text": s} for s in turn]


def script_for(
    cases: list[dict[str, Any]], reply: Callable[[int, dict[str, Any], int], Any]
) -> dict[str, list[Step]]:
    """The server's script: `reply(case index, case, turn index)` gives each turn's steps."""
    script: dict[str, list[Step]] = {}
    for i, case in enumerate(cases):
        said = inputs_of(case)
        for t in range(len(said)):
            key = JOIN.join(said[: t + 1])
            steps = _steps(reply(i, case, t))
            if script.setdefault(key, steps) != steps:
                raise ValueError(f"two replies scripted for the same conversation: {key!r}")
    return script


def script_file(cases: list[dict[str, Any]], path: Path) -> dict[str, list[Step]]:
    """A script from a YAML file that gives each case's turns by case name."""
    by_name = yaml.safe_load(path.read_text(encoding="utf-8"))
    unknown = set(by_name) - {c.get("name") for c in cases}
    if unknown:
        raise ValueError(f"{path}: no such case: {sorted(unknown)}")
    return script_for(cases, lambda _i, case, t: by_name[case["name"]][t])


def load_tools(path: Path) -> list[Callable[..., Any]]:
    """The functions of a tools.py, for convlab (HoloDeck imports the same file itself)."""
    spec = importlib.util.spec_from_file_location(f"parity_tools_{path.parent.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.ALL)


def run_holodeck(
    python: Path, files: list[Path], base_url: str, out: Path, env: dict[str, str]
) -> list[dict[str, Any]]:
    """HoloDeck's JSON report per file; raises with its output when it could not run one."""
    out.mkdir(parents=True, exist_ok=True)
    full = {
        **env,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "sk-local-scripted",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
        "HOME": str(out),  # HoloDeck's caches and eval runs stay in the test's folder
    }
    command = [str(python), str(HERE / "holodeck_driver.py"), str(out), *map(str, files)]
    done = subprocess.run(command, capture_output=True, text=True, env=full, check=False)
    log = (done.stdout + done.stderr)[-4000:]
    codes = json.loads((out / "exit.json").read_text()) if (out / "exit.json").exists() else []
    if done.returncode != 0 or len(codes) != len(files) or any(c not in (0, 1) for c in codes):
        raise RuntimeError(f"holodeck could not run every file (exit codes {codes}):\n{log}")
    return [json.loads((out / f"{n}.json").read_text()) for n in range(len(files))]


def run_convlab(path: Path, base_url: str, tools: list[Callable[..., Any]]) -> Run:
    """convlab's run of one file on the same scripted model (chat completions)."""
    agent = cl.agents.openai(
        "gpt-4o-mini", base_url=base_url, api_key="sk-local-scripted", tools=tools
    )
    return cl.run(cl.load(path), agent, progress=False, retries=0)


@dataclass
class TurnOutcome:
    """What both tools report for one turn, in the same words."""

    passed: bool
    agent_error: bool
    """The model call failed (HoloDeck: "Agent error: ..." or "timeout"; convlab: turn.error)."""
    tool_errors: list[str]
    """Argument-mismatch messages (HoloDeck keeps them in `errors`); worded the same."""
    response: str
    tools: list[tuple[str, Any]]
    tools_matched: bool | None
    arg_match_details: list[dict[str, Any]] | None
    """None where HoloDeck reports none (single-turn cases): not compared then."""
    metrics: list[tuple[str, bool]]
    """(metric name, passed) for each metric that ran."""


@dataclass
class CaseOutcome:
    name: str
    passed: bool
    turns: list[TurnOutcome] = field(default_factory=list)


def _agent_error(message: str) -> bool:
    return message.startswith(("Agent error", "timeout"))


def _hd_turn(t: dict[str, Any]) -> TurnOutcome:
    return TurnOutcome(
        passed=bool(t["passed"]),
        agent_error=any(_agent_error(e) for e in t["errors"]),
        tool_errors=[e for e in t["errors"] if not _agent_error(e)],
        response=t.get("response") or t.get("agent_response") or "",
        tools=[(i["name"], i["args"]) for i in t["tool_invocations"]],
        tools_matched=t["tools_matched"],
        arg_match_details=(t.get("arg_match_details") or []) if "turn_index" in t else None,
        metrics=[(m["metric_name"], bool(m["passed"])) for m in t["metric_results"]],
    )


def outcomes_holodeck(report: dict[str, Any]) -> list[CaseOutcome]:
    """HoloDeck's report; a single-turn case is one turn built from the case's own fields."""
    out = []
    for i, r in enumerate(report["results"]):
        turns = [_hd_turn(t) for t in r["turns"]] if r.get("turns") else [_hd_turn(r)]
        out.append(CaseOutcome(r.get("test_name") or f"#{i}", bool(r["passed"]), turns))
    return out


def _cl_turn(t: Any) -> TurnOutcome:
    obs = t.observation
    tools_check = [a for a in t.assertions if a.kind == "expected_tools"]
    metrics = [a for a in t.assertions if a.kind in _METRICS and a.status != "skipped"]
    mismatches = [p for a in tools_check if not a.passed for p in a.message.split("; ")]
    return TurnOutcome(
        passed=t.status == "passed",
        agent_error=t.error is not None,
        tool_errors=mismatches,
        response=(obs.text or "") if obs is not None else "",
        # the arguments as HoloDeck records them (`_parse_tool_arguments`)
        tools=[
            (c.name, holodeck_arguments(c.arguments))
            for c in (obs.tool_calls if obs is not None else [])
        ],
        tools_matched=tools_check[0].passed if tools_check else None,
        arg_match_details=tools_check[0].details.get("arg_match_details", [])
        if tools_check
        else [],
        metrics=[(_metric_name(a), a.passed) for a in metrics],
    )


_METRICS = ("metric", "grader")
"""convlab's assertion kinds for HoloDeck `evaluations` entries (standard/geval/rag, code)."""


def _metric_name(a: AssertionResult) -> str:
    """HoloDeck's `metric_name`: a grader's callable; a metric's name, which starts each of
    its messages ("numeric: ...", "metric 'numeric' needs ...")."""
    if a.kind == "grader":
        return str(a.details["grader"]).rpartition(":")[2]
    found = re.match(r"(?:metric ')?(\w+)", a.message)
    return found[1] if found else a.message


def outcomes_convlab(run: Run) -> list[CaseOutcome]:
    out = []
    for r in run.results:
        assert isinstance(r, CaseResult)
        out.append(CaseOutcome(r.case_id, r.status == "passed", [_cl_turn(t) for t in r.turns]))
    return out


_MISSING = "expected tool(s) not called"
Difference = tuple[str, int | None, str, Any, Any]
"""(case, turn index or None for the case, field, HoloDeck's value, convlab's value)."""


def differences(hd: list[CaseOutcome], mine: list[CaseOutcome]) -> list[Difference]:
    """Every field on which the two disagree, case by case (in file order) and turn by turn."""
    found: list[Difference] = []
    if len(hd) != len(mine):
        return [("*", None, "cases", len(hd), len(mine))]
    for a, b in zip(hd, mine, strict=True):
        if a.passed != b.passed:
            found.append((a.name, None, "passed", a.passed, b.passed))
        if len(a.turns) != len(b.turns):
            found.append((a.name, None, "turns", len(a.turns), len(b.turns)))
            continue
        for n, (x, y) in enumerate(zip(a.turns, b.turns, strict=True)):
            for name in x.__dataclass_fields__:
                mine = getattr(y, name)
                if x.arg_match_details is None:  # HoloDeck's single-turn path
                    if name == "arg_match_details":
                        continue  # it reports none
                    if name == "tool_errors":  # it words no message for a missing tool
                        mine = [e for e in mine if not e.startswith(_MISSING)]
                if getattr(x, name) != mine:
                    found.append((a.name, n, name, getattr(x, name), mine))
    return found


def shown(found: Iterable[Difference]) -> str:
    return "\n".join(f"{c} turn {t}: {f}: holodeck={h!r} convlab={m!r}" for c, t, f, h, m in found)
