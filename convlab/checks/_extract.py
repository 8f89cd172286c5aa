"""Finding JSON or YAML in an agent's text, and reading a dotted path from it.

This follows Yao's `json_path`, which calls gou `text.ExtractJSON` and through it
`json.Parse` (YaoApp/gou text/extract.go and json/parse.go; docs/yao.md). Every markdown
fence is a block (its language is the fence tag, or detected from the content as gou's
`detectLanguage` does); with no fences the whole text is one block when its language can be
told, else it is plain text. The first JSON/YAML block that parses wins. Parsing goes as gou's
`Parse`: the format is guessed (`DetectFormat`), YAML is read as YAML 1.2, JSONC loses its
comments, and JSON that does not parse is repaired by a JSON-repair library (json-repair, strict
mode) rather than guessed at, so prose and `{invalid}` are rejected as gou rejects them. Where
convlab deliberately differs from gou, the rule says so next to it and docs/yao.md lists it."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml
from json_repair import repair_json

__all__ = [
    "Block",
    "detect_format",
    "detect_language",
    "extract_blocks",
    "extract_json",
    "extract_path",
    "parse_data",
    "parse_lenient",
    "path_segments",
    "repair",
    "trim_comments",
]

_FENCE = re.compile(r"(?s)```(\w*)\s*\n?(.*?)\n?```", re.ASCII)
_BOOL = "tag:yaml.org,2002:bool"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_DATA = ("json", "yaml", "yml")


_SafeBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Yaml12Loader(_SafeBase):  # type: ignore[valid-type,misc]
    """SafeLoader (libyaml's when PyYAML has it, as it is the faster parser) with YAML 1.2
    booleans (true/false only) and no implicit timestamps.

    gou reads YAML with yaml.v3, where `yes` and `2024-01-01` stay strings in an untyped
    value; PyYAML's YAML 1.1 rules would make them a bool and a date.
    """


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _TIMESTAMP)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

# gou text/extract.go `languageIndicators` and the order `detectLanguage` checks them in.
_XML = ("<?xml", "<root", "<item", "<node")
_HTML = ("<!DOCTYPE", "<html", "<div", "<span", "<p>", "<head", "<body", "<script", "<style",
         "<table", "<form")  # fmt: skip
_SQL = ("SELECT ", "INSERT ", "UPDATE ", "DELETE ", "CREATE ", "DROP ", "ALTER ")
_TYPESCRIPT = ("interface ", ": string", ": number", ": boolean", ": any", "as const")
_CSS = ("margin:", "padding:", "display:", "color:", "background:", "font-")
# (language, prefixes of the text, markers anywhere in its first five lines), checked in order
_CODE: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("go", ("package ", "func ", "import (", 'import "'), ("\npackage ", "\nfunc ")),
    ("typescript", (), _TYPESCRIPT),
    ("java", ("import java.",), ("public class ", "public static void main", "System.out.")),
    ("csharp", ("using System",), ("Console.Write", "static void Main")),
    ("rust", ("fn ",), ("pub fn ", "println!", "let mut ")),
    ("python", ("def ", "class "), ("if __name__", "print(")),
    ("javascript", ("function ",), ("console.log", "require(", "module.exports")),
    ("ruby", (), ("puts ", "attr_accessor")),
    ("shell", ("export ",), ("echo $",)),
)


def _tagged(trimmed: str) -> str:
    """The languages told by the first characters: markup, YAML `---`, shebangs, SQL, C."""
    upper = trimmed.upper()
    if trimmed.startswith("<"):
        if trimmed.startswith(("<?php", "<?=")):
            return "php"
        if upper.startswith(tuple(x.upper() for x in _XML)):
            return "xml"
        if upper.startswith(tuple(x.upper() for x in _HTML)) or ">" in trimmed:
            return "html"
    if trimmed.startswith("---"):
        return "yaml"
    if trimmed.startswith("#!/"):
        for word, lang in (("python", "python"), ("bash", "shell"), ("/sh", "shell")):
            if word in trimmed:
                return lang
        return "javascript" if "node" in trimmed else "shell"
    if upper.startswith(_SQL):
        return "sql"
    if trimmed.startswith("#include"):
        cpp = any(x in trimmed for x in ("<iostream>", "<vector>", "std::"))
        return "cpp" if cpp else "c"
    if trimmed.startswith(("# ", "## ", "### ")):
        return "markdown"
    return ""


def detect_language(content: str) -> str:
    """The language of a block as gou's `detectLanguage` names it ('' when it cannot tell).

    JSON is text starting with `{` or `[`; YAML is `---` or a first line `key: value`
    (not a URL, not a TypeScript annotation); code of a dozen languages and CSS are told
    apart so that they are never read as data (`.container { margin: 0; }` is CSS).
    """
    trimmed = content.strip()
    if not trimmed:
        return ""
    if trimmed.startswith(("{", "[")):
        return "json"
    tagged = _tagged(trimmed)
    if tagged:
        return tagged
    lines = trimmed.split("\n")
    head = "\n".join(lines[:5])
    for lang, prefixes, markers in _CODE:
        if trimmed.startswith(prefixes) or any(m in head for m in markers):
            return lang
    if any(x in trimmed for x in _CSS) and "{" in trimmed and "}" in trimmed:
        return "css"
    first = lines[0].strip()
    not_yaml = ('":', "://", ": string", ": number")
    if ": " in first and not first.startswith("{") and not any(x in first for x in not_yaml):
        return "yaml"
    return ""


def detect_format(data: str) -> str:
    """gou `json.DetectFormat`: 'yaml', 'jsonc', 'json' or '' (uncertain).

    YAML when the first line that is not blank or a `#` comment has a `:` that is not
    JSON's `":` or `:{`; JSONC when `//` or `/*` appears anywhere; JSON when it starts
    with `{` or `[`.
    """
    trimmed = data.strip()
    if not trimmed:
        return ""
    if not trimmed.startswith(("{", "[")):
        for raw in trimmed.split("\n"):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if ":" in line and '":' not in line and ":{" not in line:
                return "yaml"
            break
    if "//" in trimmed or "/*" in trimmed:
        return "jsonc"
    return "json" if trimmed.startswith(("{", "[")) else ""


def trim_comments(text: str) -> str:
    """gou `json.TrimComments`: drop `//` and `/* */` comments outside double-quoted strings.

    A line comment's newline is kept; the spaces before a comment are kept too.
    """
    out: list[str] = []
    i, n = 0, len(text)
    in_string = escaped = False
    while i < n:
        ch = text[i]
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == '"':
            in_string = not in_string
            out.append(ch)
        elif in_string:
            escaped = ch == "\\"
            out.append(ch)
        elif text.startswith("//", i):
            while i < n and text[i] not in "\r\n":
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


def repair(text: str) -> Any:
    """Broken JSON (as LLMs write it) repaired and parsed; ValueError when it cannot be.

    The json-repair library fixes missing commas (`{"a": 1 "b": 2}`, `[1, 2 3]`), Python
    literals (`True`, `None`), single quotes, trailing commas, comments and cut-off endings.
    Its strict mode refuses what is not JSON at all (prose around brackets, `{invalid}`),
    as gou's jsonrepair does; an empty repair of non-empty text is a refusal too.
    """
    try:
        data = repair_json(text, return_objects=True, strict=True)
    except ValueError as exc:
        raise ValueError(f"not repairable JSON: {exc}") from None
    if data == "" and text.strip() not in ('""', "''"):
        raise ValueError("not repairable JSON: nothing in it reads as JSON")
    return data


def _yaml(text: str) -> Any:
    """The first YAML document (yaml.v3 `Unmarshal` reads only the first one)."""
    try:
        for doc in yaml.load_all(text, Loader=_Yaml12Loader):  # a SafeLoader subclass
            return doc
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {exc}") from None
    return None


def parse_data(data: str, hint: str = "") -> Any:
    """gou `json.Parse`: JSON, JSONC or YAML, by `hint` ('.yaml', 'config.jsonc', 'json')
    or by `detect_format`; JSON that does not parse is repaired. ValueError when nothing reads.
    """
    fmt = hint.lower()
    if not hint:
        # Deliberate difference (docs/yao.md): a document that starts with `---` is YAML.
        # gou's DetectFormat stops at the `---` line, so such YAML reaches the JSON parser
        # and fails: ExtractJSON("---\nname: test") is nil in Yao.
        fmt = detect_format(data) or ("yaml" if data.lstrip().startswith("---") else "")
    if "yaml" in fmt or "yml" in fmt:
        return _yaml(data)
    try:
        return json.loads(data)
    except ValueError as exc:
        first = exc
    try:
        return json.loads(trim_comments(data))
    except ValueError:
        pass
    if ("yao" in fmt or "jsonc" in fmt) and hint:
        raise ValueError(f"not valid JSONC: {first}")
    # Deliberate difference (docs/yao.md): auto-detected JSONC is repaired too. gou repairs
    # only what it took for plain JSON, and any `//` (as in "https://...") makes it JSONC,
    # so `{"url": "https://x.org", "ok": True}` is not JSON to Yao.
    return repair(data)


def parse_lenient(text: str) -> Any:
    """`parse_data` with auto-detection; None when nothing parses (or the document is null)."""
    try:
        return parse_data(text)
    except ValueError:
        return None


@dataclass
class Block:
    """One block found in a text: its language, its content and, for JSON/YAML, its data."""

    type: str
    content: str
    data: Any = None


def extract_blocks(text: str) -> list[Block]:
    """gou `text.Extract`: the fenced blocks, else the whole text as one detected block,
    else the text as a `text` block; JSON/YAML blocks carry their parsed data."""
    text = text.strip()
    if not text:
        return []
    blocks = []
    for m in _FENCE.finditer(text):
        content = m.group(2).strip()
        blocks.append(Block(m.group(1).strip().lower() or detect_language(content), content))
    if not blocks:
        blocks = [Block(detect_language(text) or "text", text)]
    for block in blocks:
        if block.type in _DATA:
            block.data = parse_lenient(block.content)
    return blocks


def extract_json(text: str) -> Any:
    """gou `text.ExtractJSON`: the data of the first JSON/YAML block that parses; else None."""
    for block in extract_blocks(text):
        if block.type in _DATA and block.data is not None:
            return block.data
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


@functools.lru_cache(maxsize=4096)
def _segments(path: str) -> tuple[str, ...]:
    """`path_segments`, parsed once per distinct path (a suite repeats its paths)."""
    return tuple(path_segments(path))


def extract_path(data: Any, path: str) -> Any:
    """The value at a Yao path; None when any step is missing (a missing value is null)."""
    current = data
    for seg in _segments(path):
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
