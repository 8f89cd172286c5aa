"""Reports: console progress and summaries, and saved reports (json, jsonl, md, html, ...)."""
