"""The lag exporter's settings, from environment variables."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from arbiter.kit.settings import KafkaSecuritySettings

# kafka-exporter's own port: a Prometheus job written for it finds ours at the same place.
DEFAULT_PORT = 9308


class LagExporterSettings(KafkaSecuritySettings):
    """Where the broker is, how it is asked, and where the answers are served.

    The group and topic filters are kafka-exporter's (`--group.filter`, `--topic.exclude`...), with
    its meaning: a group or topic is served when the filter matches it and the exclusion does not,
    each a regular expression that matches anywhere in the name unless anchored (`^`, `$`).
    """

    kafka_bootstrap_servers: str = Field(description="Kafka bootstrap servers, host:port[,host:port]")
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    log_level: str = "INFO"
    # How often the broker is asked; each answer is served until the next one. kafka-exporter asks at
    # every scrape; a fixed pace keeps the broker's load the same however many servers scrape.
    lag_exporter_poll_seconds: float = Field(default=5.0, gt=0)
    # A poll that takes longer has failed: nothing is served until one succeeds, so that a stale
    # committed offset never reads as a consumer that stopped.
    lag_exporter_timeout_seconds: float = Field(default=10.0, gt=0)
    # A partition's end is one past its last record. tansu's high watermark is one past the *first*
    # record of the partition's last record batch, so the last batch is read to find the true end
    # (once per batch: the answer is kept while the high watermark stays). Apache Kafka's high
    # watermark is exact: false there saves that read.
    lag_exporter_read_last_batch: bool = True
    lag_exporter_group_filter: str = ".*"
    lag_exporter_group_exclude: str = "^$"
    lag_exporter_topic_filter: str = ".*"
    # Kafka's own topics (__consumer_offsets...) say nothing about our consumers.
    lag_exporter_topic_exclude: str = "^__"

    @field_validator("lag_exporter_group_filter", "lag_exporter_group_exclude", "lag_exporter_topic_filter",
                     "lag_exporter_topic_exclude")
    @classmethod
    def _a_regular_expression(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"not a regular expression: {error}") from None
        return value
