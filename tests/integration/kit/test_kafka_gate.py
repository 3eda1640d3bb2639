"""The embedded broker's Kafka gate (callers get only what they need): real aiokafka clients
through the gate to a real tansu advertising the gate's address.

Clients authenticate with SASL/SCRAM-SHA-512 as the services do in production; an anonymous
client, an unknown user and a wrong password are refused; each user writes only the topics
`arbiter.kit.events.PRODUCERS` gives it (a made-up GameFinished from the rating service is
refused, the play site's is written and read back); calls that delete data are the admins'.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError, KafkaError, TopicAuthorizationFailedError

from arbiter.kit import events
from arbiter_tools.devstack.infra import start_kafka_gate, start_tansu
from arbiter_tools.devstack.kafkagate import policy_for
from arbiter_tools.devstack.processes import free_port

PASSWORDS = {"play-site": "site-secret", "rating": "rating-secret", "operator": "operator-secret"}


@dataclass
class GatedBroker:
    bootstrap: str

    def security(self, user: str, password: str | None = None) -> dict[str, str]:
        """aiokafka's options for `user` (its own password unless another is given)."""
        return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                "sasl_plain_username": user, "sasl_plain_password": password or PASSWORDS[user]}


@pytest.fixture(scope="module")
def gated(tmp_path_factory) -> Iterator[GatedBroker]:
    where = tmp_path_factory.mktemp("gate")
    broker_port, gate_port = free_port(), free_port()
    users = where / "kafka-users.json"
    policy_for(PASSWORDS, events.PRODUCERS, admins=("operator",)).write(users)
    broker = start_tansu(broker_port, where / "tansu.log", advertised=f"127.0.0.1:{gate_port}")
    gate = start_kafka_gate(gate_port, broker_port, users, where / "gate.log")
    try:
        yield GatedBroker(f"127.0.0.1:{gate_port}")
    finally:
        gate.stop(signal.SIGINT)
        broker.stop(signal.SIGINT)


@pytest.fixture
async def topic(gated: GatedBroker) -> AsyncIterator[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=gated.bootstrap, **gated.security("operator"))
    await admin.start()
    try:
        await admin.create_topics([NewTopic(events.GAME_FINISHED.name, 2, 1)])
    except KafkaError:
        pass  # made by an earlier test of this module
    finally:
        await admin.close()
    yield events.GAME_FINISHED.name


async def _produce(bootstrap: str, topic: str, value: bytes, **security: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000, **security)
    try:
        await asyncio.wait_for(producer.start(), 20)
        await asyncio.wait_for(producer.send_and_wait(topic, value, key=b"g-1"), 20)
    finally:
        await asyncio.wait_for(producer.stop(), 10)


async def test_the_play_site_writes_its_topic_and_an_authenticated_reader_reads_it(gated, topic) -> None:
    await _produce(gated.bootstrap, topic, b"finished by the site", **gated.security("play-site"))
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=gated.bootstrap, auto_offset_reset="earliest",
                                group_id="gate-readers", **gated.security("rating"))
    await consumer.start()
    try:
        seen: list[bytes] = []
        async with asyncio.timeout(30):
            while b"finished by the site" not in seen:
                batch = await consumer.getmany(timeout_ms=1000)
                seen += [record.value for records in batch.values() for record in records]
        await consumer.commit()
    finally:
        await consumer.stop()


async def test_a_user_may_not_write_a_topic_it_does_not_own(gated, topic) -> None:
    with pytest.raises(TopicAuthorizationFailedError):
        await _produce(gated.bootstrap, topic, b"made-up result", **gated.security("rating"))


@pytest.mark.parametrize("security", [
    {},  # anonymous
    {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
     "sasl_plain_username": "play-site", "sasl_plain_password": "guessed"},
    {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
     "sasl_plain_username": "nobody", "sasl_plain_password": "site-secret"},
    {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
     "sasl_plain_username": "play-site", "sasl_plain_password": "site-secret"},
], ids=["anonymous", "wrong-password", "unknown-user", "other-mechanism"])
async def test_a_client_that_does_not_authenticate_writes_nothing(gated, topic, security) -> None:
    with pytest.raises(KafkaConnectionError, match="Unable to bootstrap"):
        await _produce(gated.bootstrap, topic, b"made-up result", **security)


async def test_deleting_topics_is_the_operators_alone(gated, topic) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=gated.bootstrap, request_timeout_ms=5000,
                                **gated.security("play-site"))
    await admin.start()
    try:
        with pytest.raises((KafkaError, TimeoutError)):
            await asyncio.wait_for(admin.delete_topics([topic]), 20)
    finally:
        await admin.close()
    reader = AIOKafkaConsumer(bootstrap_servers=gated.bootstrap, **gated.security("operator"))
    await reader.start()
    try:
        assert topic in await reader.topics()
    finally:
        await reader.stop()
