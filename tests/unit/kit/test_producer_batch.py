"""The producers' largest record batch follows KAFKA_PRODUCER_BATCH_BYTES, within what Apache Kafka accepts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from arbiter.kit.kafka import make_outbox_producer, make_producer
from arbiter.kit.settings import BROKER_MAX_MESSAGE_BYTES, KitSettings, SettingsError, load_settings


def _settings(**overrides: object) -> KitSettings:
    return KitSettings(kafka_bootstrap_servers="127.0.0.1:1", redis_url="redis://127.0.0.1:1",
                       database_url="postgresql://127.0.0.1:1/x", grpc_port=0, metrics_port=0,
                       **overrides)


async def test_producers_build_batches_of_the_configured_size() -> None:
    default, small = _settings(), _settings(kafka_producer_batch_bytes=64 * 1024)
    assert default.kafka_producer_batch_bytes == 512 * 1024
    for settings in (default, small):
        for producer in (make_producer(settings, "test"), make_outbox_producer(settings, "test")):
            assert producer._message_accumulator._batch_size == settings.kafka_producer_batch_bytes


@pytest.mark.parametrize("size", [16 * 1024 - 1, 1024 * 1024 + 1])
def test_a_batch_size_apache_kafka_would_refuse_or_aiokafka_default_undercuts_is_refused(size: int) -> None:
    with pytest.raises(ValidationError, match="kafka_producer_batch_bytes"):
        _settings(kafka_producer_batch_bytes=size)


def test_batches_larger_than_the_broker_takes_are_refused_naming_both_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _settings().kafka_max_message_bytes == BROKER_MAX_MESSAGE_BYTES
    assert _settings(kafka_max_message_bytes=64 * 1024, kafka_producer_batch_bytes=64 * 1024)
    for name, value in {"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "REDIS_URL": "redis://127.0.0.1:1",
                        "DATABASE_URL": "postgresql://127.0.0.1:1/x", "GRPC_PORT": "0", "METRICS_PORT": "0",
                        "KAFKA_PRODUCER_BATCH_BYTES": str(512 * 1024), "KAFKA_MAX_MESSAGE_BYTES": "100000"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as refused:
        load_settings(KitSettings)
    message = str(refused.value)
    assert "KAFKA_PRODUCER_BATCH_BYTES (524288) is larger than KAFKA_MAX_MESSAGE_BYTES (100000)" in message
    assert "\n  : " not in message  # no empty variable name before a rule between two variables
