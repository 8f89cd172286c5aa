"""What a page needs once: convlab's stylesheet and the DataTables bundle (dt_bundle.js and
.css from the itables wheel).

The stylesheet (convlab.htmlkit.stylesheets.STYLESHEET) travels like the bundle: in a kernel
the first view shown in the session carries it (`style_tag()`), later views carry none (a
`<style>` in one output styles the whole page, a saved notebook and its static export
included); outside a kernel every view carries it, and a standalone page keeps one
(`one_style`). The rest of this docstring is about the bundle; the carrier rules are the same.

Every interactive table needs the bundle on its page, and it weighs far more than a table, so
which output carries it decides what a saved notebook weighs.

- **In a kernel** (JupyterLab, Notebook, VS Code, nbclient) the first table shown in the kernel
  session carries it; later tables carry none and wait for it: itables' table script awaits the
  bundle's promise (`window._convlab_itables_<version>`), or its ready event when the promise
  is not there yet.
  The carrier may sit anywhere on the page, above or below them: a notebook reopened from disk,
  or exported, renders its outputs in order, and a table above the carrier draws when the
  carrier's script has run.
- **Re-running the carrier's cell** replaces its output, so the kernel forgets the carrier as
  that cell starts again (IPython's `pre_run_cell`) and the next table shown carries the
  bundle. A cell is known by the id the front end sends (JupyterLab, Notebook 7, VS Code), or
  else by its source (nbclient sends no id).
- **Colab** shows each output in its own frame: there every table carries the bundle.
- **Outside a kernel** (`Table.to_html()`, a script, a report page) a table carries it unless
  told otherwise: `frame_html(..., bundle=False)` with one `bundle_html()` in the page.
- **Exported pages** (`convlab report`, `export_html`) keep the first loader and drop the rest,
  and get one when no output has it (`one_bundle`).

What stays fragile: clearing or deleting the carrier's output by hand, without running its
cell again, leaves the saved notebook without the bundle (the live page keeps it in memory).
A table that finds no bundle once its page has loaded shows its static preview with a note
that says so; restarting the kernel and running every cell brings the table back.

The payload is trimmed and compressed for the page:
- JSZip, which the bundle holds only for the Excel button of DataTables' Buttons extension,
  is left out when it is found in its lazy wrapper (else the script goes whole), and so are the
  style rules of the extensions (Buttons, SearchPanes, SearchBuilder, ColumnControl, ...):
  convlab's tables use none of them.
- gzip, inflated by the browser's `DecompressionStream` (Chromium 80+, Firefox 113+, Safari
  16.4+), written in base85 with an alphabet that needs no escaping in a JS string, in HTML or
  in a notebook's JSON (5 characters per 4 bytes, where base64 takes 5.33).

Trimmed, it is not itables' bundle any more, so it lives under its own name
(`_convlab_itables_<version>`, and its own ready event) and convlab's table scripts are
pointed at it: a plain itables table on the same page, which may use those extensions, keeps
waiting for itables' own `init_notebook_mode`, as itables documents.
"""

from __future__ import annotations

import base64
import gzip
import re
import sys
from functools import cache
from typing import Any

__all__ = [
    "bundle_html",
    "carries_bundle",
    "carries_style",
    "dedupe_bundles",
    "missing_bundle_html",
    "one_bundle",
    "one_style",
    "own_namespace",
    "payload",
    "style_html",
    "style_tag",
]

_B85 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_SAFE = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%:()*+-;.=,?@^_`{|}~"
"""Python's base85 alphabet with `&`, `<`, `>` swapped for `:`, `.`, `,` (no HTML markup)."""
_TO_SAFE = bytes.maketrans(_B85, _SAFE)

_JSZIP = re.compile(
    r"var (?P<v>[\w$]+)=(?P<cjs>[\w$]+)\(\((?P<e>[\w$]+),(?P<m>[\w$]+)\)=>\{"
    r"\(function\(t\)\{typeof (?P=e)==\"object\"&&typeof (?P=m)<\"u\"\?(?P=m)\.exports=t\(\)"
)
"""The start of JSZip's lazy CommonJS wrapper in itables' esbuild bundle."""
_EXTENSION_CSS = re.compile(
    r"\.(dtsp|dtsb|dtcc|dt-button|dtfc|dtfh|dtrg|dts\b|dtk|dtcr|dt-datetime|dtb|dte|"
    r"dt-autofill|dtr)"
)
"""Class prefixes of the DataTables extensions' markup; convlab's tables draw none of them."""
_BUNDLE_RE = re.compile(r"<script data-convlab-bundle=[^>]*>.*?</script>", re.DOTALL)
_TABLE_MARK = '<div class="convlab cl-table">'


def _without_jszip(js: str) -> str:
    """`js` with JSZip's module body emptied (its export becomes undefined: no Excel button),
    or `js` unchanged when the wrapper is not where it is expected."""
    start = _JSZIP.search(js)
    if start is None or ".JSZip=t()" not in js[start.end() : start.end() + 400]:
        return js
    v = re.escape(start["v"])
    end = re.compile(rf"\}}\);var [\w$]+=[\w$]+\({v}\(\)\);").search(js, start.end())
    if end is None:
        return js
    body = f"var {start['v']}={start['cjs']}(({start['e']},{start['m']})=>{{"
    body += f"{start['m']}.exports=void 0}}"
    return js[: start.start()] + body + js[end.start() + 1 :]


def _without_extension_css(css: str) -> str:
    """`css` without the selectors (and the rules left with none) that style extension
    markup; `@media` and other nested blocks are trimmed the same way."""
    out: list[str] = []
    i = 0
    while i < len(css):
        open_at = css.find("{", i)
        if open_at < 0:
            out.append(css[i:])
            break
        depth, close_at = 0, open_at
        for close_at in range(open_at, len(css)):
            depth += {"{": 1, "}": -1}.get(css[close_at], 0)
            if depth == 0:
                break
        head, block = css[i:open_at], css[open_at + 1 : close_at]
        if head.lstrip().startswith("@") and "{" in block:
            inner = _without_extension_css(block)
            if inner.strip():
                out.append(f"{head}{{{inner}}}")
        elif head.lstrip().startswith("@"):
            out.append(css[i : close_at + 1])
        else:
            kept = [sel for sel in head.split(",") if not _EXTENSION_CSS.search(sel)]
            if kept:
                out.append(f"{','.join(kept)}{{{block}}}")
        i = close_at + 1
    return "".join(out)


def _pack(raw: bytes) -> tuple[str, int]:
    """(gzip of `raw` in safe base85, the gzip's length in bytes)."""
    packed = gzip.compress(raw, 9, mtime=0)
    return base64.b85encode(packed, pad=True).translate(_TO_SAFE).decode("ascii"), len(packed)


@cache
def payload() -> dict[str, Any]:
    """The bundle as the loader ships it, made once a process: its namespace and ready event
    (with itables' own, which convlab's table scripts are pointed away from), and the packed js
    and css with their gzip lengths."""
    from itables.javascript import _itables_ready_event, _itables_underscore_version
    from itables.utils import find_package_file

    js = _without_jszip(find_package_file("html", "dt_bundle.js").read_text("utf-8"))
    css = _without_extension_css(find_package_file("html", "dt_bundle.css").read_text("utf-8"))
    js_packed, js_len = _pack(js.encode("utf-8"))
    css_packed, css_len = _pack(css.encode("utf-8"))
    ns, event = _itables_underscore_version(), _itables_ready_event()
    return {
        "itables_ns": ns,
        "itables_event": event,
        "ns": "_convlab" + ns,
        "event": "convlab-" + event,
        "js": js_packed,
        "js_len": js_len,
        "css": css_packed,
        "css_len": css_len,
    }


_LOADER = """<script data-convlab-bundle="{ns}">(function () {{
  var ns = "{ns}", ready = "{event}";
  if (window[ns]) return;
  var A = "{alphabet}", D = new Uint8Array(128);
  for (var i = 0; i < 85; i++) D[A.charCodeAt(i)] = i;
  function inflate(s, n) {{
    var out = new Uint8Array(s.length / 5 * 4), o = 0;
    for (var i = 0; i < s.length; i += 5) {{
      var v = 0;
      for (var j = 0; j < 5; j++) v = v * 85 + D[s.charCodeAt(i + j)];
      out[o++] = v >>> 24; out[o++] = v >>> 16 & 255; out[o++] = v >>> 8 & 255; out[o++] = v & 255;
    }}
    var z = new Blob([out.subarray(0, n)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(z).text();
  }}
  window[ns] = (async function () {{
    var css = document.createElement("style");
    css.textContent = await inflate("{css}", {css_len});
    document.head.appendChild(css);
    var url = URL.createObjectURL(
      new Blob([await inflate("{js}", {js_len})], {{type: "text/javascript"}}));
    try {{ var m = await import(url); }} finally {{ URL.revokeObjectURL(url); }}
    if (m.set_or_remove_dark_class) m.set_or_remove_dark_class();
    return m;
  }})();
  window[ns].then(function () {{ window.dispatchEvent(new Event(ready)); }}, function (e) {{
    console.error("convlab: the offline table bundle did not load", e);
    var show = document.createElement("style");  /* the static previews, now and later */
    show.textContent = ".convlab.cl-table>div[id$=_fallback]{{display:block!important}}" +
      ".convlab.cl-table>table[id^=cl_]{{display:none!important}}";
    document.head.appendChild(show);
  }});
}})();</script>"""


def bundle_html() -> str:
    """The DataTables JS + CSS loader (compressed). It runs once per page wherever it is
    placed; tables made with `frame_html(..., bundle=False)` wait for it."""
    return _LOADER.format(alphabet=_SAFE.decode("ascii"), **payload())


_WATCH = """<script>(function () {{
  var ns = "{ns}", id = "{table_id}", ready = "{event}";
  function show(missing) {{
    [id + "_fallback", id + "_missing", id].forEach(function (x, i) {{
      var el = document.getElementById(x);
      if (el) el.toggleAttribute("hidden", i < 2 ? !missing : missing);
    }});
  }}
  function check() {{
    if (window[ns]) return;
    show(true);
    window.addEventListener(ready, function () {{ show(false); }});
  }}
  if (document.readyState === "complete") setTimeout(check, 3000);
  else window.addEventListener("load", function () {{ setTimeout(check, 500); }});
}})();</script>"""

_MISSING_NOTE = (
    "The interactive table did not load: its script comes with the first table shown in the "
    "kernel session, and that output is not on this page. Restart the kernel and run every "
    "cell to get it back; the first rows are below."
)


def own_namespace(table: str) -> str:
    """itables' table HTML pointed at this bundle's promise and ready event."""
    p = payload()
    table = table.replace(f"window.{p['itables_ns']}", f"window.{p['ns']}")
    return table.replace(f'"{p["itables_event"]}"', f'"{p["event"]}"')


def missing_bundle_html(table_id: str) -> str:
    """For a table without the bundle: a hidden note, and a script that shows it with the
    static preview when the page has loaded and no bundle came."""
    ns, event = payload()["ns"], payload()["event"]
    note = f"<div class='cl-note' id='{table_id}_missing' hidden>{_MISSING_NOTE}</div>"
    return note + _WATCH.format(ns=ns, event=event, table_id=table_id)


def dedupe_bundles(page: str) -> str:
    """Keep the first bundle loader in a page (an exported notebook, a report) and drop the
    rest: the page shrinks by one bundle per extra table and renders the same."""
    seen = False

    def keep_first(m: re.Match[str]) -> str:
        nonlocal seen
        if seen:
            return ""
        seen = True
        return m.group(0)

    return _BUNDLE_RE.sub(keep_first, page)


def one_bundle(page: str) -> str:
    """`page` with exactly one bundle loader when it has a convlab table: extra loaders
    dropped, one added before `</body>` when none of its outputs had it."""
    page = dedupe_bundles(page)
    if _TABLE_MARK in page and "data-convlab-bundle" not in page:
        at = page.rfind("</body>")
        at = len(page) if at < 0 else at
        page = page[:at] + bundle_html() + page[at:]
    return page


# ---------------------------------------------------------------- which output carries it


class _Carrier:
    """What one kind of shared part (the stylesheet, the table bundle) knows of its carrier
    in the kernel session: the key of the cell whose output has it."""

    hooked = False

    def __init__(self) -> None:
        self.cell: str | None = None


_TABLES = _Carrier()
_STYLE = _Carrier()


def _shell() -> Any:
    """The running IPython kernel shell, or None (a script, plain IPython, no IPython)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython()
    return shell if shell is not None and hasattr(shell, "kernel") else None


def _cell_key(shell: Any) -> str | None:
    """The cell being run: the front end's cell id, else its source; None when unknown."""
    try:
        parent = shell.kernel.get_parent("shell") or {}
    except Exception:  # an older kernel or a thread without a request: unknown
        return None
    cell_id = (parent.get("metadata") or {}).get("cellId")
    if cell_id:
        return f"id:{cell_id}"
    code = (parent.get("content") or {}).get("code")
    return f"code:{code}" if isinstance(code, str) else None


def _forget_rerun_carrier(*_: Any) -> None:
    shell = _shell()
    if shell is None:
        return
    key = _cell_key(shell)
    for carrier in (_TABLES, _STYLE):
        if carrier.cell is not None and key == carrier.cell:
            carrier.cell = None


def _carries(carrier: _Carrier) -> bool:
    shell = _shell()
    if shell is None or "google.colab" in sys.modules:
        return True
    if not _Carrier.hooked:
        shell.events.register("pre_run_cell", _forget_rerun_carrier)
        _Carrier.hooked = True
    key = _cell_key(shell)
    if key is None:
        return True
    if carrier.cell is None:
        carrier.cell = key
        return True
    return False


def carries_bundle() -> bool:
    """Whether the table output being made now should carry the bundle (see the module
    docstring): outside a kernel and in Colab always; in a kernel, the first table of the
    session, and again after the carrier's cell has been run again."""
    return _carries(_TABLES)


# ---------------------------------------------------------------- the stylesheet

_STYLE_RE = re.compile(r"<style data-convlab-style(?:=\"\")?>.*?</style>", re.DOTALL)


def style_html() -> str:
    """convlab's whole stylesheet as one `<style>` element (marked, so a page keeps one)."""
    from convlab.htmlkit.stylesheets import STYLESHEET

    return f"<style data-convlab-style>{STYLESHEET}</style>"


def carries_style() -> bool:
    """Whether the view being made now should carry the stylesheet: as `carries_bundle`
    decides for tables, for every convlab view."""
    return _carries(_STYLE)


def style_tag() -> str:
    """`style_html()` for the view that carries the stylesheet, else nothing."""
    return style_html() if carries_style() else ""


def one_style(page: str) -> str:
    """`page` (a standalone page, an exported notebook) with exactly one stylesheet, in its
    head (else first), when it shows a convlab view: the copies its views carried dropped."""
    page, found = _STYLE_RE.subn("", page)
    if found or "convlab" in page:
        at = page.find("</head>")
        at = 0 if at < 0 else at
        page = page[:at] + style_html() + page[at:]
    return page
