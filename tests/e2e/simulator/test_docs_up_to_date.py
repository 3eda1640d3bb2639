"""docs/asyncapi/*.yaml and docs/grpc.md are what docs/generate.py writes from the current code."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

import yaml

from arbiter.kit.events import topic_named
from arbiter_tools.devstack.stack import SERVICE_GROUPS

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


# The topics each service's code publishes (DESIGN.md's table); what each consumes, and in which
# group, is the devstack's SERVICE_GROUPS, which the chaos and lag checks already rely on.
KNOWN_PUBLISHED: dict[str, set[str]] = {
    "pairing": {"game.requested", "game.finished", "tournament.created", "tournament.started",
                "tournament.round_paired", "tournament.finished", "tournament.cancelled"},
    "clock": {"clock.flagged", "clock.state", "game.abandoned"},
    "arena": {"game.requested", "arena.created", "arena.finished", "arena.boost_taken"},
    "rating": {"rating.updated"},
    "openings": {"opening.drawn"},
}


def _documented(service: str) -> tuple[set[tuple[str, str]], set[str], set[tuple[str, str]]]:
    """(consumed (topic, group), published topics, (topic, payload schema)) of docs/asyncapi/<service>.yaml."""
    doc = yaml.safe_load((ROOT / "docs" / "asyncapi" / f"{service}.yaml").read_text(encoding="utf-8"))
    consumed: set[tuple[str, str]] = set()
    published: set[str] = set()
    payloads: set[tuple[str, str]] = set()
    for operation in doc["operations"].values():
        channel = doc["channels"][operation["channel"]["$ref"].rpartition("/")[2]]
        if operation["action"] == "receive":
            consumed.add((channel["address"], channel["description"].rpartition("consumed by group ")[2]))
        else:
            published.add(channel["address"])
        for message in channel["messages"].values():
            schema = doc["components"]["messages"][message["$ref"].rpartition("/")[2]]["payload"]["$ref"]
            payloads.add((channel["address"], schema.rpartition("/")[2]))
    return consumed, published, payloads


def test_every_service_documents_its_known_topics_and_groups() -> None:
    assert set(KNOWN_PUBLISHED) == set(SERVICE_GROUPS) == set(_generator().SERVICES)
    for service, published in KNOWN_PUBLISHED.items():
        documented_consumed, documented_published, _ = _documented(service)
        consumed = {(topic, group) for group, topics in SERVICE_GROUPS[service].items() for topic in topics}
        assert documented_consumed == consumed, f"{service}: documented {documented_consumed}, consumes {consumed}"
        assert published <= documented_published, f"{service}: missing topics {published - documented_published}"


def test_every_documented_payload_is_its_topics_message() -> None:
    for service in KNOWN_PUBLISHED:
        for topic, schema in _documented(service)[2]:
            expected = topic_named(topic).message.DESCRIPTOR.name
            assert schema == expected, f"{service} {topic}: payload {schema}, the topic carries {expected}"


def test_published_events_are_found_whatever_name_events_pb2_was_imported_under() -> None:
    generator = _generator()
    source = """
from arbiter.contracts import events_pb2
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts.events_pb2 import RatingUpdated as Updated
import arbiter.contracts.events_pb2
a = events_pb2.OpeningDrawn(competition_id="t")
b = ev.GameRequested()
c = Updated()
d = arbiter.contracts.events_pb2.ArenaCreated()
e = other.ClockState()
"""
    built: Any = generator._events_built(ast.parse(source))
    assert built == {"OpeningDrawn", "GameRequested", "RatingUpdated", "ArenaCreated"}


def test_every_rpc_is_in_the_reference() -> None:
    reference = (ROOT / "docs" / "grpc.md").read_text(encoding="utf-8")
    for rpc in ("CreateTournament", "JoinArena", "Refuel", "GetRating", "DrawOpening"):
        assert f"`{rpc}`" in reference


def test_every_message_declares_protobuf_and_the_headers_really_sent() -> None:
    for service, _published in KNOWN_PUBLISHED.items():
        text = (ROOT / "docs" / "asyncapi" / f"{service}.yaml").read_text(encoding="utf-8")
        assert "correlation_id" not in text and "application/json" not in text, service
        doc = yaml.safe_load(text)
        assert doc["defaultContentType"] == "application/protobuf"
        for operation in doc["operations"].values():
            channel = doc["channels"][operation["channel"]["$ref"].rpartition("/")[2]]
            full_name = topic_named(channel["address"]).message.DESCRIPTOR.full_name
            for reference in channel["messages"].values():
                message = doc["components"]["messages"][reference["$ref"].rpartition("/")[2]]
                assert message["contentType"] == f"application/protobuf; proto={full_name}"
                assert message["correlationId"]["location"] == "$message.header#/trace-id"
                headers = message["headers"]
                assert set(headers["properties"]) == {"event-id", "event-type", "trace-id"}
                assert headers["properties"]["event-type"]["const"] == full_name
                sent = operation["action"] == "send"
                assert headers["required"] == (["event-id", "event-type", "trace-id"] if sent else []), (
                    service, channel["address"])
