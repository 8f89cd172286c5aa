"""Offline stand-ins for the financial-assistant sample's tools (HoloDeck and convlab run these)."""

from __future__ import annotations


def convfinqa_archive(query, document=""):  # type: ignore[no-untyped-def]
    """Search the archive: returns the document name it would read."""
    return f"{document}: {str(query)[:40]}"


def calculator(expression):  # type: ignore[no-untyped-def]
    """Echo a ConvFinQA program (the scripted model already knows the answer)."""
    return str(expression)


ALL = [convfinqa_archive, calculator]
