"""The docs: a short README, every page in the site's nav, and links outside the site that
resolve (`make docs` checks the pages' own links and anchors; nothing checks README.md's)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown.extensions.toc import slugify

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README_MAX_LINES = 250
# The Markdown files that live outside docs/ and link into it or into each other.
OUTSIDE_PAGES = ("README.md", "compose/README.md", "clients/README.md")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def nav_files(nav: list[Any]) -> list[str]:
    """Every page a mkdocs nav names, however deep its sections go."""
    found: list[str] = []
    for entry in nav:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            found.extend(nav_files(value) if isinstance(value, list) else [value])
    return found


def anchors(page: Path) -> set[str]:
    """The ids MkDocs gives the page's headings (Python-Markdown's toc slugify)."""
    text = FENCE.sub("", page.read_text())
    headings = re.findall(r"^#{1,6} +(.+?) *$", text, re.MULTILINE)
    return {slugify(heading, "-") for heading in headings}


def broken_links(page: Path) -> list[str]:
    """Relative links of a page whose file, or whose #anchor in a Markdown file, is missing."""
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:: not ours to check offline
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading makes #{anchor}")
    return broken


def test_the_readme_is_a_front_door() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    listed = nav_files(config["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(listed) == pages
    assert len(set(listed)) == len(listed), "a page is in the nav twice"


@pytest.mark.parametrize("name", OUTSIDE_PAGES)
def test_links_outside_the_site_resolve(name: str) -> None:
    assert broken_links(REPO / name) == []


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## A section: here\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](a.md#a-section-here) [ok](#local) [gone](b.md) [bad](a.md#nowhere)\n"
        "## Local\n```\n[in code](c.md)\n```\n[web](https://example.org/x)\n"
    )
    assert broken_links(page) == ["b.md: no such file", "a.md#nowhere: no heading makes #nowhere"]


def test_the_pytest_plugin_page_shows_the_example_file() -> None:
    # The example is run by tests/test_pytest_plugin.py; the page must show that very file.
    example = (REPO / "examples" / "plugin" / "test_my_lock.py").read_text()
    assert f"```python\n{example}```\n" in (DOCS / "pytest-plugin.md").read_text()


def test_the_suites_page_shows_the_nightly_workflow() -> None:
    # tests/test_ci_recipe.py runs the workflow's commands; the page must show that file.
    workflow = (DOCS / "ci" / "nightly.yml").read_text()
    assert f"```yaml\n{workflow}```\n" in (DOCS / "suites-and-ci.md").read_text()


def test_nothing_points_outside_the_repository() -> None:
    # A clone has only what is committed: a page, comment or message that sends the reader
    # to a file beside the repository (../shared/DESIGN.md once) sends them nowhere.
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    outside = re.compile(r"\.\./shared|\bDESIGN\.md")
    found = [
        f"{name}:{number}"
        for name in tracked
        if name != "tests/test_docs.py"
        and (REPO / name).suffix in (".py", ".md", ".yml", ".yaml", ".c", ".toml", "")
        and (REPO / name).is_file()
        for number, line in enumerate((REPO / name).read_text(errors="replace").splitlines(), 1)
        if outside.search(line)
    ]
    assert found == []
