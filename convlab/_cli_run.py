"""`convlab run` and `convlab ask`: choosing the agent, the settings and the output path.

The agent comes from `-n`, else from a `convlab.yaml` beside the input (`agent: SPEC`, and
optional `runs`, `parallel`, `timeout`, `judges: {ID: SPEC}`, `adaptive`, `cache`,
`cache_dir`, `prices`, `history`, `executor`, `ray_address`), else from a HoloDeck
agent.yaml's `model` block; with none of them a run stops with a usage error that says
how to pass one. Flags given on the command line win over `convlab.yaml`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from convlab._cli_experiment import (
    agent_specs,
    experiment_command,
    is_experiment,
    variant_names,
)
from convlab._history import HISTORY_KEEP
from convlab.agents.cache import CACHE_MODES
from convlab.agents.pricing import prices_from
from convlab.errors import ConvlabError
from convlab.report._console_text import clean

if TYPE_CHECKING:
    from convlab.model.answer import Answer
    from convlab.model.suite import Suite

__all__ = [
    "CONFIG_NAME",
    "DEFAULTS",
    "NO_AGENT",
    "agent_specs",
    "ask_command",
    "default_output",
    "is_experiment",
    "is_path",
    "judge_map",
    "judge_pair",
    "notes",
    "read_config",
    "resolve_agent",
    "run_command",
    "run_options",
    "set_adaptive",
    "variant_names",
]

CONFIG_NAME = "convlab.yaml"
DEFAULTS: dict[str, Any] = {
    "runs": 1,
    "parallel": 4,
    "timeout": "2m",
    "adaptive": True,
    "cache": None,
    "cache_dir": None,
    "history": True,
    "history_keep": HISTORY_KEEP,
    "executor": None,
    "ray_address": None,
}
NO_AGENT = (
    "no agent to test: pass one with -n AGENT (e.g. -n demo:expense, -n openai:gpt-4o-mini, "
    "-n http://127.0.0.1:8000/chat, -n module:function), or put `agent: SPEC` in a "
    f"{CONFIG_NAME} beside the input"
)
SUITE_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".py")


def is_path(text: str) -> bool:
    """A suite path (existing, or looking like one); anything else is a quick message."""
    looks = text.endswith(SUITE_SUFFIXES) or ("/" in text and " " not in text.strip())
    return Path(text).exists() or looks


N = TypeVar("N", int, float)


def number_arg(
    convert: Callable[[str], N], low: N, high: N | None = None, *, bad: str, rule: str
) -> Callable[[str], N]:
    """An argparse `type=` that reads a number within [low, high]; `bad` (formatted with
    `text`) and `rule` word the two ways a value is refused, so every flag says it alike."""

    def parse(text: str) -> N:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(bad.format(text=text)) from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {value}")
        return value

    return parse


positive_int = number_arg(
    int, 1, bad="invalid int value: {text!r} (a whole number >= 1)", rule="at least 1"
)
"""argparse `type=`: an integer >= 1."""


def duration(text: str) -> str:
    """argparse `type=`: a duration (`90`, `30s`, `2m30s`); kept as written."""
    from convlab._durations import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text!r}")
    return text


def read_config(folder: Path) -> dict[str, Any]:
    """The settings of `folder/convlab.yaml` ({} when there is none), checked.

    Raises:
        ConvlabError: If the file is not a mapping of the known keys with valid values.
    """
    import yaml

    path = folder / CONFIG_NAME
    if not path.is_file():
        return {}
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConvlabError(f"{path}: not valid YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConvlabError(
            f"{path}: expected a mapping with agent, runs, parallel, timeout, judges, adaptive, "
            "cache, cache_dir, prices, history, executor, ray_address"
        )
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "agent" and isinstance(value, str) and value.strip():
            out[key] = value.strip()
        elif key in ("runs", "parallel", "history_keep"):
            try:
                out[key] = positive_int(str(value))
            except argparse.ArgumentTypeError as exc:
                raise ConvlabError(f"{path}: {key}: {exc}") from None
        elif key == "judges":
            out[key] = judge_map(value, f"{path}: judges")
        elif key in ("adaptive", "history"):
            if not isinstance(value, bool):
                raise ConvlabError(f"{path}: {key}: expected true or false, got {value!r}")
            out[key] = value
        elif key == "timeout":
            try:
                out[key] = duration(str(value))
            except argparse.ArgumentTypeError as exc:
                raise ConvlabError(f"{path}: timeout: {exc}") from None
        elif key == "cache" and (value is None or value in CACHE_MODES):
            out[key] = value
        elif key == "cache":
            raise ConvlabError(f"{path}: cache: expected record, replay or auto, got {value!r}")
        elif key == "cache_dir" and isinstance(value, str) and value.strip():
            # relative to the convlab.yaml, so the recordings sit next to the suite
            out[key] = str(folder / value.strip())
        elif key == "executor" and value in ("local", "ray"):
            out[key] = value
        elif key == "executor":
            raise ConvlabError(f"{path}: executor: expected local or ray, got {value!r}")
        elif key == "ray_address" and isinstance(value, str) and value.strip():
            out[key] = value.strip()
        elif key == "prices":
            try:
                out[key] = prices_from(value)
            except ConvlabError as exc:
                raise ConvlabError(f"{path}: {exc}") from None
        else:
            raise ConvlabError(
                f"{path}: {key}: expected agent (a spec string), runs, parallel, timeout, "
                "judges, adaptive, cache, cache_dir, prices, history, executor or ray_address"
            )
    return out


def judge_map(value: Any, where: str) -> dict[str, str]:
    """`judges` of convlab.yaml: a mapping of assertion ids (`agents:validator`) to specs.

    Raises:
        ConvlabError: If it is not a mapping of non-empty strings.
    """
    if not isinstance(value, dict):
        raise ConvlabError(f"{where}: expected a mapping such as {{agents:validator: SPEC}}")
    for key, spec in value.items():
        if not (isinstance(key, str) and key and isinstance(spec, str) and spec.strip()):
            raise ConvlabError(f"{where}: {key!r}: expected an agent spec string")
    return {key: spec.strip() for key, spec in value.items()}


def judge_pair(text: str) -> tuple[str, str]:
    """argparse `type=` of `--judges ID=SPEC` (`agents:validator=openai:gpt-4o-mini`)."""
    key, sep, spec = text.partition("=")
    if not (sep and key.strip() and spec.strip()):
        raise argparse.ArgumentTypeError(
            f"expected ID=SPEC (e.g. agents:validator=openai:gpt-4o-mini), got {text!r}"
        )
    return key.strip(), spec.strip()


def suite_model_agent(metadata: dict[str, Any]) -> str | None:
    """`openai:NAME` from a HoloDeck agent.yaml's `model` block kept in `Suite.metadata`."""
    blocks = [metadata, *(metadata.get("suites") or {}).values()]
    specs = set()
    for block in blocks:
        model = block.get("model") if isinstance(block, dict) else None
        if isinstance(model, dict) and isinstance(model.get("name"), str):
            provider = str(model.get("provider", "openai"))
            if provider != "openai":
                raise ConvlabError(
                    f"the suite's model provider {provider!r} is not run by convlab; "
                    "pass the agent with -n AGENT"
                )
            specs.add(f"openai:{model['name']}")
    if len(specs) > 1:
        raise ConvlabError(f"the suite names several models ({', '.join(sorted(specs))}): pass -n")
    return specs.pop() if specs else None


def resolve_agent(spec: str, flag: str = "-n ", replay: bool = False) -> Any:
    """The Agent for `spec`; a spec that cannot be resolved is a usage error.

    ImportError (module or attribute not found) and ValueError (a bad value in the spec)
    become ConvlabError (exit 2); any other exception, such as a user module whose import
    raises RuntimeError, propagates (exit 3 with its traceback). An `openai:` agent with no
    key for a remote endpoint fails here, before anything runs, unless the run only replays
    recordings (`replay`).
    """
    from convlab.agents import as_agent
    from convlab.agents.openai_agent import OpenAIAgent

    try:
        agent = as_agent(spec)
    except (ImportError, ValueError) as exc:
        raise ConvlabError(f"{flag}{spec}: {exc}") from None
    if isinstance(agent, OpenAIAgent) and not replay:
        problem = agent.missing_key()
        if problem:
            raise ConvlabError(problem)
    return agent


def set_adaptive(agent: Any, on: bool) -> None:
    """Turn an HTTP agent's adaptive concurrency on or off (other agents have none); a dict
    of variants: each of them."""
    from convlab.agents.http_agent import HTTPAgent
    from convlab.agents.openai_agent import OpenAIAgent

    if isinstance(agent, dict):
        for one in agent.values():
            set_adaptive(one, on)
    elif isinstance(agent, HTTPAgent | OpenAIAgent):
        agent.adaptive = on


def _refuse_writing_the_suite(suite: Suite, source: Path, output: str | None) -> None:
    """`-o` never names a file the suite was read from (as `--store` never writes over a suite
    file): the run's results would replace its cases. Checked before anything runs."""
    if not output or not Path(output).exists():
        return
    read = [source, *(Path(s.file) for s in suite.sources)]
    for path in read:
        try:
            same = Path(output).samefile(path)
        except OSError:  # a source that is not a file on this disk
            continue
        if same:
            raise ConvlabError(
                f"-o {output}: is the suite being run ({path}), so convlab does not write its "
                "results over it: give another output path"
            )


def default_output(input_path: Path) -> Path:
    """Yao's default: `output-{YYYYmmddHHMMSS}.jsonl` in the input's folder."""
    folder = input_path if input_path.is_dir() else input_path.parent
    stamp = datetime.now().astimezone().strftime("%Y%m%d%H%M%S")
    return folder / f"output-{stamp}.jsonl"


def _setting(args: argparse.Namespace, config: dict[str, Any], key: str) -> Any:
    given: set[str] = getattr(args, "given", set())
    if key in given:
        return getattr(args, key)
    return config.get(key, getattr(args, key, DEFAULTS[key]))


AgentResolver = Callable[[str, str, bool], Any]
"""`(spec, flag, replay) -> agent`: how a command turns a spec into an agent (the CLI's
`resolve_agent`; the notebook magic also looks the spec up among the notebook's variables)."""

RUN_ONLY = frozenset({"input", "name", "experiment", "output", "verbose", "dry_run", "run", "help"})
"""`convlab run` options that choose what to run and where its results go: each caller
(the CLI, the `%convlab` magic) handles them. Every other option reaches `cl.run` through
`run_options` (tests/test_magics.py holds the magic to that)."""


def run_options(
    args: argparse.Namespace,
    config: dict[str, Any],
    agent: Any,
    resolve: AgentResolver | None = None,
    simulator: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """The `cl.run` keywords of a parsed `convlab run` (and the suite's convlab.yaml; the
    command line wins), but the suite, the agent and `progress`: the one place the CLI and
    the `%convlab run` magic turn options into a run, so neither can drop one.

    `resolve` makes the judges (default `resolve_agent`), `simulator` the simulator from its
    spec (default: the spec itself, which `cl.run` resolves). `--no-adaptive` (or
    `adaptive: false`) is set on `agent` and the judges here.
    """
    resolve = resolve or resolve_agent
    cache = _setting(args, config, "cache")
    replay = cache == "replay"  # a replay needs no API key
    judge = resolve(args.judge, "--judge ", replay) if args.judge else None
    specs = dict(config.get("judges") or {})
    specs.update(args.judges or [])
    judges = {key: resolve(spec, f"--judges {key}=", replay) for key, spec in specs.items()}
    if not _setting(args, config, "adaptive"):
        for http_agent in (agent, judge, *judges.values()):
            set_adaptive(http_agent, False)
    given = args.simulator
    return {
        "runs": _setting(args, config, "runs"),
        "parallel": _setting(args, config, "parallel"),
        "timeout": _setting(args, config, "timeout"),
        "simulator": simulator(given) if simulator is not None and given else given,
        "judge": judge,
        "judges": judges or None,
        "store": args.store,
        "resume": args.resume,
        "overwrite": args.overwrite,
        "fail_fast": args.fail_fast,
        "allow_external_writes": args.allow_external_writes,
        "max_cases": args.max_cases,
        "max_reply_bytes": args.max_reply_bytes or None,
        "before": args.before,
        "after": args.after,
        "cache": cache,
        "cache_dir": _setting(args, config, "cache_dir"),
        "history": _setting(args, config, "history"),
        "history_keep": _setting(args, config, "history_keep"),
        "prices": config.get("prices"),
        "executor": _executor(args, config),
    }


def _executor(args: argparse.Namespace, config: dict[str, Any]) -> Any:
    """`--executor` / `--ray-address` (or convlab.yaml's `executor`, `ray_address`) as
    `cl.run`'s `executor`: None for the local engine."""
    kind, address = _setting(args, config, "executor"), _setting(args, config, "ray_address")
    if kind == "local" and "executor" in getattr(args, "given", set()):
        return None
    if address:
        return f"ray:{address}" if not address.startswith("ray://") else address
    return "ray" if kind == "ray" else None


def run_command(args: argparse.Namespace) -> int:
    """`convlab run`: a quick message, or a suite; the exit code (see convlab.cli)."""
    import convlab as cl
    from convlab.report.console import ConsoleProgress

    if not is_path(args.input):
        config = read_config(Path.cwd())
        specs = agent_specs(args.name)
        if len(specs) > 1:
            raise ConvlabError("a quick message is asked of one agent: give one -n AGENT")
        spec = (specs[0][1] if specs else None) or config.get("agent")
        if not spec:
            raise ConvlabError(NO_AGENT)
        return _show_answer(cl.ask(resolve_agent(spec), args.input))
    source = Path(args.input)
    if not source.exists():
        raise ConvlabError(f"{args.input}: no such file or folder")
    config = read_config(source if source.is_dir() else source.parent)
    suite = cl.load(source)
    _refuse_writing_the_suite(suite, source, args.output)
    if args.run:
        suite = suite.filter(run=args.run)
        if not suite.cases:
            raise ConvlabError(f"no test cases match pattern {args.run!r}")
    if args.dry_run:
        print(suite.df.to_string(index=False))  # noqa: T201 - the CLI's output
        return 0
    cache = _setting(args, config, "cache")
    replay = cache == "replay"  # a replay needs no API key
    if is_experiment(args):
        return experiment_command(args, config, suite, source, replay)
    specs = agent_specs(args.name)
    spec = (specs[0][1] if specs else None) or config.get("agent")
    spec = spec or suite_model_agent(suite.metadata)
    if not spec:
        raise ConvlabError(NO_AGENT)
    agent = resolve_agent(spec, replay=replay)
    output = Path(args.output) if args.output else default_output(source)
    progress = ConsoleProgress(
        verbose=args.verbose, quiet=False, source=str(source), output=str(output)
    )
    run = cl.run(suite, agent, **run_options(args, config, agent), progress=progress)
    written = run.save(output)
    notes(run.settings)
    print(f"results written to {written}", file=sys.stderr)  # noqa: T201 - the CLI's output
    return run_exit_code(run)


def notes(settings: dict[str, Any], prefix: str = "") -> None:
    """What the cache and the adaptive concurrency did, and where secrets were masked, on
    stderr."""
    counts = settings.get("cache")
    if counts:
        print(  # noqa: T201 - the CLI's output
            f"{prefix}cache ({counts['mode']}, {counts['dir']}): {counts['replayed']} replayed, "
            f"{counts['recorded']} recorded, {counts['missed']} missed"
            + (
                f"; {counts['unwritten']} not written: {counts['write_error']}"
                if counts.get("unwritten")
                else ""
            ),
            file=sys.stderr,
        )
    transport = transport_text(settings.get("transport"))
    if transport:
        print(prefix + transport, file=sys.stderr)  # noqa: T201 - the CLI's output
    masked = settings.get("masked")
    if masked:  # where the known secrets were replaced by ***
        shown = "; ".join(str(m) for m in masked)
        print(f"{prefix}secrets masked (***) in: {shown}", file=sys.stderr)  # noqa: T201


def transport_text(status: dict[str, Any] | None) -> str:
    """What the adaptive concurrency of a run's endpoint did, in one line ('' when it did
    nothing worth saying: no overload, no stuck request)."""
    if not status or not (status.get("overloads") or status.get("stuck")):
        return ""
    parts = [f"{status['overloads']} overload answer(s)"]
    if status.get("limit") is not None:
        parts.append(f"limit now {status['limit']} in flight")
    if status.get("stuck"):
        parts.append(f"{status['stuck']} request(s) stuck past the endpoint's usual time")
    cut = status.get("retry_after_cut")
    if cut:
        parts.append(
            f"a Retry-After of {cut['asked_s']:g} s was cut to {cut['applied_s']:g} s for the "
            "cases' deadlines"
        )
    parts.append(f"{status.get('waited_s', 0):g} s waited for a slot")
    return f"adaptive concurrency ({status.get('endpoint')}): " + "; ".join(parts)


def run_exit_code(run: Any) -> int:
    """1 if anything did not pass (failures, errors, timeouts, a failed hook, a cancel)."""
    bad = sum(r.status in ("failed", "error", "timeout", "cancelled") for r in run.results)
    bad += sum(a.status in ("failed", "error") for a in run.suite_assertions)
    broken = run.status in ("failed", "cancelled") or bool(run.error)
    return 1 if bad or broken else 0


def ask_command(args: argparse.Namespace) -> int:
    """`convlab ask AGENT MESSAGE [--assert SPEC ...]`: the transcript, 0 if every check passed."""
    import convlab as cl
    from convlab.notebook.magics import parse_assertion

    specs: list[Any] = []
    for text in args.asserts or []:
        try:
            specs += parse_assertion(text)
        except ValueError as exc:
            raise ConvlabError(f"--assert {text!r}: {exc}") from None
    judge = resolve_agent(args.judge) if args.judge else None
    return _show_answer(cl.ask(resolve_agent(args.agent), args.message, *specs, judge=judge))


def _show_answer(answer: Answer) -> int:
    """Print the transcript (the agent's text, its controls shown) and, when the agent
    raised, the error and where on stderr: a failed test, not bad usage; the exit code."""
    print(clean(answer))  # noqa: T201 - the CLI's output
    if answer.error is not None:
        info = answer.error_info
        where = f" (at {info.location})" if info is not None and info.location else ""
        print(f"convlab: {clean(answer.error)}{where}", file=sys.stderr)  # noqa: T201
    return 0 if answer.passed else 1
