"""docs/integration.md against the contracts: every RPC has its status codes, every topic its row."""

from __future__ import annotations

import re
from pathlib import Path

from arbiter.contracts import arena_pb2, clock_pb2, openings_pb2, rating_pb2, tournament_pb2
from arbiter.kit.events import ALL_TOPICS

ROOT = Path(__file__).resolve().parents[3]
CONTRACT = (ROOT / "docs" / "integration.md").read_text(encoding="utf-8")
SERVICES = [service for module in (tournament_pb2, arena_pb2, clock_pb2, rating_pb2, openings_pb2)
            for service in module.DESCRIPTOR.services_by_name.values()]


def _section(heading: str) -> str:
    """The text under `#### heading`, up to the next heading."""
    match = re.search(rf"^#### {heading}\n(.*?)(?=^#)", CONTRACT + "\n#", re.MULTILINE | re.DOTALL)
    assert match is not None, f"docs/integration.md has no '#### {heading}' (docs/grpc.md links to it)"
    return match.group(1)


def test_every_rpc_has_its_row_of_status_codes_under_its_service() -> None:
    for service in SERVICES:
        rows = re.findall(r"^\| `(\w+)` \|", _section(service.name), re.MULTILINE)
        assert rows == [method.name for method in service.methods], service.name


def test_every_topic_is_in_the_table_of_topics() -> None:
    table = CONTRACT.split("### Topics", 1)[1].split("###", 1)[0]
    missing = [topic.name for topic in ALL_TOPICS
               if f"`{topic.name}`" not in table and f"`{topic.name.split('.')[0]}.*`" not in table]
    assert missing == []


def test_the_service_headings_are_the_anchors_the_grpc_reference_links_to() -> None:
    reference = (ROOT / "docs" / "grpc.md").read_text(encoding="utf-8")
    for service in SERVICES:
        assert f"(integration.md#{service.name.lower()})" in reference
        _section(service.name)
