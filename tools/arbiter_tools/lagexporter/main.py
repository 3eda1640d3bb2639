"""Composition root of the lag exporter: ask the broker every poll, serve the last answer on /metrics."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

from aiokafka.errors import KafkaError
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from arbiter.kit.eventloop import DEFAULT_EVENT_LOOP, run_stoppable
from arbiter.kit.logs import configure_logging
from arbiter.kit.settings import load_settings
from arbiter_tools.lagexporter.broker import BrokerReader
from arbiter_tools.lagexporter.settings import LagExporterSettings
from arbiter_tools.lagexporter.view import BrokerView, series

log = logging.getLogger(__name__)
NAME = "lag-exporter"


class BrokerViewCollector(Collector):
    """Serves the last successful look at the broker; nothing at all while the broker does not answer."""

    def __init__(self) -> None:
        self.view: BrokerView | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """kafka-exporter's families, with the samples of the last look."""
        for family in series(self.view):
            gauge = GaugeMetricFamily(family.name, family.help, labels=list(family.labels))
            for labels, value in family.samples:
                gauge.add_metric(list(labels), value)
            yield gauge


def registry_of(collector: BrokerViewCollector) -> CollectorRegistry:
    """The registry /metrics serves: the broker's view and this process's own resources."""
    registry = CollectorRegistry()
    registry.register(collector)
    ProcessCollector(registry=registry)
    return registry


async def poll(settings: LagExporterSettings, collector: BrokerViewCollector) -> None:
    """Ask the broker every LAG_EXPORTER_POLL_SECONDS until cancelled; say when it stops and starts answering."""
    reader = BrokerReader(settings)
    answering: bool | None = None
    try:
        while True:
            try:
                collector.view = await asyncio.wait_for(reader.read(), settings.lag_exporter_timeout_seconds)
            except (KafkaError, OSError, TimeoutError) as error:
                collector.view = None
                await reader.forget()
                if answering is not False:
                    log.warning("the broker does not answer; no lag is served until it does",
                                extra={"error": repr(error), "bootstrap": settings.kafka_bootstrap_servers})
                answering = False
            else:
                if answering is not True:
                    log.info("reading consumer lag from the broker", extra={
                        "bootstrap": settings.kafka_bootstrap_servers, "groups": len(collector.view.groups),
                        "partitions": len(collector.view.partitions)})
                answering = True
            await asyncio.sleep(settings.lag_exporter_poll_seconds)
    finally:
        await reader.stop()


def main() -> int:
    """Read the settings, serve /metrics and poll the broker until SIGINT or SIGTERM."""
    settings = load_settings(LagExporterSettings)
    configure_logging(NAME, settings.log_level)
    # The client would log each failed connection at every poll: the exporter says once itself when
    # the broker stops answering, and when it answers again.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    collector = BrokerViewCollector()
    server, thread = start_http_server(settings.metrics_port, settings.metrics_host, registry_of(collector))
    log.info("serving", extra={"metrics": f"http://{settings.metrics_host}:{server.server_port}/metrics"})
    try:
        run_stoppable(DEFAULT_EVENT_LOOP, lambda: poll(settings, collector))
    except KeyboardInterrupt:
        log.info("stopped")
    finally:
        server.shutdown()
        thread.join(timeout=2)
    return 0
