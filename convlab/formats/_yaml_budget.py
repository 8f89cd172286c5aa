"""The YAML budget: how big and how deep a document may be once its aliases are expanded.

A 520-byte alias bomb expanded to gigabytes, and a document nested thousands of levels deep
took seconds to end in a RecursionError with no line. Each document is composed first (its
nodes, with aliases still shared), measured in one linear walk, and built only within budget;
what is over it is a `YAMLBudgetError` at the line to look at.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import yaml

from convlab.errors import YAMLBudgetError

__all__ = [
    "MAX_YAML_CHARS",
    "MAX_YAML_DEPTH",
    "MAX_YAML_EXPANDED_CHARS",
    "MAX_YAML_NODES",
    "SAFE_LOADER",
    "YAMLBudgetError",
    "budgeted_load",
]

MAX_YAML_CHARS = 20_000_000
"""The longest YAML text read (characters)."""
MAX_YAML_NODES = 1_000_000
"""The most nodes a YAML document may hold once every alias is expanded."""
MAX_YAML_EXPANDED_CHARS = 50_000_000
"""The most scalar characters a YAML document may hold once every alias is expanded."""
MAX_YAML_DEPTH = 200
"""The deepest nesting of mappings and sequences: building a deeper document recurses past
Python's stack limit (a RecursionError after seconds, with no line)."""


def _expanded_size(root: yaml.Node) -> tuple[int, int]:
    """(nodes, scalar characters) of the document with every alias expanded, in linear time.

    An alias is the same node object as its anchor, so each node's size is computed once
    and reused; a node reached again while its own size is being computed is a recursive
    alias, which no JSON value can hold. Iterative: deep nesting cannot overflow the stack.
    """
    sizes: dict[int, tuple[int, int]] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool, int]] = [(root, False, 0)]
    while stack:
        node, done, depth = stack.pop()
        key = id(node)
        if done:
            nodes, chars = 1, 0
            for child in _children(node):
                n, c = sizes[id(child)]
                nodes, chars = nodes + n, chars + c
            sizes[key] = (nodes, chars)
            open_.discard(key)
            continue
        if key in sizes:
            continue
        if key in open_:
            raise YAMLBudgetError(
                None, None, "a recursive alias (an anchor used inside itself)", node.start_mark
            )
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = (1, len(node.value))
            continue
        if depth >= MAX_YAML_DEPTH:
            raise _too_deep(node.start_mark)
        open_.add(key)
        stack.append((node, True, depth))
        stack.extend((c, False, depth + 1) for c in _children(node) if id(c) not in sizes)
    return sizes[id(root)]


def _too_deep(mark: yaml.Mark | None) -> YAMLBudgetError:
    return YAMLBudgetError(
        None, None, f"nested more than {MAX_YAML_DEPTH} levels deep (mappings and lists)", mark
    )


def _deep_mark(text: str) -> yaml.Mark | None:
    """Where the nesting first goes deeper than MAX_YAML_DEPTH, read from the parser's events
    (a loop over a stream, unlike composing, which recurses); None if it never does."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=SAFE_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:  # libyaml's own Mark type has the same fields
                    return cast("yaml.Mark | None", event.start_mark)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        pass
    return None


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        yield from node.value
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value


def budgeted_load(text: str, loader_class: type[yaml.SafeLoader]) -> Any:
    """Compose the document, check its expanded size against the budget, then construct it."""
    loader = loader_class(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:  # composing recurses once per level: find the line apart
            raise _too_deep(_deep_mark(text)) from None
        except yaml.MarkedYAMLError as exc:
            if "nesting depth" in str(exc.problem):  # libyaml's own limit (1,000 levels)
                raise _too_deep(exc.problem_mark) from None
            raise
        if node is None:
            return None
        nodes, chars = _expanded_size(node)
        if nodes > MAX_YAML_NODES or chars > MAX_YAML_EXPANDED_CHARS:
            raise YAMLBudgetError(
                None,
                None,
                "the document is too big once its aliases (*name) are expanded "
                f"(limits: {MAX_YAML_NODES:,} values and {MAX_YAML_EXPANDED_CHARS:,} "
                "characters); an alias bomb?",
                _first_alias_mark(text, node.start_mark),
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _first_alias_mark(text: str, fallback: yaml.Mark) -> yaml.Mark:
    """Where the first alias `*name` is written (the line to look at), else `fallback`."""
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        if isinstance(token, yaml.AliasToken):
            mark: yaml.Mark = token.start_mark
            return mark
    return fallback


SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
