"""Only core/run_dir.py spells a run directory's file names; every other module asks a RunDir.

The names come from RunDir.NAMES itself, so a file added there is guarded here at once. Every
string of every module counts (f-strings with their holes, messages too: a message that
names a file must name the file there is), except docstrings and other bare string
statements, which are prose. A name with a dot, a dash or a hole is found anywhere in a
string; a bare word ("go", "data") only where it is joined onto a path (``x / "go"``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

import pytest

from lockharness.core.run_dir import RunDir
from tests.test_layers import REPO, modules

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

OWNER = REPO / "core" / "run_dir.py"
HOLE = "\0"  # what an f-string's {value} becomes in the text searched
# Strings that are not a run directory's file though they read like one: (module, string).
NOT_RUN_FILES = {
    # The page template in the package, from which the run's timeline.html is made.
    ("harness/reports/timeline.py", "timeline.html"),
}


def bare(name: str) -> bool:
    return re.fullmatch(r"\w+", name) is not None


def pattern(name: str) -> re.Pattern[str]:
    """``name`` as a program may spell it: a hole, a glob's * or a word where "{}" is."""
    body = r"(?:\0|\*|[\w-]+)".join(re.escape(part) for part in name.split("{}"))
    return re.compile(rf"(?<![\w.-]){body}(?![\w-])")


SPELLED = [(name, pattern(name)) for name in RunDir.NAMES if not bare(name)]
BARE = {name for name in RunDir.NAMES if bare(name)}


def strings(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """Every string of ``tree`` with its node; an f-string as one string with holes."""
    parts: set[int] = set()  # the pieces of an f-string, searched as part of it
    prose = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = ""
            for value in node.values:
                parts.add(id(value))
                constant = value.value if isinstance(value, ast.Constant) else None
                text += constant if isinstance(constant, str) else HOLE
            yield node, text
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in parts
            and id(node) not in prose
        ):
            yield node, node.value


def path_joins(tree: ast.AST) -> Iterator[ast.Constant]:
    """The strings joined onto a path with ``/``."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and isinstance(node.right.value, str)
        ):
            yield node.right


def spellings(source: str, where: str) -> list[str]:
    """Where ``source`` spells a run directory's file name, one line per spelling, in line
    order."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    for node, text in strings(tree):
        for name, regex in SPELLED:
            if regex.search(text) and (where, name) not in NOT_RUN_FILES:
                line = getattr(node, "lineno", 0)
                found.append((line, f"{where}:{line}: {text!r} spells {name!r}: use RunDir"))
    for node in path_joins(tree):
        if node.value in BARE:
            found.append((node.lineno, f"{where}:{node.lineno}: / {node.value!r}: use RunDir"))
    return [message for _, message in sorted(found)]


def test_no_module_but_run_dir_spells_a_run_file_name() -> None:
    found = []
    for path in modules().values():
        if path != OWNER:
            found += spellings(path.read_text(), path.relative_to(REPO).as_posix())
    assert found == []


def test_the_names_test_finds_each_way_of_spelling() -> None:
    source = '''
"""A docstring may mention results.json and history.w1.jsonl."""
def f(run_dir, worker, node):
    """So may a function's: scenario.yaml."""
    a = run_dir / f"history.w{worker}.jsonl"
    b = run_dir.glob("history.w*.jsonl")
    c = f"... more witnesses in results.json"
    d = run_dir / "go"
    e = run_dir / f"redis-{node}.log"
    g = "go"  # a bare word that is not joined onto a path: any word may be "go"
    h = "results.jsonl"  # not results.json
    i = "my-harness.log"  # not harness.log
    return a, b, c, d, e, g, h, i
'''
    found = spellings(source, "x.py")
    assert found == [
        "x.py:5: 'history.w\\x00.jsonl' spells 'history.w{}.jsonl': use RunDir",
        "x.py:6: 'history.w*.jsonl' spells 'history.w{}.jsonl': use RunDir",
        "x.py:7: '... more witnesses in results.json' spells 'results.json': use RunDir",
        "x.py:8: / 'go': use RunDir",
        "x.py:9: 'redis-\\x00.log' spells 'redis-{}.log': use RunDir",
    ]


def test_the_names_test_reads_the_names_from_run_dir() -> None:
    # Every name RunDir knows is searched for, one way or the other.
    assert {name for name, _ in SPELLED} | BARE == set(RunDir.NAMES)
    assert {RunDir.GO, RunDir.DATA, RunDir.CLOCK} == BARE
