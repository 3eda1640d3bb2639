"""docs/asyncapi/*.yaml and docs/grpc.md are what docs/generate.py writes from the current code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_docs_are_up_to_date() -> None:
    generator = _generator()
    stale = [str(path.relative_to(ROOT)) for path, content in generator.documents().items()
             if not path.exists() or path.read_text(encoding="utf-8") != content]
    assert stale == [], f"stale docs, run `.venv/bin/python docs/generate.py`: {stale}"


def test_every_service_documents_its_topics_and_every_rpc_is_in_the_reference() -> None:
    generator = _generator()
    consumed, published = generator.service_topics("rating")
    assert "game.finished" in [t.name for t in consumed]
    assert "rating.updated" in [t.name for t in published]
    reference = (ROOT / "docs" / "grpc.md").read_text(encoding="utf-8")
    for rpc in ("CreateTournament", "JoinArena", "Refuel", "GetRating", "DrawOpening"):
        assert f"`{rpc}`" in reference
