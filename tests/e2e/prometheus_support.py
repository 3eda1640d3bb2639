"""A Prometheus server of a test, scraping a running system: start, ask, wait (a plain module, see conftest.py).

Debian's `prometheus` (`make tools` installs it) scrapes each of the system's services under a job
named after it, as deploy/prometheus/prometheus.yml does, and the lag exporter, when the system
runs one, under the job `kafka-exporter` (the name of its production twin's job).
`time_compressed` writes the alert rules with every duration divided, so that a test sees in
seconds what production sees in minutes, from the one rule file production loads.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from arbiter_tools.devstack.processes import ManagedProcess, free_port
from arbiter_tools.devstack.stack import SystemStack
from tests.support.polling import eventually_blocking

ROOT = Path(__file__).resolve().parents[2]
ALERT_RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
LAG_EXPORTER_JOB = "kafka-exporter"


class QueryError(Exception):
    """Prometheus answered a query with an error."""


def system_jobs(stack: SystemStack) -> dict[str, list[str]]:
    """Scrape targets by job: each service of `stack`, and its lag exporter when it runs one."""
    jobs = {name: [f"127.0.0.1:{service.metrics_port}"] for name, service in stack.services.items()
            if service.process is not None}
    if stack.lag_exporter is not None:
        jobs[LAG_EXPORTER_JOB] = [f"127.0.0.1:{stack.lag_exporter_port}"]
    return jobs


class Prometheus:
    """A Prometheus server scraping `jobs` every `scrape_seconds` and evaluating `rule_files` as often."""

    def __init__(self, binary: str, jobs: Mapping[str, Sequence[str]], state_dir: Path,
                 rule_files: Sequence[Path] = (ALERT_RULES,), scrape_seconds: int = 1) -> None:
        self.port = free_port()
        self.jobs = {name: list(targets) for name, targets in jobs.items()}
        self.rule_files = list(rule_files)
        config = {
            "global": {"scrape_interval": f"{scrape_seconds}s", "evaluation_interval": f"{scrape_seconds}s",
                       "scrape_timeout": f"{scrape_seconds}s"},
            "rule_files": [str(path) for path in self.rule_files],
            "scrape_configs": [{"job_name": name, "static_configs": [{"targets": targets}]}
                               for name, targets in self.jobs.items()],
        }
        config_path = state_dir / "prometheus.yml"
        config_path.write_text(yaml.safe_dump(config))
        self.process = ManagedProcess("prometheus", [
            binary, f"--config.file={config_path}", f"--storage.tsdb.path={state_dir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h",
        ], state_dir / "prometheus.log")

    def start(self) -> Prometheus:
        """Start the server and wait until it has scraped every target once, each answering."""
        self.process.start()
        expected = sum(len(targets) for targets in self.jobs.values())

        def all_up() -> bool:
            targets = self.api("targets")["activeTargets"]
            return len(targets) == expected and all(target["health"] == "up" for target in targets)

        self.wait_until("every target scraped and up", all_up)
        return self

    def stop(self) -> None:
        """Stop the server."""
        self.process.stop()

    def api(self, path: str, **params: Any) -> Any:
        """The `data` of one HTTP API answer; raises QueryError on an error answer."""
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=30) as reply:
                text = reply.read()
        except urllib.error.HTTPError as error:
            text = error.read()
        try:
            body = json.loads(text)
        except ValueError:
            # Until its storage is open the server answers 503 with a plain-text body, not JSON.
            raise QueryError(f"not a JSON answer: {text[:200]!r}") from None
        if body.get("status") != "success":
            raise QueryError(f"{body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector `expr` evaluates to now."""
        return list(self.api("query", query=expr)["result"])

    def alerts(self, name: str, **labels: str) -> list[dict[str, Any]]:
        """The active (pending or firing) alerts called `name` whose labels include `labels`."""
        return [alert for alert in self.api("alerts")["alerts"]
                if alert["labels"].get("alertname") == name and labels.items() <= alert["labels"].items()]

    def wait_until(self, what: str, condition: Callable[[], Any], timeout: float = 60.0) -> None:
        """Poll `condition` until it holds; fail naming `what` after `timeout` seconds or if the server exits."""
        def answered() -> Any:
            assert not self.process.exited(), f"prometheus exited; see {self.process.log_path}"
            return condition()
        eventually_blocking(answered, f"{what} ({self.process.log_path})", timeout=timeout, every=0.2,
                            tolerate=(OSError, QueryError))

    def latest_scrape(self) -> float:
        """The time of the oldest of the targets' last scrapes (Unix seconds)."""
        return min(float(sample["value"][1]) for sample in self.query("timestamp(up)"))


# ---------------------------------------------------------------------------
# The alert rules with time compressed
# ---------------------------------------------------------------------------

_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
_MILLISECONDS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000,
                 "y": 31_536_000_000}
# A range or a subquery: [5m], [1h:5m], [1h:].
_RANGE = re.compile(r"\[(\w+)(?::(\w*))?\]")


def duration_ms(text: str) -> int:
    """Milliseconds of a Prometheus duration (`90s`, `1m30s`, `500ms`); raises ValueError otherwise."""
    parts = _DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return sum(int(number) * _MILLISECONDS[unit] for number, unit in parts)


def _divided(text: str, factor: int) -> str:
    milliseconds = max(1, duration_ms(text) // factor)
    return f"{milliseconds // 1000}s" if milliseconds % 1000 == 0 else f"{milliseconds}ms"


def time_compressed(rules: Mapping[str, Any], factor: int) -> dict[str, Any]:
    """`rules` (a rule file as parsed) with every `for`, range and subquery step divided by `factor`."""
    def compress_range(match: re.Match[str]) -> str:
        window, step = match.group(1), match.group(2)
        if step is None:
            return f"[{_divided(window, factor)}]"
        return f"[{_divided(window, factor)}:{_divided(step, factor) if step else ''}]"

    groups = []
    for group in rules["groups"]:
        compressed = []
        for rule in group["rules"]:
            rule = dict(rule)
            rule["expr"] = _RANGE.sub(compress_range, rule["expr"])
            for key in ("for", "keep_firing_for"):
                if key in rule:
                    rule[key] = _divided(rule[key], factor)
            compressed.append(rule)
        groups.append({**group, "rules": compressed})
    return {**rules, "groups": groups}


def write_time_compressed_rules(path: Path, factor: int, source: Path = ALERT_RULES) -> Path:
    """Write `source`'s rules, time compressed by `factor`, to `path`; return it."""
    path.write_text(yaml.safe_dump(time_compressed(yaml.safe_load(source.read_text()), factor), sort_keys=False))
    return path
