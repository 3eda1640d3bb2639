"""`arbiter set-aside list / replay` on a real database and broker: records listed, published again as they were."""

from __future__ import annotations

import asyncio
import json
import uuid

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import ConsumerRecord

from arbiter.kit.metrics import Metrics
from arbiter.kit.poison import Rejected, StoredSetAside
from arbiter_tools.cli.main import main


def record(topic: str, offset: int, key: bytes, value: bytes,
           headers: list[tuple[str, bytes | None]]) -> ConsumerRecord:
    return ConsumerRecord(topic=topic, partition=0, offset=offset, timestamp=1_700_000_000_000, timestamp_type=0,
                          key=key, value=value, checksum=None, serialized_key_size=len(key),
                          serialized_value_size=len(value), headers=headers)


async def cli(capsys, *words: str) -> tuple[int, str, str]:
    """Run `arbiter` in a thread (it runs its own event loop) and return its exit code and output."""
    code = await asyncio.to_thread(main, list(words))
    out, err = capsys.readouterr()
    return code, out, err


async def read_at(bootstrap: str, topic: str, partition: int, offset: int):
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        where = TopicPartition(topic, partition)
        consumer.assign([where])
        consumer.seek(where, offset)
        return await asyncio.wait_for(consumer.getone(), 30)
    finally:
        await consumer.stop()


async def test_records_set_aside_are_listed_and_replayed_with_their_key_value_and_headers(
        kit_pool, infra_env, capsys) -> None:
    schema = await kit_pool.fetchval("SELECT current_schema()")
    tag = uuid.uuid4().hex[:8]
    poison = record("game.abandoned", 7, f"{tag}-1".encode(), b"\xff\xff not a message",
                    [("event-id", b"e-1"), ("odd", None)])
    invalid = record("game.abandoned", 8, f"{tag}-2".encode(), b"\x12\x03a\x00b", [])
    set_aside = StoredSetAside(kit_pool, Metrics("kit_cli"))
    await set_aside.put("kit-cli", [Rejected(poison, "undecodable", "not a GameAbandoned", 0),
                                    Rejected(invalid, "invalid", 'game_id "a\\x00b" holds control characters', 0)])
    database = ["--database-url", infra_env["DATABASE_URL"], "--service", schema]

    code, out, _ = await cli(capsys, "set-aside", "list", "--json", *database)
    assert code == 0
    listed = json.loads(out)
    assert [(r["topic"], r["offset"], r["key"], r["reason"], r["replayed_at"]) for r in listed] == [
        ("game.abandoned", 7, f"{tag}-1", "undecodable", None),
        ("game.abandoned", 8, f"{tag}-2", "invalid", None)]
    first, second = (r["name"] for r in listed)
    assert first.startswith(f"{schema}/")
    code, out, _ = await cli(capsys, "set-aside", "list", *database)
    assert code == 0 and first in out and "undecodable" in out and "holds control characters" in out

    code, out, _ = await cli(capsys, "set-aside", "replay", first, "--json", *database,
                             "--bootstrap", infra_env["KAFKA_BOOTSTRAP_SERVERS"])
    assert code == 0
    [sent] = json.loads(out)
    again = await read_at(infra_env["KAFKA_BOOTSTRAP_SERVERS"], sent["topic"], sent["partition"], sent["offset"])
    assert (again.key, again.value, list(again.headers)) == (poison.key, poison.value, poison.headers)

    code, out, _ = await cli(capsys, "set-aside", "list", "--pending", "--json", *database)
    assert [r["name"] for r in json.loads(out)] == [second]
    # A record replayed once is replayed again only when asked to.
    code, _, err = await cli(capsys, "set-aside", "replay", first, *database,
                             "--bootstrap", infra_env["KAFKA_BOOTSTRAP_SERVERS"])
    assert code == 2 and "--again" in err
    code, out, _ = await cli(capsys, "set-aside", "replay", "--all", *database,
                             "--bootstrap", infra_env["KAFKA_BOOTSTRAP_SERVERS"])
    assert code == 0 and f"replayed {second} to game.abandoned" in out
    code, out, _ = await cli(capsys, "set-aside", "list", "--pending", "--json", *database)
    assert json.loads(out) == []
    code, _, err = await cli(capsys, "set-aside", "replay", f"{schema}/999999", *database,
                             "--bootstrap", infra_env["KAFKA_BOOTSTRAP_SERVERS"])
    assert code == 2 and "no such record" in err
