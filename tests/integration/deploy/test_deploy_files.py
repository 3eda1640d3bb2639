"""The deployment files agree with the code: compose, Dockerfile, Prometheus, Grafana, Kubernetes.

- docker-compose.yml passes `docker-compose config -q` (or `docker compose`), and each
  service's environment is valid for its settings class;
- every Grafana dashboard has the dashboard shape, and every metric its PromQL names is
  exported by the services (METRIC_PROVIDERS below: add a service's own registry there);
- every Kubernetes manifest parses and has its required fields, probes and env sources;
- the Prometheus config scrapes all five services on their metrics ports and loads the alert
  rules, which pass `promtool test rules` (a case where each alert fires and one where it does
  not), name only metrics that exist, link their runbook section, and are the same rules as
  the Kubernetes PrometheusRule.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from google.protobuf import descriptor_pool
from prometheus_client import CollectorRegistry

from arbiter.kit.auth import parse_keys, signing_key
from arbiter.kit.health import LIVENESS, READINESS
from arbiter.kit.kafka import make_broker
from arbiter.kit.metrics import Metrics
from arbiter.kit.retention import RetentionSweeper
from arbiter.kit.settings import KitSettings, load_settings
from arbiter_tools.devstack.stack import SERVICE_GROUPS
from arbiter_tools.lagexporter.main import BrokerViewCollector, registry_of
from arbiter_tools.lagexporter.view import BrokerView, GroupState, PartitionOffsets
from services.arena.metrics import ArenaMetrics
from services.clock.metrics import ClockMetrics
from services.openings.metrics import OpeningsMetrics
from services.pairing.metrics import PairingMetrics
from services.rating.metrics import RatingMetrics

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
ALERT_RULES = DEPLOY / "prometheus" / "alerts.yml"
ALERT_TESTS = DEPLOY / "prometheus" / "alerts_test.yml"
ALERTMANAGER_CONFIG = DEPLOY / "alertmanager" / "alertmanager.yml"
RUNBOOK = DEPLOY / "RUNBOOK.md"
GRAFANA = DEPLOY / "grafana"
DASHBOARDS = GRAFANA / "dashboards"
K8S = DEPLOY / "k8s"

SERVICES = ("pairing", "clock", "arena", "rating", "openings")
# The watch servers (WATCH_ONLY) by name: the service they serve the Watch streams of, their gRPC and metrics ports.
WATCH_SERVERS = {"pairing-watch": ("pairing", 50061, 9111), "arena-watch": ("arena", 50063, 9113)}
INFRASTRUCTURE = ("kafka", "redis", "postgres", "prometheus", "alertmanager", "grafana", "kafka-exporter")
# Who calls whom over gRPC (DESIGN.md): compose starts the callees first.
CALLS = {"pairing": ("rating", "openings", "clock"), "arena": ("rating",)}
REQUIRED_ENV = (
    "KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL", "DATABASE_URL", "GRPC_HOST", "GRPC_PORT", "METRICS_HOST", "METRICS_PORT",
    "AUTH_KEYS", "AUTH_SIGNING_KEY", *(f"{name.upper()}_GRPC_ADDR" for name in SERVICES),
)
# Settings that are credentials: in Kubernetes they come from a Secret, never from the ConfigMap or the manifest.
SECRET_ENV = {"DATABASE_URL", "AUTH_KEYS", "AUTH_SIGNING_KEY", "KAFKA_SASL_PASSWORD"}


# ---------------------------------------------------------------------------
# Metric providers: the registries whose names the dashboards may use. Each returns a
# CollectorRegistry holding metrics exactly as a running service registers them: the kit's,
# then each service's own series registered by the service's own function.
# ---------------------------------------------------------------------------


def kit_metrics() -> CollectorRegistry:
    """The series every service exports: the kit's, FastStream's Kafka middleware's and the retention sweeper's."""
    metrics = Metrics("x")
    settings = KitSettings(
        kafka_bootstrap_servers="127.0.0.1:9092", redis_url="redis://127.0.0.1:6379/0",
        database_url="postgresql://x@127.0.0.1/x", grpc_port=0, metrics_port=0,
    )
    make_broker(settings, "x")  # builds the client only; nothing connects
    # As ServiceRuntime makes it in every service; the pool is only used by a sweep, and none runs here.
    no_pool: Any = None
    RetentionSweeper(no_pool, metrics, timedelta(hours=settings.processed_events_retention_hours),
                     settings.retention_sweep_seconds)
    return metrics.registry


def service_metrics(register: Callable[[Metrics], object], service: str) -> Callable[[], CollectorRegistry]:
    """A provider: a fresh registry with the service's own series, registered by the service's own function."""
    def provide() -> CollectorRegistry:
        metrics = Metrics(service)
        register(metrics)
        return metrics.registry

    return provide


def lag_exporter_metrics() -> CollectorRegistry:
    """The lag exporter's series (kafka-exporter's names), as it serves a group that has committed on a topic."""
    collector = BrokerViewCollector()
    collector.view = BrokerView(1, {("game.finished", 0): PartitionOffsets(0, 10)},
                                (GroupState("rating", 1, {("game.finished", 0): 7}),))
    return registry_of(collector)


METRIC_PROVIDERS: dict[str, Callable[[], CollectorRegistry]] = {
    "kit": kit_metrics,
    # The broker's view of the consumer groups: kafka-exporter in compose and Kubernetes, the
    # embedded stack's lag exporter under `arbiter up`; the same names and labels.
    "lag-exporter": lag_exporter_metrics,
    "pairing": service_metrics(PairingMetrics.create, "pairing"),
    "clock": service_metrics(ClockMetrics.create, "clock"),
    "arena": service_metrics(ArenaMetrics.create, "arena"),
    "rating": service_metrics(RatingMetrics.create, "rating"),
    "openings": service_metrics(OpeningsMetrics.create, "openings"),
}

# Series Prometheus adds to every scrape; the dashboards may use them too.
PROMETHEUS_SERIES = {"up": set(), "scrape_duration_seconds": set(), "scrape_samples_scraped": set()}
TARGET_LABELS = {"job", "instance"}

_SUFFIXES_BY_TYPE = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
    "stateset": ("",),
    "unknown": ("",),
}


@dataclass
class Exported:
    """Sample names the services export, each with its label names; and the family names."""

    labels: dict[str, set[str]] = field(default_factory=dict)
    families: dict[str, set[str]] = field(default_factory=dict)  # provider -> family names


def _label_names(registry: CollectorRegistry) -> dict[str, set[str]]:
    # prometheus_client keeps each collector's label names on the collector itself.
    names: dict[str, set[str]] = {}
    for collector in set(registry._collector_to_names):
        labels = set(getattr(collector, "_labelnames", ()))
        for name in registry._collector_to_names[collector]:
            names[name] = labels
    return names


@cache
def exported() -> Exported:
    """Every sample name (with suffixes by metric type) of every provider's registry."""
    result = Exported()
    for provider, make_registry in METRIC_PROVIDERS.items():
        registry = make_registry()
        label_names = _label_names(registry)
        result.families[provider] = set()
        for family in registry.collect():
            result.families[provider].add(family.name)
            for suffix in _SUFFIXES_BY_TYPE.get(family.type, ("",)):
                sample = family.name + suffix
                labels = set(label_names.get(sample, label_names.get(family.name, set())))
                if suffix == "_bucket":
                    labels.add("le")
                if family.type == "summary" and suffix == "":
                    labels.add("quantile")
                result.labels.setdefault(sample, set()).update(labels)
            for sample in family.samples:  # series already observed, if any
                result.labels.setdefault(sample.name, set()).update(sample.labels)
    for name, labels in PROMETHEUS_SERIES.items():
        result.labels.setdefault(name, set()).update(labels)
    return result


# ---------------------------------------------------------------------------
# A small PromQL reader: enough to list metric names, functions and label names.
# ---------------------------------------------------------------------------

PROMQL_FUNCTIONS = {
    # aggregations
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
    "quantile", "limitk", "limit_ratio",
    # functions
    "abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "day_of_month",
    "day_of_week", "day_of_year", "days_in_month", "delta", "deriv", "exp", "floor", "histogram_avg",
    "histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev", "histogram_stdvar",
    "histogram_sum", "holt_winters", "double_exponential_smoothing", "hour", "idelta", "increase", "info",
    "irate", "label_join", "label_replace", "ln", "log2", "log10", "minute", "month", "predict_linear", "rate",
    "resets", "round", "scalar", "sgn", "sort", "sort_desc", "sort_by_label", "sort_by_label_desc", "sqrt",
    "time", "timestamp", "vector", "year", "avg_over_time", "min_over_time", "max_over_time", "sum_over_time",
    "count_over_time", "quantile_over_time", "stddev_over_time", "stdvar_over_time", "last_over_time",
    "present_over_time", "mad_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh",
    "sin", "sinh", "tan", "tanh", "deg", "rad", "pi",
}
PROMQL_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless",
    "atan2", "inf", "nan", "start", "end",
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GRAFANA_VARIABLE = re.compile(r"\$\{?\w+(?::\w+)?\}?")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_SELECTOR = re.compile(r"\{([^{}]*)\}")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*\"(?:[^\"\\]|\\.)*\"")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_IDENTIFIER = re.compile(r"(?<![\w.:])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?")


@dataclass(frozen=True)
class PromQL:
    """What one expression refers to."""

    metrics: frozenset[str]
    functions: frozenset[str]
    labels: frozenset[str]
    selectors: tuple[tuple[str, dict[str, tuple[str, str]]], ...]  # (metric or "", {label: (op, value)})


def read_promql(expr: str) -> PromQL:
    """Metric names, functions, label names and selectors of `expr`; raises on unbalanced brackets."""
    selectors = []
    for match in re.finditer(r"([A-Za-z_:][A-Za-z0-9_:]*)?\s*\{((?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*)\}", expr):
        matchers = {m.group(1): (m.group(2), json.loads(m.group(0)[m.end(2) - m.start(0):].strip()))
                    for m in _MATCHER.finditer(match.group(2))}
        selectors.append((match.group(1) or "", matchers))
    text = _STRING.sub('""', expr)
    stack = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for char in text:
        if char in "([{":
            stack.append(char)
        elif char in pairs and (not stack or stack.pop() != pairs[char]):
            raise ValueError(f"unbalanced {char!r} in {expr!r}")
    if stack:
        raise ValueError(f"unclosed {stack[-1]!r} in {expr!r}")
    labels: set[str] = set()
    for match in _SELECTOR.finditer(text):
        labels.update(m.group(1) for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", match.group(1)))
    text = _SELECTOR.sub(" ", text)
    text = _GRAFANA_VARIABLE.sub("0", text)
    while _RANGE.search(text):
        text = _RANGE.sub(" ", text)
    for match in _GROUPING.finditer(text):
        labels.update(label.strip() for label in match.group(2).split(",") if label.strip())
    text = _GROUPING.sub(" ", text)  # `sum by (x) (...)` reads as a call of sum
    metrics, functions = set(), set()
    for match in _IDENTIFIER.finditer(text):
        name, call = match.group(1), match.group(2)
        if name.lower() in PROMQL_KEYWORDS:
            continue  # `a or (b)` is no call of `or`
        if call:
            functions.add(name)
        else:
            metrics.add(name)
    return PromQL(frozenset(metrics), frozenset(functions), frozenset(labels), tuple(selectors))


@pytest.mark.parametrize(("expr", "metrics", "functions", "labels"), [
    ('sum by (method) (rate(arbiter_grpc_requests_total{service="a", code!="OK"}[$__rate_interval]))',
     {"arbiter_grpc_requests_total"}, {"sum", "rate"}, {"method", "service", "code"}),
    ("histogram_quantile(0.99, sum(rate(x_bucket{a=~\"$v\"}[5m])) by (le))", {"x_bucket"},
     {"histogram_quantile", "sum", "rate"}, {"a", "le"}),
    ("a_total / on (instance) group_left (job) b offset 5m > bool 1e3", {"a_total", "b"}, set(),
     {"instance", "job"}),
    ('max_over_time(up{job="x"}[1h:5m])', {"up"}, {"max_over_time"}, {"job"}),
    ("(a > 0 unless on (s) (b > 0 or c)) or absent(d)", {"a", "b", "c", "d"}, {"absent"}, {"s"}),
])
def test_the_promql_reader_finds_names(expr: str, metrics: set[str], functions: set[str], labels: set[str]) -> None:
    """The checks below depend on this reader: it must see every name and no more."""
    read = read_promql(expr)
    assert (set(read.metrics), set(read.functions), set(read.labels)) == (metrics, functions, labels)


def test_the_promql_reader_rejects_unbalanced_brackets() -> None:
    with pytest.raises(ValueError, match="unclosed"):
        read_promql("sum(rate(x[5m])")


# ---------------------------------------------------------------------------
# Helpers: settings classes, YAML, compose interpolation
# ---------------------------------------------------------------------------


def settings_class(service: str) -> type[KitSettings]:
    """The service's settings class (the KitSettings subclass in services/<service>/settings.py)."""
    module = importlib.import_module(f"services.{service}.settings")
    classes = [value for value in vars(module).values()
               if isinstance(value, type) and issubclass(value, KitSettings) and value.__module__ == module.__name__]
    assert len(classes) == 1, f"services/{service}/settings.py should define one KitSettings subclass"
    return classes[0]


def ports(service: str) -> tuple[int, int]:
    """(gRPC port, metrics port): the defaults of the service's settings."""
    fields = settings_class(service).model_fields
    return fields["grpc_port"].default, fields["metrics_port"].default


def validate_env(service: str, env: Mapping[str, str], monkeypatch: pytest.MonkeyPatch) -> KitSettings:
    """Load the service's settings from exactly `env` (the machine's variables hidden)."""
    cls = settings_class(service)
    for name in cls.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    for name in REQUIRED_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, str(value))
    return load_settings(cls)


def assert_authentication_on(where: str, settings: KitSettings) -> None:
    """Service tokens are required, and the key the services sign their calls with is one they accept."""
    keys = parse_keys(settings.auth_keys.get_secret_value())
    own = signing_key(settings.auth_signing_key.get_secret_value())
    assert keys, f"{where}: AUTH_KEYS is empty, which turns authentication off"
    assert own is not None and keys.get(own.key_id) == own, f"{where}: AUTH_SIGNING_KEY is not one of AUTH_KEYS"


def assert_kafka_user(where: str, service: str, settings: KitSettings) -> None:
    """The service authenticates to Kafka with SCRAM as the user named after it."""
    assert settings.kafka_security_protocol == "SASL_PLAINTEXT", f"{where}: Kafka without authentication"
    assert settings.kafka_sasl_mechanism == "SCRAM-SHA-512"
    assert settings.kafka_sasl_username == service, f"{where}: the Kafka user must be the service's own"


def load_yaml(path: Path) -> Any:
    with path.open() as stream:
        return yaml.safe_load(stream)


def load_yaml_documents(path: Path) -> list[Any]:
    with path.open() as stream:
        return [document for document in yaml.safe_load_all(stream) if document is not None]


_INTERPOLATION = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


def interpolate(value: Any) -> Any:
    """Compose's `${NAME:-default}`, taking the default (the file as shipped)."""
    if isinstance(value, str):
        return _INTERPOLATION.sub(lambda m: m.group(2) or "", value)
    if isinstance(value, list):
        return [interpolate(item) for item in value]
    if isinstance(value, dict):
        return {key: interpolate(item) for key, item in value.items()}
    return value


@cache
def compose() -> dict[str, Any]:
    """docker-compose.yml with anchors merged and defaults interpolated."""
    return interpolate(load_yaml(COMPOSE_FILE))


def compose_env(service: str) -> dict[str, str]:
    environment = compose()["services"][service].get("environment", {})
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {key: "" if value is None else str(value) for key, value in environment.items()}


def compose_command() -> list[str]:
    """`docker-compose` or `docker compose`; fails (never skips) when neither is installed."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            return ["docker", "compose"]
    pytest.fail(
        "neither `docker-compose` nor `docker compose` is installed: `make tools` installs it "
        "(Debian's docker-compose; as root, or `sudo apt-get install -y docker-compose`)"
    )


def volume_mounts(service: str) -> dict[str, str]:
    """Host path (relative to the repo) -> container path, for bind mounts of a compose service."""
    mounts = {}
    for volume in compose()["services"][service].get("volumes", []):
        if isinstance(volume, str) and volume.startswith("./"):
            host, container = volume.split(":")[:2]
            mounts[host[2:].rstrip("/")] = container
    return mounts


# ---------------------------------------------------------------------------
# docker-compose.yml
# ---------------------------------------------------------------------------


def test_compose_config_is_valid() -> None:
    """`docker-compose config -q` (1.29 or v2) accepts the file."""
    command = [*compose_command(), "-f", str(COMPOSE_FILE), "config", "-q"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"


def test_compose_runs_the_infrastructure_and_the_five_services() -> None:
    services = compose()["services"]
    assert set(services) >= {*INFRASTRUCTURE, *SERVICES}
    kafka = compose_env("kafka")
    assert set(kafka["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}, "Kafka runs in KRaft mode"
    assert not any("zookeeper" in name for name in services)
    redis_command = " ".join(services["redis"]["command"]) if isinstance(services["redis"]["command"], list) \
        else services["redis"]["command"]
    assert "--appendonly yes" in redis_command, "Redis keeps an append-only file"
    for name in (*INFRASTRUCTURE, *SERVICES):
        assert "healthcheck" in services[name], f"{name} has no healthcheck"


@pytest.mark.parametrize("service", SERVICES)
def test_compose_service_runs_from_the_image_with_valid_settings(service: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = compose()["services"][service]
    assert spec["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (ROOT / spec["build"]["context"] / spec["build"]["dockerfile"]).resolve() == DOCKERFILE
    assert spec["command"] == ["python", "-m", f"services.{service}.main"]
    env = compose_env(service)
    missing = [name for name in REQUIRED_ENV if not env.get(name)]
    assert not missing, f"{service}: missing {missing}"
    settings = validate_env(service, env, monkeypatch)
    assert_authentication_on(f"compose {service}", settings)
    assert_kafka_user(f"compose {service}", service, settings)
    kafka = compose_env("kafka")
    assert settings.kafka_sasl_password.get_secret_value() == kafka[f"KAFKA_PASSWORD_{service.upper()}"], (
        f"{service}: its Kafka password is not the one the broker's setup gives its user")
    grpc_port, metrics_port = ports(service)
    assert (settings.grpc_port, settings.metrics_port) == (grpc_port, metrics_port)
    assert settings.grpc_host == settings.metrics_host == "0.0.0.0"
    for other in SERVICES:
        assert env[f"{other.upper()}_GRPC_ADDR"] == f"{other}:{ports(other)[0]}"
    services = compose()["services"]
    assert settings.kafka_bootstrap_servers.split(":")[0] in services
    assert settings.redis_url.startswith("redis://redis:")
    postgres = compose_env("postgres")
    assert settings.database_url == (
        f"postgresql://{postgres['POSTGRES_USER']}:{postgres['POSTGRES_PASSWORD']}@postgres:5432/{postgres['POSTGRES_DB']}"
    )
    published = {str(port).rsplit(":", 1)[-1] for port in spec.get("ports", [])}
    assert {str(grpc_port), str(metrics_port)} <= published


@pytest.mark.parametrize("service", SERVICES)
def test_compose_service_health_and_start_order(service: str) -> None:
    services = compose()["services"]
    spec = services[service]
    check = " ".join(spec["healthcheck"]["test"])
    assert "grpc_health" in check and "GRPC_PORT" in check, "the healthcheck asks gRPC health on GRPC_PORT"
    # Readiness, not liveness: a callee whose dependencies do not answer is no callee to start after.
    assert f"service='{READINESS}'" in check, "the healthcheck asks the readiness health service"
    depends_on = spec["depends_on"]
    assert isinstance(depends_on, dict), "depends_on uses conditions"
    for needed in ("kafka", "redis", "postgres", *CALLS.get(service, ())):
        assert depends_on.get(needed, {}).get("condition") == "service_healthy", f"{service} waits for {needed}"
    for name in depends_on:
        assert "healthcheck" in services[name]


def test_compose_bind_mounts_exist() -> None:
    for name in compose()["services"]:
        for host in volume_mounts(name):
            assert (ROOT / host).exists(), f"{name} mounts ./{host}, which does not exist"


def _memory_bytes(text: str) -> int:
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)([bkmg]?)", str(text).lower()).groups()
    return int(float(number) * {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit])


def test_compose_every_container_has_cpu_and_memory_limits_and_rotated_logs() -> None:
    """A runaway container cannot take the host's CPU, memory or disk (json-file logs grow without end)."""
    for name, spec in compose()["services"].items():
        assert 0 < float(spec["cpus"]) <= 4, f"{name}: cpus"
        assert _memory_bytes(spec["mem_limit"]) >= 64 * 1024**2, f"{name}: mem_limit"
        logging = spec["logging"]
        assert logging["driver"] == "json-file", f"{name}: logging driver"
        assert _memory_bytes(logging["options"]["max-size"]) <= 100 * 1024**2, f"{name}: max-size"
        assert 1 <= int(logging["options"]["max-file"]) <= 10, f"{name}: max-file"
    for service in SERVICES:
        # One event loop per service: a second core would idle (scale out instead).
        assert float(compose()["services"][service]["cpus"]) == 1.0, service


# Images kept on a version tag, each with the reason (said beside the image in the file too).
TAG_ONLY_IMAGES = {"kafka-exporter": "no digest of v1.9.0's multi-platform image could be verified in public material"}
_DIGEST = re.compile(r"[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}")


def test_compose_images_are_pinned_by_digest_where_one_is_known() -> None:
    text = COMPOSE_FILE.read_text()
    for name, spec in compose()["services"].items():
        if "build" in spec:
            continue  # ours, built from deploy/Dockerfile
        image = spec["image"]
        if name in TAG_ONLY_IMAGES:
            tag = image.rsplit(":", 1)[-1]
            assert re.fullmatch(r"v?\d+\.\d+\.\d+", tag), f"{name}: {image} is not on a version tag"
            above = text[:text.index(f"\n  {name}:\n")].splitlines()
            comment = " ".join(line for line in above[-3:] if line.strip().startswith("#"))
            assert "Tag only" in comment, f"{name}: the comment above it does not say why {image} has no digest"
        else:
            assert _DIGEST.fullmatch(image), f"{name}: {image} is not pinned by digest (tag@sha256:...)"


def test_compose_runs_kafka_exporter_as_its_own_kafka_user_scraped_by_prometheus() -> None:
    services = compose()["services"]
    exporter = services["kafka-exporter"]
    flags = dict(flag.removeprefix("--").partition("=")[::2] for flag in exporter["command"])
    assert flags["kafka.server"] == compose_env("pairing")["KAFKA_BOOTSTRAP_SERVERS"], "the services' listener"
    assert "sasl.enabled" in flags and flags["sasl.mechanism"] == "scram-sha512"
    assert flags["sasl.username"] == "kafka-exporter"
    assert flags["sasl.password"] == compose_env("kafka")["KAFKA_PASSWORD_KAFKA_EXPORTER"]
    assert exporter["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert services["prometheus"]["depends_on"]["kafka-exporter"]["condition"] == "service_healthy"
    jobs = {job["job_name"]: job for job in load_yaml(PROMETHEUS_CONFIG)["scrape_configs"]}
    (target,) = jobs["kafka-exporter"]["static_configs"][0]["targets"]
    assert target == "kafka-exporter:9308"


def broker_acls() -> dict[str, set[tuple[str, str]]]:
    """deploy/kafka/setup.sh's `acl USER --operation OP... --RESOURCE NAME` lines: user -> {(operation, resource)}."""
    granted: dict[str, set[tuple[str, str]]] = {}
    for line in (DEPLOY / "kafka" / "setup.sh").read_text().splitlines():
        words = line.split()
        if words[:1] != ["acl"] or len(words) < 3 or words[1].startswith("\""):
            continue
        operations = [words[i + 1] for i, word in enumerate(words) if word == "--operation"]
        resource = next(word.removeprefix("--") for word in words if word in ("--topic", "--group", "--cluster"))
        granted.setdefault(words[1], set()).update((operation, resource) for operation in operations)
    return granted


def test_kafka_exporter_may_only_describe() -> None:
    """It reads offsets (ListGroups, DescribeGroups, OffsetFetch, ListOffsets): no record, no group join, no write."""
    script = (DEPLOY / "kafka" / "setup.sh").read_text()
    assert 'user kafka-exporter "$KAFKA_PASSWORD_KAFKA_EXPORTER"' in script
    assert broker_acls()["kafka-exporter"] == {("Describe", "topic"), ("Describe", "group"), ("Describe", "cluster")}


# ---------------------------------------------------------------------------
# deploy/Dockerfile
# ---------------------------------------------------------------------------


def test_dockerfile_builds_one_non_root_python_311_amd64_image() -> None:
    text = DOCKERFILE.read_text()
    lines = [line.strip() for line in re.sub(r"\\\n", " ", text).splitlines()
             if line.strip() and not line.strip().startswith("#")]
    args = dict(re.match(r"ARG (\w+)=(\S+)", line).groups() for line in lines if re.match(r"ARG \w+=", line))
    stages = [line for line in lines if line.startswith("FROM ")]
    assert stages
    for stage in stages:
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], stage.split()[-3 if " AS " in stage else -1])
        assert image == "python:3.11-slim", stage
        assert "--platform=linux/amd64" in stage, "the image is built and tested on linux/amd64"
    final = text[text.rindex("\nFROM "):]
    users = re.findall(r"^USER\s+(\S+)", final, re.MULTILINE)
    assert users and users[-1].split(":")[0] not in {"root", "0"}, "the final stage runs as a non-root user"
    assert re.search(r"pip install[^\n]* \.(\s|$)", text), "the project is installed with pip from pyproject.toml"
    ignored = DOCKERIGNORE.read_text().splitlines()
    for line in lines:
        if line.startswith("COPY ") and "--from=" not in line:
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: no such path in the build context"
                assert f"!{source.rstrip('/')}" in ignored, f"{source} is excluded by {DOCKERIGNORE.name}"


# ---------------------------------------------------------------------------
# Prometheus
# ---------------------------------------------------------------------------


def test_prometheus_scrapes_every_service() -> None:
    config = load_yaml(PROMETHEUS_CONFIG)
    assert config["global"]["scrape_interval"]
    jobs = config["scrape_configs"]
    assert len({job["job_name"] for job in jobs}) == len(jobs), "job names are unique"
    targets = {}
    for job in jobs:
        assert job.get("metrics_path", "/metrics") == "/metrics"
        for static in job.get("static_configs", []):
            # arbiter_* series carry service="..."; a target label would rename it to exported_service.
            assert "service" not in static.get("labels", {}), f"{job['job_name']} adds a `service` target label"
            for target in static["targets"]:
                targets[target] = job["job_name"]
    for service in SERVICES:
        target = f"{service}:{ports(service)[1]}"
        assert target in targets, f"Prometheus does not scrape {target}"
        assert compose_env(service)["METRICS_PORT"] == str(ports(service)[1])
    for name, (_, _, metrics_port) in WATCH_SERVERS.items():
        # A job of its own: a watch server up must not hide its service down (ArbiterServiceDown sums by job).
        assert targets.get(f"{name}:{metrics_port}") == name, f"Prometheus does not scrape {name} in its own job"
        assert compose_env(name)["METRICS_PORT"] == str(metrics_port)
    assert volume_mounts("prometheus").get("deploy/prometheus/prometheus.yml") == "/etc/prometheus/prometheus.yml"


@pytest.mark.parametrize("name", sorted(WATCH_SERVERS))
def test_compose_watch_server_serves_its_services_streams_without_a_kafka_user(
    name: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    service, grpc_port, metrics_port = WATCH_SERVERS[name]
    container = compose()["services"][name]
    assert container["command"] == ["python", "-m", f"services.{service}.main"]
    assert container["depends_on"] == {service: {"condition": "service_healthy"}}
    env = compose_env(name)
    assert "KAFKA_SASL_USERNAME" not in env
    settings = validate_env(service, env, monkeypatch)
    assert settings.watch_only and (settings.grpc_port, settings.metrics_port) == (grpc_port, metrics_port)
    assert_authentication_on(f"compose {name}", settings)
    assert container["ports"] == [f"127.0.0.1:{grpc_port}:{grpc_port}", f"127.0.0.1:{metrics_port}:{metrics_port}"]


def test_prometheus_loads_the_alert_rules_and_sends_to_alertmanager() -> None:
    config = load_yaml(PROMETHEUS_CONFIG)
    assert [(PROMETHEUS_CONFIG.parent / name).resolve() for name in config["rule_files"]] == [ALERT_RULES]
    mounts = volume_mounts("prometheus")
    assert mounts.get("deploy/prometheus/alerts.yml") == str(Path(mounts["deploy/prometheus/prometheus.yml"]).parent
                                                             / config["rule_files"][0])
    (alertmanagers,) = config["alerting"]["alertmanagers"]
    (target,) = alertmanagers["static_configs"][0]["targets"]
    host, port = target.split(":")
    assert host in compose()["services"] and f"127.0.0.1:{port}:{port}" in compose()["services"][host]["ports"]
    assert volume_mounts(host).get("deploy/alertmanager/alertmanager.yml") == "/etc/alertmanager/alertmanager.yml"


def test_alertmanager_routes_every_alert_to_a_receiver() -> None:
    config = load_yaml(ALERTMANAGER_CONFIG)
    receivers = {receiver["name"] for receiver in config["receivers"]}
    route = config["route"]
    assert route["receiver"] in receivers
    for child in route.get("routes", []):
        assert child.get("receiver", route["receiver"]) in receivers
    severities = {rule["labels"]["severity"] for rule in alert_rules()}
    routed = {m.split("=", 1)[1].strip('"') for child in route.get("routes", []) for m in child.get("matchers", [])
              if m.startswith("severity=")}
    assert routed <= severities, "a route matches a severity no alert has"
    names = {rule["alert"] for rule in alert_rules()}
    for inhibit in config.get("inhibit_rules", []):
        for matcher in (*inhibit["source_matchers"], *inhibit["target_matchers"]):
            label, operator, value = re.fullmatch(r'(\w+)(=~|=)"(.*)"', matcher).groups()
            assert label == "alertname", matcher
            named = value.split("|") if operator == "=~" else [value]
            assert set(named) <= names, f"{matcher} names an alert that does not exist"


# ---------------------------------------------------------------------------
# Alert rules (deploy/prometheus/alerts.yml) and their runbook
# ---------------------------------------------------------------------------

SEVERITIES = {"critical", "warning"}
# Series from elsewhere than the services' registries: Prometheus's own per target, and the broker's view
# of the consumer groups (kafka-exporter's names, which the embedded stack's exporter uses too).
SCRAPE_SERIES = {"up"}
KAFKA_EXPORTER_SERIES = {
    "kafka_consumergroup_lag": {"consumergroup", "topic", "partition"},
    "kafka_consumergroup_current_offset": {"consumergroup", "topic", "partition"},
    "kafka_topic_partition_current_offset": {"topic", "partition"},
    "kafka_consumergroup_members": {"consumergroup"},
}
# Every family of the broker's view: none carries a `service` label.
KAFKA_EXPORTER_FAMILIES = {
    "kafka_brokers", "kafka_topic_partitions", "kafka_topic_partition_current_offset",
    "kafka_topic_partition_oldest_offset", "kafka_consumergroup_members", "kafka_consumergroup_current_offset",
    "kafka_consumergroup_current_offset_sum", "kafka_consumergroup_lag", "kafka_consumergroup_lag_sum",
}
@pytest.fixture
def promtool(installed: Callable[[str], str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runs promtool in deploy/prometheus; the test fails (never skips) when promtool is missing."""
    binary = installed("promtool")
    return lambda *args: subprocess.run([binary, *args], cwd=ALERT_RULES.parent, capture_output=True, text=True,
                                        timeout=300)


@cache
def alert_rules() -> list[dict[str, Any]]:
    """Every alerting rule of alerts.yml."""
    return [rule for group in load_yaml(ALERT_RULES)["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_accepts_the_prometheus_config_and_its_rules(promtool) -> None:
    result = promtool("check", "config", PROMETHEUS_CONFIG.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(alert_rules())} rules found" in result.stdout


def test_promtool_rule_tests_pass(promtool) -> None:
    """deploy/prometheus/alerts_test.yml: the cases where each alert fires and where it does not."""
    result = promtool("test", "rules", ALERT_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_case_where_it_fires_and_one_where_it_does_not() -> None:
    tests = load_yaml(ALERT_TESTS)
    assert [(ALERT_TESTS.parent / name).resolve() for name in tests["rule_files"]] == [ALERT_RULES]
    fires: set[str] = set()
    silent: set[str] = set()
    for case in tests["tests"]:
        for check in case["alert_rule_test"]:
            (fires if check["exp_alerts"] else silent).add(check["alertname"])
    names = {rule["alert"] for rule in alert_rules()}
    assert len(names) == len(alert_rules()), "alert names are unique"
    assert names - fires == set(), f"no case where these fire: {sorted(names - fires)}"
    assert names - silent == set(), f"no case where these stay silent: {sorted(names - silent)}"
    assert fires | silent <= names, f"cases for alerts that do not exist: {sorted((fires | silent) - names)}"


def _anchor(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's) gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def runbook_sections() -> dict[str, str]:
    """Anchor -> text of each `## ` section of deploy/RUNBOOK.md."""
    parts = re.split(r"^## (.+)$", RUNBOOK.read_text(), flags=re.MULTILINE)
    return {_anchor(heading): body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: rule["alert"])
def test_alert_has_severity_summary_and_its_runbook_section(rule: dict[str, Any]) -> None:
    assert rule["labels"]["severity"] in SEVERITIES
    annotations = rule["annotations"]
    assert annotations["summary"] and annotations["description"]
    path, _, anchor = annotations["runbook_url"].partition("#")
    assert (ROOT / path).resolve() == RUNBOOK and anchor == _anchor(rule["alert"])
    section = runbook_sections().get(anchor)
    assert section is not None, f"deploy/RUNBOOK.md has no section `## {rule['alert']}`"
    for part in ("**Severity**", "**Why this threshold.**", "**What it means.**", "**What to check.**",
                 "**What to do.**"):
        assert part in section, f"the runbook section of {rule['alert']} lacks {part}"
    assert rule["labels"]["severity"] in section.split("**Fires when**")[0], "the runbook gives another severity"


def test_the_runbook_has_no_section_for_an_alert_that_does_not_exist() -> None:
    alerts = {_anchor(rule["alert"]) for rule in alert_rules()}
    extra = {anchor for anchor in runbook_sections() if anchor.startswith("arbiter")} - alerts
    assert not extra, f"runbook sections without an alert: {sorted(extra)}"


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: rule["alert"])
def test_alert_names_only_series_that_exist(rule: dict[str, Any]) -> None:
    """Every metric and label an alert's PromQL names is exported, or is Prometheus's or the broker's view."""
    known: dict[str, set[str]] = {**exported().labels, **KAFKA_EXPORTER_SERIES}
    read = read_promql(rule["expr"])
    assert read.metrics, rule["expr"]
    assert read.functions <= PROMQL_FUNCTIONS, read.functions - PROMQL_FUNCTIONS
    unknown = read.metrics - set(known) - SCRAPE_SERIES
    assert not unknown, f"{rule['alert']} names {sorted(unknown)}, which nothing exports"
    allowed = TARGET_LABELS.union(*(known.get(metric, set()) for metric in read.metrics))
    assert read.labels <= allowed, (
        f"{rule['alert']}: labels {sorted(read.labels - allowed)} are not labels of its series"
    )


def test_the_kubernetes_prometheus_rule_is_alerts_yml() -> None:
    """deploy/k8s/prometheus-rule.yaml is written from alerts.yml (deploy/prometheus/prometheus_rule.py)."""
    spec = importlib.util.spec_from_file_location("arbiter_deploy_prometheus_rule", DEPLOY / "prometheus" /
                                                  "prometheus_rule.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rules = load_yaml(ALERT_RULES)
    assert (K8S / "prometheus-rule.yaml").read_text() == module.render(rules), (
        "stale: run `.venv/bin/python deploy/prometheus/prometheus_rule.py`")
    (rule,) = k8s_objects("PrometheusRule").values()
    assert rule["spec"]["groups"] == rules["groups"]


# ---------------------------------------------------------------------------
# Grafana
# ---------------------------------------------------------------------------


def dashboard_files() -> list[Path]:
    return sorted(DASHBOARDS.glob("*.json"))


@cache
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("arbiter_deploy_grafana_generate", GRAFANA / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def datasource_uid() -> str:
    datasources = load_yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yml")["datasources"]
    (prometheus,) = [d for d in datasources if d["type"] == "prometheus"]
    return prometheus["uid"]


def iter_panels(panels: Iterable[dict]) -> Iterator[dict]:
    for panel in panels:
        yield panel
        yield from iter_panels(panel.get("panels", []))


def dashboard_queries(dashboard: dict) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    for panel in iter_panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} target {target['refId']}", target["expr"]
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
            match = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", query)
            yield f"variable {variable['name']!r}", match.group(1) if match else query


def test_one_dashboard_per_service_plus_overview() -> None:
    assert {path.name for path in dashboard_files()} == {f"{name}.json" for name in (*SERVICES, "overview")}


def test_dashboards_are_up_to_date_with_their_generator() -> None:
    stale = [name for name, dashboard in generator().dashboards().items()
             if not (DASHBOARDS / name).exists() or (DASHBOARDS / name).read_text() != generator().render(dashboard)]
    assert not stale, f"stale: {stale}; edit and run `.venv/bin/python deploy/grafana/generate.py`"


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda path: path.name)
def test_dashboard_has_the_grafana_shape(path: Path) -> None:
    dashboard = json.loads(path.read_text())
    assert isinstance(dashboard, dict)
    assert isinstance(dashboard["title"], str) and dashboard["title"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", dashboard["uid"])
    assert isinstance(dashboard["schemaVersion"], int)
    assert isinstance(dashboard["panels"], list) and dashboard["panels"]
    assert isinstance(dashboard.get("templating", {}).get("list", []), list)
    assert {"from", "to"} <= set(dashboard["time"])
    uid = datasource_uid()
    ids: set[int] = set()
    cells: dict[tuple[int, int], str] = {}
    for panel in iter_panels(dashboard["panels"]):
        assert isinstance(panel["id"], int) and panel["id"] not in ids, f"panel id {panel['id']} repeats"
        ids.add(panel["id"])
        assert isinstance(panel["type"], str) and panel["title"]
        grid = panel["gridPos"]
        assert all(isinstance(grid[key], int) for key in ("x", "y", "w", "h"))
        assert grid["x"] >= 0 and grid["y"] >= 0 and grid["w"] > 0 and grid["h"] > 0 and grid["x"] + grid["w"] <= 24
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = panel["title"]
        if panel["type"] == "row":
            continue
        targets = panel["targets"]
        assert targets, f"{panel['title']!r} has no query"
        assert len({t["refId"] for t in targets}) == len(targets)
        for target in (panel, *targets):
            if "datasource" in target:
                assert target["datasource"]["uid"] == uid, "panels use the provisioned Prometheus datasource"
        assert all(t["expr"].strip() for t in targets)


def test_dashboard_uids_and_titles_are_unique() -> None:
    dashboards = [json.loads(path.read_text()) for path in dashboard_files()]
    assert len({d["uid"] for d in dashboards}) == len(dashboards)
    assert len({d["title"] for d in dashboards}) == len(dashboards)


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda path: path.name)
def test_dashboard_queries_use_exported_metrics(path: Path) -> None:
    """Every metric (and label) a query names is exported by the services (METRIC_PROVIDERS)."""
    known = exported().labels
    dashboard = json.loads(path.read_text())
    problems = []
    for where, expr in dashboard_queries(dashboard):
        try:
            read = read_promql(expr)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        if not read.metrics:
            problems.append(f"{where}: names no metric: {expr}")
        for function in read.functions - PROMQL_FUNCTIONS:
            problems.append(f"{where}: unknown PromQL function {function!r}")
        for metric in sorted(read.metrics - set(known)):
            problems.append(f"{where}: {metric!r} is not exported by any service")
        allowed = TARGET_LABELS.union(*(known.get(metric, set()) for metric in read.metrics))
        for label in sorted(read.labels - allowed):
            problems.append(f"{where}: label {label!r} is not a label of {sorted(read.metrics)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("service", SERVICES)
def test_service_dashboard_shows_only_its_service(service: str) -> None:
    """Its own series (service="..."), and of the broker's view only its own consumer groups."""
    dashboard = json.loads((DASHBOARDS / f"{service}.json").read_text())
    own_groups = generator().group_matcher((service,)).split("=~", 1)
    for where, expr in dashboard_queries(dashboard):
        for metric, matchers in read_promql(expr).selectors:
            if metric in PROMETHEUS_SERIES:
                continue
            if metric in KAFKA_EXPORTER_FAMILIES:
                assert matchers.get("consumergroup") == ("=~", json.loads(own_groups[1])), (
                    f"{where}: {metric} is not filtered on {service}'s consumer groups")
                continue
            assert matchers.get("service") == ("=", service), (
                f"{where}: {metric} is not filtered on service={service!r}"
            )


def test_the_dashboards_know_each_services_consumer_groups() -> None:
    """generate.py's CONSUMER_GROUPS are the groups the services consume in, and its matcher finds only them."""
    assert {service: set(groups) for service, groups in generator().CONSUMER_GROUPS.items()} == {
        service: set(groups) for service, groups in SERVICE_GROUPS.items()}
    for service, groups in SERVICE_GROUPS.items():
        pattern = json.loads(generator().group_matcher((service,)).split("=~", 1)[1])
        others = {group for other, named in SERVICE_GROUPS.items() if other != service for group in named}
        for group in groups:
            assert re.fullmatch(pattern, group) and re.fullmatch(pattern, f"chaos-1.{group}"), group
        assert not any(re.fullmatch(pattern, group) for group in others | {"playsite", "x-playsite"}), service


def test_the_lag_exporter_serves_the_series_the_alerts_read_with_their_labels() -> None:
    """The embedded stack's exporter and kafka-exporter are interchangeable for the alerts and the dashboards."""
    known = exported().labels
    for name, labels in KAFKA_EXPORTER_SERIES.items():
        assert name in exported().families["lag-exporter"], f"the lag exporter does not serve {name}"
        assert known[name] == labels, f"{name}: {sorted(known[name])}, kafka-exporter's are {sorted(labels)}"


# Kit series only some services have: streams (Watch RPCs) and stored timers (kit.timers).
STREAM_FAMILIES = {"arbiter_grpc_stream_seconds", "arbiter_grpc_streams_open"}
TIMER_FAMILIES = {"arbiter_timers_fired"}


def used_families(dashboard: dict) -> set[str]:
    used = set().union(*(read_promql(expr).metrics for _, expr in dashboard_queries(dashboard)))
    return {re.sub(r"_(total|created|bucket|sum|count)$", "", name) for name in used}


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda path: path.name)
def test_dashboard_shows_every_standard_kit_metric(path: Path) -> None:
    """The kit's arbiter_* series all have a panel; those of streams and timers only where the service has them."""
    service = path.stem
    only_some = set()
    if service != "overview" and service not in generator().STREAMING_SERVICES:
        only_some |= STREAM_FAMILIES
    if service != "overview" and service not in generator().TIMER_SERVICES:
        only_some |= TIMER_FAMILIES
    used = used_families(json.loads(path.read_text()))
    standard = {name for name in exported().families["kit"] if name.startswith("arbiter_")} - only_some
    assert standard <= used, f"no panel for {sorted(standard - used)}"
    assert not only_some & used, f"panels that can never have data on {service}: {sorted(only_some & used)}"


def _composition_root(service: str) -> str:
    return (ROOT / "services" / service / "main.py").read_text()


def test_the_dashboards_know_which_services_stream_and_which_run_timers() -> None:
    """generate.py's STREAMING_SERVICES and TIMER_SERVICES are what the services serve and run."""
    streaming, timers = set(), set()
    for service in SERVICES:
        module = importlib.import_module(f"services.{service}.main")  # registers its gRPC descriptors
        source = _composition_root(service)
        for full_name in re.findall(r'GrpcService\(\s*"([\w.]+)"', source):
            methods = descriptor_pool.Default().FindServiceByName(full_name).methods
            if any(method.server_streaming for method in methods):
                streaming.add(service)
        if "TimerPoller(" in source:
            timers.add(service)
        assert service == module.SERVICE
    assert streaming == set(generator().STREAMING_SERVICES)
    assert timers == set(generator().TIMER_SERVICES)


_RATE_OF = re.compile(r"\b(rate|irate|increase)\s*\(\s*([A-Za-z_:][A-Za-z0-9_:]*)")
_QUANTILE_BY_LE = re.compile(r"\bby\s*\([^()]*\ble\b")


def counter_samples() -> set[str]:
    """The sample names of every counter and histogram the services export: what rate() may take."""
    names: set[str] = set()
    for make_registry in METRIC_PROVIDERS.values():
        for family in make_registry().collect():
            if family.type == "counter":
                names.add(f"{family.name}_total")
            elif family.type in ("histogram", "summary"):
                names.update(f"{family.name}{suffix}" for suffix in ("_bucket", "_sum", "_count"))
    return names


def rate_and_quantile_problems(expr: str, counters: set[str]) -> list[str]:
    """rate() of a gauge, or a histogram_quantile that does not keep `le`: both draw a plausible wrong line."""
    problems = [f"{function}() of {metric}, which is not a counter"
                for function, metric in _RATE_OF.findall(expr) if metric not in counters]
    if "histogram_quantile" in expr and not _QUANTILE_BY_LE.search(expr):
        problems.append("histogram_quantile over buckets not grouped by le")
    return problems


def test_the_rate_and_quantile_check_finds_both_mistakes() -> None:
    counters = {"a_total", "h_bucket"}
    assert rate_and_quantile_problems("sum(rate(a_total[5m]))", counters) == []
    assert rate_and_quantile_problems("rate(g[5m])", counters) == ["rate() of g, which is not a counter"]
    assert rate_and_quantile_problems("histogram_quantile(0.9, sum by (x) (rate(h_bucket[5m])))", counters) == [
        "histogram_quantile over buckets not grouped by le"]
    assert rate_and_quantile_problems("histogram_quantile(0.9, sum by (x, le) (rate(h_bucket[5m])))", counters) == []


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda path: path.name)
def test_dashboard_rates_take_counters_and_quantiles_keep_le(path: Path) -> None:
    counters = counter_samples()
    queries = list(dashboard_queries(json.loads(path.read_text())))
    assert any(_RATE_OF.search(expr) for _, expr in queries), "no rate() to check: the pattern no longer matches"
    problems = [f"{where}: {problem}" for where, expr in queries
                for problem in rate_and_quantile_problems(expr, counters)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda path: path.name)
def test_dashboard_panels_in_seconds_show_only_seconds(path: Path) -> None:
    """A count drawn on a seconds axis reads as a duration: Prometheus names carry their unit (`_seconds`)."""
    dashboard = json.loads(path.read_text())
    for panel in iter_panels(dashboard["panels"]):
        if panel["type"] == "row" or panel["fieldConfig"]["defaults"].get("unit") != "s":
            continue
        for target in panel["targets"]:
            for metric in read_promql(target["expr"]).metrics:
                assert "_seconds" in metric, f"panel {panel['title']!r} (unit s) shows {metric}, not in seconds"


def test_grafana_provisioning_points_at_prometheus_and_the_dashboards() -> None:
    datasources = load_yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yml")
    assert datasources["apiVersion"] == 1
    (prometheus,) = [d for d in datasources["datasources"] if d["type"] == "prometheus"]
    assert prometheus["url"] == "http://prometheus:9090" and "prometheus" in compose()["services"]
    providers = load_yaml(GRAFANA / "provisioning" / "dashboards" / "dashboards.yml")
    assert providers["apiVersion"] == 1
    (provider,) = providers["providers"]
    assert provider["type"] == "file"
    mounts = volume_mounts("grafana")
    assert mounts.get("deploy/grafana/dashboards") == provider["options"]["path"]
    assert mounts.get("deploy/grafana/provisioning") == "/etc/grafana/provisioning"


# ---------------------------------------------------------------------------
# Kubernetes
# ---------------------------------------------------------------------------


@cache
def k8s_documents() -> dict[str, list[dict]]:
    return {path.name: load_yaml_documents(path) for path in sorted(K8S.glob("*.yaml"))}


def k8s_objects(kind: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for docs in k8s_documents().values() for doc in docs if doc["kind"] == kind}


def test_k8s_manifests_parse_with_kind_and_name() -> None:
    assert k8s_documents()
    for name, documents in k8s_documents().items():
        assert documents, f"{name} is empty"
        for document in documents:
            assert isinstance(document, dict), name
            assert document.get("apiVersion"), name
            assert document.get("kind"), name
            if document["kind"] != "Kustomization":
                assert document["metadata"]["name"], name


def test_k8s_kustomization_lists_every_manifest_but_the_secret_example() -> None:
    kustomization = load_yaml(K8S / "kustomization.yaml")
    resources = set(kustomization["resources"])
    on_disk = {name for name in k8s_documents() if name not in {"kustomization.yaml", "secret.example.yaml"}}
    assert resources == on_disk
    applied = {doc["metadata"]["name"] for name in resources for doc in k8s_documents()[name]}
    assert not applied & {doc["metadata"]["name"] for doc in k8s_documents()["secret.example.yaml"]}


def test_k8s_config_map_values_are_strings() -> None:
    for config_map in k8s_objects("ConfigMap").values():
        for key, value in config_map["data"].items():
            assert isinstance(value, str), f"{config_map['metadata']['name']}.{key} must be a string"


def pod_env(container: dict[str, Any], pod: str) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """A container's variables from its ConfigMaps and own values, and its Secret references by variable."""
    config_maps = k8s_objects("ConfigMap")
    env: dict[str, str] = {}
    for source in container["envFrom"]:
        env.update(config_maps[source["configMapRef"]["name"]]["data"])
    secret_refs = {}
    for variable in container["env"]:
        if "value" in variable:
            env[variable["name"]] = variable["value"]
        elif "fieldRef" in variable["valueFrom"]:
            # Each replica's name, told apart in pg_stat_activity and the arena's leases.
            assert (variable["name"], variable["valueFrom"]["fieldRef"]) == (
                "REPLICA_ID", {"fieldPath": "metadata.name"})
            env["REPLICA_ID"] = f"{pod}-7d9f8-abcde"
        else:
            secret_refs[variable["name"]] = variable["valueFrom"]["secretKeyRef"]
    return env, secret_refs


def example_secrets() -> dict[str, dict[str, Any]]:
    """secret.example.yaml's Secrets by name."""
    return {doc["metadata"]["name"]: doc for doc in load_yaml_documents(K8S / "secret.example.yaml")}


def secret_values(secret_refs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """What each Secret reference reads from secret.example.yaml."""
    secrets = example_secrets()
    return {name: secrets[ref["name"]]["stringData"][ref["key"]] for name, ref in secret_refs.items()}


@pytest.mark.parametrize("service", SERVICES)
def test_k8s_deployment(service: str, monkeypatch: pytest.MonkeyPatch) -> None:
    deployment = k8s_objects("Deployment")[service]
    spec = deployment["spec"]
    assert "replicas" not in spec, "the HorizontalPodAutoscaler owns the replica count"
    pod_labels = spec["template"]["metadata"]["labels"]
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == service and pod["automountServiceAccountToken"] is False
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items()
    (container,) = spec["template"]["spec"]["containers"]
    assert container["image"].split(":")[0] == "arbiter"
    assert container["command"] == ["python", "-m", f"services.{service}.main"]
    grpc_port, metrics_port = ports(service)
    container_ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert container_ports == {"grpc": grpc_port, "metrics": metrics_port}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == container_ports["grpc"], f"{probe} asks gRPC health"
    # Readiness follows the dependencies; liveness and startup only ask whether the process answers.
    assert container["readinessProbe"]["grpc"].get("service") == READINESS
    for probe in ("startupProbe", "livenessProbe"):
        assert container[probe]["grpc"].get("service", "") == LIVENESS, f"{probe} asks liveness"
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][kind]), f"resources.{kind}"
    annotations = spec["template"]["metadata"].get("annotations", {})
    assert annotations.get("prometheus.io/port") == str(metrics_port)

    env, secret_refs = pod_env(container, service)
    assert "REPLICA_ID" in env, "every pod names itself"
    assert set(secret_refs) == SECRET_ENV, f"{sorted(SECRET_ENV)} (only) come from a Secret"
    assert not SECRET_ENV & set(env), "a credential is also set outside the Secret"
    secrets = example_secrets()
    for name, reference in secret_refs.items():
        assert not reference.get("optional", False), f"{name}: a missing Secret must stop the pod, not blank it"
        assert reference["key"] in secrets[reference["name"]]["stringData"], f"{name}: not in secret.example.yaml"
    env.update(secret_values(secret_refs))
    settings = validate_env(service, env, monkeypatch)
    assert_authentication_on(f"k8s {service}", settings)
    assert_kafka_user(f"k8s {service}", service, settings)
    assert (settings.grpc_port, settings.metrics_port) == (grpc_port, metrics_port)
    assert settings.grpc_host == settings.metrics_host == "0.0.0.0"
    for other in SERVICES:
        # Every ready pod of the callee, balanced by the caller's channel (arbiter.kit.grpcclient).
        assert env[f"{other.upper()}_GRPC_ADDR"] == f"dns:///{other}:{ports(other)[0]}"
        assert k8s_objects("Service")[other]["spec"].get("clusterIP") == "None", f"{other}: not headless"


@pytest.mark.parametrize("service", SERVICES)
def test_k8s_service_exposes_grpc_and_metrics(service: str) -> None:
    deployment = k8s_objects("Deployment")[service]
    k8s_service = k8s_objects("Service")[service]
    assert k8s_service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    named = {port["name"]: port["containerPort"] for port in container["ports"]}
    exposed = {port["name"]: port for port in k8s_service["spec"]["ports"]}
    assert set(exposed) == {"grpc", "metrics"}
    for name, port in exposed.items():
        target = port.get("targetPort", port["port"])
        assert named.get(target, target) == named[name]
        assert port["port"] == named[name]


def test_k8s_each_workload_has_its_own_service_account_without_a_token() -> None:
    accounts = k8s_objects("ServiceAccount")
    for name, deployment in k8s_objects("Deployment").items():
        pod = deployment["spec"]["template"]["spec"]
        account = accounts[pod["serviceAccountName"]]
        assert pod["serviceAccountName"] == name, f"{name} runs as another workload's account"
        assert account["automountServiceAccountToken"] is False and pod["automountServiceAccountToken"] is False
    assert set(accounts) == set(k8s_objects("Deployment"))


def test_k8s_namespace_enforces_the_restricted_pod_security_standard() -> None:
    (namespace,) = k8s_objects("Namespace").values()
    labels = namespace["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted", mode
    assert namespace["metadata"]["name"] == load_yaml(K8S / "kustomization.yaml")["namespace"]


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """What in a pod spec the `restricted` Pod Security Standard refuses (its checks as of Kubernetes 1.30)."""
    problems = []
    context = pod.get("securityContext", {})
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(flag):
            problems.append(f"{flag}")
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                         "projected", "secret"}:
            problems.append(f"volume {volume['name']}: {sorted(kinds)}")
    for container in (*pod.get("initContainers", []), *pod["containers"]):
        own = container.get("securityContext", {})
        where = container["name"]
        if own.get("privileged"):
            problems.append(f"{where}: privileged")
        if own.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: allowPrivilegeEscalation must be false")
        if own.get("runAsNonRoot", context.get("runAsNonRoot")) is not True:
            problems.append(f"{where}: runAsNonRoot")
        if own.get("runAsUser", context.get("runAsUser")) == 0:
            problems.append(f"{where}: runAsUser 0")
        seccomp = own.get("seccompProfile", context.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{where}: seccompProfile {seccomp}")
        capabilities = own.get("capabilities", {})
        if "ALL" not in capabilities.get("drop", []):
            problems.append(f"{where}: capabilities must drop ALL")
        if set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            problems.append(f"{where}: adds {capabilities['add']}")
        if any("hostPort" in port for port in container.get("ports", [])):
            problems.append(f"{where}: hostPort")
    return problems


def test_the_restricted_check_finds_what_the_profile_refuses() -> None:
    container = {"name": "c", "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
    good = {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container]}
    assert restricted_violations(good) == []
    assert restricted_violations({**good, "securityContext": {"runAsNonRoot": True}}) == [
        "c: seccompProfile None"]
    assert restricted_violations({**good, "containers": [{"name": "c"}]}) == [
        "c: allowPrivilegeEscalation must be false", "c: capabilities must drop ALL"]
    assert restricted_violations({**good, "volumes": [{"name": "v", "hostPath": {"path": "/"}}]}) == [
        "volume v: ['hostPath']"]


@pytest.mark.parametrize("name", sorted(k8s_objects("Deployment")))
def test_k8s_pods_meet_the_restricted_profile_with_a_read_only_root(name: str) -> None:
    pod = k8s_objects("Deployment")[name]["spec"]["template"]["spec"]
    assert restricted_violations(pod) == []
    volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
    for container in pod["containers"]:
        assert container["securityContext"]["readOnlyRootFilesystem"] is True, container["name"]
        if container.get("command", [])[:1] == ["python"]:
            # Python and its libraries write temporary files: /tmp is an emptyDir.
            (tmp,) = [mount for mount in container["volumeMounts"] if mount["mountPath"] == "/tmp"]
            assert "emptyDir" in volumes[tmp["name"]]


@pytest.mark.parametrize("service", SERVICES)
def test_k8s_service_scales_on_cpu_within_its_partitions_and_connections(service: str) -> None:
    autoscaler = k8s_objects("HorizontalPodAutoscaler")[service]
    spec = autoscaler["spec"]
    assert autoscaler["apiVersion"] == "autoscaling/v2"
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": service}
    config = next(iter(k8s_objects("ConfigMap").values()))["data"]
    assert 2 <= spec["minReplicas"] < spec["maxReplicas"] <= int(config["KAFKA_PARTITIONS"]), (
        "replicas beyond the partitions of a topic would idle as consumers")
    (metric,) = spec["metrics"]
    assert metric["type"] == "Resource" and metric["resource"]["name"] == "cpu"
    (container,) = k8s_objects("Deployment")[service]["spec"]["template"]["spec"]["containers"]
    target = metric["resource"]["target"]
    assert target["type"] == "AverageValue"
    assert _millicores(target["averageValue"]) < _millicores(container["resources"]["limits"]["cpu"]), (
        "the target must be reachable below the CPU limit")
    for direction in ("scaleUp", "scaleDown"):
        assert spec["behavior"][direction]["policies"] == [
            {"type": "Pods", "value": 1, "periodSeconds": spec["behavior"][direction]["policies"][0]["periodSeconds"]}]
    readme = (K8S / "README.md").read_text()
    assert f"| {service} | {spec['minReplicas']} to {spec['maxReplicas']} |" in readme, "README's Autoscaling table"
    budget = k8s_objects("PodDisruptionBudget")[service]["spec"]
    assert budget["minAvailable"] < spec["minReplicas"], "a voluntary disruption must be able to proceed"


def _millicores(value: str) -> int:
    return int(value[:-1]) if str(value).endswith("m") else int(float(value) * 1000)


def test_k8s_connections_at_the_autoscalers_maximum_fit_postgresql() -> None:
    """Every replica's pool at the maximum, the watch servers' too, fits PostgreSQL's max_connections (100) less 3."""
    config = next(iter(k8s_objects("ConfigMap").values()))["data"]
    replicas = sum(autoscaler["spec"]["maxReplicas"] for autoscaler in k8s_objects("HorizontalPodAutoscaler").values())
    services = replicas * int(config["DB_POOL_MAX"])
    watch_replicas, watch_pools = set(), set()
    for name in WATCH_SERVERS:
        deployment = k8s_objects("Deployment")[name]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        watch_replicas.add(deployment["spec"]["replicas"])
        watch_pools.add(next(int(v["value"]) for v in container["env"] if v["name"] == "DB_POOL_MAX"))
    (per_server,), (pool,) = watch_replicas, watch_pools
    watchers = len(WATCH_SERVERS) * per_server
    assert services + watchers * pool <= 100 - 3
    readme = (K8S / "README.md").read_text()
    assert f"{replicas} x {config['DB_POOL_MAX']} = {services}" in readme
    assert f"the watch servers' {watchers} x {pool} = {watchers * pool} beside them: {services + watchers * pool}" in (
        " ".join(readme.split()))


@pytest.mark.parametrize("name", sorted(WATCH_SERVERS))
def test_k8s_watch_server(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its service's program with WATCH_ONLY, no Kafka user, reaching only PostgreSQL and Redis."""
    service, grpc_port, metrics_port = WATCH_SERVERS[name]
    deployment = k8s_objects("Deployment")[name]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == name and pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", f"services.{service}.main"]
    assert {port["name"]: port["containerPort"] for port in container["ports"]} == {
        "grpc": grpc_port, "metrics": metrics_port}
    assert container["readinessProbe"]["grpc"] == {"port": grpc_port, "service": READINESS}
    env, secret_refs = pod_env(container, name)
    env.update(secret_values(secret_refs))
    assert "KAFKA_SASL_USERNAME" not in env and "KAFKA_SASL_PASSWORD" not in env, "a watch server has no Kafka user"
    settings = validate_env(service, env, monkeypatch)
    assert settings.watch_only and not settings.speaks_kafka
    assert (settings.grpc_port, settings.metrics_port) == (grpc_port, metrics_port)
    assert_authentication_on(f"k8s {name}", settings)
    exposed = {port["name"]: port["port"] for port in k8s_objects("Service")[name]["spec"]["ports"]}
    assert exposed == {"grpc": grpc_port, "metrics": metrics_port}
    assert k8s_objects("PodDisruptionBudget")[name]["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    assert name not in k8s_objects("HorizontalPodAutoscaler"), "a stream stays on its pod: no autoscaler"
    policy = k8s_objects("NetworkPolicy")[name]
    assert policy["spec"]["podSelector"]["matchLabels"] == k8s_objects("Service")[name]["spec"]["selector"]
    assert _policy_rules(policy, "ingress") == {
        grpc_port: {"namespace:play-site"}, metrics_port: {"monitoring:prometheus"}}
    assert _policy_rules(policy, "egress") == {53: {"kube-system:kube-dns"}, 5432: {"any"}, 6379: {"any"}}


def _policy_peers(rule: dict[str, Any], key: str) -> set[str]:
    """The peers of one ingress/egress rule: `pod:NAME`, `namespace:NAME`, `monitoring:prometheus`, or `any`."""
    peers = set()
    for peer in rule.get(key, []) or [{}]:
        namespace = peer.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name")
        pod = peer.get("podSelector", {}).get("matchLabels", {})
        if namespace and pod:
            peers.add(f"{namespace}:{pod.get('app.kubernetes.io/name') or pod.get('k8s-app')}")
        elif namespace:
            peers.add(f"namespace:{namespace}")
        elif pod:
            peers.add(f"pod:{pod['app.kubernetes.io/name']}")
        else:
            peers.add("any")
    return peers


def _policy_rules(policy: dict[str, Any], direction: str) -> dict[int, set[str]]:
    """Port -> peers allowed, for `direction` (ingress: from, egress: to)."""
    key = "from" if direction == "ingress" else "to"
    allowed: dict[int, set[str]] = {}
    for rule in policy["spec"].get(direction, []):
        for port in rule["ports"]:
            allowed.setdefault(port["port"], set()).update(_policy_peers(rule, key))
    return allowed


def test_k8s_network_policy_denies_everything_by_default() -> None:
    policy = k8s_objects("NetworkPolicy")["default-deny"]["spec"]
    assert policy == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


@pytest.mark.parametrize("service", SERVICES)
def test_k8s_network_policy_lets_in_only_callers_and_prometheus_and_out_only_what_it_needs(service: str) -> None:
    policy = k8s_objects("NetworkPolicy")[service]
    assert policy["spec"]["podSelector"]["matchLabels"] == k8s_objects("Service")[service]["spec"]["selector"]
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    grpc_port, metrics_port = ports(service)
    callers = {caller for caller, callees in CALLS.items() if service in callees}
    assert _policy_rules(policy, "ingress") == {
        grpc_port: {"namespace:play-site", *(f"pod:{caller}" for caller in callers)},
        metrics_port: {"monitoring:prometheus"},
    }
    dns = {"kube-system:kube-dns"}
    assert _policy_rules(policy, "egress") == {
        53: dns, 9092: {"any"}, 5432: {"any"}, 6379: {"any"},
        **{ports(callee)[0]: {f"pod:{callee}"} for callee in CALLS.get(service, ())},
    }
    config = next(iter(k8s_objects("ConfigMap").values()))["data"]
    assert config["KAFKA_BOOTSTRAP_SERVERS"].endswith(":9092") and config["REDIS_URL"].startswith("redis://redis:6379")


def test_k8s_network_policy_of_kafka_exporter() -> None:
    policy = k8s_objects("NetworkPolicy")["kafka-exporter"]
    assert _policy_rules(policy, "ingress") == {9308: {"monitoring:prometheus"}}
    assert _policy_rules(policy, "egress") == {53: {"kube-system:kube-dns"}, 9092: {"any"}}


def test_k8s_service_monitor_scrapes_every_service_keeping_their_service_label() -> None:
    (monitor,) = k8s_objects("ServiceMonitor").values()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["honorLabels"] is True, "the `service` label of every series would become exported_service"
    assert endpoint["port"] == "metrics" and endpoint.get("path", "/metrics") == "/metrics"
    selector = monitor["spec"]["selector"]["matchLabels"]
    selected = {
        name for name, svc in k8s_objects("Service").items() if selector.items() <= svc["metadata"]["labels"].items()
    }
    assert selected == {*SERVICES, *WATCH_SERVERS, "kafka-exporter"}
    for name in selected:
        assert "metrics" in {port["name"] for port in k8s_objects("Service")[name]["spec"]["ports"]}, name
    # The job is the Service's name: the alert rules select the services' targets by it.
    assert "jobLabel" not in monitor["spec"]
    # One Prometheus picks up both the rules and the scrape.
    rule = k8s_objects("PrometheusRule")["arbiter"]
    assert monitor["metadata"]["labels"]["prometheus"] == rule["metadata"]["labels"]["prometheus"]


def test_k8s_kafka_exporter_logs_in_as_its_own_user_on_the_services_broker() -> None:
    deployment = k8s_objects("Deployment")["kafka-exporter"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == compose()["services"]["kafka-exporter"]["image"], "the same version as compose"
    flags = dict(flag.removeprefix("--").partition("=")[::2] for flag in container["args"])
    env = {variable["name"]: variable["valueFrom"] for variable in container["env"]}
    assert flags["kafka.server"] == "$(KAFKA_BOOTSTRAP_SERVERS)"
    assert env["KAFKA_BOOTSTRAP_SERVERS"]["configMapKeyRef"] == {
        "name": "arbiter-config",
        "key": "KAFKA_BOOTSTRAP_SERVERS",
    }
    config = next(iter(k8s_objects("ConfigMap").values()))["data"]
    assert "," not in config["KAFKA_BOOTSTRAP_SERVERS"], "kafka-exporter takes one address per flag"
    assert config["KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT" and "sasl.enabled" in flags
    assert flags["sasl.mechanism"] == config["KAFKA_SASL_MECHANISM"].lower().replace("scram-sha-", "scram-sha")
    assert flags["sasl.username"] == "kafka-exporter"
    assert flags["sasl.password"] == "$(KAFKA_EXPORTER_SASL_PASSWORD)"
    secret = env["KAFKA_EXPORTER_SASL_PASSWORD"]["secretKeyRef"]
    secrets = example_secrets()
    assert secret["key"] in secrets[secret["name"]]["stringData"] and not secret.get("optional", False)
    assert deployment["spec"]["replicas"] == 1, "a second replica would serve every series twice"
    (port,) = container["ports"]
    assert port["containerPort"] == 9308 and container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_k8s_readme_has_the_scaling_notes() -> None:
    text = (K8S / "README.md").read_text()
    for topic in ("KAFKA_PARTITIONS", "consumer group", "Arena", "lease", "hash tag", "advisory lock", "AUTH_KEYS"):
        assert topic.lower() in text.lower(), f"deploy/k8s/README.md says nothing about {topic}"


def test_k8s_readme_names_every_consumer_group() -> None:
    text = (K8S / "README.md").read_text()
    for service, groups in SERVICE_GROUPS.items():
        for group in groups:
            assert f"`{group}`" in text, f"deploy/k8s/README.md does not name {service}'s consumer group {group}"


def test_k8s_readme_names_the_advisory_locks_the_kit_takes() -> None:
    text = (K8S / "README.md").read_text()
    named = re.findall(r"(pg_\w*advisory\w*)\(hashtext\('(arbiter-[\w-]+):", text)
    assert named, "deploy/k8s/README.md names no lock"
    sources = [path.read_text() for path in sorted((ROOT / "libs" / "arbiter" / "kit").glob("*.py"))]
    for function, key in named:
        assert any(re.search(rf"\b{function}\(", source) and f"{key}:" in source for source in sources), (
            f"deploy/k8s/README.md says {function} guards {key}, but no module of arbiter.kit takes it so"
        )


def test_the_broker_setup_grants_each_user_exactly_the_topics_it_produces() -> None:
    """deploy/kafka/setup.sh: Write ACLs equal kit.events.PRODUCERS; users are the services and the play site."""
    from arbiter.kit.events import ALL_TOPICS, PLAY_SITE_USER, PRODUCERS

    script = (DEPLOY / "kafka" / "setup.sh").read_text()
    granted: dict[str, set[str]] = {}
    for line in script.replace("\\\n", " ").splitlines():
        words = line.split()
        if words[:1] == ["produces"] and len(words) > 2:
            for topic in words[2:]:
                granted.setdefault(topic, set()).add(words[1])
    assert granted == {topic: set(users) for topic, users in PRODUCERS.items()}
    assert set(PRODUCERS) == {topic.name for topic in ALL_TOPICS}
    assert f"for name in pairing clock arena rating openings {PLAY_SITE_USER}; do" in script
    kafka = compose_env("kafka")
    for user in (*SERVICES, PLAY_SITE_USER):
        assert kafka[f"KAFKA_PASSWORD_{user.upper().replace('-', '_')}"], f"no password for Kafka user {user}"
    assert kafka["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"] == "false"
    assert "SASL_PLAINTEXT" in kafka["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]


@pytest.mark.parametrize("service", SERVICES)
def test_each_service_produces_only_topics_the_broker_lets_it(service: str) -> None:
    """What a service publishes (read from its source, as the AsyncAPI docs are) is within its Write ACLs."""
    import importlib.util

    from arbiter.kit.events import PRODUCERS

    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    published = {topic.name for topic in generate.published_topics(service)}
    allowed = {topic for topic, users in PRODUCERS.items() if service in users}
    assert published == allowed
