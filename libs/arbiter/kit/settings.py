"""Settings from environment variables, one class per service, failing fast on missing values."""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from arbiter.kit.eventloop import DEFAULT_EVENT_LOOP, EventLoop


# Apache Kafka's default message.max.bytes: the largest record batch a broker takes.
BROKER_MAX_MESSAGE_BYTES = 1_048_588


class KitSettings(BaseSettings):
    """What every service needs: infrastructure addresses, ports, time scale, logging."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", case_sensitive=False)

    kafka_bootstrap_servers: str = Field(description="Kafka bootstrap servers, host:port[,host:port]")
    redis_url: str = Field(description="redis://host:port/db")
    database_url: str = Field(description="postgresql://user@host:port/db")
    grpc_host: str = "127.0.0.1"
    grpc_port: int = Field(ge=0, le=65535)
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(ge=0, le=65535)
    log_level: str = "INFO"
    # Tests and the demo play hours of competition time in minutes; every process
    # of one system must share TIME_SCALE and TIME_ORIGIN to agree on "now".
    time_scale: float = Field(default=1.0, gt=0)
    time_origin: datetime | None = None
    # tansu answers a JoinGroup after half the session timeout: short in tests and dev.
    kafka_session_timeout_ms: int = Field(default=6000, ge=1000)
    kafka_heartbeat_interval_ms: int = Field(default=1000, ge=100)
    kafka_partitions: int = Field(default=4, ge=1)
    # Prepended to every consumer group id: two deployments sharing one broker keep apart. A new
    # prefix means new groups, which read every topic from its beginning.
    kafka_group_prefix: str = Field(default="", pattern=r"^[A-Za-z0-9._-]*$")
    # aiokafka's default, right for Apache Kafka (it answers a fetch as soon as records arrive). tansu
    # answers only when the wait ends, so each hop there waits up to this long (measured: p50 216 ms at
    # 500, 4 ms at 20); the benchmark lowers it. 20 ms for every test coincided with consumer groups that
    # never got their partitions on tansu after a restart (issue 9 note).
    kafka_fetch_max_wait_ms: int = Field(default=500, ge=0, le=5000)
    # Bytes a fetch waits for (at most the wait above) before the broker answers; 1, aiokafka's
    # default, answers as soon as any record is there. A consumer off the result -> next pairing
    # path can wait for more: under steady load it then fetches once per wait instead of about
    # twice, and on tansu every fetch that returns records lists its partition's batches (issue 9).
    kafka_fetch_min_bytes: int = Field(default=1, ge=1, le=16 * 1024 * 1024)
    # How long a batch consumer's poll waits for records. It returns as soon as some arrive, and an
    # empty one is polled again at once (kafka.poll_without_idle_sleep), so this adds nothing to a
    # hop: it sets how often an idle consumer turns. The five services idle (fetch wait 500 ms):
    # 12.1% of a core with FastStream's sleep after each empty 10 ms poll, 9.5% at 20 ms, 5.8% at
    # 100 ms; but at 100 ms, in the benchmark's rate stages, the host of this machine's VM stole a
    # fifth of the CPU time and result -> next pairing doubled (issue 9 note).
    kafka_batch_poll_ms: int = Field(default=20, ge=1, le=1000)
    # Largest record batch a producer builds (aiokafka's default is 16 KiB). A relay pass or a play
    # site's round of results then goes out in a few batches instead of hundreds: fewer produce
    # requests, and on tansu, whose every fetch lists a partition's stored batches, less work for
    # each later fetch. Apache Kafka takes batches up to its message.max.bytes (1 MiB by default).
    kafka_producer_batch_bytes: int = Field(default=512 * 1024, ge=16 * 1024, le=1024 * 1024)
    # The broker's message.max.bytes (Apache Kafka's default). A batch never holds more than the bytes
    # above, except one holding a single larger event: one larger than this the broker would refuse
    # each time, so the outbox relay sets it aside rather than retry it and hold back every later event.
    kafka_max_message_bytes: int = Field(default=BROKER_MAX_MESSAGE_BYTES, ge=16 * 1024)
    db_pool_min: int = Field(default=1, ge=1)
    db_pool_max: int = Field(default=10, ge=1)
    grpc_grace_seconds: float = Field(default=5.0, ge=0)
    # Service tokens (arbiter.kit.auth): keys accepted from callers, `id:secret,...`; empty turns
    # authentication off (development only: the service says so at start).
    auth_keys: SecretStr = SecretStr("")
    # The one `id:secret` this service signs its own outgoing calls with.
    auth_signing_key: SecretStr = SecretStr("")
    # Processed-event ids are kept longer than Kafka keeps the events (7 days by default), then deleted.
    processed_events_retention_hours: float = Field(default=8 * 24, gt=0)
    retention_sweep_seconds: float = Field(default=600.0, gt=0)
    # Per player and method (Create, Join, Leave...): a burst of this many calls, refilled over the window.
    rate_limit_burst: int = Field(default=20, ge=1)
    rate_limit_window_seconds: float = Field(default=60.0, gt=0)
    # Largest request a caller may send; far above any real request of ours.
    grpc_max_request_bytes: int = Field(default=64 * 1024, ge=1024)
    # Allocations between two scans of the youngest objects (arbiter.kit.runtime.tune_garbage_collector);
    # 0 keeps Python's own pace (700).
    gc_young_threshold: int = Field(default=20_000, ge=0)
    # uvloop runs the sockets in C (arbiter.kit.eventloop); `asyncio` is the standard library's loop.
    event_loop: EventLoop = DEFAULT_EVENT_LOOP

    @model_validator(mode="after")
    def _batches_fit_the_broker(self) -> KitSettings:
        if self.kafka_producer_batch_bytes > self.kafka_max_message_bytes:
            raise ValueError(
                f"KAFKA_PRODUCER_BATCH_BYTES ({self.kafka_producer_batch_bytes}) is larger than "
                f"KAFKA_MAX_MESSAGE_BYTES ({self.kafka_max_message_bytes}): the broker would refuse full batches")
        return self


# A Watch stream may fall this many changes behind its client before it is dropped (kit.watch).
DEFAULT_WATCH_MAX_QUEUED = 256
# Live Watch streams of one aggregate that one replica serves at most.
DEFAULT_WATCH_MAX_WATCHERS = 1000


class WatchSettings(KitSettings):
    """The kit's fields plus the limits of Watch streams (arbiter.kit.watch), for services that serve them."""

    # A Watch stream ends after this many real seconds; the client reconnects.
    watch_max_seconds: float = Field(default=3600.0, gt=0)
    watch_max_queued: int = Field(default=DEFAULT_WATCH_MAX_QUEUED, ge=1)
    watch_max_watchers: int = Field(default=DEFAULT_WATCH_MAX_WATCHERS, ge=1)


SettingsT = TypeVar("SettingsT", bound=BaseSettings)


class SettingsError(SystemExit):
    """Raised when the environment does not hold valid settings; exits with a readable message."""


def load_settings(settings_class: type[SettingsT], **overrides: object) -> SettingsT:
    """Read `settings_class` from the environment, or exit naming each missing or bad variable."""
    try:
        return settings_class(**overrides)  # type: ignore[arg-type]
    except ValidationError as error:
        problems = []
        for issue in error.errors():
            name = "_".join(str(part) for part in issue["loc"]).upper()
            # A rule between variables has no single variable to name: its message names them.
            problems.append(f"  {name}: {issue['msg']}" if name else f"  {issue['msg']}")
        raise SettingsError(
            f"{settings_class.__name__}: invalid or missing environment variables:\n" + "\n".join(problems)
        ) from None
