"""Kafka client authentication: KAFKA_SECURITY_PROTOCOL and KAFKA_SASL_* reach every client the kit builds."""

from __future__ import annotations

import pytest

from arbiter.kit.kafka import kafka_security, make_broker, make_outbox_producer
from arbiter.kit.settings import KafkaSecuritySettings, KitSettings, SettingsError, WatchSettings, load_settings

BASE = {"kafka_bootstrap_servers": "kafka:9092", "redis_url": "redis://r:6379/0",
        "database_url": "postgresql://a@b/c", "grpc_port": 0, "metrics_port": 0}


def test_plaintext_adds_nothing_and_scram_adds_the_user() -> None:
    assert kafka_security(KafkaSecuritySettings()) == {}
    scram = KafkaSecuritySettings(kafka_security_protocol="SASL_PLAINTEXT", kafka_sasl_mechanism="SCRAM-SHA-256",
                                  kafka_sasl_username="rating", kafka_sasl_password="s3cret")
    assert kafka_security(scram) == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
                                     "sasl_plain_username": "rating", "sasl_plain_password": "s3cret"}
    assert "ssl_context" in kafka_security(scram.model_copy(update={"kafka_security_protocol": "SASL_SSL"}))


def test_sasl_without_a_user_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in BASE.items():
        monkeypatch.setenv(name.upper(), str(value))
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    with pytest.raises(SettingsError, match="needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"):
        load_settings(KitSettings)


def test_a_watch_server_needs_no_kafka_user_but_its_service_does(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in BASE.items():
        monkeypatch.setenv(name.upper(), str(value))
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("WATCH_ONLY", "true")
    watch_server = load_settings(WatchSettings)
    assert watch_server.watch_only and not watch_server.speaks_kafka
    monkeypatch.setenv("WATCH_ONLY", "false")
    with pytest.raises(SettingsError, match="needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"):
        load_settings(WatchSettings)


async def test_the_broker_and_the_outbox_producer_authenticate() -> None:
    settings = KitSettings(**BASE, kafka_security_protocol="SASL_PLAINTEXT", kafka_sasl_username="pairing",
                           kafka_sasl_password="s3cret")
    producer = make_outbox_producer(settings, "pairing")
    assert producer.client._security_protocol == "SASL_PLAINTEXT"
    assert (producer.client._sasl_mechanism, producer.client._sasl_plain_username) == ("SCRAM-SHA-512", "pairing")
    consumers = make_broker(settings, "pairing").config.broker_config.builder.keywords
    assert {key: consumers[key] for key in ("security_protocol", "sasl_mechanism", "sasl_plain_username",
                                            "sasl_plain_password")} == kafka_security(settings)
