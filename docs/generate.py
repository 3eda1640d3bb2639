"""Generate the reference documents from the code: AsyncAPI per service and the gRPC reference.

    .venv/bin/python docs/generate.py          # write docs/asyncapi/<service>.yaml and docs/grpc.md
    .venv/bin/python docs/generate.py --check  # exit 1 when a written file is stale

AsyncAPI: for each service, the topics its composition root (`services/<name>/main.py`) subscribes
to (`events.<TOPIC>` references there) and the topics whose messages its modules construct
(`ev.<Message>(`), resolved through the kit's topic registry (`arbiter.kit.events.ALL_TOPICS`),
are declared on a FastStream KafkaBroker that is never connected, and FastStream writes the
AsyncAPI 3.0 document. Payloads are protobuf on the wire; their schema is derived from the
message descriptors. The gRPC reference reads the descriptors in `arbiter.contracts` and the
comments of `proto/arbiter/contracts/*.proto`.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from pydantic import BaseModel, Field, create_model

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PROTO_DIR = ROOT / "proto" / "arbiter" / "contracts"
SERVICES = ("pairing", "clock", "arena", "rating", "openings")
CONTRACT_MODULES = ("common", "events", "tournament", "arena", "clock", "rating", "openings")
_TOPIC_REF = re.compile(r"\bevents\.([A-Z][A-Z_]+)\b")
_MESSAGE_BUILT = re.compile(r"\bev\.([A-Z][A-Za-z]+)\(")


# -- AsyncAPI ----------------------------------------------------------------------------------


def service_topics(name: str) -> tuple[list[Any], list[Any]]:
    """(consumed, published) topics of one service, read from its source."""
    from arbiter.kit import events

    folder = ROOT / "services" / name
    registry = {topic_const: getattr(events, topic_const) for topic_const in dir(events)
                if isinstance(getattr(events, topic_const), events.Topic)}
    main = (folder / "main.py").read_text(encoding="utf-8")
    consumed = sorted({registry[c] for c in _TOPIC_REF.findall(main) if c in registry}, key=lambda t: t.name)
    by_message = {t.message.__name__: t for t in events.ALL_TOPICS}
    built: set[Any] = set()
    for module in sorted(folder.glob("*.py")):
        for message in _MESSAGE_BUILT.findall(module.read_text(encoding="utf-8")):
            if message in by_message:
                built.add(by_message[message])
    return consumed, sorted(built, key=lambda t: t.name)


class _Models:
    """Pydantic models mirroring protobuf messages, for the AsyncAPI payload schemas."""

    def __init__(self) -> None:
        self.cache: dict[str, type[BaseModel]] = {}

    def of(self, descriptor: Descriptor) -> type[BaseModel]:
        """The model of one message (nested messages become nested models)."""
        if descriptor.full_name == "google.protobuf.Timestamp":
            return datetime  # type: ignore[return-value]
        found = self.cache.get(descriptor.full_name)
        if found is not None:
            return found
        fields: dict[str, Any] = {}
        for item in descriptor.fields:
            kind = self._type(item)
            if _repeated(item):
                kind = list[kind]  # type: ignore[valid-type]
            fields[item.name] = (kind | None, Field(default=None, description=_field_note(item)))
        model = create_model(descriptor.name, __doc__=f"protobuf {descriptor.full_name}", **fields)
        self.cache[descriptor.full_name] = model
        return model

    def _type(self, item: FieldDescriptor) -> Any:
        if item.type == FieldDescriptor.TYPE_MESSAGE:
            return self.of(item.message_type)
        if item.type == FieldDescriptor.TYPE_ENUM:
            return str
        if item.type == FieldDescriptor.TYPE_BOOL:
            return bool
        if item.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            return float
        if item.type in (FieldDescriptor.TYPE_STRING,):
            return str
        if item.type == FieldDescriptor.TYPE_BYTES:
            return bytes
        return int


def _repeated(item: FieldDescriptor) -> bool:
    # protobuf 5+ exposes is_repeated; older releases only label.
    flag = getattr(item, "is_repeated", None)
    return bool(flag) if flag is not None else item.label == FieldDescriptor.LABEL_REPEATED


def _field_note(item: FieldDescriptor) -> str:
    note = f"field {item.number}"
    if item.type == FieldDescriptor.TYPE_ENUM:
        note += ": " + ", ".join(value.name for value in item.enum_type.values)
    return note


def asyncapi_yaml(name: str) -> str:
    """The AsyncAPI document of one service, from a FastStream broker declared but never connected."""
    from faststream.kafka import KafkaBroker
    from faststream.specification import AsyncAPI

    consumed, published = service_topics(name)
    models = _Models()
    broker = KafkaBroker("kafka:9092", client_id=f"arbiter-{name}")
    for topic in consumed:
        model = models.of(topic.message.DESCRIPTOR)

        async def handler(body: model) -> None:  # type: ignore[valid-type]  # the schema comes from the annotation
            return None

        # Same title as the kit's subscribe(): "<consumer group>:<topic>".
        broker.subscriber(topic.name, group_id=name, title=f"{name}:{topic.name}",
                          description=f"{topic.message.DESCRIPTOR.full_name} (protobuf), key {topic.key_field}; "
                                      f"consumed by group {name}")(handler)
    for topic in published:
        broker.publisher(topic.name, title=f"{name}:{topic.name}:publish",
                         description=f"{topic.message.DESCRIPTOR.full_name} (protobuf), key {topic.key_field}; "
                                     f"written through {name}'s transactional outbox",
                         schema=models.of(topic.message.DESCRIPTOR))
    spec = AsyncAPI(broker, title=f"arbiter {name}", version="1.0.0",
                    description=f"Kafka topics of the {name} service: what it consumes and what it publishes. "
                                "Generated by docs/generate.py; do not edit.")
    # FastStream lists channels in registration-hash order; sorted keys keep the file stable.
    return yaml.safe_dump(spec.to_specification().to_jsonable(), sort_keys=True, allow_unicode=True, width=100)


# -- gRPC reference ----------------------------------------------------------------------------


def proto_comments() -> dict[tuple[str, str], str]:
    """Leading `//` comments of services, rpcs, messages, enums and fields in proto/, keyed by (scope, name)."""
    comments: dict[tuple[str, str], str] = {}
    declaration = re.compile(r"^\s*(service|rpc|message|enum)\s+(\w+)")
    field_line = re.compile(r"^\s*(?:repeated\s+|optional\s+)?[\w.]+\s+(\w+)\s*=\s*\d+\s*;")
    enum_value = re.compile(r"^\s*([A-Z][A-Z0-9_]*)\s*=\s*\d+\s*;")
    for path in sorted(PROTO_DIR.glob("*.proto")):
        pending: list[str] = []
        scope = ""
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith("//"):
                pending.append(stripped[2:].strip())
                continue
            match = declaration.match(line)
            if match:
                kind, name = match.groups()
                if kind in ("service", "message", "enum"):
                    scope = name
                    comments[(kind, name)] = " ".join(pending)
                else:
                    comments[("rpc", f"{scope}.{name}")] = " ".join(pending)
            else:
                match = field_line.match(line) or enum_value.match(line)
                if match and scope:
                    comments[("field", f"{scope}.{match.group(1)}")] = " ".join(pending)
            pending = []
    return comments


def _type_name(item: FieldDescriptor) -> str:
    if item.type == FieldDescriptor.TYPE_MESSAGE:
        name = item.message_type.full_name.removeprefix("arbiter.contracts.")
        return f"[{name}](#{name.lower()})" if "." not in name else name
    if item.type == FieldDescriptor.TYPE_ENUM:
        name = item.enum_type.full_name.removeprefix("arbiter.contracts.")
        return f"[{name}](#{name.lower()})"
    names = {
        FieldDescriptor.TYPE_STRING: "string", FieldDescriptor.TYPE_BOOL: "bool", FieldDescriptor.TYPE_INT32: "int32",
        FieldDescriptor.TYPE_INT64: "int64", FieldDescriptor.TYPE_DOUBLE: "double", FieldDescriptor.TYPE_FLOAT: "float",
        FieldDescriptor.TYPE_BYTES: "bytes", FieldDescriptor.TYPE_UINT32: "uint32",
        FieldDescriptor.TYPE_UINT64: "uint64",
    }
    return names.get(item.type, str(item.type))


def grpc_markdown() -> str:
    """docs/grpc.md: every service, rpc, message and enum of the contracts."""
    comments = proto_comments()
    lines = [
        "# gRPC reference",
        "",
        "Generated by `docs/generate.py` from the descriptors in `libs/arbiter/contracts` and the comments of",
        "`proto/arbiter/contracts/*.proto`; do not edit. Package `arbiter.contracts`. The same messages travel",
        "on Kafka (see `docs/asyncapi/`).",
        "",
    ]
    messages: list[tuple[str, Descriptor]] = []
    enums: list[tuple[str, EnumDescriptor]] = []
    for module_name in CONTRACT_MODULES:
        module = importlib.import_module(f"arbiter.contracts.{module_name}_pb2")
        descriptor = module.DESCRIPTOR
        for service in descriptor.services_by_name.values():
            note = comments.get(("service", service.name), "")
            lines += [f"## {service.name}", "", f"`{descriptor.name}`. {note}".strip(), ""]
            lines += ["| rpc | request | response | notes |", "|---|---|---|---|"]
            for method in service.methods:
                streaming = "stream " if getattr(method, "server_streaming", False) else ""
                request = method.input_type.name
                response = method.output_type.name
                note = comments.get(("rpc", f"{service.name}.{method.name}"), "")
                lines.append(f"| `{method.name}` | [{request}](#{request.lower()}) | {streaming}[{response}]"
                             f"(#{response.lower()}) | {note} |")
            lines.append("")
        messages += [(descriptor.name, m) for m in descriptor.message_types_by_name.values()]
        enums += [(descriptor.name, e) for e in descriptor.enum_types_by_name.values()]
    lines += ["## Messages", ""]
    for file_name, message in messages:
        note = comments.get(("message", message.name), "")
        lines += [f"### {message.name}", "", f"`{file_name}`. {note}".strip(), ""]
        if message.fields:
            lines += ["| # | field | type | notes |", "|---|---|---|---|"]
            for item in message.fields:
                label = "repeated " if _repeated(item) else ""
                oneof = f" (oneof `{item.containing_oneof.name}`)" if item.containing_oneof is not None and \
                    not item.containing_oneof.name.startswith("_") else ""
                note = comments.get(("field", f"{message.name}.{item.name}"), "")
                lines.append(f"| {item.number} | `{item.name}` | {label}{_type_name(item)} | {note}{oneof} |")
            lines.append("")
    lines += ["## Enums", ""]
    for file_name, enum in enums:
        lines += [f"### {enum.name}", "", f"`{file_name}`. {comments.get(('enum', enum.name), '')}".strip(), ""]
        lines += ["| value | name | notes |", "|---|---|---|"]
        for value in enum.values:
            note = comments.get(("field", f"{enum.name}.{value.name}"), "")
            lines.append(f"| {value.number} | `{value.name}` | {note} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def documents() -> dict[Path, str]:
    """Every generated file and its content."""
    files = {DOCS / "asyncapi" / f"{name}.yaml": asyncapi_yaml(name) for name in SERVICES}
    files[DOCS / "grpc.md"] = grpc_markdown()
    return files


def main(argv: list[str] | None = None) -> int:
    """Write the documents, or with --check report the stale ones."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file differs from what would be written")
    args = parser.parse_args(argv)
    stale = []
    for path, content in documents().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == content:
            continue
        if args.check:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale (run .venv/bin/python docs/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
