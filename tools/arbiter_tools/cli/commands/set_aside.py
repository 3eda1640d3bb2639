"""`arbiter set-aside`: the records consumers set aside (kit migration 003), listed and published again.

Each service keeps the records its consumers could not handle in its schema's
`consumer_set_aside` table; a record is named `<service>/<id>`. `replay` publishes the original
record again (its topic, key, value and headers, to a new offset) and marks it replayed: every
consumer of the topic sees it once more, and the idempotent ones that handled it already change
nothing. Replay after the cause is gone (a fixed handler, a producer's bug fixed at its source):
a record that is still bad is set aside again under its new offset.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

COLUMNS = ("id, consumer_group, topic, partition, \"offset\", key, value, headers, record_time, reason, detail,"
           " attempts, set_aside_at, replayed_at")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `set-aside list` and `set-aside replay`."""
    parser = subparsers.add_parser(
        "set-aside", help="records the consumers set aside: list them, publish them again",
        description="Records a service's consumers could not handle (undecodable, invalid, or a handler that kept"
                    " failing), kept in each service schema's consumer_set_aside table so that their partition"
                    " moved on. Named <service>/<id>.")
    actions = parser.add_subparsers(dest="set_aside_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="the records set aside, oldest first")
    _common(listing)
    listing.add_argument("--pending", action="store_true", help="only those not replayed yet")
    listing.add_argument("--limit", type=int, default=200, help="at most this many per service (default 200)")
    listing.set_defaults(handler=run_list)
    replay = actions.add_parser("replay", help="publish records again to their topic, with their key and headers")
    _common(replay)
    replay.add_argument("records", nargs="*", metavar="SERVICE/ID", help="the records to replay, e.g. rating/12")
    replay.add_argument("--all", action="store_true", help="every record not replayed yet (within --service/--topic)")
    replay.add_argument("--again", action="store_true", help="replay named records even if they were replayed before")
    replay.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", ""),
                        help="Kafka bootstrap servers (default: $KAFKA_BOOTSTRAP_SERVERS)")
    replay.set_defaults(handler=run_replay)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""),
                        help="the services' database (default: $DATABASE_URL)")
    parser.add_argument("--service", default="", help="one service (schema) only, e.g. rating")
    parser.add_argument("--topic", default="", help="one topic only, e.g. game.finished")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run_list(args: argparse.Namespace) -> int:
    """Print the records set aside."""
    if not args.database_url:
        return _fail("set-aside list", "no database: give --database-url or set DATABASE_URL")
    rows = asyncio.run(_list(args))
    if args.json:
        print(json.dumps([_as_json(service, row) for service, row in rows]))
        return 0
    if not rows:
        print("nothing set aside")
    for service, row in rows:
        print(_as_line(service, row))
    return 0


def run_replay(args: argparse.Namespace) -> int:
    """Publish the chosen records again and mark them replayed."""
    if not args.database_url:
        return _fail("set-aside replay", "no database: give --database-url or set DATABASE_URL")
    if not args.bootstrap:
        return _fail("set-aside replay", "no broker: give --bootstrap or set KAFKA_BOOTSTRAP_SERVERS")
    if bool(args.records) == bool(args.all):
        return _fail("set-aside replay", "name the records (SERVICE/ID ...) or give --all, not both")
    try:
        wanted = [_parse_name(name) for name in args.records]
    except ValueError as error:
        return _fail("set-aside replay", str(error))
    try:
        replayed = asyncio.run(_replay(args, wanted))
    except LookupError as error:
        return _fail("set-aside replay", str(error))
    if args.json:
        print(json.dumps(replayed))
    else:
        for item in replayed:
            print(f"replayed {item['name']} to {item['topic']}[{item['partition']}]@{item['offset']}")
        if not replayed:
            print("nothing to replay")
    return 0


def _fail(command: str, message: str) -> int:
    print(f"arbiter {command}: {message}", file=sys.stderr)
    return 2


def _parse_name(name: str) -> tuple[str, int]:
    service, _, number = name.partition("/")
    if not service or not number.isdigit():
        raise ValueError(f"{name!r} is not SERVICE/ID (e.g. rating/12)")
    return service, int(number)


async def _schemas(connection: asyncpg.Connection, only: str) -> list[str]:
    """The schemas that hold a consumer_set_aside table (every service's, after kit migration 003)."""
    rows = await connection.fetch(
        "SELECT table_schema FROM information_schema.tables WHERE table_name = 'consumer_set_aside'"
        " AND ($1 = '' OR table_schema = $1) ORDER BY table_schema", only)
    return [row["table_schema"] for row in rows]


def _quoted(schema: str) -> str:
    return '"' + schema.replace('"', '""') + '"'


async def _connect(database_url: str) -> asyncpg.Connection:
    connection = await asyncpg.connect(database_url)
    await connection.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    return connection


async def _list(args: argparse.Namespace) -> list[tuple[str, asyncpg.Record]]:
    connection = await _connect(args.database_url)
    try:
        found: list[tuple[str, asyncpg.Record]] = []
        for schema in await _schemas(connection, args.service):
            rows = await connection.fetch(
                f"SELECT {COLUMNS} FROM {_quoted(schema)}.consumer_set_aside"
                " WHERE ($1 = '' OR topic = $1) AND (NOT $2 OR replayed_at IS NULL) ORDER BY id LIMIT $3",
                args.topic, args.pending, args.limit)
            found += [(schema, row) for row in rows]
        return found
    finally:
        await connection.close()


async def _replay(args: argparse.Namespace, wanted: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    from aiokafka import AIOKafkaProducer

    from arbiter.kit.kafka import kafka_security
    from arbiter.kit.settings import KafkaSecuritySettings, load_settings

    connection = await _connect(args.database_url)
    try:
        schemas = await _schemas(connection, args.service)
        chosen: list[tuple[str, asyncpg.Record]] = []
        if args.all:
            for schema in schemas:
                rows = await connection.fetch(
                    f"SELECT {COLUMNS} FROM {_quoted(schema)}.consumer_set_aside"
                    " WHERE replayed_at IS NULL AND ($1 = '' OR topic = $1) ORDER BY id", args.topic)
                chosen += [(schema, row) for row in rows]
        for service, number in wanted:
            if service not in schemas:
                raise LookupError(f"{service}/{number}: no service {service!r} keeps records set aside here")
            row = await connection.fetchrow(
                f"SELECT {COLUMNS} FROM {_quoted(service)}.consumer_set_aside WHERE id = $1", number)
            if row is None:
                raise LookupError(f"{service}/{number}: no such record set aside")
            if row["replayed_at"] is not None and not args.again:
                raise LookupError(f"{service}/{number} was replayed at {row['replayed_at']:%Y-%m-%dT%H:%M:%SZ};"
                                  " add --again to replay it once more")
            chosen.append((service, row))
        if not chosen:
            return []
        # KAFKA_SECURITY_PROTOCOL and KAFKA_SASL_* from the environment, as every client of ours.
        producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap, acks="all", request_timeout_ms=30_000,
                                    max_request_size=2 * 1024 * 1024,
                                    **kafka_security(load_settings(KafkaSecuritySettings)))
        await producer.start()
        replayed = []
        try:
            for service, row in chosen:
                topic, value, key, headers = replayed_record(row)
                sent = await producer.send_and_wait(topic, value, key=key, headers=headers)
                # Marked as each one is acknowledged: a failure later leaves the rest for the next replay.
                await connection.execute(
                    f"UPDATE {_quoted(service)}.consumer_set_aside SET replayed_at = now() WHERE id = $1", row["id"])
                replayed.append({"name": f"{service}/{row['id']}", "topic": row["topic"],
                                 "partition": sent.partition, "offset": sent.offset})
        finally:
            await producer.stop()
        return replayed
    finally:
        await connection.close()


def replayed_record(row: asyncpg.Record) -> tuple[str, bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
    """What `replay` publishes for a stored record: topic, value, key and headers as they came.

    The value keeps the event's meta (its trace id among it) and the headers keep `trace-id`:
    a replayed event is handled in the chain it came in.
    """
    from arbiter.kit.poison import decode_headers

    value, key = row["value"], row["key"]
    return (row["topic"], None if value is None else bytes(value), None if key is None else bytes(key),
            decode_headers(row["headers"]))


def _when(instant: datetime | None) -> str | None:
    return None if instant is None else instant.isoformat()


def _as_json(service: str, row: asyncpg.Record) -> dict[str, Any]:
    from arbiter.kit.poison import decode_headers

    key, value = row["key"], row["value"]
    return {
        "name": f"{service}/{row['id']}", "service": service, "id": row["id"],
        "consumer_group": row["consumer_group"], "topic": row["topic"], "partition": row["partition"],
        "offset": row["offset"], "key": None if key is None else bytes(key).decode(errors="replace"),
        "key_base64": None if key is None else base64.b64encode(key).decode(),
        "value_bytes": None if value is None else len(value),
        "value_base64": None if value is None else base64.b64encode(value).decode(),
        "headers": [{"key": name, "value_base64": None if data is None else base64.b64encode(data).decode()}
                    for name, data in decode_headers(row["headers"])],
        "record_time": _when(row["record_time"]), "reason": row["reason"], "detail": row["detail"],
        "attempts": row["attempts"], "set_aside_at": _when(row["set_aside_at"]),
        "replayed_at": _when(row["replayed_at"]),
    }


def _as_line(service: str, row: asyncpg.Record) -> str:
    from arbiter.kit.fields import shown

    key = "" if row["key"] is None else bytes(row["key"]).decode(errors="replace")
    replayed = f"  replayed {row['replayed_at']:%Y-%m-%dT%H:%M:%SZ}" if row["replayed_at"] is not None else ""
    return (f"{service}/{row['id']}  {row['set_aside_at']:%Y-%m-%dT%H:%M:%SZ}  {row['consumer_group']}"
            f"  {row['topic']}[{row['partition']}]@{row['offset']}  key \"{shown(key)}\"  {row['reason']}"
            f" (attempts {row['attempts']}): {shown(row['detail'], 160)}{replayed}")
