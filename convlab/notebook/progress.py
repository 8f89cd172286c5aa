"""The live progress tree: a handful of ipywidgets redrawn by a throttled pump.

Why this shape: jupyter_server drops iopub messages above 1000/s and every widget ever created
is saved in the notebook, so there is never one widget per case. Engine events only change
plain Python state under a lock; a pump thread redraws at most `1 / interval` times a second
inside `hold_sync()`, and once more at the end. The body is one HTML string capped to what a
person can read: the running instances, the latest failures and the most recent ones; the
totals live in the header. The body scrolls inside a fixed height under a sticky header, so
the counts, the bar and Stop stay in view while the run goes.

The display output carries a static `text/html` snapshot beside the widget view, and at the
end of the run it is replaced, through its display handle, by a static summary card. A saved
or exported notebook therefore shows the result with no widget state and no JavaScript.

Every string that came from a file or an agent is escaped before it reaches HTML.
"""

from __future__ import annotations

import html
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from convlab._readable import shorten
from convlab.engine.events import (
    CaseFinished,
    CaseStarted,
    CheckpointReached,
    ConcurrencyChanged,
    Event,
    ExperimentFinished,
    ExperimentStarted,
    RunFinished,
    RunStarted,
    TurnCompleted,
    WorkersChanged,
)
from convlab.htmlkit import GLYPHS, STATUS_CSS, TREE_BODY_HEIGHT, style_html, style_tag
from convlab.notebook._tree_nodes import Key, Node, node_html, variant_key

if TYPE_CHECKING:
    from convlab.model.records import CaseResult

__all__ = ["LiveTree", "cell_token", "fold_live_view", "in_kernel", "widget_frontend"]

_SHOWN_COUNTS = ("passed", "failed", "error", "timeout", "running")
_OTHER_COUNTS = ("skipped", "cancelled", "blocked")


def _shell() -> Any:
    """The running IPython shell, without importing IPython when nothing loaded it."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    return get_ipython()


def in_kernel() -> bool:
    """Whether this code runs in a Jupyter kernel (Lab, Notebook, VS Code, Colab, nbclient)."""
    shell = _shell()
    return shell is not None and getattr(shell, "kernel", None) is not None


def widget_frontend() -> bool:
    """Whether `progress=None` should pick the widget: a kernel with ipywidgets importable
    (front ends that cannot draw widgets still show the `text/html` snapshot beside it)."""
    if not in_kernel():
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


_ENDED: OrderedDict[str, LiveTree] = OrderedDict()
"""Result id -> the live tree that ended with it in a cell (the latest few)."""
_ENDED_KEPT = 8


def cell_token() -> Any:
    """What tells this cell's execution from any other: the id of the kernel's request being
    executed, else (a shell with no kernel) the execution count. None outside IPython."""
    shell = _shell()
    if shell is None:
        return None
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:  # an ipykernel without get_parent(): fall back to the count
        parent = None
    msg_id = (parent or {}).get("header", {}).get("msg_id")
    return msg_id or ("execution", shell.execution_count)


def fold_live_view(result_id: Any) -> None:
    """A run or experiment is being displayed: when its live tree ended in this same cell
    (`r = cl.run(...); r`, `%convlab run ...`), that tree's summary gives way to the
    displayed card, so the cell shows the card once. Anything else is left as it is."""
    tree = _ENDED.get(str(result_id))
    if tree is not None and tree._cell == cell_token():
        del _ENDED[str(result_id)]
        tree.fold()


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class LiveTree:
    """An engine listener that draws the live tree (see the module docstring).

    Build it, `show()` it in a cell, pass it to the runner as a listener; `close(run)` swaps
    the live view for the static summary. Without a kernel it still keeps its widgets' state,
    which is how the tests read it.
    """

    max_running = 10
    max_failed = 15
    max_recent = 8

    def __init__(self, interval: float = 0.1) -> None:
        import ipywidgets as w

        self.interval = interval
        self._lock = threading.Lock()
        self._dirty = False
        self._closed = False
        self.total = self.resumed = 0
        self.runs = 1
        self.agent = ""
        self.counts: dict[str, int] = {}
        self.t0: float | None = None
        self.t_end: float | None = None
        self.running: dict[Key, Node] = {}
        self.failed: deque[Node] = deque(maxlen=self.max_failed)
        self.recent: deque[Node] = deque(maxlen=self.max_recent)
        self.failed_total = 0
        self.limit: ConcurrencyChanged | None = None  # the agent's AIMD limit (HTTP agents)
        self.workers: WorkersChanged | None = None  # a run spread over Ray workers
        self.redraws = 0
        self._stop: Callable[[], None] | None = None
        self._pump: threading.Thread | None = None
        self._quit = threading.Event()
        self._handle: Any = None
        self._cell: Any = None
        """The cell execution that shows the tree (`cell_token()`), None until shown."""
        self._final: dict[str, Any] | None = None
        self._style = ""
        """The stylesheet, when this tree's output is the one that carries it for the page:
        what replaces the tree (the card, or the failing instances) keeps carrying it."""

        # the stylesheet, sent once with the tree: redraws change the header and body only
        self.style = w.HTML(style_html())
        self.header = w.HTML()
        self.header.add_class("cl-tree-counts")  # the counts line (what a reader watches)
        self.bar = w.IntProgress(min=0, max=1, value=0, bar_style="info")
        self.bar.layout.width = "100%"
        self.button = w.Button(description="Stop", icon="stop", button_style="warning")
        self.button.layout.display = "none"
        self.button.on_click(self._on_stop)
        self.hint = w.HTML()
        # a bounded, scrolling body under a sticky header; a scrolling box would hold the header
        self.body = w.HTML(layout=w.Layout(max_height=TREE_BODY_HEIGHT, overflow="auto"))
        row = w.HBox([self.button, self.hint])
        head = w.VBox(
            [self.style, self.header, self.bar, row], _dom_classes=("convlab", "cl-tree-head")
        )
        self.box = w.VBox([head, self.body], layout=w.Layout(overflow="visible"))
        self._draw()

    # -- wiring -------------------------------------------------------------------------

    def bind_stop(self, stop: Callable[[], None] | None, hint: str = "") -> None:
        """Show a Stop button that calls `stop`, or (None) a hint saying how to stop."""
        self._stop = stop
        self.button.layout.display = None if stop is not None else "none"
        self.hint.value = f"<span class='cl-muted'>{html.escape(hint)}</span>" if hint else ""

    def show(self) -> None:
        """Display the tree in the current cell (nothing outside IPython)."""
        if _shell() is None:
            return
        from IPython.display import display

        with self._lock:
            final = self._final
        if final is not None:  # the run ended before the cell got to show it
            display(final, raw=True)  # type: ignore[no-untyped-call]
            return
        self._handle = display(self, display_id=True)  # type: ignore[no-untyped-call]
        self._cell = cell_token()

    def _on_stop(self, _button: Any = None) -> None:
        if self._stop is None:
            return
        self.button.disabled = True
        self.button.description = "Stopping…"
        self._stop()

    # -- events (engine thread): state only ---------------------------------------------

    def __call__(self, event: Any) -> None:
        """Take in an engine event (a run's, or an experiment's in ExperimentTree): the tree
        starts drawing at the start and gives way to the summary at the end."""
        with self._lock:
            self._apply(event)
            self._dirty = True
        if isinstance(event, RunStarted | ExperimentStarted):
            self._start_pump()
        elif isinstance(event, RunFinished):
            self.close(event.run)
        elif isinstance(event, ExperimentFinished):
            self.close(event.experiment)

    def _apply(self, event: Event, variant: str | None = None) -> None:
        """Take in one engine event: of the run, or of one `variant` of an experiment (its
        instances keyed apart: convlab.notebook._tree_nodes.variant_key)."""
        if isinstance(event, RunStarted):
            self.total, self.resumed, self.agent = event.total, event.resumed, event.agent
            self.runs = int(event.settings.get("runs", 1) or 1)
            self.t0 = time.monotonic()
            self.limit = None
        elif isinstance(event, ConcurrencyChanged):
            self.limit = event
        elif isinstance(event, WorkersChanged):
            self.workers = event
        elif isinstance(event, CaseStarted):
            key = variant_key(variant, event.key)
            self.running[key] = Node(key, event.label, worker=event.worker)
        elif isinstance(event, TurnCompleted | CheckpointReached):
            node = self.running.get(variant_key(variant, event.key))
            if node is None:
                return
            if isinstance(event, TurnCompleted):
                node.turns.append(event.turn)
            else:
                node.checkpoints[event.checkpoint] = event.turn
        elif isinstance(event, CaseFinished):
            self._finished(event.result, event.label, variant_key(variant, event.result.key))

    def _finished(self, r: CaseResult, label: str, key: Key) -> None:
        node = self.running.pop(key, None) or Node(key, label)
        node.status, node.result = r.status, r
        if not node.turns:
            node.turns = list(r.turns)
        self.counts[r.status] = self.counts.get(r.status, 0) + 1
        if r.status in ("failed", "error", "timeout"):
            self.failed.append(node)
            self.failed_total += 1
        else:
            self.recent.append(node)

    # -- drawing (pump thread) ----------------------------------------------------------

    def _start_pump(self) -> None:
        if self._pump is None:
            self._pump = threading.Thread(target=self._pump_loop, name="convlab-tree", daemon=True)
            self._pump.start()

    def _pump_loop(self) -> None:
        last = 0.0
        while not self._quit.wait(self.interval):
            now = time.monotonic()
            if self._dirty or now - last >= 1.0:  # the clock ticks even when nothing happens
                self._draw()
                last = now

    def _draw(self) -> None:
        with self._lock:
            self._dirty = False
            header, body = self._header_html(), self._body_html()
            done = sum(self.counts.values())
            total = max(self.total, 1)
        self.redraws += 1
        with self.box.hold_sync():
            self.bar.max = total
            self.bar.value = min(done + self.resumed, total)
            if self.header.value != header:
                self.header.value = header
            if self.body.value != body:
                self.body.value = body

    def _elapsed(self) -> float:
        if self.t0 is None:
            return 0.0
        return (self.t_end or time.monotonic()) - self.t0

    def _header_html(self) -> str:
        if self.t0 is None:  # before the run has planned its instances: no "0/0"
            return "<div class='convlab'><b>planning…</b></div>"
        done = sum(self.counts.values())
        counts = dict(self.counts, running=len(self.running))
        spans = [
            f"<span style='color:{STATUS_CSS[k]}'>{GLYPHS[k]} <b>{counts.get(k, 0)}</b> {k}</span>"
            for k in _SHOWN_COUNTS
        ]
        spans += [
            f"<span style='color:{STATUS_CSS[k]}'><b>{counts[k]}</b> {k}</span>"
            for k in _OTHER_COUNTS
            if counts.get(k)
        ]
        elapsed = self._elapsed()
        todo = self.total - self.resumed
        if self.t_end is not None:
            when = f"took {_clock(elapsed)}"
        elif done and todo > done:
            when = f"elapsed {_clock(elapsed)} · ETA {_clock(elapsed / done * (todo - done))}"
        else:
            when = f"elapsed {_clock(elapsed)}"
        resumed = f" ({self.resumed} already stored)" if self.resumed else ""
        agent = f" against {html.escape(shorten(self.agent, 60))}" if self.agent else ""
        agent += f" {html.escape(self.workers.text)}" if self.workers is not None else ""
        if self.workers is not None and not self.workers.workers and self.t_end is None:
            since = self.workers.since or time.monotonic()  # the start's own clock
            agent += f" <span class='cl-muted'>{_clock(time.monotonic() - since)}</span>"
        return (
            "<div class='convlab'>"
            f"<div><b>{done + self.resumed}/{self.total}</b> instances{resumed}{agent}"
            f" <span class='cl-muted'>· {when}</span></div>"
            f"<div class='cl-counts'>{''.join(spans)}</div>{self._limit_html()}</div>"
        )

    def _limit_html(self) -> str:
        """The adaptive in-flight limit while the endpoint holds it below `parallel`."""
        shown = self.limit
        if shown is None or shown.limit is None:
            return ""
        where = html.escape(shorten(shown.endpoint, 60))
        return (
            f"<div class='cl-limit'>in-flight limit <b>{shown.limit}</b>/{shown.parallel} <span"
            f" class='cl-muted'>· {where} answered 429/503 {shown.overloads} times; it grows"
            " back as requests succeed</span></div>"
        )

    def _body_html(self) -> str:
        parts = []
        running = list(self.running.values())
        if running:
            shown = running[: self.max_running]
            more = len(running) - len(shown)
            parts.append(f"<div class='cl-title'>running ({len(running)})</div>")
            parts += [node_html(n, True, self.runs, turns_shown=3) for n in shown]
            if more:
                parts.append(f"<div class='cl-muted'>… and {more} more running</div>")
        if self.failed:
            older = self.failed_total - len(self.failed)
            parts.append(f"<div class='cl-title'>did not pass ({self.failed_total})</div>")
            newest = list(self.failed)[::-1]
            parts += [node_html(n, i < 3, self.runs) for i, n in enumerate(newest)]
            if older:
                parts.append(
                    f"<div class='cl-muted'>… and {older} earlier (see run.df / run.table())</div>"
                )
        if self.recent:
            parts.append("<div class='cl-title'>most recent</div>")
            parts += [node_html(n, False, self.runs) for n in list(self.recent)[::-1]]
        return f"<div class='convlab'>{''.join(parts)}</div>" if parts else ""

    # -- the end ------------------------------------------------------------------------

    def snapshot_html(self) -> str:
        """The tree as static HTML (what a front end without widgets shows): the header, a
        drawn progress bar in place of the IntProgress widget, and the body."""
        with self._lock:
            done = sum(self.counts.values()) + self.resumed
            share = 100 * min(done, self.total) / self.total if self.total else 0.0
            color = STATUS_CSS["failed" if self.failed_total else "running"]
            bar = (
                f"<div class='convlab'><div class='cl-bar' style='max-width:100%'>"
                f"<div style='width:{share:.2f}%;background:{color}'></div></div></div>"
            )
            body = f"<div class='convlab'><div class='cl-scroll'>{self._body_html()}</div></div>"
            self._style = self._style or style_tag()
            return self._style + self._header_html() + bar + body

    def close(self, run: Any = None) -> None:
        """Stop redrawing; swap the live view for the static summary. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.t_end = time.monotonic()
        self._quit.set()
        if self._pump is not None and self._pump is not threading.current_thread():
            self._pump.join(5)
        self.button.layout.display = "none"
        self.hint.value = ""
        self._draw()
        self.bar.bar_style = "success" if not self.failed_total else "danger"
        final = self.final_bundle(run)
        with self._lock:
            self._final = final
        if self._handle is not None:
            self._handle.update(final, raw=True)
            for widget in (self.box, self.header, self.bar, self.button, self.hint, self.body):
                widget.close()
            ident = getattr(run, "id", None)
            if ident and self._cell is not None:
                _ENDED[str(ident)] = self
                while len(_ENDED) > _ENDED_KEPT:
                    _ENDED.popitem(last=False)

    def failing_html(self, where: str = "run.df") -> str:
        """The instances that did not pass, as the tree showed them ('' when all passed)."""
        failing = "".join(node_html(n, False, self.runs) for n in list(self.failed)[::-1])
        older = self.failed_total - len(self.failed)
        if older:
            failing += f"<div class='cl-muted'>… and {older} more (see {where})</div>"
        if not failing:
            return ""
        return (
            f"<div class='convlab'><div class='cl-title'>did not pass ({self.failed_total})"
            f"</div>{failing}</div>"
        )

    WHAT = "run"
    """What the tree shows, as its final words name it (`run.df`)."""

    def card(self, run: Any) -> tuple[str, str]:
        """The summary card (text, HTML) that the tree gives way to."""
        from convlab.notebook._cards import run_card

        return run_card(run)

    def final_bundle(self, run: Any) -> dict[str, Any]:
        """The static summary left in the cell: the card and the failing instances."""
        if run is None:
            text = f"the {self.WHAT} ended without a result (see the error below)"
            head = f"<div class='convlab cl-fail'>{html.escape(text)}</div>"
            return {"text/plain": text, "text/html": head + self.snapshot_html()}
        text, card = self.card(run)
        html_ = self._style + card + self.failing_html(self._df_name())
        return {"text/plain": text, "text/html": html_}

    def _df_name(self) -> str:
        return ("exp" if self.WHAT == "experiment" else self.WHAT) + ".df"

    def fold(self) -> None:
        """The cell goes on to display the result itself (its card): the summary left here
        gives way to the failing instances alone, so that the card shows once."""
        shown = self._style + self.failing_html(self._df_name())
        folded = {"text/plain": "", "text/html": shown} if shown else {"text/plain": ""}
        with self._lock:
            self._final = folded
        if self._handle is not None:
            self._handle.update(folded, raw=True)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        with self._lock:
            final = self._final
        if final is not None:  # closed widgets have no view left: show what replaced them
            return dict(final)
        data = dict(self.box._repr_mimebundle_() or {})
        data["text/html"] = self.snapshot_html()
        n = f"{sum(self.counts.values())}/{self.total} instances"
        data["text/plain"] = f"convlab run: {'planning…' if self.t0 is None else n}"
        return data
