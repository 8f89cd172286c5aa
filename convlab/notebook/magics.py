"""IPython magics: `%%ask AGENT` for one quick message and `%convlab ...` for the CLI.

`%load_ext convlab` registers them (convlab/__init__.py delegates here). IPython is imported
inside `load_ipython_extension` and `_usage` only, so `import convlab` never loads it.

Both magics are synchronous and go through the public `convlab.ask` / `convlab.run` (which
run the engine on a worker thread when the kernel's loop is running). Mistakes in a magic
line (a bad option, an unknown agent, an invalid assertion, an invalid suite) come back as
IPython `UsageError`s: one clear message instead of a traceback through argparse and the
engine. Errors raised by the user's own agent function keep their traceback: that is where
the bug is.

Neither magic expands `$name` / `{expr}` in its line: assertion JSON has braces and money
regexes have dollars, and a silent substitution there would change what is tested. Instead,
an AGENT (and `--history`, `--world`, `--judge`, `--simulator`) that names a variable of the
notebook is looked up in the user namespace.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from convlab.errors import ConvlabError, HelpPrinted, SuiteError

if TYPE_CHECKING:
    from convlab.agents.protocol import Agent
    from convlab.model.answer import Answer
    from convlab.model.assertions import Assertion

__all__ = ["ASK_USAGE", "ask_magic", "convlab_magic", "load_ipython_extension", "parse_assertion"]

ASK_USAGE = (
    "%%ask AGENT [--assert SPEC]... [--history JSON|VAR] [--world JSON|VAR] [--judge AGENT]\n"
    "  AGENT: demo:NAME, openai:MODEL, http:URL, module:function, or a notebook variable\n"
    "  SPEC:  contains:TEXT, not_contains:TEXT, equals:TEXT, regex:PATTERN, tool:NAME,\n"
    "         tool_result:NAME, type:TYPE, json, json:PATH=VALUE, judge:QUESTION,\n"
    '         or a JSON/YAML assertion such as \'{"type": "contains", "value": "hi"}\'\n'
    "  The cell body is the message."
)
"""What `%%ask --help` prints, and what a usage error points to."""


def _usage(message: str) -> NoReturn:
    """Raise IPython's UsageError: the front end prints it as one line, no traceback."""
    from IPython.core.error import UsageError

    raise UsageError(message)


def _split(line: str) -> list[str]:
    """Shell-like words, with backslashes kept as written (`regex:\\d+` must stay `\\d+`)."""
    lexer = shlex.shlex(line, posix=True)
    lexer.whitespace_split = True
    lexer.escape = ""
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as exc:  # "No closing quotation"
        _usage(f"cannot read the magic line: {str(exc).lower()} in {line.strip()!r}")


# ---------------------------------------------------------------- names and values

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _lookup(namespace: dict[str, Any], text: str) -> tuple[bool, Any]:
    """(found, value) for a variable (or `obj.attr`) of the notebook named `text`."""
    if not _DOTTED.fullmatch(text):
        return False, None
    first, *rest = text.split(".")
    if first not in namespace:
        return False, None
    value = namespace[first]
    for attr in rest:
        if not hasattr(value, attr):
            return False, None
        value = getattr(value, attr)
    return True, value


def _agent(namespace: dict[str, Any], text: str, what: str = "agent") -> Agent:
    """An agent from a notebook variable or a spec string; a clear message when neither."""
    from convlab.agents.protocol import as_agent

    found, value = _lookup(namespace, text)
    try:
        return as_agent(value if found else text)
    except (ConvlabError, ValueError, ImportError, TypeError) as exc:
        reason = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        hint = ""
        if not found and _DOTTED.fullmatch(text):
            hint = " (not a variable in this notebook either)"
        _usage(f"{what} {text!r}: {reason}{hint}")


def _structured(namespace: dict[str, Any], text: str) -> Any:
    """A notebook variable, or JSON, or YAML (flow style such as `{a: 1}` too)."""
    found, value = _lookup(namespace, text)
    if found:
        return value
    try:
        return json.loads(text)
    except ValueError:
        pass
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"neither JSON nor YAML ({first})") from None


# ---------------------------------------------------------------- assertions


def _path_value(rest: str) -> dict[str, Any]:
    """`PATH=VALUE` -> a json_path assertion; VALUE is JSON when it parses, else text."""
    path, sep, raw = rest.partition("=")
    if not sep or not path:
        raise ValueError("write json:PATH=VALUE, e.g. json:total=42 or json:items[0].name=pen")
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return {"type": "json_path", "path": path, "value": value}


_JSON_TYPES = ("null", "string", "number", "boolean", "array", "object")


def _json_short(rest: str) -> dict[str, Any]:
    """`json` (an object), `json:array` (that JSON type) or `json:PATH=VALUE`."""
    if not rest or rest in _JSON_TYPES:
        return {"type": "type", "value": rest or "object", "path": "$."}
    return _path_value(rest)


def _needs(kind: str, build: Callable[[str], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    def make(rest: str) -> dict[str, Any]:
        if not rest:
            raise ValueError(f"'{kind}' needs a value: --assert {kind}:VALUE")
        return build(rest)

    return make


SHORTHANDS: dict[str, Callable[[str], dict[str, Any]]] = {
    "contains": _needs("contains", lambda v: {"type": "contains", "value": v}),
    "not_contains": _needs("not_contains", lambda v: {"type": "not_contains", "value": v}),
    "equals": _needs("equals", lambda v: {"type": "equals", "value": v}),
    "regex": _needs("regex", lambda v: {"type": "regex", "value": v}),
    "tool": _needs("tool", lambda v: {"type": "tool_called", "value": v}),
    "tool_called": _needs("tool_called", lambda v: {"type": "tool_called", "value": v}),
    "tool_result": _needs("tool_result", lambda v: {"type": "tool_result", "value": {"tool": v}}),
    "type": _needs("type", lambda v: {"type": "type", "value": v}),
    "json": _json_short,
    "json_path": _needs("json_path", _path_value),
    "judge": _needs("judge", lambda v: {"kind": "judge", "question": v}),
}
"""`--assert KIND:VALUE` shorthands -> the dict `convlab.check` reads (JSONL spelling)."""

_SHORT = re.compile(r"([a-z_]+)(?::(.*))?", re.S)


def parse_assertion(text: str, namespace: dict[str, Any] | None = None) -> list[Assertion]:
    """The assertions one `--assert` value stands for (a JSON list gives several).

    Accepted: a shorthand (`contains:expense`, `regex:EXP-\\d+`, `tool:create_expense`,
    `json`, `json:total=42`, `judge:Is it polite?`), a JSON or YAML assertion in any
    format's spelling (`{"type": "contains", "value": "x"}`, `{kind: judge, question: ...}`),
    a list of those, or a notebook variable holding one.

    Raises:
        ValueError: With a one-line reason (unknown shorthand, missing value, invalid spec).
    """
    ns = namespace or {}
    text = text.strip()
    raw: Any
    short = _SHORT.fullmatch(text)
    if text[:1] in "{[":
        raw = _structured({}, text)
    elif short and short.group(1) in SHORTHANDS:
        raw = SHORTHANDS[short.group(1)](short.group(2) or "")
    elif _lookup(ns, text)[0]:
        raw = _lookup(ns, text)[1]
    else:
        raw = _structured({}, text) if ":" in text and " " in text else None
        if not isinstance(raw, dict | list):
            from convlab.formats._base import did_you_mean

            head = text.partition(":")[0]
            hint = did_you_mean(head, list(SHORTHANDS)) or ""
            raise ValueError(
                f"unknown assertion {text!r}.{hint} Shorthands: {', '.join(SHORTHANDS)}; "
                'or a JSON assertion such as \'{"type": "contains", "value": "hi"}\''
            )
    items = raw if isinstance(raw, list) else [raw]
    if isinstance(raw, list) and any(isinstance(item, str) for item in items):
        specs: list[Assertion] = []
        for item in items:  # a list may mix shorthands and dicts
            specs += parse_assertion(item, ns) if isinstance(item, str) else _specs([item])
        return specs
    return _specs(items)


def _specs(items: list[Any]) -> list[Assertion]:
    from convlab.checks.api import to_spec

    try:
        return [to_spec(item) for item in items]
    except SuiteError as err:
        problems = "; ".join(
            f"{p.path}: {p.message}" if p.path else p.message for p in err.problems
        )
        raise ValueError(problems) from None


# ---------------------------------------------------------------- %%ask


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting the kernel's process."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise HelpPrinted(status)


def _ask_parser() -> _Parser:
    p = _Parser(prog="%%ask", usage=ASK_USAGE.replace("%", "%%"), add_help=True)
    p.add_argument("agent", nargs="?", metavar="AGENT", help="the agent to ask")
    p.add_argument(
        "-a",
        "--assert",
        dest="asserts",
        action="append",
        default=[],
        metavar="SPEC",
        help="an assertion on the reply (repeatable)",
    )
    p.add_argument("--history", metavar="JSON|VAR", help="earlier messages, sent first")
    p.add_argument("--world", metavar="JSON|VAR", help="the starting world state (ctx.world)")
    p.add_argument("--judge", metavar="AGENT", help="the judge for judge assertions")
    return p


def ask_magic(namespace: dict[str, Any], line: str, cell: str | None) -> Answer | None:
    """`%%ask AGENT [--assert SPEC]...`: send the cell to the agent, return the Answer."""
    import convlab

    try:
        args = _ask_parser().parse_args(_split(line))
    except HelpPrinted:
        return None
    except ValueError as exc:
        _usage(f"%%ask: {exc}\nusage: {ASK_USAGE}")
    if not args.agent:
        _usage(f"%%ask needs an agent\nusage: {ASK_USAGE}")
    message = (cell or "").strip()
    if not message:
        _usage("%%ask: the cell is the message; write it below the %%ask line")
    specs: list[Assertion] = []
    for text in args.asserts:
        try:
            specs += parse_assertion(text, namespace)
        except ValueError as exc:
            _usage(f"--assert {text}: {exc}")
    options: dict[str, Any] = {}
    for name, kind in (("history", list), ("world", dict)):
        text = getattr(args, name)
        if text is None:
            continue
        try:
            value = _structured(namespace, text)
        except ValueError as exc:
            _usage(f"--{name}: {exc}")
        if not isinstance(value, kind):
            _usage(f"--{name} must be a {'list of messages' if kind is list else 'dict'}")
        options[name] = value
    agent = _agent(namespace, args.agent)
    if args.judge:
        options["judge"] = _agent(namespace, args.judge, "judge")
    try:
        return convlab.ask(agent, message, *specs, **options)
    except SuiteError as err:
        _usage(str(err))
    except ConvlabError as err:
        _usage(f"%%ask: {err}")


# ---------------------------------------------------------------- %convlab


def _cli_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """The CLI's own parser on argv; its errors become one UsageError (None after --help)."""
    from convlab.cli import _parser

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return _parser().parse_args(argv)
    except SystemExit as exc:
        if not exc.code:
            return None  # --help was printed to stdout
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        reason = next(
            (ln for ln in reversed(lines) if ": error: " in ln), lines[-1] if lines else ""
        )
        _usage(f"%{reason.strip()}" if reason.startswith("convlab") else reason or "bad options")


def _main(argv: list[str]) -> None:
    """Any other subcommand: the CLI itself; a non-zero exit code is printed, not raised."""
    from convlab.cli import main

    try:
        code: Any = main(argv)
    except SystemExit as exc:
        code = exc.code
        if isinstance(code, str):
            print(code, file=sys.stderr)  # noqa: T201 - the CLI's message, shown in the cell
            code = 1
    if code:
        print(f"convlab {argv[0]}: exit code {code}", file=sys.stderr)  # noqa: T201


def _agents(namespace: dict[str, Any], args: argparse.Namespace) -> Any:
    """The agent of `-n`, or the variants of an experiment: several `-n` (`NAME=` optional),
    `--experiment`, or one `-n` naming a notebook dict of agents (`-n grid`)."""
    from convlab._cli_run import agent_specs, is_experiment, variant_names

    specs = agent_specs(args.name)
    if len(specs) == 1 and specs[0][0] is None:
        found, value = _lookup(namespace, specs[0][1])
        if found and isinstance(value, dict):
            return dict(value)
        if not is_experiment(args):
            return _agent(namespace, specs[0][1])
    try:
        names = variant_names(specs)
    except ConvlabError as err:
        _usage(f"convlab run: {err}")
    return {name: _agent(namespace, spec) for name, (_, spec) in zip(names, specs, strict=True)}


def _run(namespace: dict[str, Any], args: argparse.Namespace) -> Any:
    """`%convlab run`: the Run (live tree, then its card), an Answer, or the cases."""
    import convlab
    from convlab._cli_run import agent_specs, read_config, run_options
    from convlab.cli import _check_options, _is_path

    try:
        _check_options(args)
    except ConvlabError as err:
        _usage(f"convlab run: {err}")
    specs = agent_specs(args.name)
    if not _is_path(args.input):
        if len(specs) != 1:  # as the CLI: no silent default agent
            _usage("convlab run: give the agent to ask with -n AGENT (e.g. -n demo:expense)")
        return convlab.ask(_agent(namespace, specs[0][1]), args.input)
    if not Path(args.input).exists():
        _usage(f"convlab run: {args.input}: no such file or folder")
    try:
        suite = convlab.load(args.input)
    except SuiteError as err:
        _usage(str(err))
    if args.run:
        suite = suite.filter(run=args.run)
        if not suite.cases:
            _usage(f"convlab run: no test cases match pattern {args.run!r}")
    if args.dry_run:
        return suite.df
    if not specs:
        _usage("convlab run: give the agent to test with -n AGENT (e.g. -n demo:expense)")
    agent = _agents(namespace, args)

    def simulator(spec: str) -> Any:
        from convlab.engine.conversation import resolve_simulator

        found, value = _lookup(namespace, spec)
        try:
            return resolve_simulator(value if found else spec)
        except (ConvlabError, ValueError, ImportError, TypeError) as exc:
            _usage(f"simulator {spec!r}: {exc}")

    def judge(spec: str, flag: str, replay: bool) -> Any:
        return _agent(namespace, spec, "judge")

    source = Path(args.input)
    try:  # every option of `convlab run` reaches the run as the CLI passes it (run_options)
        config = read_config(source if source.is_dir() else source.parent)
        options = run_options(args, config, agent, judge, simulator)
        named = args.experiment if isinstance(agent, dict) else None
        run = convlab.run(suite, agent, **options, experiment=named, progress=None)
    except SuiteError as err:
        _usage(str(err))
    except ConvlabError as err:
        _usage(f"convlab run: {err}")
    if args.output:
        run.save(args.output)
        print(f"results written to {args.output}")  # noqa: T201 - shown in the cell
    return run


def _commands() -> list[str]:
    """The CLI's subcommands, read from its parser (it gains new ones over time)."""
    from convlab.cli import _parser

    for action in _parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def convlab_magic(namespace: dict[str, Any], line: str) -> Any:
    """`%convlab SUBCOMMAND ...`: the CLI in a cell; `run` returns a Run (or an Answer)."""
    argv = _split(line)
    if not argv:
        _usage(f"usage: %convlab {{{','.join(_commands())}}} ... (%convlab --help for more)")
    args = _cli_args(argv)
    if args is None:
        return None
    if args.command == "run":
        return _run(namespace, args)
    _main(argv)
    return None


def load_ipython_extension(ipython: Any) -> None:
    """Register `%%ask` and `%convlab` on this shell (what `%load_ext convlab` calls)."""
    from IPython.core.magic import no_var_expand

    @no_var_expand
    def ask(line: str, cell: str | None = None) -> Any:
        return ask_magic(ipython.user_ns, line, cell)

    @no_var_expand
    def convlab(line: str) -> Any:
        return convlab_magic(ipython.user_ns, line)

    ask.__doc__ = f"Send the cell to an agent and check the reply.\n\n{ASK_USAGE}"
    convlab.__doc__ = "Run the convlab CLI in a cell: %convlab run -i SUITE -n AGENT [--runs N]"
    ipython.register_magic_function(ask, magic_kind="cell", magic_name="ask")
    ipython.register_magic_function(convlab, magic_kind="line", magic_name="convlab")
