"""An exception the user's code raised, as the notebook views show it: where (file, line,
function), and the short traceback behind a click.

Messages, file names and traceback lines come from the user's code and its data: untrusted
text, escaped before it reaches HTML.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convlab.model.records import ErrorInfo

__all__ = ["location_html", "traceback_html"]

_PRE = "white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0;font-size:12px"
"""A traceback's layout where the transcript's stylesheet is not loaded (the tree, cards)."""


def location_html(info: ErrorInfo | None) -> str:
    """` at <code>my_agent.py:12</code> in <code>reply</code>`, '' with no user frame."""
    if info is None or info.file is None:
        return ""
    e = html.escape
    where = f" at <code title='{e(info.file)}'>{e(info.place)}</code>"
    return where + (f" in <code>{e(info.function)}</code>" if info.function else "")


def traceback_html(info: ErrorInfo | None, open_: bool = False) -> str:
    """The short traceback, folded under a `traceback` summary ('' when there is none)."""
    if info is None or not info.traceback:
        return ""
    return (
        f"<details{' open' if open_ else ''}><summary class='cl-muted'>traceback</summary>"
        f"<pre class='cl-json' style='{_PRE}'>{html.escape(info.traceback)}</pre></details>"
    )
