"""The analysis of results: what a Run's records say, computed, never stored.

- `frames`: DataFrames over a Run's records (instances, turns, assertions, checkpoints,
  tool calls) and the suite's case table;
- `stats`: stability classes, pass^k / pass@k, Wilson intervals, the summary: pure functions;
- `compare`: run-to-run change per case, and whether it is beyond noise;
- `io`: saving a Run (`.json`, `.jsonl`; reports register more suffixes) and loading it back.

It sits below the views (notebook, report) and above the engine: nothing here runs agents.
"""
