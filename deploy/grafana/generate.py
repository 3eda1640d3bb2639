"""Write the Grafana dashboards of deploy/grafana/dashboards/ (one per service plus an overview).

    .venv/bin/python deploy/grafana/generate.py           # rewrite the JSON files
    .venv/bin/python deploy/grafana/generate.py --check   # exit 1 if a file is stale

Every dashboard has the kit's standard panels (gRPC, Kafka events, outbox and timers,
errors); a service's own metrics go in SERVICE_PANELS below, then run this script.
In a query, `$sel` stands for the dashboard's label selector (`service="arena",
instance=~"$instance"` on a service dashboard) so the same query works on every
replica set. tests/integration/deploy/test_deploy_files.py checks that every metric a
query names is exported by the services and that the JSON files are up to date.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

DASHBOARDS_DIR = Path(__file__).resolve().parent / "dashboards"
SERVICES = ("pairing", "clock", "arena", "rating", "openings")
# Only these serve streams (the Watch RPCs) and run stored timers (kit.timers): the others' dashboards
# get no panel of either, which could never have data. test_deploy_files.py checks both against the code.
STREAMING_SERVICES = ("pairing", "arena")
TIMER_SERVICES = ("pairing", "arena")
# The consumer groups of each service (any KAFKA_GROUP_PREFIX before them): the broker's view of
# their lag (kafka-exporter's series, or the embedded stack's lag exporter) carries no `service`
# label, only `consumergroup`. test_deploy_files.py checks these against the services' groups.
CONSUMER_GROUPS = {
    "pairing": ("pairing",),
    "clock": ("clock.lifecycle", "clock.game.move_made"),
    "arena": ("arena",),
    "rating": ("rating",),
    "openings": ("openings",),
}
DATASOURCE = {"type": "prometheus", "uid": "prometheus"}  # provisioning/datasources/prometheus.yml
RATE = "[$__rate_interval]"
SCHEMA_VERSION = 39


@dataclass(frozen=True)
class Query:
    """One PromQL query of a panel; `$sel` is replaced by the dashboard's selector."""

    expr: str
    legend: str = ""


@dataclass(frozen=True)
class Panel:
    """One panel: a time series (half width by default) or a stat (a sixth of the width)."""

    title: str
    queries: tuple[Query, ...]
    unit: str = "short"
    kind: str = "timeseries"
    description: str = ""
    width: int = 12
    height: int = 8


@dataclass(frozen=True)
class Row:
    """A titled row of panels, laid out left to right."""

    title: str
    panels: tuple[Panel, ...]


# ---------------------------------------------------------------------------
# Service-specific panels. Add a service's own metrics here, e.g. for arena:
#   Panel("Waiting players by arena",
#         (Query("sum by (arena) (arbiter_arena_waiting_players{$sel})", "{{arena}}"),)),
# and register the metric's provider in tests/integration/deploy/test_deploy_files.py
# (METRIC_PROVIDERS) so that the test knows the service exports it.
# ---------------------------------------------------------------------------
def _p(quantile: float, metric: str, by: str = "") -> Query:
    group = f"{by}, le" if by else "le"
    legend = f"p{int(quantile * 100)}" + (" {{" + by + "}}" if by else "")
    return Query(f"histogram_quantile({quantile}, sum by ({group}) (rate({metric}{{$sel}}{RATE})))", legend)


SERVICE_PANELS: dict[str, tuple[Panel, ...]] = {
    "pairing": (
        # Every replica counts the whole table: the max, not the sum.
        Panel("Tournaments by state", (Query("max by (state) (arbiter_tournaments{$sel})", "{{state}}"),)),
        Panel("Round paired in (p50 / p99)", (_p(0.5, "arbiter_pairing_seconds_bucket", "format"),
                                               _p(0.99, "arbiter_pairing_seconds_bucket", "format")), unit="s",
              description="From the decision to pair a round to its commit: opening draw, engine, save."),
        Panel("Round transition parts (p99)", (
            _p(0.99, "arbiter_result_age_seconds_bucket"),
            Query(f"histogram_quantile(0.99, sum by (le) (rate(arbiter_tournament_step_wait_seconds_bucket"
                  f"{{$sel}}{RATE})))", "p99 woken -> worker"),
        ), unit="s", description="A result's age when applied, then the wait for a worker; the pairing follows."),
        Panel("Results/s by source", (
            Query(f"sum by (source) (rate(arbiter_results_applied_total{{$sel}}{RATE}))", "applied {{source}}"),
            Query(f"sum by (reason) (rate(arbiter_results_ignored_total{{$sel}}{RATE}))", "ignored {{reason}}"),
            Query(f"sum by (source) (rate(arbiter_results_corrected_total{{$sel}}{RATE}))", "corrected {{source}}"),
        ), unit="ops"),
        Panel("Games requested and forfeited/s", (
            Query(f"sum(rate(arbiter_games_requested_total{{$sel}}{RATE}))", "requested"),
            Query(f"sum(rate(arbiter_busy_forfeits_total{{$sel}}{RATE}))", "busy forfeits (T-18)"),
            Query(f"sum(rate(arbiter_pairing_no_valid_pairing_total{{$sel}}{RATE}))", "Swiss ended: no valid pairing"),
            Query(f"sum(rate(arbiter_pairing_engine_faults_total{{$sel}}{RATE}))", "Swiss engine faults"),
            Query(f"sum by (step) (rate(arbiter_tournament_step_errors_total{{$sel}}{RATE}))", "step errors {{step}}"),
            Query(f"sum(rate(arbiter_busy_registry_rebuilds_total{{$sel}}{RATE}))", "busy registry rebuilds"),
        ), unit="ops"),
    ),
    "clock": (
        # The count is read from Redis, so every replica reports the same number.
        Panel("Live clocks", (Query("max(arbiter_clock_live_clocks{$sel})", "live clocks"),)),
        Panel("Moves/s by outcome", (
            Query(f"sum by (outcome) (rate(arbiter_clock_moves_total{{$sel}}{RATE}))", "{{outcome}}"),), unit="ops"),
        Panel("Flags/s by reason", (
            Query(f"sum by (reason) (rate(arbiter_clock_flags_total{{$sel}}{RATE}))", "{{reason}}"),), unit="ops"),
        Panel("Flag latency (p50 / p99)", (_p(0.5, "arbiter_clock_flag_latency_seconds_bucket"),
                                           _p(0.99, "arbiter_clock_flag_latency_seconds_bucket")), unit="s",
              description="From a flag's deadline to its verdict saved for publishing."),
        Panel("Play-site events/s", (Query(
            f"sum by (kind, outcome) (rate(arbiter_clock_events_total{{$sel}}{RATE}))", "{{kind}} {{outcome}}"),),
              unit="ops"),
    ),
    "arena": (
        # Only the replica that owns an arena reports it.
        Panel("Waiting players by arena", (
            Query("max by (arena) (arbiter_arena_waiting_players{$sel})", "{{arena}}"),)),
        Panel("Leaderboard size by arena", (
            Query("max by (arena) (arbiter_arena_leaderboard_size{$sel})", "{{arena}}"),)),
        Panel("Game end -> next game (p50 / p99)", (
            _p(0.5, "arbiter_arena_requeue_to_request_seconds_bucket"),
            _p(0.99, "arbiter_arena_requeue_to_request_seconds_bucket"),
        ), unit="s", description="AR-2: from a player's game end to their next GameRequested."),
        Panel("Pairings and cooldown refusals/s", (
            Query(f"sum(rate(arbiter_arena_pairings_total{{$sel}}{RATE}))", "pairings"),
            Query(f"sum(rate(arbiter_arena_cooldown_refusals_total{{$sel}}{RATE}))", "cooldown refusals (AR-3)"),
            Query(f"sum(rate(arbiter_arena_rating_fallbacks_total{{$sel}}{RATE}))", "rank-only passes"),
            Query(f"sum(rate(arbiter_arena_rebuilds_total{{$sel}}{RATE}))", "rebuilds"),
        ), unit="ops"),
        Panel("Pairing pass (p50 / p99)", (
            _p(0.5, "arbiter_arena_pairing_pass_seconds_bucket"),
            _p(0.99, "arbiter_arena_pairing_pass_seconds_bucket"),
        ), unit="s"),
        # A count beside a latency would be read on the seconds axis: a panel of its own.
        Panel("Arenas live and owned by replica", (
            Query("max(arbiter_arena_live_arenas{$sel})", "live"),
            Query("sum by (instance) (arbiter_arena_owned_arenas{$sel})", "owned by {{instance}}"),), unit="short",
              description="Arenas running or closing, and those whose Redis lease each replica holds, so whose"
                          " pairing it runs: the owned ones add up to the live ones."),
    ),
    "rating": (
        Panel("Rated games/s", (
            Query(f'sum(rate(arbiter_rating_games_total{{$sel, outcome="rated"}}{RATE}))', "rated"),
            Query(f"sum(rate(arbiter_rating_games_revised_total{{$sel}}{RATE}))", "re-rated after a late game"),
        ), unit="ops"),
        Panel("Games not rated/s by reason", (Query(
            f'sum by (outcome, reason) (rate(arbiter_rating_games_total{{$sel, outcome!="rated"}}{RATE}))',
            "{{outcome}} {{reason}}"),), unit="ops"),
        Panel("Finish -> rating committed (p50 / p99)", (
            _p(0.5, "arbiter_rating_update_latency_seconds_bucket"),
            _p(0.99, "arbiter_rating_update_latency_seconds_bucket"),
        ), unit="s"),
    ),
    "openings": (
        Panel("Opening draws/s", (Query(
            f"sum by (variant, mode, outcome) (rate(arbiter_opening_draws_total{{$sel}}{RATE}))",
            "{{variant}} {{mode}} {{outcome}}"),), unit="ops"),
    ),
}


# The site at a glance, above the per-service panels of the overview.
OVERVIEW_ROW = Row("Competition", (
    Panel("Live clocks", (Query("max(arbiter_clock_live_clocks{$sel})"),), kind="stat", width=4, height=4),
    Panel("Waiting arena players", (Query("sum(max by (arena) (arbiter_arena_waiting_players{$sel}))"),),
          kind="stat", width=4, height=4),
    Panel("Running tournaments", (Query('max(arbiter_tournaments{$sel, state="running"})'),),
          kind="stat", width=4, height=4),
    Panel("Rated games/s", (Query(f'sum(rate(arbiter_rating_games_total{{$sel, outcome="rated"}}{RATE}))'),),
          unit="ops", kind="stat", width=4, height=4),
    Panel("Tournament results/s", (Query(f"sum(rate(arbiter_results_applied_total{{$sel}}{RATE}))"),),
          unit="ops", kind="stat", width=4, height=4),
    Panel("Games requested/s", (
        Query(f"sum(rate(arbiter_games_requested_total{{$sel}}{RATE}))", "tournaments"),
        Query(f"sum(rate(arbiter_arena_pairings_total{{$sel}}{RATE}))", "arenas"),
    ), unit="ops", kind="stat", width=4, height=4),
))


def _by(group: tuple[str, ...], *labels: str) -> str:
    return ", ".join((*group, *labels))


def _legend(group: tuple[str, ...], *labels: str) -> str:
    return " ".join("{{" + label + "}}" for label in (*group, *labels))


def _quantiles(metric: str, group: tuple[str, ...], label: str) -> tuple[Query, ...]:
    return tuple(
        Query(
            f"histogram_quantile({q}, sum by ({_by(group, label, 'le')}) (rate({metric}{{$sel}}{RATE})))",
            f"p{int(q * 100)} " + _legend(group, label),
        )
        for q in (0.5, 0.99)
    )


def group_matcher(services: tuple[str, ...] = SERVICES) -> str:
    """The `consumergroup` matcher of `services`' groups, whatever prefix they run with."""
    names = [name.replace(".", "[.]") for service in services for name in CONSUMER_GROUPS[service]]
    return f'consumergroup=~".*({"|".join(names)})"'


def broker_view_row(services: tuple[str, ...] = SERVICES) -> Row:
    """Lag of `services`' consumer groups as the broker sees it (deploy/RUNBOOK.md, ArbiterConsumerStalled)."""
    groups = group_matcher(services)
    return Row("Consumer lag seen by the broker", (
        Panel("Lag by group and topic (broker's view)", (Query(
            f"sum by (consumergroup, topic) (kafka_consumergroup_lag{{{groups}}} >= 0)",
            "{{consumergroup}} {{topic}}"),), unit="short",
              description="Records after each group's committed offset, summed over the partitions where it has"
                          " committed, asked of the broker by kafka-exporter (the embedded stack's lag exporter"
                          " under `arbiter up`): it keeps growing while a consumer is frozen or dead, which the"
                          " services' own arbiter_consumer_lag cannot show."),
        Panel("Members by group (broker's view)", (Query(
            f"max by (consumergroup) (kafka_consumergroup_members{{{groups}}})", "{{consumergroup}}"),),
              unit="short",
              description="Consumers in each group, as its coordinator counts them. Lag growing with members:"
                          " they are stuck; with none: nothing consumes."),
    ))


def kit_rows(group: tuple[str, ...] = (), streams: bool = True, timers: bool = True) -> tuple[Row, ...]:
    """The standard panels of arbiter.kit.metrics, broken down by `group` labels first.

    Without `streams` or `timers` the panels of Watch streams or of stored timers are left out.
    """
    stats = Row("Summary", (
        Panel("Requests/s", (Query(f"sum(rate(arbiter_grpc_requests_total{{$sel}}{RATE}))"),),
              unit="reqps", kind="stat", width=4, height=4,
              description="gRPC calls and streams started, health checks not counted."),
        Panel("Server errors", (Query(
            f"sum(rate(arbiter_grpc_server_errors_total{{$sel}}{RATE}))"
            f" / sum(rate(arbiter_grpc_requests_total{{$sel}}{RATE}))"),),
              unit="percentunit", kind="stat", width=4, height=4,
              description="Share of calls that failed on our side (INTERNAL, UNAVAILABLE...); refusals by design"
                          " (invalid argument, permission denied...) are not errors."),
        Panel("Unary gRPC p99", (Query(
            f"histogram_quantile(0.99, sum by (le) (rate(arbiter_grpc_request_seconds_bucket{{$sel}}{RATE})))"),),
              unit="s", kind="stat", width=4, height=4),
        Panel("Events consumed/s", (Query(f"sum(rate(arbiter_events_consumed_total{{$sel}}{RATE}))"),),
              unit="ops", kind="stat", width=4, height=4),
        Panel("Consumer lag", (Query(
            "sum(max by (service, topic, partition) (arbiter_consumer_lag{$sel}))"),),
              unit="short", kind="stat", width=4, height=4),
        Panel("Outbox pending", (Query("sum(max by (service) (arbiter_outbox_pending{$sel}))"),),
              unit="short", kind="stat", width=4, height=4),
    ))
    health = Row("Health", (
        Panel("Dependencies answering", (Query(
            f"min by ({_by(group, 'dependency')}) (arbiter_dependency_up{{$sel}})", _legend(group, "dependency")),),
              unit="short", width=8,
              description="1: every replica's last readiness check got an answer from the dependency; 0: at least"
                          " one replica did not, and reports NOT_SERVING (deploy/RUNBOOK.md)."),
        Panel("Event-loop lag by instance", (Query(
            f"max by ({_by(group, 'instance')}) (arbiter_event_loop_lag_seconds{{$sel}})",
            _legend(group, "instance")),),
              unit="s", width=8,
              description="How late the event loop wakes a task; it keeps growing while the loop is stuck."),
        Panel("Running builds", (Query(
            f"count by ({_by(group, 'version', 'revision')}) (arbiter_build_info{{$sel}})",
            _legend(group, "version", "revision")),), unit="short", width=8,
              description="Replicas by version and source revision: two lines during a rollout."),
    ))
    grpc_panels = [
        Panel("Requests by method", (Query(
            f"sum by ({_by(group, 'method')}) (rate(arbiter_grpc_requests_total{{$sel}}{RATE}))",
            _legend(group, "method")),), unit="reqps"),
        Panel("Server errors by method and code", (Query(
            f"sum by ({_by(group, 'method', 'code')}) (rate(arbiter_grpc_server_errors_total{{$sel}}{RATE}))",
            _legend(group, "method", "code")),), unit="reqps",
              description="Calls that failed on our side: a bug (INTERNAL, UNKNOWN), or a dependency that did not"
                          " answer (UNAVAILABLE, DEADLINE_EXCEEDED raised by our handler)."),
        Panel("Unary latency p50 / p99 by method",
              _quantiles("arbiter_grpc_request_seconds_bucket", group, "method"), unit="s"),
        Panel("Refused calls by method and code", (Query(
            f"sum by ({_by(group, 'method', 'code')}) (rate(arbiter_refused_calls_total{{$sel}}{RATE}))",
            _legend(group, "method", "code")),), unit="reqps",
              description="Calls refused by design: invalid argument, not found, failed precondition, permission"
                          " denied, unauthenticated, rate limited..."),
    ]
    if streams:
        grpc_panels += [
            Panel("Open streams by method", (Query(
                f"sum by ({_by(group, 'method')}) (arbiter_grpc_streams_open{{$sel}})", _legend(group, "method")),),
                  unit="short", description="Watch streams open now, over every replica."),
            Panel("Stream duration p50 / p99 by method",
                  _quantiles("arbiter_grpc_stream_seconds_bucket", group, "method"), unit="s",
                  description="How long Watch streams stayed open, counted when they end (WATCH_MAX_SECONDS at"
                              " most)."),
        ]
    grpc = Row("gRPC", tuple(grpc_panels))
    events = Row("Kafka events", (
        Panel("Events consumed by topic and outcome", (Query(
            f"sum by ({_by(group, 'topic', 'outcome')}) (rate(arbiter_events_consumed_total{{$sel}}{RATE}))",
            _legend(group, "topic", "outcome")),), unit="ops",
              description="handled, duplicate (already processed: idempotency), ignored, error."),
        Panel("Handler latency p50 / p99 by topic", _quantiles("arbiter_event_handler_seconds_bucket", group, "topic"),
              unit="s"),
        Panel("Events published by topic", (Query(
            f"sum by ({_by(group, 'topic')}) (rate(arbiter_events_published_total{{$sel}}{RATE}))",
            _legend(group, "topic")),), unit="ops", description="Relayed from the transactional outbox."),
        Panel("Consumer lag by topic", (Query(
            f"sum by ({_by(group, 'topic')})"
            f" (max by ({_by(group, 'topic', 'partition')}) (arbiter_consumer_lag{{$sel}}))",
            _legend(group, "topic")),), unit="short",
              description="Records between each replica's read position and the partition end,"
                          " summed over partitions."),
    ))
    outbox_panels = [
        Panel("Outbox pending", (Query(
            f"max by ({_by(group) or 'service'}) (arbiter_outbox_pending{{$sel}})",
            _legend(group) or "pending"),), unit="short", width=6,
              description="Saved events not yet published (one relay per schema holds the advisory lock)."),
        Panel("Events set aside by topic", (Query(
            f"sum by ({_by(group, 'topic')}) (arbiter_outbox_set_aside_total{{$sel}})",
            _legend(group, "topic")),), unit="short", width=6,
              description="Events the broker can never take as they are (larger than KAFKA_MAX_MESSAGE_BYTES),"
                          " moved to the schema's outbox_set_aside table so that later events still go out."
                          " Any rise needs an operator: deploy/README.md says how to send them again."),
    ]
    if timers:
        outbox_panels.append(Panel("Timers fired by kind", (Query(
            f"sum by ({_by(group, 'kind')}) (rate(arbiter_timers_fired_total{{$sel}}{RATE}))",
            _legend(group, "kind")),), unit="ops", width=6))
    outbox_panels.append(Panel("Rows deleted by retention, by table", (Query(
        f"sum by ({_by(group, 'table')}) (rate(arbiter_retention_deleted_total{{$sel}}{RATE}))",
        _legend(group, "table")),), unit="ops", width=6,
          description="Processed-event ids older than PROCESSED_EVENTS_RETENTION_HOURS (8 days by default),"
                      " deleted every RETENTION_SWEEP_SECONDS: bursts, not a steady rate, and none while the"
                      " system is younger than the retention."))
    outbox = Row("Outbox, timers and retention" if timers else "Outbox and retention", tuple(outbox_panels))
    errors = Row("Errors", (
        Panel("Errors by kind", (Query(
            f"sum by ({_by(group, 'kind')}) (rate(arbiter_errors_total{{$sel}}{RATE}))",
            _legend(group, "kind")),), unit="ops", description="Unexpected errors (gRPC internal, outbox relay...)."),
        Panel("Handler errors and records set aside by topic", (Query(
            f'sum by ({_by(group, "topic", "outcome")}) (rate(arbiter_events_consumed_total'
            f'{{$sel, outcome=~"error|set_aside"}}{RATE}))',
            _legend(group, "topic", "outcome")),), unit="ops",
              description="error: a failed handler run, tried again. set_aside: a record that does not parse, breaks"
                          " the field rules or kept failing, moved to the schema's consumer_set_aside table"
                          " (arbiter_events_set_aside_total by reason; `arbiter set-aside` lists and replays them)."),
        Panel("Consumed records set aside by topic and reason", (Query(
            f"sum by ({_by(group, 'topic', 'reason')}) (arbiter_events_set_aside_total{{$sel}})",
            _legend(group, "topic", "reason")),), unit="short",
              description="undecodable (not the topic's message), invalid (breaks the field rules: NUL, ids, enums,"
                          " dates) or handler_failed (failed every attempt), kept in the schema's consumer_set_aside"
                          " table so that the partition moves on. Any rise needs an operator: `arbiter set-aside`"
                          " lists them and replays them once the cause is gone (deploy/README.md)."),
    ))
    collector = Row("Garbage collection", (
        Panel("Time in garbage collection by generation", (Query(
            f"sum by ({_by(group, 'generation')}) (rate(arbiter_gc_pause_seconds_sum{{$sel}}{RATE}))",
            _legend(group, "generation")),), unit="percentunit",
              description="Share of wall time the event loop stood still collecting (GC_YOUNG_THRESHOLD)."),
        Panel("Collection pause p50 / p99 by generation",
              _quantiles("arbiter_gc_pause_seconds_bucket", group, "generation"), unit="s",
              description="A full (generation 2) collection delays every event and call waiting meanwhile."),
    ))
    return (stats, health, grpc, events, outbox, errors, collector)


class _Layout:
    """Assigns ids and grid positions (24 columns) in order."""

    def __init__(self) -> None:
        self.next_id = 1
        self.x = 0
        self.y = 0
        self.row_height = 0
        self.panels: list[dict] = []

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append({
            "id": self._id(), "type": "row", "title": title, "collapsed": False,
            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": [],
        })
        self.y += 1

    def _newline(self) -> None:
        if self.x:
            self.y += self.row_height
            self.x = 0
            self.row_height = 0

    def panel(self, panel: Panel, selector: str) -> None:
        if self.x + panel.width > 24:
            self._newline()
        targets = []
        for index, query in enumerate(panel.queries):
            targets.append({
                "refId": chr(ord("A") + index),
                "datasource": DATASOURCE,
                "expr": query.expr.replace("$sel", selector),
                "legendFormat": query.legend or "__auto",
                "range": True,
            })
        body: dict = {
            "id": self._id(), "type": panel.kind, "title": panel.title, "description": panel.description,
            "datasource": DATASOURCE,
            "gridPos": {"x": self.x, "y": self.y, "w": panel.width, "h": panel.height},
            "targets": targets,
        }
        if panel.kind == "stat":
            body["fieldConfig"] = {"defaults": {"unit": panel.unit, "decimals": 2}, "overrides": []}
            body["options"] = {
                "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                "colorMode": "value", "graphMode": "area", "textMode": "auto",
            }
        else:
            body["fieldConfig"] = {
                "defaults": {"unit": panel.unit, "custom": {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
                                                            "showPoints": "never", "spanNulls": True}},
                "overrides": [],
            }
            body["options"] = {
                "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["mean", "max"]},
                "tooltip": {"mode": "multi", "sort": "desc"},
            }
        self.panels.append(body)
        self.x += panel.width
        self.row_height = max(self.row_height, panel.height)


def _dashboard(uid: str, title: str, tags: list[str], rows: tuple[Row, ...], selector: str,
               variables: list[dict]) -> dict:
    layout = _Layout()
    for row in rows:
        layout.row(row.title)
        for panel in row.panels:
            layout.panel(panel, selector)
    return {
        "id": None,
        "uid": uid,
        "title": title,
        "tags": tags,
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "time": {"from": "now-1h", "to": "now"},
        "links": [{"type": "dashboards", "tags": ["arbiter"], "asDropdown": True, "title": "Arbiter",
                   "includeVars": False, "keepTime": True}],
        "annotations": {"list": []},
        "templating": {"list": variables},
        "panels": layout.panels,
    }


def service_dashboard(service: str) -> dict:
    """The dashboard of one service: the kit's panels, then the service's own."""
    definition = f'label_values(arbiter_outbox_pending{{service="{service}"}}, instance)'
    instance = {
        "name": "instance", "label": "Instance", "type": "query", "datasource": DATASOURCE,
        "definition": definition, "query": {"query": definition, "refId": "instance"},
        "refresh": 2, "includeAll": True, "multi": True, "allValue": ".*", "sort": 1,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
    }
    rows = (*kit_rows(streams=service in STREAMING_SERVICES, timers=service in TIMER_SERVICES),
            broker_view_row((service,)))
    own = SERVICE_PANELS.get(service, ())
    if own:
        rows = (*rows, Row(service.capitalize(), own))
    return _dashboard(
        f"arbiter-{service}", f"Arbiter / {service}", ["arbiter", service], rows,
        f'service="{service}", instance=~"$instance"', [instance],
    )


def overview_dashboard() -> dict:
    """Every service side by side: the kit's panels broken down by service."""
    service = {
        "name": "service", "label": "Service", "type": "custom", "query": ",".join(SERVICES),
        "includeAll": True, "multi": True, "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "options": [],
    }
    return _dashboard(
        "arbiter-overview", "Arbiter / overview", ["arbiter", "overview"],
        (OVERVIEW_ROW, *kit_rows(("service",)), broker_view_row()),
        'service=~"$service"', [service],
    )


def dashboards() -> dict[str, dict]:
    """File name -> dashboard, for every dashboard this script writes."""
    result = {f"{name}.json": service_dashboard(name) for name in SERVICES}
    result["overview.json"] = overview_dashboard()
    return result


def render(dashboard: dict) -> str:
    """The exact text of a dashboard file."""
    return json.dumps(dashboard, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) every dashboard file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file differs from what would be written")
    args = parser.parse_args(argv)
    stale = []
    DASHBOARDS_DIR.mkdir(parents=True, exist_ok=True)
    for name, dashboard in dashboards().items():
        path = DASHBOARDS_DIR / name
        text = render(dashboard)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"stale dashboards (run {Path(__file__).name}): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
