"""Run `holodeck test` (HoloDeck 0.7.1's own CLI command) on several agent.yaml files.

Runs under the HoloDeck venv's python, never convlab's. HoloDeck takes most of a minute to
import on a loaded machine, so one process runs every file through the CLI's click command
(`holodeck test run FILE --output REPORT -q`) instead of starting `holodeck` once per file.

    python holodeck_driver.py OUT_DIR AGENT_YAML [AGENT_YAML ...]

Writes OUT_DIR/<n>.json (HoloDeck's JSON report for the n-th file) and OUT_DIR/exit.json
(the CLI's exit code per file; 0 all passed, 1 some failed, 2+ HoloDeck could not run).
The model endpoint comes from the environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from holodeck.cli.main import main as holodeck  # the installed CLI, imported once

    out = Path(argv[0]).resolve()
    codes: list[int] = []
    for n, name in enumerate(argv[1:]):
        agent = Path(name).resolve()
        os.chdir(agent.parent)  # HoloDeck writes its results/ folder beside the file
        report = out / f"{n}.json"
        try:
            holodeck(
                ["test", "run", str(agent), "--output", str(report), "-q"],
                standalone_mode=False,
            )
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        codes.append(code)
        print(f"holodeck test {agent}: exit {code}", flush=True)
    (out / "exit.json").write_text(json.dumps(codes), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
