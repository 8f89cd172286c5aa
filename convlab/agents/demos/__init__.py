"""Built-in demo agents: deterministic, rule-based, with tools and a world state.

They let a new user see convlab work end to end with no key and no network, and every
suite under `examples/` runs on one of them:

- `expense`: asks the type and amount, confirms, submits (`create_expense`, `submit_expense`);
  runs examples/expense (JSONL). `expense_lite` is the same as a smaller model would be: it
  follows only the rules in the first 20 words of its system prompt.
- `cloud_drive`: lists, searches, reads, creates, appends to and deletes files (asking
  before it deletes); runs examples/cloud_drive (Python tests).
- `catalog`: product search answered with a choice interaction; a selection records the
  fact `product.selected`; runs examples/catalog (JSON suite).
- `finance`: ConvFinQA-style figures with `lookup_figure`, `add`, `subtract`, `divide`;
  runs examples/finance (YAML).

Example:
    >>> import convlab as cl
    >>> agent = cl.agents.demo("expense")
    >>> from convlab.agents import demos
    >>> demos.names()
    ['catalog', 'cloud_drive', 'expense', 'expense_lite', 'finance']

The factory is the function `convlab.agents.demo(name)`; this package is `demos`, so the
two never shadow each other.
"""

from __future__ import annotations

import importlib

from convlab.agents.protocol import Agent
from convlab.registry import Registry

__all__ = ["demo", "get", "names"]

_MODULES: Registry[str] = Registry("demo agent")
"""Demo name -> `module:Class` (imported on first use, so `import convlab` stays light)."""
_MODULES.add("expense", "convlab.agents.demos.expense:ExpenseAgent")
_MODULES.add("expense_lite", "convlab.agents.demos.expense:ExpenseLiteAgent")
_MODULES.add("cloud_drive", "convlab.agents.demos.cloud_drive:CloudDriveAgent")
_MODULES.add("catalog", "convlab.agents.demos.catalog:CatalogAgent")
_MODULES.add("finance", "convlab.agents.demos.finance:FinanceAgent")


def names() -> list[str]:
    """The demo agents' names, sorted."""
    return _MODULES.names()


def get(name: str) -> Agent:
    """A new demo agent; an unknown name raises UnknownNameError with the closest names."""
    module, _, cls = _MODULES.get(name.replace("-", "_")).partition(":")
    agent: Agent = getattr(importlib.import_module(module), cls)()
    return agent


def demo(name: str) -> Agent:
    """A new demo agent by name: `expense`, `expense_lite`, `cloud_drive`, `catalog` or
    `finance`."""
    return get(name)
