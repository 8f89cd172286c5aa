"""Finding JSON or YAML in an agent's text, and reading a dotted path from it.

This follows Yao's `json_path` (CONFORMANCE §1.6, gou `text.ExtractJSON` + `json.Parse`):
every markdown fence is a candidate block (its language is the fence tag, or detected from
the content); with no fences, the whole text is one candidate when it looks like JSON
(starts with `{` or `[`) or YAML (`---`, or a first line `key: value`). The first JSON/YAML
block that parses wins. JSON is parsed leniently (comments, trailing commas, cut-off
endings), as LLM output often needs. YAML follows 1.2 rules: only true/false are booleans
and dates stay strings, so `Answer: yes` reads as {"Answer": "yes"}.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

__all__ = ["extract_json", "extract_path", "parse_lenient", "path_segments"]

_FENCE = re.compile(r"(?s)```(\w*)\s*\n?(.*?)\n?```", re.ASCII)
_BOOL = "tag:yaml.org,2002:bool"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Yaml12Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans (true/false only) and no implicit timestamps."""


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _TIMESTAMP)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

# Content that gou's language detection classifies as code, not data (checked in its order).
_CODE_PREFIXES = (
    "<", "#!/", "#include", "# ", "## ", "### ", "package ", "func ", "import (", 'import "',
    "fn ", "def ", "class ", "function ", "using System", "import java.", "export ",
)  # fmt: skip
_SQL = ("SELECT ", "INSERT ", "UPDATE ", "DELETE ", "CREATE ", "DROP ", "ALTER ")
_CODE_MARKERS = (
    "\npackage ", "\nfunc ", "interface ", ": string", ": number", ": boolean", ": any",
    "as const", "public class ", "public static void main", "System.out.", "Console.Write",
    "static void Main", "pub fn ", "println!", "let mut ", "if __name__", "print(",
    "console.log", "require(", "module.exports", "puts ", "attr_accessor", "echo $",
)  # fmt: skip


def _detect(content: str) -> str:
    """'json', 'yaml' or '' (code, prose or anything else), as gou's detectLanguage decides."""
    text = content.strip()
    if not text:
        return ""
    if text.startswith(("{", "[")):
        return "json"
    if text.startswith("---"):
        return "yaml"
    if text.startswith(_CODE_PREFIXES) or text.upper().startswith(_SQL):
        return ""
    lines = text.split("\n")
    head = "\n".join(lines[:5])
    if any(marker in head for marker in _CODE_MARKERS):
        return ""
    first = lines[0].strip()
    looks_yaml = ": " in first and '":' not in first and "://" not in first
    return "yaml" if looks_yaml else ""


def _yaml_like(text: str) -> bool:
    """gou DetectFormat: a first data line with `:` (not `":` or `:{`) means YAML."""
    if text.lstrip().startswith(("{", "[")):
        return False
    for line in text.split("\n"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        return ":" in line and '":' not in line and ":{" not in line
    return False


def _strip_comments(text: str) -> str:
    """Remove // and /* */ comments outside strings (JSONC)."""
    out: list[str] = []
    i, n, quote = 0, len(text), ""
    while i < n:
        ch = text[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            out.append(ch)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _close_open(text: str) -> str:
    """Close a cut-off string and every bracket left open (truncated LLM output)."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    tail = '"' if in_string else ""
    body = re.sub(r",\s*$", "", text.rstrip() + tail)
    return body + "".join(reversed(stack))


def _loads(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _yaml(text: str) -> tuple[bool, Any]:
    try:
        return True, yaml.load(text, Loader=_Yaml12Loader)  # a SafeLoader subclass
    except yaml.YAMLError:
        return False, None


def parse_lenient(text: str) -> Any:
    """Parse JSON or YAML leniently; None when nothing parses (or the document is null)."""
    if _yaml_like(text):
        return _yaml(text)[1]
    ok, data = _loads(text)
    if ok:
        return data
    cleaned = re.sub(r",(\s*[}\]])", r"\1", _strip_comments(text))
    for attempt in (_loads, _yaml):
        ok, data = attempt(cleaned)
        if ok and data is not None:
            return data
    return _loads(_close_open(cleaned))[1]


def extract_json(text: str) -> Any:
    """The first JSON/YAML block found in `text` (fenced or bare), parsed; None if none."""
    text = text.strip()
    if not text:
        return None
    blocks = [
        ((m.group(1).strip().lower() or _detect(m.group(2))), m.group(2).strip())
        for m in _FENCE.finditer(text)
    ]
    if not blocks:
        kind = _detect(text)
        blocks = [(kind, text)] if kind else []
    for kind, content in blocks:
        if kind in ("json", "yaml", "yml"):
            data = parse_lenient(content)
            if data is not None:
                return data
    return None


def path_segments(path: str) -> list[str]:
    """Yao's segments: `wheres[0].in[0]` -> ['wheres', '[0]', 'in', '[0]'] (after one `$.`)."""
    path = path.removeprefix("$.")
    segments: list[str] = []
    current = ""
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == ".":
            if current:
                segments.append(current)
                current = ""
        elif ch == "[":
            if current:
                segments.append(current)
                current = ""
            end = path.find("]", i + 1)
            if end >= 0:
                segments.append(path[i : end + 1])
                i = end
        else:
            current += ch
        i += 1
    if current:
        segments.append(current)
    return segments


def extract_path(data: Any, path: str) -> Any:
    """The value at a Yao path; None when any step is missing (a missing value is null)."""
    current = data
    for seg in path_segments(path):
        if seg.startswith("[") and seg.endswith("]"):
            index = seg[1:-1]
            if not re.fullmatch(r"[+-]?\d+", index) or not isinstance(current, list):
                return None
            pos = int(index)
            if not 0 <= pos < len(current):
                return None
            current = current[pos]
        elif isinstance(current, dict):
            current = current.get(seg)
        else:
            return None
    return current
