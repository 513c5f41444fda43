"""The public API (docs/api.md): ``from lockharness import ...`` gives every name a plug-in
writer or a pytest user needs, the example plug-in and the docs' snippets use nothing
else, and ``import lockharness`` stays light."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import lockharness
from lockharness.core.typed_input import convert

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "plugin"
# Besides the package root, the checker's own front door is stable (docs/api.md).
PUBLIC_MODULES = ("lockharness", "lockharness.checker")
# Pages whose snippets show the internal imports on purpose: how the project imports itself.
INTERNAL_ON_PURPOSE = ("layout.md",)


def internal_imports(source: str) -> list[str]:
    """The modules ``source`` imports from lockharness that are not public."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            else []
        )
        found += [n for n in names if n.split(".")[0] == "lockharness"]
    return [n for n in found if n not in PUBLIC_MODULES]


class TimeoutOptions(
    lockharness.ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True
):
    timeout: lockharness.Timeout = 1  # a plug-in's option type, from the public API


def test_every_public_name_resolves_to_its_module_s_object() -> None:
    assert sorted(lockharness.__all__) == sorted(lockharness._WHERE)
    for name in lockharness.__all__:
        origin = importlib.import_module(lockharness._WHERE[name])
        assert getattr(lockharness, name) is getattr(origin, name), name
        assert name in dir(lockharness)
    from lockharness import (  # the names the issue asks for, as a plug-in imports them
        ClientOptions,
        DeclaredClient,
        Endpoint,
        Lease,
        Refused,
        validity_deadline,
    )

    assert issubclass(DeclaredClient.Options, ClientOptions)
    assert convert({"timeout": "100ms"}, TimeoutOptions).timeout == 100_000_000
    assert Lease("k", "t", validity_deadline(0, 1000), (Endpoint("n1", "h", 1).name,)).key == "k"
    assert Refused("no", lost=True).lost


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Leese'"):
        _ = lockharness.Leese  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        from lockharness import Leese  # type: ignore[attr-defined]  # noqa: F401


def test_type_checkers_see_the_same_names_as_the_lazy_table() -> None:
    # The TYPE_CHECKING imports are what mypy and editors read; _WHERE is what runs.
    tree = ast.parse((REPO / "lockharness" / "__init__.py").read_text())
    checked = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    seen = {
        alias.name: node.module
        for node in checked.body
        if isinstance(node, ast.ImportFrom) and node.module != "typing"
        for alias in node.names
    }
    assert seen == lockharness._WHERE


def test_importing_the_package_imports_none_of_its_modules() -> None:
    # python -m lockharness and pytest (in every session) import the package first.
    probe = (
        "import sys, lockharness; "
        "print(sorted(m for m in sys.modules if m.startswith('lockharness.') "
        "or m in ('redis', 'msgspec', 'pytest', 'typing')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", ["my_lock.py", "test_my_lock.py"])
def test_the_example_plugin_imports_only_the_public_api(name: str) -> None:
    source = (EXAMPLE / name).read_text()
    assert internal_imports(source) == []
    assert "from lockharness import" in source


def _snippets(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_docs_snippets_import_only_the_public_api(page: Path) -> None:
    if page.name in INTERNAL_ON_PURPOSE:
        pytest.skip("shows how the project imports itself")
    for snippet in _snippets(page):
        assert internal_imports(snippet) == [], snippet


def test_an_internal_import_is_caught() -> None:
    snippet = "\n".join(
        [
            "import lockharness",
            "from lockharness import Lease",
            "import lockharness.core.x",
            "from lockharness.workloads.protocol import Lease",
            "from lockharness.checker import X",
        ]
    )
    assert internal_imports(snippet) == ["lockharness.core.x", "lockharness.workloads.protocol"]
    assert _snippets(REPO / "docs" / "clients.md"), "no python snippets found: the regex broke"


def test_the_checkers_stable_names_are_the_documented_ones() -> None:
    """lockharness.checker's __all__ is docs/api.md's table under "Reading a verdict": a
    name added to or dropped from either is caught."""
    import lockharness.checker as checker

    page = (REPO / "docs" / "api.md").read_text()
    table = page.split("## Reading a verdict", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \|", table, flags=re.M)
    assert sorted(documented) == sorted(checker.__all__)
    for name in checker.__all__:
        assert getattr(checker, name) is not None, name
