"""Notebook reports: execute a notebook headless, export it as HTML that opens with no kernel
and no internet, and build a report notebook for a saved run (`convlab report`).

Why the exporter is configured as it is:
- nbconvert's lab template loads require.js, MathJax, mermaid and the widget html-manager from
  CDNs; offline they fail (and leak requests). Their blocks are emptied and their URL traits
  blanked, so the page asks for nothing.
- Every convlab display carries a static `text/html` snapshot, so `text/html` goes ahead of the
  widget view. The widget state (nbclient stores it) is then dead weight with no html-manager to
  read it, and it is left out of the page.
- Plotly figures ship `text/html` without plotly.js; `plotly.min.js` from the installed plotly
  package is inlined once, in the head, when the notebook has a figure.
- itables tables need the DataTables bundle, which one table output per kernel session carries
  (convlab.htmlkit.bundle); the page keeps exactly one loader, and gets one when no output
  had it.
"""

from __future__ import annotations

import copy
import html
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convlab._files import folder_for
from convlab.analysis.io import register_saver, write_atomic
from convlab.errors import MissingDependencyError, NotebookError, ReportInputError
from convlab.report._nbkeep import drop_dead_widgets, local_sockets, notebook_title

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from convlab.model.experiment import Experiment
    from convlab.model.run import Run

__all__ = [
    "DISPLAY_PRIORITY",
    "NotebookError",
    "ReportInputError",
    "execute_notebook",
    "export_html",
    "notebook_title",
    "render_report",
    "run_notebook",
    "without_itables_links",
]

DEFAULT_TIMEOUT = 600.0
"""Seconds one cell may run (a suite with a real model agent can take minutes)."""
DISPLAY_PRIORITY = [
    "text/html",
    "application/vnd.jupyter.widget-view+json",
    "application/pdf",
    "image/svg+xml",
    "image/png",
    "image/jpeg",
    "text/markdown",
    "text/latex",
    "text/plain",
]
"""Static HTML first: widget views need an html-manager that an offline page does not have."""
RUN_SUFFIXES = (".json", ".jsonl")
OUTPUT_SUFFIXES = (".html", ".htm", ".ipynb")
_DATA_SUFFIXES = (".json", ".jsonl", ".md", ".markdown", ".xml")
"""Formats a saved run re-renders into directly (`Run.save`), without executing anything."""
_ITABLES_LINK = re.compile(r"<a href=[\"']?https://itables\.org/[^\s>\"']*[\"']?[^>]*>(.*?)</a>")
"""itables' help and static-preview links: a page that needs no network links to none either."""
_PLOTLY_MIME = "application/vnd.plotly.v1+json"
_OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""
"""The lab template with every CDN loader removed (require.js, widgets, MathJax, mermaid)."""


def _require(*modules: str) -> None:
    """Fail with the pip command when the `report` extra is not installed."""
    import importlib.util

    for name in modules:
        if importlib.util.find_spec(name) is None:
            raise MissingDependencyError(f"notebook reports ({name})", "report")


def _execute(nb: NotebookNode, cwd: Path, timeout: float, label: str) -> NotebookNode:
    """Run every cell top to bottom on a fresh `python3` kernel, as "Run All" does.

    The first cell that raises stops the run (cells tagged `raises-exception` may raise, as in
    Jupyter) and becomes a NotebookError naming that cell: a report must never be half a report.
    """
    _require("nbclient", "ipykernel")
    from nbclient import NotebookClient

    running: list[int] = []  # the 1-based position of the cell being run

    def started(cell: Any, cell_index: int) -> None:
        running[:] = [cell_index + 1]

    with local_sockets() as config:
        client = NotebookClient(
            nb,
            config=config,
            timeout=max(1, round(timeout)),
            kernel_name="python3",
            resources={"metadata": {"path": str(cwd)}},
            store_widget_state=True,
            on_cell_start=started,
        )
        _run(client, label, running, timeout)
    drop_dead_widgets(nb)
    return nb


def _run(client: Any, label: str, running: list[int], timeout: float) -> None:
    """`client.execute()`, its failures turned into a NotebookError naming the cell."""
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    try:
        client.execute()
    except CellExecutionError as exc:
        raise NotebookError(label, _at(running), exc.ename, exc.evalue) from None
    except CellTimeoutError:
        raise NotebookError(label, _at(running), "Timeout", f"no result in {timeout:g} s") from None
    except DeadKernelError as exc:
        raise NotebookError(label, _at(running), "DeadKernelError", str(exc)) from None
    except (NoSuchKernel, RuntimeError) as exc:  # no python3 kernel; it did not start in time
        raise NotebookError(label, _at(running), type(exc).__name__, str(exc)) from None


def _at(running: list[int]) -> int | None:
    return running[0] if running else None


def execute_notebook(
    path: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT
) -> NotebookNode:
    """Execute the `.ipynb` at `path` in its own folder and return it with its outputs.

    Raises:
        NotebookError: A cell raised (its position, ename and evalue), timed out, or the
            kernel died.
    """
    _require("nbformat")
    import nbformat

    p = Path(path)
    if not p.is_file():
        raise ReportInputError(f"{p}: no such notebook")
    try:
        nb = nbformat.read(p, as_version=4)  # type: ignore[no-untyped-call]
    except Exception as exc:  # nbformat raises JSON, validation and OS errors alike
        raise ReportInputError(f"{p}: not a readable notebook: {exc}") from None
    return _execute(nb, p.resolve().parent, timeout, str(p))


def _has_plotly(nb: NotebookNode) -> bool:
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = out.get("data", {})
            if _PLOTLY_MIME in data or "Plotly.newPlot" in str(data.get("text/html", "")):
                return True
    return False


def plotly_script() -> str:
    """`<script>` with plotly.min.js from the installed plotly package (no CDN)."""
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    if spec is None or spec.origin is None:
        raise MissingDependencyError("charts in reports (plotly)", "report")
    js = (Path(spec.origin).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
    return '<script type="text/javascript">' + js.replace("</script", "<\\/script") + "</script>"


def export_html(
    nb: NotebookNode, *, keep_widget_state: bool = False, name: str | None = None
) -> str:
    """The executed notebook as one self-contained HTML page that works offline.

    The page's title is the notebook's `title` metadata, else its first heading, else `name`
    (the file's stem, say). `keep_widget_state=True` keeps nbclient's saved widget state in
    the page, for a reader that brings its own widget manager; convlab's views never need it.
    """
    _require("nbconvert")
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    from convlab.htmlkit import one_bundle, one_style

    config = Config()
    config.NbConvertBase.display_data_priority = DISPLAY_PRIORITY
    exporter = HTMLExporter(  # type: ignore[no-untyped-call]
        config=config,
        template_name="lab",
        extra_loaders=[DictLoader({"convlab_offline.html.j2": _OFFLINE_TEMPLATE})],
    )
    exporter.template_file = "convlab_offline.html.j2"
    exporter.require_js_url = ""
    exporter.mathjax_url = ""
    exporter.widget_renderer_url = ""
    exporter.jupyter_widgets_base_url = ""
    exporter.html_manager_semver_range = ""
    exporter.mermaid_js_url = ""
    exporter.mermaid_layout_elk_js_url = ""
    exporter.jquery_url = ""
    page_nb = copy.deepcopy(nb)
    if not keep_widget_state:
        page_nb.metadata.pop("widgets", None)
    page_nb.metadata["title"] = notebook_title(nb, name)
    body, _ = exporter.from_notebook_node(page_nb)
    body = one_style(one_bundle(body))  # the table bundle and the stylesheet, once each
    if _has_plotly(page_nb):
        body = body.replace("</head>", plotly_script() + "\n</head>", 1)
    return without_itables_links(follow_color_scheme(str(body)))


_LIGHT_BODY = re.compile(r'<body class="jp-Notebook" data-jp-theme-light="true"[^>]*>')
_FLIP_JS = (
    "<script>(function(){var m=window.matchMedia&&"
    'window.matchMedia("(prefers-color-scheme: dark)");if(m&&m.matches){var b=document.body;'
    'b.setAttribute("data-jp-theme-light","false");'
    'b.setAttribute("data-jp-theme-name","JupyterLab Dark");}})();</script>'
)


def follow_color_scheme(page: str) -> str:
    """The exported page, light, and dark under `prefers-color-scheme: dark`.

    nbconvert writes JupyterLab Light's variables; JupyterLab Dark's (nbconvert's own
    `theme-dark.css`) are added inside the media query, and the body is marked
    `data-cl-theme="auto"` so convlab's views switch with it, with no script. A one-line script
    also flips the body's `data-jp-theme-light` for what reads that (Plotly charts made under
    `convlab.options.theme = "auto"`).
    """
    from jupyter_core.paths import jupyter_path

    dark = next(
        (
            p.read_text(encoding="utf-8")
            for d in jupyter_path("nbconvert", "templates", "lab", "static")
            if (p := Path(d, "theme-dark.css")).is_file()
        ),
        None,
    )
    found = _LIGHT_BODY.search(page)
    if dark is None or found is None:  # not nbconvert's light lab page: leave it as it is
        return page
    head = (
        '<meta name="color-scheme" content="light dark">\n'
        f"<style>@media (prefers-color-scheme: dark){{{dark}}}</style>\n</head>"
    )
    body = found.group(0)[:-1] + ' data-cl-theme="auto">' + _FLIP_JS
    page = page[: found.start()] + body + page[found.end() :]
    return page.replace("</head>", head, 1)


def without_itables_links(page: str) -> str:
    """`page` without itables' links to itables.org ("help", the static-preview "ⓘ").

    An offline report must not send a click to the network either. Agent text cannot hold
    such a link: every view escapes it, so only itables' own markup matches.
    """
    return _ITABLES_LINK.sub(lambda m: "" if m.group(1) == "ⓘ" else m.group(1), page)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}()#+!|~>-])")


def _md(text: str) -> str:
    """Untrusted text (suite names, agent descriptions) as literal Markdown text."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(" ".join(text.split()), quote=False))


def run_cells(run: Run, ref: str) -> list[tuple[str, str]]:
    """(kind, source) of each cell of a run's report; which charts appear depends on the run."""
    suite = (run.suite.name or run.suite.id) if run.suite else ""
    title = "# Run report" + (f": {_md(suite)}" if suite else "")
    meta = [f"agent **{_md(run.agent)}**" if run.agent else "", _md(run.status)]
    meta += [f"started {_md(run.started_at)}" if run.started_at else ""]
    meta += [f"run {_md(run.id)}" if run.id else ""]
    cells = [("markdown", title + "\n\n" + " · ".join(m for m in meta if m))]
    # `run` shows the summary card and the cases (several runs) or the instances (one run)
    cells.append(("code", f"import convlab as cl\n\nrun = cl.load_run({ref!r})\nrun"))
    if int(run.settings.get("runs", 1) or 1) > 1:
        cells += [("markdown", "## Instances"), ("code", 'run.table("instances")')]
    cells += [("markdown", "## Charts"), ("code", "run.plot.pass_rates()")]
    cells += [("code", "run.plot.stability()"), ("code", "run.plot.durations()")]
    if any(r.checkpoints for r in run.results):
        cells.append(("code", "run.plot.checkpoints()"))
    if any(len(r.turns) > 1 for r in run.results):
        cells.append(("code", "run.plot.turns()"))
    if any(r.status != "passed" for r in run.results):
        cells.append(("markdown", "## Instances that did not pass"))
        cells.append(("code", "from convlab.report.html import Failures\n\nFailures(run)"))
    return cells


def report_title(saved: Run | Experiment) -> str:
    """The report notebook's title: `convlab report: SUITE`, `convlab experiment: NAME`."""
    from convlab.model.experiment import Experiment

    if isinstance(saved, Experiment):
        return f"convlab experiment: {saved.name}"
    suite = (saved.suite.name or saved.suite.id) if saved.suite else ""
    return "convlab report" + (f": {suite}" if suite else "")


def build_notebook(saved: Run | Experiment, ref: str) -> NotebookNode:
    """The report notebook of a run or an experiment, unexecuted; its code loads what was
    saved from `ref` (the one builder: each kind says only its cells)."""
    _require("nbformat")
    import nbformat.v4 as v4

    from convlab.model.experiment import Experiment

    if isinstance(saved, Experiment):
        from convlab.report.experiment import experiment_cells

        sources = experiment_cells(saved, ref)
    else:
        sources = run_cells(saved, ref)
    cells = [
        v4.new_markdown_cell(src) if kind == "markdown" else v4.new_code_cell(src)  # type: ignore[no-untyped-call]
        for kind, src in sources
    ]
    nb: NotebookNode = v4.new_notebook(cells=cells)  # type: ignore[no-untyped-call]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["title"] = report_title(saved)
    return nb


def run_notebook(
    run_path: str | os.PathLike[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    cwd: str | os.PathLike[str] | None = None,
) -> NotebookNode:
    """Build and execute the report notebook for a saved run (`.json`, `.jsonl`, a store) or
    a saved experiment (its `.json`).

    The notebook loads what was saved by a path relative to `cwd` (default: the file's
    folder), the folder it runs in and is meant to be saved in, so the pair can be moved
    together.
    """
    p = Path(run_path)
    saved = _read_saved(p)  # a bad file fails here, with every problem, not inside the kernel
    folder = Path(cwd) if cwd is not None else p.resolve().parent
    ref = os.path.relpath(p.resolve(), folder.resolve())
    return _execute(build_notebook(saved, ref), folder.resolve(), timeout, str(p))


def _read_saved(path: Path) -> Run | Experiment:
    """The run or the experiment saved at `path`."""
    if _is_experiment(path):
        from convlab.analysis.experiment_io import load_experiment

        return load_experiment(path)
    from convlab.analysis.load import load_run

    return load_run(path)


def _check_paths(src: Path, out: Path, experiment: bool) -> None:
    if src.suffix.lower() not in (".ipynb", *RUN_SUFFIXES):
        raise ReportInputError(
            f"{src}: cannot make a report from {src.suffix or 'a file with no suffix'}; "
            "give an .ipynb notebook or a saved run (.json, .jsonl, a results store)"
        )
    if not src.is_file():
        raise ReportInputError(f"{src}: no such file")
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        what, formats = (
            ("an experiment", ".json or .md")
            if experiment
            else ("a run", ".json, .jsonl, .md or .xml")
        )
        raise ReportInputError(
            f"{out}: cannot write a report as {out.suffix or 'a file with no suffix'}; "
            f"use .html (offline page) or .ipynb (the executed notebook); {what} also "
            f"re-renders as {formats}"
        )


def render_report(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> Path:
    """Execute a notebook (or build one for a saved run or experiment) and write it as `.html`
    or `.ipynb`.

    The output's suffix picks the format; a saved run or experiment written as one of its own
    save formats (`.json`, `.md`, ...) is saved directly, with no notebook. The file appears
    only once the whole report is ready. Returns the path written.

    Raises:
        ReportInputError: Missing input or an unsupported suffix (checked before any work).
        NotebookError: A cell failed; nothing is written.
        SuiteError: The saved run cannot be read.
        MissingDependencyError: The `report` extra is not installed.
    """
    src, out = Path(input_path), Path(output_path)
    experiment = _is_experiment(src)
    direct = _EXPERIMENT_DATA if experiment else _DATA_SUFFIXES
    if src.suffix.lower() in RUN_SUFFIXES and out.suffix.lower() in direct:
        # a saved run re-rendered as data (.json, .jsonl, .md, .xml): no notebook needed
        if not src.is_file():
            raise ReportInputError(f"{src}: no such file")
        return _read_saved(src).save(out)
    _check_paths(src, out, experiment)
    html_out = out.suffix.lower() != ".ipynb"
    _require("nbformat", "nbclient", "ipykernel", *(("nbconvert",) if html_out else ()))
    if src.suffix.lower() == ".ipynb":
        nb = execute_notebook(src, timeout)
    else:
        folder_for(out)  # the notebook runs where it will live
        nb = run_notebook(src, timeout=timeout, cwd=out.resolve().parent)
    if html_out:
        write_atomic(out, export_html(nb, name=src.stem))
    else:
        import nbformat

        write_atomic(out, nbformat.writes(nb) + "\n")  # type: ignore[no-untyped-call]
    return out


_EXPERIMENT_HEAD = re.compile(r'^\s*\{\s*"type"\s*:\s*"convlab\.experiment"')
_EXPERIMENT_DATA = (".json", ".md", ".markdown")
"""Formats a saved experiment re-renders into directly (`Experiment.save`)."""


def _is_experiment(src: Path) -> bool:
    """Whether `src` is an experiment's `.json` save (its first key says so)."""
    if src.suffix.lower() != ".json" or not src.is_file():
        return False
    with src.open("rb") as fh:
        head = fh.read(256).decode("utf-8", "replace")
    return bool(_EXPERIMENT_HEAD.match(head))


@register_saver(".ipynb")
def _save_notebook(run: Run, path: Path) -> None:
    """`run.save("report.ipynb")`: the executed report notebook plus `report.run.json` beside
    it, which the notebook loads (a notebook cannot hold the run for `load_run` itself)."""
    from convlab.analysis.io import save

    data = path.with_name(path.stem + ".run.json")
    existed = data.exists()
    save(run, data)
    try:
        render_report(data, path)
    except BaseException:
        if not existed:
            data.unlink(missing_ok=True)
        raise
