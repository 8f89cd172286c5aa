"""Grader package used by the §8.4 example of HoloDeck's multi-turn test-case contract (imported at load, never run here)."""
