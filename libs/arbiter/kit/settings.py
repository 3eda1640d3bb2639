"""Settings from environment variables, one class per service, failing fast on missing values."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypeVar

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from arbiter.kit.eventloop import DEFAULT_EVENT_LOOP, EventLoop
from arbiter.kit.logs import DEFAULT_REPEAT_SECONDS
from arbiter.kit.poison import MAX_PAUSE_SECONDS, retry_seconds

# Longest a consumer pauses between the attempts of one batch, in all (see `_attempts_fit_the_poll_interval`).
MAX_RETRY_SECONDS = 120.0
# Apache Kafka's default message.max.bytes: the largest record batch a broker takes.
BROKER_MAX_MESSAGE_BYTES = 1_048_588


class KafkaSecuritySettings(BaseSettings):
    """How a Kafka client authenticates (arbiter.kit.kafka.kafka_security); alone, for tools that need no more."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", case_sensitive=False)

    # PLAINTEXT: no authentication (the embedded broker). SASL_PLAINTEXT / SASL_SSL: SCRAM with the
    # user below, one per service and one for the play site, so that the broker's ACLs can let each
    # produce only its own topics.
    kafka_security_protocol: Literal["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_sasl_mechanism: Literal["SCRAM-SHA-256", "SCRAM-SHA-512"] = "SCRAM-SHA-512"
    kafka_sasl_username: str = ""
    kafka_sasl_password: SecretStr = SecretStr("")

    @property
    def speaks_kafka(self) -> bool:
        """Whether this process connects to the broker (a watch server never does)."""
        return True

    @model_validator(mode="after")
    def _sasl_has_a_user(self) -> KafkaSecuritySettings:
        if self.speaks_kafka and self.kafka_security_protocol != "PLAINTEXT" and not (
                self.kafka_sasl_username and self.kafka_sasl_password.get_secret_value()):
            raise ValueError(f"KAFKA_SECURITY_PROTOCOL={self.kafka_security_protocol} needs KAFKA_SASL_USERNAME and "
                             "KAFKA_SASL_PASSWORD")
        return self


class KitSettings(KafkaSecuritySettings):
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
    # A warning or error of one kind repeated within this many seconds is written once, the next one
    # carrying how many were held back (arbiter.kit.logs.RepeatFilter); 0 writes every one.
    log_repeat_seconds: float = Field(default=DEFAULT_REPEAT_SECONDS, ge=0)
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
    # answers only when the wait ends, so each hop there waits up to this long; the benchmark lowers it
    # (tests/bench/bench_system.py). A short wait for every test coincided with consumer groups that
    # never got their partitions on tansu after a restart.
    kafka_fetch_max_wait_ms: int = Field(default=500, ge=0, le=5000)
    # Bytes a fetch waits for (at most the wait above) before the broker answers; 1, aiokafka's
    # default, answers as soon as any record is there. A consumer off the result -> next pairing
    # path can wait for more: under steady load it then fetches once per wait instead of about
    # twice, and on tansu every fetch that returns records lists its partition's batches.
    kafka_fetch_min_bytes: int = Field(default=1, ge=1, le=16 * 1024 * 1024)
    # How long a batch consumer's poll waits for records. It returns as soon as some arrive, and an
    # empty one is polled again at once (kafka.poll_without_idle_sleep), so this adds nothing to a
    # hop: it sets how often an idle consumer turns. Longer saves idle CPU, but under load the longer
    # poll slowed result -> next pairing (tests/bench/bench_idle_services.py, bench_system.py; figures
    # in docs/performance.md).
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
    # A handler that raises on a batch for another reason than an outage (which is waited out) is
    # tried this many times, the pauses doubling from the backoff, before the events that fail are
    # found and set aside (arbiter.kit.poison). Records that do not parse or break the field rules are
    # set aside at once.
    consumer_max_attempts: int = Field(default=5, ge=1, le=20)
    consumer_retry_backoff_seconds: float = Field(default=0.5, gt=0, le=MAX_PAUSE_SECONDS)
    db_pool_min: int = Field(default=1, ge=1)
    db_pool_max: int = Field(default=10, ge=1)
    # This process's name among the service's replicas: in its PostgreSQL connections' application_name
    # (`arbiter-<service>/<replica>`, so pg_stat_activity counts each replica's) and, for the arena, in
    # its leases; empty: the service's name alone, and a random lease holder per start.
    replica_id: str = ""
    # Redis connections, a pool per kind of user (arbiter.kit.redisclient.RedisPools): the gRPC calls
    # have theirs, the consumers, timers and background loops theirs, so that neither can take the
    # other's (a service may add pools of its own); Watch streams hold none of them (arbiter.kit.watch).
    # A command finding every connection of its pool in use waits up to REDIS_POOL_WAIT_SECONDS.
    redis_request_connections: int = Field(default=50, ge=1)
    redis_background_connections: int = Field(default=20, ge=1)
    redis_pool_wait_seconds: float = Field(default=5.0, gt=0)
    grpc_grace_seconds: float = Field(default=5.0, ge=0)
    # Service tokens (arbiter.kit.auth): keys accepted from callers, `id:secret,...`; empty turns
    # authentication off (development only: the service says so at start).
    auth_keys: SecretStr = SecretStr("")
    # The one `id:secret` this service signs its own outgoing calls with.
    auth_signing_key: SecretStr = SecretStr("")
    # Processed-event ids are kept longer than Kafka keeps the events (7 days by default), then deleted.
    processed_events_retention_hours: float = Field(default=8 * 24, gt=0)
    # Published outbox events are kept this long so that `arbiter republish` can send them again after a
    # broker lost them (README.md, "Losing the broker"); 0 deletes each one once Kafka has it.
    outbox_keep_published_hours: float = Field(default=24.0, ge=0)
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
    # Readiness (arbiter.kit.health): every this many seconds the broker, PostgreSQL and Redis are
    # asked once each, and a dependency that has not answered within the timeout makes the replica
    # NOT_SERVING until it answers again.
    readiness_check_seconds: float = Field(default=5.0, gt=0)
    readiness_timeout_seconds: float = Field(default=2.0, gt=0)
    # The source revision this process runs (arbiter_build_info): the image build sets it, and so
    # does the embedded stack from the checkout it starts.
    arbiter_revision: str = "unknown"

    @model_validator(mode="after")
    def _attempts_fit_the_poll_interval(self) -> KitSettings:
        # The broker takes a consumer that polls nothing for aiokafka's max_poll_interval (300 s) for
        # dead: a batch's pauses must end well before, whatever follows them.
        waited = retry_seconds(self.consumer_max_attempts, self.consumer_retry_backoff_seconds)
        if waited > MAX_RETRY_SECONDS:
            raise ValueError(
                f"CONSUMER_MAX_ATTEMPTS ({self.consumer_max_attempts}) with CONSUMER_RETRY_BACKOFF_SECONDS "
                f"({self.consumer_retry_backoff_seconds}) pauses {waited:.0f} s per batch;"
                f" at most {MAX_RETRY_SECONDS:.0f}")
        return self

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
# Live Watch streams of all aggregates that one replica serves at most.
DEFAULT_WATCH_MAX_STREAMS = 2000


class WatchSettings(KitSettings):
    """The kit's fields plus the limits of Watch streams (arbiter.kit.watch), for services that serve them."""

    # A Watch stream ends after this many real seconds; the client reconnects.
    watch_max_seconds: float = Field(default=3600.0, gt=0)
    watch_max_queued: int = Field(default=DEFAULT_WATCH_MAX_QUEUED, ge=1)
    watch_max_watchers: int = Field(default=DEFAULT_WATCH_MAX_WATCHERS, ge=1)
    watch_max_streams: int = Field(default=DEFAULT_WATCH_MAX_STREAMS, ge=1)
    # A watch server: the process serves the Watch streams only (every other call is refused with
    # FAILED_PRECONDITION) and runs no consumer and no background work, so that the crowds watching
    # are sent their changes by processes, and cores, other than the ones answering the calls.
    watch_only: bool = False

    @property
    def speaks_kafka(self) -> bool:
        """Whether this process connects to the broker: a watch server needs no Kafka user."""
        return not self.watch_only


SettingsT = TypeVar("SettingsT", bound=BaseSettings)


class SettingsError(SystemExit):
    """Raised when the environment does not hold valid settings; exits with a readable message."""


def load_settings(settings_class: type[SettingsT], **overrides: object) -> SettingsT:
    """Read `settings_class` from the environment, or exit naming each missing or bad variable."""
    try:
        return settings_class(**overrides)  # type: ignore[arg-type]  # pydantic-settings takes any field by keyword
    except ValidationError as error:
        problems = []
        for issue in error.errors():
            name = "_".join(str(part) for part in issue["loc"]).upper()
            # A rule between variables has no single variable to name: its message names them.
            problems.append(f"  {name}: {issue['msg']}" if name else f"  {issue['msg']}")
        raise SettingsError(
            f"{settings_class.__name__}: invalid or missing environment variables:\n" + "\n".join(problems)
        ) from None
