"""`convlab.options`: session-wide settings a notebook changes once, such as the chart theme.

>>> import convlab as cl
>>> cl.options.theme = "dark"   # or "light", or "auto" (the default)
"""

from __future__ import annotations

from typing import Literal

__all__ = ["THEMES", "Options", "Theme", "options"]

Theme = Literal["auto", "light", "dark"]
THEMES: tuple[Theme, ...] = ("auto", "light", "dark")


class Options:
    """Settings read when a view is drawn (not when convlab is imported).

    `theme`: the colours of Plotly charts. HTML views (cards, the live tree, tables,
    transcripts) always follow the page's own theme through CSS; a chart's colours are fixed
    when it is made, so it needs to know the theme then:

    - `"light"` or `"dark"`: that theme, whatever the front end.
    - `"auto"` (default): the front end's theme where the kernel can know it. Under a Jupyter
      server (JupyterLab, Notebook 7) that is the theme in JupyterLab's settings
      (`themes.jupyterlab-settings` in the user settings folder, else `overrides.json`); in
      VS Code and elsewhere the kernel cannot know it, and charts are light (plotly's own
      default look). A chart made under "auto" also re-colours itself to the page's theme
      where it is drawn from its HTML (an exported report, a plain page), so a report follows
      the reader's `prefers-color-scheme`.
    """

    __slots__ = ("_theme",)

    def __init__(self) -> None:
        self._theme: Theme = "auto"

    @property
    def theme(self) -> Theme:
        """`"auto"`, `"light"` or `"dark"` (see the class docstring)."""
        return self._theme

    @theme.setter
    def theme(self, value: str) -> None:
        if value not in THEMES:
            raise ValueError(f"options.theme must be one of {', '.join(THEMES)}, not {value!r}")
        self._theme = value

    def __repr__(self) -> str:
        return f"convlab.options(theme={self._theme!r})"


options = Options()
"""The one `Options` of this process (`convlab.options`)."""
