"""The JSON evaluation-suite format (intention-kernel `parseEvaluationSuite`).

A suite holds scenarios; a scenario is a `turns` case whose steps are turns (with optional
variants) and whose own assertions are final-scope checks. Every rule of `parseEvaluationSuite`
is enforced and every problem is reported, each with its field path
(`scenarios[3].steps[1].assertions[0].operator`) and line; so is text that is not Unicode (a
lone surrogate from a `\\udcff` escape: `convlab.formats._unicode`).

Speed: the text is parsed once by `json.loads`, validated as plain dicts, and the native
model is built with one pydantic validation. Lines cost a second, C-speed pass over the
text; the only lines needed on success are those of the scenarios (`Case.source`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from convlab._readable import json_type
from convlab.errors import Problem, SuiteError
from convlab.formats._base import (
    Problems,
    did_you_mean,
    dotted,
    gc_paused,
    register_format,
)
from convlab.formats._suite_json_check import (
    HINT,
    INVALID,
    LIMIT,
    Fields,
    Issue,
    Issues,
    array,
    assertion,
    assertion_list,
    ident,
    integer,
    obj,
    string,
)
from convlab.formats._suite_json_data import MAX_DEPTH, bounded_json, to_json
from convlab.formats._suite_json_lines import (
    ANY,
    Loc,
    deep_nesting_line,
    deepest_line,
    locate,
    non_json_tokens,
)
from convlab.formats._unicode import lone_json_escape, mend
from convlab.model.assertions import ASSERTION_ADAPTER, Assertion
from convlab.model.suite import Suite

__all__ = ["FORMAT", "load", "load_suite_json", "parse_suite_assertion", "sniff"]

FORMAT = "suite_json"
SUITE = Fields(
    ("schemaVersion", "id", "name", "metadata", "scenarios", "assertions"),
    ("schemaVersion", "id", "name", "scenarios"),
)
SCENARIO = Fields(
    (
        "id",
        "name",
        "description",
        "tags",
        "writePolicy",
        "skipReason",
        "metadata",
        "steps",
        "assertions",
    ),
    ("id", "name", "writePolicy", "steps"),
)
STEP = Fields(("id", "input", "assertions", "variants"), ("id", "input"))
VARIANT = Fields(("id", "input"), ("id", "input"))
SELECTION_FIELDS = ("optionIndex", "optionLabel", "optionId")
SELECTION = Fields(SELECTION_FIELDS, ())
WRITE_POLICIES = ("read_only", "external")


def sniff(path: Path, text: str) -> bool:
    """Claim a `.json` file that has `"scenarios"` and `"schemaVersion"` or `"steps"`.

    A suite that lacks `schemaVersion` is still claimed by its scenarios' steps, so the
    loader can name the missing field (intention-kernel's parser reports the path
    `schemaVersion`) instead of calling it no suite file at all. The native form also uses
    .json, but is marked `convlab_suite` (its sniff runs first).
    """
    return '"scenarios"' in text and ('"schemaVersion"' in text or '"steps"' in text)


@register_format(FORMAT, (".json",), sniff)
def load_suite_json(path: Path, text: str) -> Suite:
    """Read a JSON evaluation suite into a Suite of `turns` cases (one per scenario).

    The collector is paused meanwhile: parsed JSON has no cycles, so its passes over the
    growing heap would find nothing and only slow a large load down.
    """
    with gc_paused():
        return _load(str(path), text)


load = load_suite_json
"""The format's loader under its generic name: `load(path, text) -> Suite`."""


def _load(file: str, text: str) -> Suite:
    data = _parse(file, text)
    limit = bounded_json(data)
    if limit is not None:  # as the kernel: too large or deep to validate safely
        raise _error(file, text, [limit])
    issues = Issues()
    if lone_json_escape(text):  # text that is not Unicode: reported, mended, then all checked
        data = mend(data, issues.add, "JSON")
    native = _suite(data, issues)
    if issues or native is None:
        raise _error(file, text, issues)
    del data  # the raw objects the native form does not share: lowers peak memory
    found = locate(text, [("scenarios", ANY)])
    for i, case in enumerate(native["cases"]):
        case["source"] = {"file": file, "line": found.get(("scenarios", i)), "format": FORMAT}
    native["sources"] = [{"file": file, "line": None, "format": FORMAT}]
    try:
        return Suite.model_validate(native)
    except ValidationError as exc:  # a rule this module missed: still a SuiteError
        problems = Problems(file)
        problems.add_validation(exc, None)
        raise SuiteError(problems.items) from None


def parse_suite_assertion(
    obj: Any, *, file: str = "<check>", line: int | None = None, path: str = "assertion"
) -> Assertion:
    """Validate one assertion in this format's `kind` spelling (check/all/any/not/custom).

    Used by `convlab.check()` for dicts such as
    `{"id": "ok", "kind": "check", "path": ["response", "status"], "operator": "exists"}`.

    Raises:
        SuiteError: With every problem, each at `path` (e.g. `assertion.assertions[0].operator`).
    """
    issues = Issues()
    data = to_json(obj, (), issues)
    rules = Issues()
    spec = assertion(data, (), rules)
    bad = [i.loc for i in issues]  # a non-JSON value was replaced: no follow-up problems there
    issues.extend(r for r in rules if not any(r.loc[: len(b)] == b for b in bad))
    if issues or spec is None:
        raise SuiteError(_problem(file, issue, line, None, path) for issue in issues)
    try:
        return ASSERTION_ADAPTER.validate_python(spec)
    except ValidationError as exc:
        problems = Problems(file)
        problems.add_validation(exc, line, prefix=path)
        raise SuiteError(problems.items) from None


def _parse(file: str, text: str) -> Any:
    """json.loads, with every way it can fail turned into a located problem."""
    odd: list[str] = []

    def finite(token: str) -> float:
        value = float(token)
        if math.isinf(value):
            odd.append(token)
        return value

    def constant(token: str) -> float:
        odd.append(token)
        return float(token)

    def whole(token: str) -> int | float:  # JSON.parse reads `-0` as -0, not 0
        return -0.0 if token == "-0" else int(token)

    try:
        data = json.loads(text, parse_float=finite, parse_int=whole, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise SuiteError.one(
            file, exc.lineno, "", f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    except RecursionError:
        message = f"JSON nested more than {MAX_DEPTH} levels deep [{LIMIT}]"
        raise SuiteError.one(file, deep_nesting_line(text, MAX_DEPTH), "", message) from None
    except ValueError:  # an integer too long for Python (> 4300 digits)
        odd.append("?")
    if odd:
        tokens = non_json_tokens(text) or [(None, "a number")]
        raise SuiteError(
            Problem(file, line, "", f"invalid JSON: {token} is not a JSON number [{INVALID}]")
            for line, token in tokens
        )
    return data


def _problem(file: str, issue: Issue, line: int | None, also: int | None, prefix: str) -> Problem:
    message = issue.message
    if issue.also is not None:
        where = dotted(issue.also, prefix) + ("" if also is None else f", line {also}")
        message += f" (first at {where}) [{INVALID}]"
    return Problem(file, line, dotted(issue.loc, prefix), message)


def _error(file: str, text: str, issues: list[Issue]) -> SuiteError:
    """Locate every issue in the text (only now: the fast path never computes lines)."""
    locs = [i.loc for i in issues] + [i.also for i in issues if i.also is not None]
    found = locate(text, locs)
    return SuiteError(
        _problem(
            file,
            issue,
            deepest_line(found, issue.loc),
            None if issue.also is None else deepest_line(found, issue.also),
            "",
        )
        for issue in issues
    )


def _unique(items: list[Any], loc: Loc, issues: Issues, what: str) -> None:
    """Ids unique among `items` (both occurrences named)."""
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        key = item.get("id") if type(item) is dict else None
        if type(key) is not str:
            continue
        if key in seen:
            issues.add(
                (*loc, i, "id"), f"duplicate {what} id {key!r}", also=(*loc, seen[key], "id")
            )
        else:
            seen[key] = i


def _suite(value: Any, issues: Issues) -> dict[str, Any] | None:
    root = obj(value, (), issues, "a JSON object (an evaluation suite)")
    if root is None:
        return None
    SUITE.check(root, (), issues)
    version = root.get("schemaVersion", 1)
    if type(version) not in (int, float) or integer(version) != 1:
        issues.add(
            ("schemaVersion",),
            f"unsupported schemaVersion {version!r} (this format is version 1) [{INVALID}]",
        )
    out: dict[str, Any] = {"id": None, "name": None}
    if "id" in root:
        out["id"] = ident(root["id"], ("id",), issues)
    if "name" in root:
        out["name"] = string(root["name"], ("name",), issues, least=1, most=500, trim=True)
    if "metadata" in root:
        out["metadata"] = obj(root["metadata"], ("metadata",), issues, "a JSON object")
    scenarios = array(
        root.get("scenarios", []), ("scenarios",), issues, what="scenarios", least=1, most=10000
    )
    out["cases"] = [_scenario(s, ("scenarios", i), issues) for i, s in enumerate(scenarios)]
    _unique(scenarios, ("scenarios",), issues, "scenario")
    if "assertions" in root:
        out["assertions"] = assertion_list(root["assertions"], ("assertions",), issues)
    return out


def _scenario(value: Any, loc: Loc, issues: Issues) -> dict[str, Any] | None:
    data = obj(value, loc, issues, "a scenario object")
    if data is None:
        return None
    SCENARIO.check(data, loc, issues)
    case: dict[str, Any] = {"mode": "turns", "id": None}
    if "id" in data:
        case["id"] = ident(data["id"], (*loc, "id"), issues)
    if "name" in data:
        case["name"] = string(data["name"], (*loc, "name"), issues, least=1, most=500, trim=True)
    if "description" in data:
        case["description"] = string(data["description"], (*loc, "description"), issues, most=5000)
    if "tags" in data:
        case["tags"] = _tags(data["tags"], (*loc, "tags"), issues)
    if "writePolicy" in data:
        case["write_policy"] = _policy(data["writePolicy"], (*loc, "writePolicy"), issues)
    if "skipReason" in data:
        case["skip"] = string(
            data["skipReason"], (*loc, "skipReason"), issues, least=1, most=2000, trim=True
        )
    if "metadata" in data:
        case["metadata"] = obj(data["metadata"], (*loc, "metadata"), issues, "a JSON object")
    steps = array(data.get("steps", []), (*loc, "steps"), issues, what="steps", least=1, most=500)
    case["turns"] = [_step(s, (*loc, "steps", i), issues) for i, s in enumerate(steps)]
    _unique(steps, (*loc, "steps"), issues, "step")
    if "assertions" in data:
        case["assertions"] = assertion_list(data["assertions"], (*loc, "assertions"), issues)
    return case


def _tags(value: Any, loc: Loc, issues: Issues) -> list[str]:
    tags = array(value, loc, issues, what="tags", most=100)
    return [string(t, (*loc, i), issues, least=1, most=160) or "" for i, t in enumerate(tags)]


def _policy(value: Any, loc: Loc, issues: Issues) -> str | None:
    if type(value) is str and value in WRITE_POLICIES:
        return value
    got = repr(value) if type(value) is str else json_type(value)
    hint = did_you_mean(value, WRITE_POLICIES, HINT, fold=True) if type(value) is str else ""
    issues.add(loc, f"writePolicy must be 'read_only' or 'external', got {got}{hint}")
    return None


def _step(value: Any, loc: Loc, issues: Issues) -> dict[str, Any] | None:
    data = obj(value, loc, issues, "a step object")
    if data is None:
        return None
    STEP.check(data, loc, issues)
    turn: dict[str, Any] = {"id": None, "input": None}
    if "id" in data:
        turn["id"] = ident(data["id"], (*loc, "id"), issues)
    if "input" in data:
        turn["input"] = _input(data["input"], (*loc, "input"), issues)
    if "assertions" in data:
        turn["assertions"] = assertion_list(data["assertions"], (*loc, "assertions"), issues)
    if "variants" in data:
        turn["variants"] = _variants(data["variants"], (*loc, "variants"), issues)
    return turn


def _variants(value: Any, loc: Loc, issues: Issues) -> list[dict[str, Any]]:
    items = array(value, loc, issues, what="variants", least=1, most=100)
    out = []
    for i, item in enumerate(items):
        data = obj(item, (*loc, i), issues, "a variant object")
        if data is None:
            continue
        VARIANT.check(data, (*loc, i), issues)
        vid = ident(data["id"], (*loc, i, "id"), issues) if "id" in data else None
        given = _input(data["input"], (*loc, i, "input"), issues) if "input" in data else None
        out.append({"id": vid, "input": given})
    _unique(items, loc, issues, "variant")
    return out


def _input(value: Any, loc: Loc, issues: Issues) -> dict[str, Any] | None:
    """A step input: any JSON object loads (schema.ts `step.input` is `data`).

    Decision, following intention-kernel: the strict `{text (<= 10,000), selection?}` input
    schema belongs to the direct adapter (agentAdapter.ts `send`), which checks it when the
    turn is sent, and to no other adapter. So an input that breaks it (an extra key, no
    `text`, two selectors, a negative index, ...) does not stop the file from loading: it is
    kept as given (its other keys in `extra`, a selection that breaks the schema there too)
    and marked `invalid`. An instance that sends it to a `strict_input` agent errs with
    EVALUATION_AGENT_INPUT_INVALID at that turn; any other agent receives it.
    """
    data = obj(value, loc, issues, "an input object")
    if data is None:
        return None
    strict = Issues()
    out = _strict_input(data, strict)
    if not strict:
        return out
    text = data.get("text")
    selection_ok = "selection" in data and not any(i.loc[:1] == ("selection",) for i in strict)
    keep = ("text", "selection") if selection_ok else ("text",)
    return {
        "text": text if type(text) is str else "",
        **({"selection": out["selection"]} if selection_ok else {}),
        "extra": {k: v for k, v in data.items() if k not in keep},
        "invalid": "; ".join(
            f"{dotted(i.loc, 'input')}: {i.message}" if i.loc else i.message for i in strict
        ),
    }


def _strict_input(data: dict[str, Any], issues: Issues) -> dict[str, Any]:
    """The direct adapter's `inputSchema`: `{text, selection?}` and nothing else."""
    out: dict[str, Any] = {}
    for key in data:
        if key not in ("text", "selection"):
            issues.add((key,), f"unknown field {key!r}; allowed fields: text, selection")
    if "text" in data:
        out["text"] = string(data["text"], ("text",), issues, most=10000)
    else:
        issues.add(("text",), "missing required field 'text' (it may be empty)")
    if "selection" in data:
        out["selection"] = _selection(data["selection"], ("selection",), issues)
    return out


def _selection(value: Any, loc: Loc, issues: Issues) -> dict[str, Any] | None:
    data = obj(value, loc, issues, "a selection object")
    if data is None:
        return None
    SELECTION.check(data, loc, issues)
    given = [k for k in SELECTION_FIELDS if k in data]
    if len(given) != 1:
        got = ", ".join(given) if given else "none"
        issues.add(
            loc, f"a selection needs exactly one of {', '.join(SELECTION_FIELDS)}, got {got}"
        )
    out: dict[str, Any] = {}
    if "optionIndex" in data:
        index = integer(data["optionIndex"])
        if type(data["optionIndex"]) not in (int, float) or index is None or index < 0:
            issues.add(
                (*loc, "optionIndex"),
                f"optionIndex must be a non-negative integer, got {data['optionIndex']!r}",
            )
        out["option_index"] = index
    for key, field in (("optionLabel", "option_label"), ("optionId", "option_id")):
        if key in data:
            out[field] = string(data[key], (*loc, key), issues, least=1, most=10**9)
    return out
