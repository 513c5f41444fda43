"""Reading YAML within limits, so that bad input costs an error, not the machine; and
where each value stands (its line), so that a message can point at it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

MAX_YAML_DEPTH = 64  # nested lists and mappings; PyYAML's composer recurses on each level
MAX_YAML_NODES = 10_000  # values, lists and mappings, with aliases expanded
MAX_YAML_TEXT = 1 << 20  # characters of all values, with aliases expanded


class TooMuch(Exception):
    """YAML that breaks a limit of this module, or is malformed in a way PyYAML allows;
    the message starts at the line (or the key path), the loader adds the file."""


class _Loader(yaml.SafeLoader):
    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # A value Python cannot make (2001-02-30, an int of 5000 digits) is a ValueError:
        # say which, and where.
        try:
            return super().construct_object(node, deep)
        except ValueError as e:
            shown = node.value if len(node.value) <= 40 else node.value[:40] + "..."
            kind = node.tag.rpartition(":")[2]
            raise TooMuch(f"{_at(node)}: {shown!r} is not a valid {kind}: {e}") from None


def _at(node: yaml.Node | yaml.Event) -> str:
    mark = node.start_mark
    assert mark is not None  # the parser marks every node and event it makes
    return f"line {mark.line + 1}, column {mark.column + 1}"


def read_yaml(text: str) -> tuple[Any, dict[str, int]]:
    """``yaml.safe_load``, bounded, and the line of each value by key path
    ("faults[1].options.delta"). Depth is checked on the event stream before PyYAML's
    recursive composer runs, then the node graph (aliases shared) before it is expanded."""
    _check_depth(text)
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, {}
        lines: dict[str, int] = {}
        _check_nodes(root, lines)
        return loader.construct_document(root), lines
    finally:
        loader.dispose()


def _check_depth(text: str) -> None:
    """Depth, and the nodes written out: PyYAML's composer takes ~1 KB of memory a node."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent):
            nodes += 1
            if nodes > MAX_YAML_NODES:
                raise TooMuch(f"{_at(event)}: more than {MAX_YAML_NODES} values, lists and "
                               f"mappings; allowed: at most {MAX_YAML_NODES}")  # fmt: skip
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise TooMuch(
                    f"{_at(event)}: lists and mappings nested more than {MAX_YAML_DEPTH} "
                    f"deep; allowed: at most {MAX_YAML_DEPTH} levels"
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


@dataclass(frozen=True)
class _Size:
    """A node with every alias under it expanded: its nodes, depth and characters."""

    nodes: int
    depth: int
    text: int


def _children(node: yaml.Node) -> list[tuple[str, yaml.Node]]:
    """(key path step, child) for each child: ``[0]`` in a list, ``.key`` in a mapping."""
    if isinstance(node, yaml.SequenceNode):
        return [(f"[{i}]", child) for i, child in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        pairs = [(f".{key.value}" if isinstance(key, yaml.ScalarNode) else ".?", key, value)
                 for key, value in node.value]  # fmt: skip
        return [item for step, key, value in pairs for item in ((step, key), (step, value))]
    return []


def _check_nodes(root: yaml.Node, lines: dict[str, int]) -> None:
    """Duplicate keys, and limits on the graph as if its aliases were expanded: each node
    is sized once (memoized, so this is linear in the file), without recursion. Fills
    ``lines`` with each node's line by key path (an alias's: where its anchor stands)."""
    keys = yaml.constructor.SafeConstructor()  # to compare keys as values: 1 == 0x1
    sizes: dict[int, _Size] = {}
    expanding: set[int] = set()  # started, not finished: the ancestors of the node on top
    stack: list[tuple[yaml.Node, str, bool]] = [(root, "", False)]
    while stack:
        node, path, finished = stack.pop()
        lines.setdefault(path.lstrip("."), node.start_mark.line + 1)
        if finished:
            expanding.discard(id(node))
            sizes[id(node)] = _size(node, path, sizes)
            continue
        if id(node) in sizes:  # an alias of a node already sized
            continue
        if id(node) in expanding:
            raise TooMuch(f"{_at(node)}: {path.lstrip('.') or 'top level'}: an alias refers "
                           "to a list or mapping that holds it; allowed: aliases of earlier, "
                           "finished values")  # fmt: skip
        if isinstance(node, yaml.MappingNode):
            _check_keys(node, path, keys)
        expanding.add(id(node))
        stack.append((node, path, True))
        # Reversed: the first child is sized first, so a limit names the first path to it.
        stack.extend((child, path + step, False) for step, child in reversed(_children(node)))


def _size(node: yaml.Node, path: str, sizes: dict[int, _Size]) -> _Size:
    parts = [sizes[id(child)] for _, child in _children(node)]
    text = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
    size = _Size(
        1 + sum(p.nodes for p in parts),
        1 + max((p.depth for p in parts), default=0),
        text + sum(p.text for p in parts),
    )
    where = f"{_at(node)}: {path.lstrip('.') or 'top level'}"
    expanded = "with aliases expanded"
    if size.nodes > MAX_YAML_NODES:
        raise TooMuch(f"{where}: more than {MAX_YAML_NODES} values, lists and mappings "
                       f"{expanded}; allowed: at most {MAX_YAML_NODES}")  # fmt: skip
    if size.depth > MAX_YAML_DEPTH + 1:  # scalars sit one below the deepest collection
        raise TooMuch(f"{where}: nested more than {MAX_YAML_DEPTH} deep {expanded}; "
                       f"allowed: at most {MAX_YAML_DEPTH} levels")  # fmt: skip
    if size.text > MAX_YAML_TEXT:
        raise TooMuch(f"{where}: more than {MAX_YAML_TEXT} characters {expanded}; "
                       f"allowed: at most {MAX_YAML_TEXT}")  # fmt: skip
    return size


_MERGE = "tag:yaml.org,2002:merge"


def _check_keys(
    node: yaml.MappingNode, path: str, constructor: yaml.constructor.SafeConstructor
) -> None:
    """A key given twice: PyYAML keeps the last silently, hiding the first."""
    first: dict[object, yaml.Node] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
            continue  # `<<` merges may be overridden; a non-scalar key fails later
        try:
            value: object = constructor.construct_object(key)
            hash(value)
        except (ValueError, TypeError, yaml.YAMLError):
            value = (key.tag, key.value)
        if value in first:
            where = f"{path.lstrip('.')}.{key.value}".lstrip(".")
            raise TooMuch(
                f"{_at(key)}: {where}: duplicate key (first at line "
                f"{first[value].start_mark.line + 1}); allowed: each key once in a mapping"
            )
        first[value] = key


