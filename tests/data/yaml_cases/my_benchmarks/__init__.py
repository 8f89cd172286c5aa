"""Grader package used by the seed 003 §8.4 example (imported at load, never run here)."""
