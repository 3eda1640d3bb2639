"""The documents stand alone: every relative link resolves inside the repository, and the README links nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# [text](target) in Markdown, not images' or code's look-alikes inside backticks.
_LINK = re.compile(r"(?<!`)\[[^\]]*\]\(([^)\s]+)\)")
DOCUMENTS = sorted(
    path for pattern in ("*.md", "docs/**/*.md", "deploy/**/*.md", "examples/**/*.md", "tests/data/**/README.md",
                         "libs/**/*.md", "tools/**/*.md")
    for path in ROOT.glob(pattern) if ".venv" not in path.parts
)


def _targets(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return _LINK.findall(text)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(document: Path) -> None:
    for target in _targets(document):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        resolved = (document.parent / target.split("#", 1)[0]).resolve()
        assert resolved.is_relative_to(ROOT), f"{document.relative_to(ROOT)} links outside the repository: {target}"
        assert resolved.exists(), f"{document.relative_to(ROOT)} links to a missing path: {target}"


def test_the_readme_links_only_inside_the_repository() -> None:
    external = [target for target in _targets(ROOT / "README.md") if re.match(r"^[a-z]+:", target)]
    assert external == []
