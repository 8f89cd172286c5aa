"""Command-line flags that remember they were given: a flag given on the command line wins
over the same setting in convlab.yaml, a default does not."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["Given"]


class Given(argparse.Action):
    """Store the value and remember the flag was given (it then wins over convlab.yaml). A
    switch (`nargs=0`) stores its `const`: `--no-X` is `action=Given, nargs=0, const=False`."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        given: set[str] = set(getattr(namespace, "given", set()))
        namespace.given = given | {self.dest}
