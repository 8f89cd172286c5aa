"""`convlab run` with several agents: variants in one experiment.

`-n` repeated, or `-n NAME=SPEC` (a variant's name, then its agent), or `--experiment NAME`
run every variant on the suite as one experiment (`cl.run(suite, {name: agent, ...})`): one
`--parallel` shared by all, the leaderboard printed at the end, `-o` an experiment save
(`.json` by default, `.html`, `.md`), `--store OUT.jsonl` a store per variant
(`OUT.NAME.jsonl`). The exit code is 1 unless every variant passed everything.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from convlab.errors import ConvlabError

__all__ = ["agent_specs", "experiment_command", "is_experiment", "variant_names"]

_VARIANT_NAME = re.compile(r"^([\w.+-]+)=(.+)$")
"""`-n NAME=SPEC`: a name of letters, digits, `.`, `+`, `-` and `_` (no `:` or `/`, which
every spec has before any `=`), then the spec."""


def agent_specs(given: list[str] | None) -> list[tuple[str | None, str]]:
    """The `-n` values as (variant name or None, spec): `-n short=openai:gpt-4o-mini`."""
    out: list[tuple[str | None, str]] = []
    for text in given or []:
        m = _VARIANT_NAME.match(text.strip())
        out.append((m.group(1), m.group(2).strip()) if m else (None, text.strip()))
    return out


def is_experiment(args: argparse.Namespace) -> bool:
    """Whether `convlab run` runs an experiment: several `-n`, a named one, or --experiment."""
    specs = agent_specs(args.name)
    return len(specs) > 1 or any(n for n, _ in specs) or bool(getattr(args, "experiment", None))


def variant_names(specs: list[tuple[str | None, str]]) -> list[str]:
    """Each variant's name: its own, else its spec (`demo:expense`, then `demo:expense#2`
    when the same spec comes again).

    Raises:
        ConvlabError: If two variants are given the same name.
    """
    names: list[str] = []
    for name, spec in specs:
        if name is not None:
            if name in names:
                raise ConvlabError(f"-n {name}=...: two variants are named {name!r}")
            names.append(name)
            continue
        candidate, n = spec, 1
        while candidate in names:
            n += 1
            candidate = f"{spec}#{n}"
        names.append(candidate)
    return names


def experiment_command(
    args: argparse.Namespace, config: dict[str, Any], suite: Any, source: Path, replay: bool
) -> int:
    """`convlab run` with several agents (`-n A -n B`, `-n NAME=SPEC`) or `--experiment`:
    every variant in one experiment; exit 1 unless every variant passed everything."""
    import convlab as cl
    from convlab._cli_run import (
        NO_AGENT,
        default_output,
        notes,
        resolve_agent,
        run_exit_code,
        run_options,
        suite_model_agent,
    )
    from convlab.report._console_experiment import ExperimentConsole

    specs = agent_specs(args.name)
    if not specs:
        spec = config.get("agent") or suite_model_agent(suite.metadata)
        if not spec:
            raise ConvlabError(NO_AGENT)
        specs = [(None, spec)]
    names = variant_names(specs)
    agents = {
        name: resolve_agent(spec, f"-n {name}=" if given else "-n ", replay)
        for name, (given, spec) in zip(names, specs, strict=True)
    }
    output = Path(args.output) if args.output else default_output(source).with_suffix(".json")
    progress = ExperimentConsole(
        verbose=args.verbose, quiet=False, source=str(source), output=str(output)
    )
    options = run_options(args, config, agents)
    exp = cl.run(suite, agents, **options, experiment=args.experiment, progress=progress)
    written = exp.save(output)
    for name, run in exp.runs.items():
        notes(run.settings, f"{name}: ")
    print(f"results written to {written}", file=sys.stderr)  # noqa: T201 - the CLI's output
    return max(run_exit_code(run) for run in exp.runs.values())
