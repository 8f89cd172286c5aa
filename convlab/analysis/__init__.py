"""The analysis of results: what a Run's records say, computed, never stored.

- `frames`: DataFrames over a Run's records (instances, turns, assertions, checkpoints,
  tool calls) and the suite's case table;
- `stats`: stability classes, pass^k / pass@k, Wilson intervals, the summary: pure functions;
- `compare`: run-to-run change per case, and whether it is beyond noise;
- `significance`: Fisher's exact test and Holm's correction (exact integer arithmetic);
- `trajectory`, `divergence`, `why`: why a case is flaky: each run's trajectory (tool calls,
  checks, checkpoints per turn), the case's runs as a prefix tree with its forks and their
  tests, and the one sentence that names the fork deciding whether a run passes;
- `io`: saving a Run (`.json`, `.jsonl`; reports register more suffixes) and loading it back.

It sits below the views (notebook, report) and above the engine: nothing here runs agents.
"""
