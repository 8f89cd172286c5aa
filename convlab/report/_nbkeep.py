"""What an executed notebook keeps of its run: the page title it is known by, the widget models
an output still shows, and a kernel that printed nothing on the way (convlab.report.notebook).
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbformat import NotebookNode

__all__ = ["drop_dead_widgets", "local_sockets", "notebook_title"]

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_MODEL_REF = re.compile(r"IPY_MODEL_([0-9a-f]+)")


@contextlib.contextmanager
def local_sockets() -> Iterator[Any]:
    """Kernel settings for local sockets where the system has them: the report's kernel talks
    to nothing else, and a TCP kernel prints ipykernel's "running over TCP without
    encryption" warning into the user's terminal. The sockets live in a private folder."""
    from traitlets.config import Config

    config = Config()
    if os.name == "nt":  # no unix sockets for zmq's ipc transport
        yield config
        return
    with tempfile.TemporaryDirectory(prefix="convlab-kernel-") as folder:
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(Path(folder, "k"))
        yield config


def drop_dead_widgets(nb: NotebookNode) -> None:
    """Keep only the saved widget models that an output still shows (and the models those
    refer to). nbclient stores every model the kernel ever made, closed or replaced: the live
    tree's, swapped for its static summary when the run ended, would weigh on every save."""

    store = nb.metadata.get("widgets", {}).get(_WIDGET_STATE)
    if not store or not isinstance(store.get("state"), dict):
        return
    models: dict[str, Any] = store["state"]
    todo = [
        str(out["data"][_WIDGET_VIEW].get("model_id", ""))
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if _WIDGET_VIEW in out.get("data", {})
    ]
    keep: set[str] = set()
    while todo:
        model = todo.pop()
        if model in models and model not in keep:
            keep.add(model)
            todo += _MODEL_REF.findall(json.dumps(models[model]))
    store["state"] = {k: v for k, v in models.items() if k in keep}
    if not keep:
        nb.metadata["widgets"].pop(_WIDGET_STATE)
        if not nb.metadata["widgets"]:
            nb.metadata.pop("widgets")


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_MD_ESCAPED = re.compile(r"\\([\\`*_\[\]{}()#+!|~>-])")


def notebook_title(nb: NotebookNode, name: str | None = None) -> str:
    """A notebook's name for a page title: its `title` metadata, its first Markdown heading
    (markup and escapes removed), `name`, or "Notebook"."""
    title = str(nb.metadata.get("title") or "").strip()
    if title:
        return title
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = _HEADING.search(str(cell.source))
            if match:
                text = _MD_ESCAPED.sub(r"\1", match.group(1)).replace("`", "")
                return html.unescape(text.replace("**", "").strip()) or name or "Notebook"
    return name or "Notebook"
