"""Reading YAML within limits, so that bad input costs an error, not the machine; and
where each value stands (its line), so that a message can point at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lockharness.core.errors import BadInput

MAX_YAML_DEPTH = 64  # nested lists and mappings; PyYAML's composer recurses on each level
MAX_YAML_NODES = 10_000  # values, lists and mappings, with aliases expanded
MAX_YAML_TEXT = 1 << 20  # characters of all values, with aliases expanded
_NODES = f"more than {MAX_YAML_NODES} values, lists and mappings"
_MERGE = "tag:yaml.org,2002:merge"


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
    depth = nodes = 0  # as written: PyYAML's composer takes ~1 KB of memory a node
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        nodes += isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent)
        if nodes > MAX_YAML_NODES:
            raise TooMuch(f"{_at(event)}: {_NODES}; allowed: at most {MAX_YAML_NODES}")
        depth += isinstance(event, yaml.CollectionStartEvent)
        depth -= isinstance(event, yaml.CollectionEndEvent)
        if depth > MAX_YAML_DEPTH:
            raise TooMuch(
                f"{_at(event)}: lists and mappings nested more than {MAX_YAML_DEPTH} deep; "
                f"allowed: at most {MAX_YAML_DEPTH} levels"
            )
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, {}
        lines: dict[str, int] = {}
        _size(root, "", lines, {}, set())
        return loader.construct_document(root), lines
    finally:
        loader.dispose()


def _size(
    node: yaml.Node, path: str, lines: dict[str, int], sizes: dict[int, Any], open_: set[int]
) -> tuple[int, int, int]:
    """(nodes, depth, characters) under ``node`` with every alias expanded, each node
    sized once (so this is linear in the file); duplicate keys. Fills ``lines`` with each
    node's line by key path (an alias's: where its anchor stands)."""
    lines.setdefault(path.lstrip("."), node.start_mark.line + 1)
    where = f"{_at(node)}: {path.lstrip('.') or 'top level'}"
    if id(node) in sizes:  # an alias of a node already sized
        return sizes[id(node)]
    if id(node) in open_:  # an ancestor: the node's size would be infinite
        raise TooMuch(
            f"{where}: an alias refers to a list or mapping that holds it; allowed: aliases of "
            "earlier, finished values"
        )
    if isinstance(node, yaml.MappingNode):
        _check_keys(node, path)
    open_.add(id(node))
    parts = [_size(child, path + step, lines, sizes, open_) for step, child in _children(node)]
    text = len(node.value) if isinstance(node, yaml.ScalarNode) else sum(p[2] for p in parts)
    nodes, depth = 1 + sum(p[0] for p in parts), 1 + max((p[1] for p in parts), default=0)
    expanded = "with aliases expanded"
    if nodes > MAX_YAML_NODES:
        raise TooMuch(f"{where}: {_NODES} {expanded}; allowed: at most {MAX_YAML_NODES}")
    if depth > MAX_YAML_DEPTH + 1:  # scalars sit one below the deepest collection
        raise TooMuch(
            f"{where}: nested more than {MAX_YAML_DEPTH} deep {expanded}; allowed: at most "
            f"{MAX_YAML_DEPTH} levels"
        )
    if text > MAX_YAML_TEXT:
        raise TooMuch(
            f"{where}: more than {MAX_YAML_TEXT} characters {expanded}; allowed: at most "
            f"{MAX_YAML_TEXT}"
        )
    open_.discard(id(node))
    sizes[id(node)] = (nodes, depth, text)
    return nodes, depth, text


def _children(node: yaml.Node) -> list[tuple[str, yaml.Node]]:
    """(key path step, child) for each child: ``[0]`` in a list, ``.key`` in a mapping."""
    if isinstance(node, yaml.SequenceNode):
        return [(f"[{i}]", child) for i, child in enumerate(node.value)]
    if not isinstance(node, yaml.MappingNode):
        return []
    steps = [f".{k.value}" if isinstance(k, yaml.ScalarNode) else ".?" for k, _ in node.value]
    return [(step, child) for step, pair in zip(steps, node.value, strict=True) for child in pair]


def _check_keys(node: yaml.MappingNode, path: str) -> None:
    """A key given twice: PyYAML keeps the last silently, hiding the first."""
    keys = yaml.constructor.SafeConstructor()  # to compare keys as values: 1 == 0x1
    first: dict[object, yaml.Node] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
            continue  # `<<` merges may be overridden; a non-scalar key fails later
        try:
            value: object = keys.construct_object(key)
            hash(value)
        except (ValueError, TypeError, yaml.YAMLError):
            value = (key.tag, key.value)
        if value in first:
            raise TooMuch(
                f"{_at(key)}: {f'{path}.{key.value}'.lstrip('.')}: duplicate key (first at line "
                f"{first[value].start_mark.line + 1}); allowed: each key once in a mapping"
            )
        first[value] = key


# ---- a small input file (a scenario, a fault model), read as the user's input ----------


def read_input_file(path: Path, ref: str, most: int, kind: str) -> str:
    """The UTF-8 text of a small input file; BadInput naming ``ref`` if it cannot be read
    or is longer than ``most`` bytes (no more is read: /proc files and FIFOs show no size)."""
    try:
        with path.open("rb") as f:
            raw = f.read(most + 1)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{ref}: cannot read: {e}") from None
    if len(raw) > most:
        raise BadInput(
            f"{ref}: the file is larger than {most >> 20} MiB; allowed: a {kind} file of at "
            f"most {most} bytes"
        )
    return text


def input_document(text: str, source: str) -> tuple[Any, dict[str, int]]:
    """read_yaml, with its errors as BadInput naming ``source`` (and the line and column)."""
    try:
        return read_yaml(text)
    except TooMuch as e:
        raise BadInput(f"{source}: {e}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise BadInput(f"{source}: {where}YAML syntax error: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise BadInput(f"{source}: YAML syntax error: {e}") from None


def line_of(path: str, lines: dict[str, int]) -> str:
    """ " (line N)": the line of the value at the key path, or of the nearest enclosing one
    written; "" if none is."""
    while path and path not in lines:
        path = path[: max(path.rfind("."), path.rfind("["), 0)]
    return f" (line {lines[path]})" if path else ""
