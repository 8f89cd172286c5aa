"""Command-line flags that remember they were given: a flag given on the command line wins
over the same setting in convlab.yaml, a default does not."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["Given", "GivenFalse"]


class Given(argparse.Action):
    """Store the value and remember the flag was given (it then wins over convlab.yaml)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        given: set[str] = set(getattr(namespace, "given", set()))
        namespace.given = given | {self.dest}


class GivenFalse(Given):
    """A `--no-X` switch: store False and remember it was given (it wins over convlab.yaml)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        super().__call__(parser, namespace, False, option_string)
