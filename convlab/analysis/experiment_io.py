"""Saving an experiment and reading it back.

`.json` holds everything: the experiment (id, name, baseline, settings, times), each variant's
whole Run (as `Run.to_json()` writes it, suite and results included), and, for `jq` and other
readers, the leaderboard's rows (derived: dropped on reading and computed again):

    {"type": "convlab.experiment", "experiment_format": 1, "id", "name", "baseline",
     "settings", "started_at", "finished_at", "leaderboard": [{...}, ...],
     "variants": [{"name": "short", "run": {...the Run...}}, ...]}

`convlab.load_experiment` reads it back. Every saver is in convlab.analysis.io's one registry
(`experiment.json` here); `.html` (a page that opens offline) and `.md` are written by
convlab.report.experiment, imported on first use (it loads plotly and itables).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convlab.analysis.io import register_saver, write_atomic
from convlab.errors import SuiteError
from convlab.model.codec import json_cell

if TYPE_CHECKING:
    from convlab.model.experiment import Experiment

__all__ = [
    "EXPERIMENT_TYPE",
    "experiment_json",
    "is_experiment_file",
    "load_experiment",
]

EXPERIMENT_TYPE = "convlab.experiment"
EXPERIMENT_FORMAT = 1


def experiment_json(exp: Experiment) -> str:
    """The `.json` text of an experiment (see the module docstring)."""
    board = exp.leaderboard()
    head = {
        "type": EXPERIMENT_TYPE,
        "experiment_format": EXPERIMENT_FORMAT,
        "id": exp.id,
        "name": exp.name,
        "baseline": exp.baseline,
        "settings": exp.settings,
        "started_at": exp.started_at,
        "finished_at": exp.finished_at,
        "leaderboard": [
            {str(k): json_cell(v) for k, v in row.items()} for row in board.to_dict("records")
        ],
    }
    text = json.dumps(head, ensure_ascii=False, indent=2, default=str)
    variants = ",\n".join(
        f'    {{"name": {json.dumps(name, ensure_ascii=False)}, "run": {run.to_json()}}}'
        for name, run in exp.runs.items()
    )
    return text[:-2] + f',\n  "variants": [\n{variants}\n  ]\n}}\n'


@register_saver(".json", what="experiment")
def _save_json(exp: Experiment, path: Path) -> None:
    write_atomic(path, experiment_json(exp))


def is_experiment_file(data: Any) -> bool:
    """Whether parsed JSON is an experiment save."""
    return isinstance(data, dict) and data.get("type") == EXPERIMENT_TYPE


def load_experiment(path: str | os.PathLike[str]) -> Experiment:
    """Read an experiment written by `Experiment.save("....json")`.

    Raises:
        SuiteError: With every problem found (file, field, message).
    """
    from convlab.analysis.load import run_from_dict
    from convlab.model.experiment import Experiment

    p = Path(path)
    if not p.is_file():
        raise SuiteError.one(str(p), None, "", "no such experiment file")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SuiteError.one(str(p), None, "", f"not a JSON experiment: {exc}") from None
    if not is_experiment_file(data):
        raise SuiteError.one(
            str(p), None, "type", "not an experiment save (a single run reads with load_run)"
        )
    version = data.get("experiment_format")
    if version != EXPERIMENT_FORMAT:
        raise SuiteError.one(
            str(p), None, "experiment_format", f"format {version!r} is not one this convlab reads"
        )
    variants = data.get("variants")
    if not isinstance(variants, list) or not variants:
        raise SuiteError.one(str(p), None, "variants", "must be a non-empty list")
    runs = {}
    for n, item in enumerate(variants):
        if not (isinstance(item, dict) and isinstance(item.get("name"), str)):
            raise SuiteError.one(str(p), None, f"variants[{n}]", "needs a name and a run")
        runs[item["name"]] = run_from_dict(p, item.get("run"), f"variants[{n}].run")
    return Experiment(
        runs,
        name=str(data.get("name") or ""),
        id=str(data.get("id") or ""),
        baseline=data.get("baseline") if data.get("baseline") in runs else None,
        settings=data.get("settings") if isinstance(data.get("settings"), dict) else {},
        started_at=data.get("started_at"),
        finished_at=data.get("finished_at"),
    )
