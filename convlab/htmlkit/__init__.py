"""convlab's HTML kit: what every HTML view is made of, shared by the notebook views
(convlab.notebook) and the reports (convlab.report).

- `palettes`: the light and dark colours, per status, stability class, verdict, blame, change;
- `glyphs`: the status marks;
- `stylesheets`: the rules, scoped under `.convlab`; `STYLESHEET` is all of them;
- `bundle`: what a page needs once (the stylesheet, the DataTables bundle) and which output
  carries it;
- `errors`: an exception's location and traceback as HTML.
"""

from __future__ import annotations

from convlab.htmlkit.bundle import (
    bundle_html,
    carries_bundle,
    carries_style,
    dedupe_bundles,
    missing_bundle_html,
    one_bundle,
    one_style,
    own_namespace,
    payload,
    style_html,
    style_tag,
)
from convlab.htmlkit.errors import location_html, traceback_html
from convlab.htmlkit.glyphs import GLYPHS
from convlab.htmlkit.palettes import (
    BLAME_COLORS,
    CHANGE_COLORS,
    CLASS_COLORS,
    CLASS_CSS,
    CLASS_TEXT_COLORS,
    DARK,
    HOST_VARIABLES,
    LIGHT,
    STABILITY_COLORS,
    STABILITY_CSS,
    STABILITY_TEXT_COLORS,
    STATUS_COLORS,
    STATUS_CSS,
    VERDICT_COLORS,
    css_color,
)
from convlab.htmlkit.stylesheets import (
    CSS,
    DIFF_CSS,
    PAGE_BODY_CSS,
    PREVIEW_CSS,
    REPORT_CSS,
    STYLESHEET,
    TABLE_CSS,
    THEME_CSS,
    TRANSCRIPT_CSS,
    TREE_BODY_HEIGHT,
)

__all__ = [
    "BLAME_COLORS",
    "CHANGE_COLORS",
    "CLASS_COLORS",
    "CLASS_CSS",
    "CLASS_TEXT_COLORS",
    "CSS",
    "DARK",
    "DIFF_CSS",
    "GLYPHS",
    "HOST_VARIABLES",
    "LIGHT",
    "PAGE_BODY_CSS",
    "PREVIEW_CSS",
    "REPORT_CSS",
    "STABILITY_COLORS",
    "STABILITY_CSS",
    "STABILITY_TEXT_COLORS",
    "STATUS_COLORS",
    "STATUS_CSS",
    "STYLESHEET",
    "TABLE_CSS",
    "THEME_CSS",
    "TRANSCRIPT_CSS",
    "TREE_BODY_HEIGHT",
    "VERDICT_COLORS",
    "bundle_html",
    "carries_bundle",
    "carries_style",
    "css_color",
    "dedupe_bundles",
    "location_html",
    "missing_bundle_html",
    "one_bundle",
    "one_style",
    "own_namespace",
    "payload",
    "style_html",
    "style_tag",
    "traceback_html",
]
