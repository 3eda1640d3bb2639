"""Generate the reference documents from the code: AsyncAPI per service and the gRPC reference.

    .venv/bin/python docs/generate.py          # write docs/asyncapi/<service>.yaml, docs/grpc.md and
                                               # the where-lines of docs/rules.md
    .venv/bin/python docs/generate.py --check  # exit 1 when a written file is stale

AsyncAPI: for each service, the topics and consumer groups of the `subscribe` / `subscribe_many`
calls in its composition root (`services/<name>/main.py`, arguments evaluated in that module) and
the topics whose messages its modules construct (any call of a message of
`arbiter.contracts.events_pb2`, whatever name it was imported under), resolved through the kit's
topic registry (`arbiter.kit.events.ALL_TOPICS`), are declared on a FastStream KafkaBroker that is
never connected, and FastStream writes the AsyncAPI 3.0 document. Payloads are protobuf on the
wire (content type `application/protobuf; proto=<full message name>`, the registered type of which
`application/x-protobuf` is the deprecated alias); their schema is derived from the message
descriptors. Each message declares the headers really sent (`event-id`, `event-type`, `trace-id`)
and `trace-id` as its correlation id (`with_the_wire`). The gRPC reference reads the
descriptors in `arbiter.contracts` and the comments of `proto/arbiter/contracts/*.proto`.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from pydantic import BaseModel, Field, create_model

from arbiter_tools.rulebook import RULEBOOK, rulebook_text

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PROTO_DIR = ROOT / "proto" / "arbiter" / "contracts"
SERVICES = ("pairing", "clock", "arena", "rating", "openings")
CONTRACT_MODULES = ("common", "events", "tournament", "arena", "clock", "rating", "openings")
_EVENTS_MODULE = "arbiter.contracts.events_pb2"
# The play-site contract, which every generated document links to.
INTEGRATION = "integration.md"
# The kit's consumers and the position / keyword of their topic(s) and consumer group arguments.
_SUBSCRIBE_CALLS = {"subscribe": (3, "topic", 4), "subscribe_many": (3, "handlers", 4)}


# -- AsyncAPI ----------------------------------------------------------------------------------


class Consumed(NamedTuple):
    """A topic a service consumes and the consumer group (without the deployment's prefix) reading it."""

    topic: Any
    group: str


def service_topics(name: str) -> tuple[list[Consumed], list[Any]]:
    """(consumed, published) topics of one service, read from its source."""
    return consumed_topics(name), published_topics(name)


def consumed_topics(name: str) -> list[Consumed]:
    """Every (topic, group) that the composition root of service `name` subscribes to, settings at their defaults."""
    from arbiter.kit import events

    path = ROOT / "services" / name / "main.py"
    module = importlib.import_module(f"services.{name}.main")
    # A group id may come from the settings serve() is given (pairing's): the default is documented.
    settings_type = inspect.signature(module.serve, eval_str=True).parameters["settings"].annotation
    namespace = {**vars(module), "settings": settings_type.model_construct()}
    found: set[Consumed] = set()
    for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(call, ast.Call) or _called_name(call) not in _SUBSCRIBE_CALLS:
            continue
        topic_at, topic_keyword, group_at = _SUBSCRIBE_CALLS[_called_name(call)]
        topics = _argument(call, topic_at, topic_keyword)
        group = _argument(call, group_at, "group_id")
        if topics is None or group is None:
            raise ValueError(f"{path}:{call.lineno}: a subscription whose topic or group is not an argument")
        # subscribe_many takes {topic: handler}: only the keys are topics, the handlers are locals of serve().
        nodes = topics.keys if isinstance(topics, ast.Dict) else [topics]
        group_id = _evaluate(group, namespace, path)
        for node in nodes:
            topic = _evaluate(node, namespace, path)
            if not isinstance(topic, events.Topic) or not isinstance(group_id, str):
                raise ValueError(f"{path}:{call.lineno}: expected a kit Topic and a group id, got {topic!r}, "
                                 f"{group_id!r}")
            found.add(Consumed(topic, group_id))
    return sorted(found, key=lambda item: (item.topic.name, item.group))


def published_topics(name: str) -> list[Any]:
    """Every topic whose message some module of service `name` constructs."""
    from arbiter.kit import events

    by_message = {t.message.__name__: t for t in events.ALL_TOPICS}
    built: set[Any] = set()
    for path in sorted((ROOT / "services" / name).rglob("*.py")):
        for message in _events_built(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if message in by_message:
                built.add(by_message[message])
    return sorted(built, key=lambda t: t.name)


def _events_built(tree: ast.Module) -> set[str]:
    """Names of the events_pb2 messages called in `tree`: `ev.X(`, `events_pb2.X(`, or `X(` imported from it."""
    modules: set[str] = set()
    messages: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == _EVENTS_MODULE.rpartition(".")[0]:
            modules |= {a.asname or a.name for a in node.names if a.name == _EVENTS_MODULE.rpartition(".")[2]}
        elif isinstance(node, ast.ImportFrom) and node.module == _EVENTS_MODULE:
            messages |= {a.asname or a.name: a.name for a in node.names}
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name == _EVENTS_MODULE and a.asname}
    built: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in modules:
            built.add(func.attr)
        elif isinstance(func, ast.Name) and func.id in messages:
            built.add(messages[func.id])
        elif isinstance(func, ast.Attribute) and ast.unparse(func.value) == _EVENTS_MODULE:
            built.add(func.attr)
    return built


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _evaluate(node: ast.expr, namespace: dict[str, Any], path: Path) -> Any:
    # Module-level names and `settings` only: a subscription naming a local of serve() fails loudly here.
    return eval(compile(ast.Expression(node), str(path), "eval"), dict(namespace))


class _Models:
    """Pydantic models mirroring protobuf messages, for the AsyncAPI payload schemas."""

    def __init__(self) -> None:
        self.cache: dict[str, type[BaseModel]] = {}

    def of(self, descriptor: Descriptor) -> type[BaseModel]:
        """The model of one message (nested messages become nested models)."""
        if descriptor.full_name == "google.protobuf.Timestamp":
            return datetime  # type: ignore[return-value]  # a Timestamp's schema is pydantic's date-time string
        found = self.cache.get(descriptor.full_name)
        if found is not None:
            return found
        fields: dict[str, Any] = {}
        for item in descriptor.fields:
            kind = self._type(item)
            if _repeated(item):
                kind = list[kind]  # type: ignore[valid-type]  # a type chosen at run time, for create_model
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


def _handler_of(model: type[BaseModel]) -> Any:
    """A no-op handler whose body annotation is `model`, the schema FastStream documents."""

    async def handler(body: Any) -> None:
        return None

    # Set, not written in the signature: under postponed annotations FastStream would resolve the
    # name `model` when the document is written, after a loop had rebound it to its last value.
    handler.__annotations__ = {"body": model, "return": None}
    return handler


# Topics a service does not (only) write through its outbox (services/clock/publisher.py).
_WRITTEN_OTHERWISE = {
    ("clock", "clock.state"): "live games' states sent straight to Kafka (each supersedes the one before, so a"
                              " lost one costs nothing); Triple Block states through clock's transactional outbox",
}


def asyncapi_yaml(name: str) -> str:
    """The AsyncAPI document of one service, from a FastStream broker declared but never connected."""
    from faststream.kafka import KafkaBroker
    from faststream.specification import AsyncAPI

    consumed, published = service_topics(name)
    models = _Models()
    broker = KafkaBroker("kafka:9092", client_id=f"arbiter-{name}")
    for topic, group in consumed:
        # Titled "<consumer group>:<topic>" like the kit's subscribe(); a subscribe_many group gets one per topic.
        broker.subscriber(topic.name, group_id=group, title=f"{group}:{topic.name}",
                          description=f"{topic.message.DESCRIPTOR.full_name} (protobuf), key {topic.key_field}; "
                                      f"consumed by group {group}")(_handler_of(models.of(topic.message.DESCRIPTOR)))
    for topic in published:
        how = _WRITTEN_OTHERWISE.get((name, topic.name), f"written through {name}'s transactional outbox")
        broker.publisher(topic.name, title=f"{name}:{topic.name}:publish",
                         description=f"{topic.message.DESCRIPTOR.full_name} (protobuf), key {topic.key_field}; {how}",
                         schema=models.of(topic.message.DESCRIPTOR))
    spec = AsyncAPI(broker, title=f"arbiter {name}", version="1.0.0",
                    description=f"Kafka topics of the {name} service: what it consumes and what it publishes. "
                                f"Keys, order, delivery and who decides what: [docs/{INTEGRATION}](../{INTEGRATION}). "
                                "Generated by docs/generate.py; do not edit.")
    document = with_the_wire(spec.to_specification().to_jsonable())
    # FastStream lists channels in registration-hash order; sorted keys keep the file stable.
    return yaml.safe_dump(document, sort_keys=True, allow_unicode=True, width=100)


# What travels on the wire, which FastStream's document does not say: FastStream declares JSON and a
# `correlation_id` header of its own, where our records are protobuf with the headers below.
PROTOBUF = "application/protobuf"
_HEADER_NOTES = {
    "event-id": "The event's id (EventMeta.event_id), which consumers deduplicate on.",
    "event-type": "The message's full protobuf name, the one in contentType's `proto` parameter.",
    "trace-id": "The chain the event belongs to (EventMeta.trace_id, which wins when both are set): the id of"
                " the call or event that started it, kept by every event it causes and in every log line"
                " written for it. 1 to 128 ASCII letters, digits or - _ . : / + = @; a value that is not one is"
                " not used. A consumed event without a usable one starts a chain named by its event id.",
}


def with_the_wire(document: dict[str, Any]) -> dict[str, Any]:
    """The document with each message's protobuf content type, the headers really sent, trace-id as correlation id.

    A message this service publishes always carries the three headers; one it consumes is read by its
    payload alone, the `trace-id` header only standing in for a meta without a trace id.
    """
    from arbiter.kit.events import ALL_TOPICS
    from arbiter.kit.fields import TRACE_ID_MAX_LENGTH

    by_schema = {topic.message.DESCRIPTOR.name: topic.message.DESCRIPTOR.full_name for topic in ALL_TOPICS}
    document["defaultContentType"] = PROTOBUF
    for key, message in document["components"]["messages"].items():
        full_name = by_schema[message["payload"]["$ref"].rpartition("/")[2]]
        published = key.endswith(":publish:Message")
        message.pop("correlationId", None)
        message["contentType"] = f"{PROTOBUF}; proto={full_name}"
        message["correlationId"] = {
            "location": "$message.header#/trace-id",
            "description": "The trace id: every event and log line of one chain of work names it."}
        properties: dict[str, Any] = {name: {"type": "string", "description": note}
                                      for name, note in _HEADER_NOTES.items()}
        properties["event-type"]["const"] = full_name
        properties["trace-id"]["pattern"] = f"^[A-Za-z0-9_.:/+=@-]{{1,{TRACE_ID_MAX_LENGTH}}}$"
        message["headers"] = {"type": "object", "properties": properties,
                              "required": sorted(_HEADER_NOTES) if published else []}
    return document


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


# The gRPC service each service serves; its servicer module holds RPC_ROLES, the table of who may call what.
SERVED_BY = {"TournamentService": "pairing", "ClockService": "clock", "ArenaService": "arena",
             "RatingService": "rating", "OpeningService": "openings"}


def rpc_roles(service_name: str) -> dict[str, Any]:
    """The roles each RPC of a gRPC service accepts, from the table its service registers (kit.auth)."""
    return dict(importlib.import_module(f"services.{SERVED_BY[service_name]}.servicer").RPC_ROLES)


def grpc_markdown() -> str:
    """docs/grpc.md: every service, rpc (with the caller roles it accepts), message and enum of the contracts."""
    comments = proto_comments()
    lines = [
        "# gRPC reference",
        "",
        "Generated by `docs/generate.py` from the descriptors in `libs/arbiter/contracts` and the comments of",
        "`proto/arbiter/contracts/*.proto`; do not edit. Package `arbiter.contracts`. The same messages travel",
        "on Kafka (see `docs/asyncapi/`). The roles column is each service's own table of who may call",
        "what (`RPC_ROLES` in `services/<service>/servicer.py`, enforced by `arbiter.kit.auth`): a token in",
        "another role gets PERMISSION_DENIED. Health and reflection need no token.",
        "",
        "How a play site uses these calls and events, service tokens, limits, and the status codes each RPC",
        f"answers: [docs/{INTEGRATION}]({INTEGRATION}).",
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
            anchor = service.name.lower()  # the service's heading in the contract
            lines += [f"Who may call each RPC and what it refuses: [docs/{INTEGRATION}#{anchor}]"
                      f"({INTEGRATION}#{anchor}).", ""]
            lines += ["| rpc | request | response | roles | notes |", "|---|---|---|---|---|"]
            roles = rpc_roles(service.name)
            for method in service.methods:
                streaming = "stream " if getattr(method, "server_streaming", False) else ""
                request = method.input_type.name
                response = method.output_type.name
                note = comments.get(("rpc", f"{service.name}.{method.name}"), "")
                who = ", ".join(sorted(roles[method.name]))
                lines.append(f"| `{method.name}` | [{request}](#{request.lower()}) | {streaming}[{response}]"
                             f"(#{response.lower()}) | {who} | {note} |")
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
    files[ROOT / RULEBOOK] = rulebook_text(ROOT)
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
