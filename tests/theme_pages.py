"""Host pages for theme tests: JupyterLab's and VS Code's theme variables, and a contrast check.

A view is checked the way a reader sees it: each visible text node's computed colour (an SVG
text's `fill`) against its real background, found by compositing the backgrounds and the
opacities of its ancestors over the page's canvas (and, for a chart's text, the filled shapes
painted under it, such as a bar; a text over a raster image, such as a heatmap's cell, whose
colour Plotly picks against the cell, is counted apart as unmeasured), with the WCAG 2
contrast ratio of the relative luminances. 4.5:1 is WCAG AA for normal text; inactive
controls (a disabled paging arrow) are exempt, as WCAG has them.

The variable sets are those of JupyterLab 4's light and dark themes (`theme-light-extension`,
`theme-dark-extension`) and VS Code's Dark+ theme, as the front ends set them on the page.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

MIN_CONTRAST = 4.5

JUPYTERLAB_LIGHT = {
    "--jp-layout-color0": "white",
    "--jp-layout-color1": "white",
    "--jp-layout-color2": "#eeeeee",
    "--jp-layout-color3": "#bdbdbd",
    "--jp-content-font-color0": "#000",
    "--jp-content-font-color1": "rgba(0, 0, 0, 0.87)",
    "--jp-content-font-color2": "rgba(0, 0, 0, 0.54)",
    "--jp-content-font-color3": "rgba(0, 0, 0, 0.38)",
    "--jp-ui-font-color1": "rgba(0, 0, 0, 0.87)",
    "--jp-border-color0": "#bdbdbd",
    "--jp-border-color1": "#bdbdbd",
    "--jp-border-color2": "#e0e0e0",
    "--jp-border-color3": "#eeeeee",
    "--jp-cell-editor-background": "#f5f5f5",
    "--jp-rendermime-error-background": "#fdd",
    "--jp-rendermime-table-row-background": "#f5f5f5",
    "--jp-brand-color1": "#1976d2",
    "--jp-error-color1": "#f44336",
    "--jp-success-color1": "#4caf50",
    "--jp-content-font-family": "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial",
    "--jp-code-font-family": "Menlo, Consolas, 'DejaVu Sans Mono', monospace",
}

JUPYTERLAB_DARK = {
    "--jp-layout-color0": "#111111",
    "--jp-layout-color1": "#212121",
    "--jp-layout-color2": "#424242",
    "--jp-layout-color3": "#616161",
    "--jp-content-font-color0": "#fff",
    "--jp-content-font-color1": "#fff",
    "--jp-content-font-color2": "rgba(255, 255, 255, 0.7)",
    "--jp-content-font-color3": "rgba(255, 255, 255, 0.5)",
    "--jp-ui-font-color1": "rgba(255, 255, 255, 0.87)",
    "--jp-border-color0": "#616161",
    "--jp-border-color1": "#616161",
    "--jp-border-color2": "#424242",
    "--jp-border-color3": "#212121",
    "--jp-cell-editor-background": "#212121",
    "--jp-rendermime-error-background": "rgba(244, 67, 54, 0.28)",
    "--jp-rendermime-table-row-background": "#212121",
    "--jp-brand-color1": "#2196f3",
    "--jp-error-color1": "#f44336",
    "--jp-success-color1": "#4caf50",
    "--jp-content-font-family": "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial",
    "--jp-code-font-family": "Menlo, Consolas, 'DejaVu Sans Mono', monospace",
}

VSCODE_DARK_PLUS = {
    "--vscode-font-family": "system-ui, 'Ubuntu', 'Droid Sans', sans-serif",
    "--vscode-font-size": "13px",
    "--vscode-editor-font-family": "'Droid Sans Mono', 'monospace', monospace",
    "--vscode-foreground": "#cccccc",
    "--vscode-descriptionForeground": "rgba(204, 204, 204, 0.7)",
    "--vscode-disabledForeground": "rgba(204, 204, 204, 0.5)",
    "--vscode-errorForeground": "#f48771",
    "--vscode-focusBorder": "#007fd4",
    "--vscode-editor-background": "#1e1e1e",
    "--vscode-editor-foreground": "#d4d4d4",
    "--vscode-editorWidget-background": "#252526",
    "--vscode-editorWidget-border": "#454545",
    "--vscode-editorGroup-border": "#444444",
    "--vscode-panel-border": "rgba(128, 128, 128, 0.35)",
    "--vscode-textLink-foreground": "#3794ff",
    "--vscode-textCodeBlock-background": "rgba(10, 10, 10, 0.4)",
    "--vscode-textPreformat-foreground": "#d7ba7d",
    "--vscode-textBlockQuote-background": "rgba(127, 127, 127, 0.1)",
    "--vscode-input-background": "#3c3c3c",
    "--vscode-input-foreground": "#cccccc",
    "--vscode-button-background": "#0e639c",
    "--vscode-button-foreground": "#ffffff",
    "--vscode-badge-background": "#4d4d4d",
    "--vscode-notebook-cellBorderColor": "#37373d",
    "--vscode-notebook-outputContainerBackgroundColor": "#1e1e1e",
    "--vscode-charts-foreground": "#cccccc",
    "--vscode-charts-red": "#f14c4c",
    "--vscode-charts-green": "#89d185",
    "--vscode-charts-yellow": "#cca700",
    "--vscode-charts-blue": "#3794ff",
}


@dataclass(frozen=True)
class Host:
    """A page as a front end makes it: variables on :root, body attributes, body style."""

    name: str
    variables: dict[str, str] = field(default_factory=dict)
    body: str = ""
    style: str = ""
    color_scheme: str = "light"
    chart_theme: str = "auto"
    """`convlab.options.theme` for the charts on this page (what "auto" resolves to there)."""


HOSTS = {
    h.name: h
    for h in (
        Host(
            "jupyterlab-light",
            JUPYTERLAB_LIGHT,
            'data-jp-theme-light="true" data-jp-theme-name="JupyterLab Light"',
            "background:var(--jp-layout-color0);color:var(--jp-content-font-color1)",
        ),
        Host(
            "jupyterlab-dark",
            JUPYTERLAB_DARK,
            'data-jp-theme-light="false" data-jp-theme-name="JupyterLab Dark"',
            "background:var(--jp-layout-color0);color:var(--jp-content-font-color1)",
            chart_theme="dark",  # what "auto" reads from JupyterLab's settings
        ),
        Host(
            "vscode-dark",
            VSCODE_DARK_PLUS,
            'class="vscode-dark" data-vscode-theme-kind="vscode-dark" '
            'data-vscode-theme-name="Dark+"',
            "background:var(--vscode-editor-background);color:var(--vscode-editor-foreground)",
            chart_theme="dark",  # VS Code's theme is not knowable: the user sets it
        ),
        Host("plain-dark", color_scheme="dark"),
        Host("plain-light"),
    )
}


def page(host: Host, sections: list[tuple[str, str]], head: str = "") -> str:
    """A page of `sections` (title, trusted HTML) as `host` would show them."""
    root = ";".join(f"{k}:{v}" for k, v in host.variables.items())
    body = "".join(
        f'<section class="host-out" style="margin:12px 0 24px">'
        f'<div style="font:600 12px monospace;opacity:.9">{html.escape(title)}</div>{view}'
        "</section>"
        for title, view in sections
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="color-scheme" content="light dark">'
        f"<style>:root{{{root}}}body{{margin:0;padding:12px 24px;"
        f"font:13px system-ui,sans-serif;{host.style}}}</style>{head}</head>"
        f"<body {host.body}>{body}</body></html>"
    )


CONTRAST_JS = """
(selector) => {
  function parse(c) {
    if (!c || c === "none" || c === "transparent") return null;
    let m = c.match(/^rgba?\\(([^)]*)\\)/);
    if (m) {
      const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(parseFloat);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = c.match(/^color\\(srgb ([^)]*)\\)/);
    if (m) {
      const p = m[1].split(/[\\s\\/]+/).filter(Boolean).map(parseFloat);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    return null;
  }
  const over = (t, b) => [0, 1, 2].map(i => t[i] * t[3] + b[i] * (1 - t[3])).concat([1]);
  const mix = (t, b, a) => [0, 1, 2].map(i => t[i] * a + b[i] * (1 - a)).concat([1]);
  const lin = v => {
    v /= 255;
    return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  };
  const lum = c => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const ratio = (a, b) => {
    const x = lum(a), y = lum(b);
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  };
  const rootCs = getComputedStyle(document.documentElement);
  const meta = document.querySelector('meta[name="color-scheme"]');
  const schemes = ((meta && meta.content) || "") + " " + rootCs.colorScheme;
  const darkCanvas = /dark/.test(schemes)
    && (!/light/.test(schemes) || matchMedia("(prefers-color-scheme: dark)").matches);
  const canvas = darkCanvas ? [18, 18, 18, 1] : [255, 255, 255, 1];
  function behind(el) {
    const chain = [];
    for (let e = el; e; e = e.parentElement) chain.unshift(e);
    const groups = [{ base: null, color: canvas.slice(), op: 1 }];
    for (const e of chain) {
      const cs = getComputedStyle(e);
      const op = parseFloat(cs.opacity);
      const top = groups[groups.length - 1];
      if (op < 1) groups.push({ base: top.color.slice(), color: top.color.slice(), op });
      const bg = parse(cs.backgroundColor);
      const g = groups[groups.length - 1];
      if (bg && bg[3] > 0) g.color = over(bg, g.color);
    }
    return groups;
  }
  // An SVG text (a chart's) sits on the shapes painted before it, not on its ancestors:
  // the filled shapes under its centre, in paint (document) order, over the ancestors' colour.
  function shapesBehind(el, base) {
    const host = el.closest(".plotly-graph-div") || el.ownerSVGElement;
    if (!host) return base;
    const box = el.getBoundingClientRect();
    const cx = box.left + box.width / 2, cy = box.top + box.height / 2;
    let color = base;
    for (const s of host.querySelectorAll("path,rect,circle,ellipse,polygon,image")) {
      if (!(s.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING)) continue;
      if (s.closest("defs,clipPath,mask,pattern,marker,symbol")) continue;  // never painted
      const cs = getComputedStyle(s);
      if (cs.visibility !== "visible" || cs.display === "none") continue;
      if (s.tagName.toLowerCase() === "image") {
        const r = s.getBoundingClientRect();
        if (cx >= r.left && cx <= r.right && cy >= r.top && cy <= r.bottom) return null;
        continue;
      }
      const f = parse(cs.fill);
      if (!f) continue;
      f[3] *= parseFloat(cs.fillOpacity || "1") * parseFloat(cs.opacity || "1");
      if (f[3] === 0) continue;
      const r = s.getBoundingClientRect();
      if (!r.width || !r.height || cx < r.left || cx > r.right || cy < r.top || cy > r.bottom)
        continue;
      const m = s.getScreenCTM();  // inside the shape's fill, not only its box (a whisker)
      const at = m ? new DOMPoint(cx, cy).matrixTransform(m.inverse()) : null;
      if (at && s.isPointInFill && !s.isPointInFill(at)) continue;
      color = over(f, color);
    }
    return color;
  }
  const out = { count: 0, unmeasured: 0, min: null, worst: [] };
  const roots = Array.from(document.querySelectorAll(selector));
  const seen = new Set();
  for (const root of roots) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.nodeValue.trim();
      const el = node.parentElement;
      if (!text || !el || seen.has(node)) continue;
      seen.add(node);
      if (el.closest("script,style,noscript,title,option")) continue;
      // WCAG exempts inactive controls (DataTables' disabled paging arrows)
      if (el.closest("[disabled],.disabled,[aria-disabled=true]")) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const box = range.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;
      const cs = getComputedStyle(el);
      if (cs.visibility !== "visible") continue;
      const svg = el instanceof SVGElement;
      let fg = parse(svg ? cs.fill : cs.color);
      if (!fg) continue;
      if (svg) fg[3] *= parseFloat(cs.fillOpacity || "1");
      if (fg[3] === 0) continue;
      const groups = behind(el);
      const inner = groups[groups.length - 1];
      const under = svg ? shapesBehind(el, inner.color) : inner.color;
      if (under === null) { out.unmeasured++; continue; }
      let t = over(fg, under), b = under;
      for (let i = groups.length - 1; i > 0; i--) {
        t = mix(t, groups[i].base, groups[i].op);
        b = mix(b, groups[i].base, groups[i].op);
      }
      const r = ratio(t, b);
      out.count++;
      if (out.min === null || r < out.min) out.min = r;
      if (r < __MIN__) {
        const path = [];
        for (let e = el; e && path.length < 4; e = e.parentElement)
          path.push(e.tagName.toLowerCase() + (e.className && typeof e.className === "string"
            ? "." + e.className.trim().split(/\\s+/).join(".") : ""));
        out.worst.push({ text: text.slice(0, 60), ratio: Math.round(r * 100) / 100,
          color: (svg ? cs.fill : cs.color), fg: t.map(Math.round), bg: b.map(Math.round),
          path: path.join(" < ") });
      }
    }
  }
  return out;
}
""".replace("__MIN__", str(MIN_CONTRAST))


def contrast(page_: Any, selector: str = "body") -> dict[str, Any]:
    """{count, unmeasured, min, worst}: the text nodes under `selector` and those below 4.5:1."""
    result: dict[str, Any] = page_.evaluate(CONTRAST_JS, selector)
    return result


def describe(result: dict[str, Any]) -> str:
    """The failing text nodes, one a line, for an assertion message."""
    lines = [
        f"{w['ratio']}:1 {w['text']!r} {w['fg']} on {w['bg']} ({w['path']})"
        for w in result["worst"]
    ]
    head = f"{len(lines)} of {result['count']} text nodes below {MIN_CONTRAST}:1"
    return "\n".join([head, *lines[:40]])
