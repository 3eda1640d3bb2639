"""Write deploy/k8s/prometheus-rule.yaml: the alert rules of alerts.yml as a Prometheus Operator PrometheusRule.

    .venv/bin/python deploy/prometheus/prometheus_rule.py           # rewrite the manifest
    .venv/bin/python deploy/prometheus/prometheus_rule.py --check   # exit 1 if it is stale

alerts.yml is the one place the rules are edited; docker-compose's Prometheus loads it as it
is and Kubernetes gets this copy, so the two never drift
(tests/integration/deploy/test_alert_rules.py checks the copy is up to date).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[1]
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
MANIFEST = DEPLOY / "k8s" / "prometheus-rule.yaml"
HEADER = """\
# Written by deploy/prometheus/prometheus_rule.py from deploy/prometheus/alerts.yml: edit that file.
# Needs the Prometheus Operator's CRDs (monitoring.coreos.com/v1); its Prometheus picks the rule up
# when its ruleSelector matches these labels (kube-prometheus-stack: add the `release` label of
# your installation). Runbook: deploy/RUNBOOK.md.
"""


class _Literal(str):
    """A string written as a YAML block (the multi-line PromQL stays readable)."""


def _literal(dumper: yaml.SafeDumper, text: _Literal) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")


class _Dumper(yaml.SafeDumper):
    """Block strings for multi-line expressions; lists indented under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


_Dumper.add_representer(_Literal, _literal)


def _blocks(value: object) -> object:
    if isinstance(value, dict):
        return {key: _blocks(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_blocks(item) for item in value]
    if isinstance(value, str) and "\n" in value:
        return _Literal(value)
    return value


def manifest(rules: dict) -> dict:
    """The PrometheusRule holding `rules` (alerts.yml as parsed)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "arbiter",
            "labels": {"app.kubernetes.io/part-of": "arbiter", "prometheus": "arbiter", "role": "alert-rules"},
        },
        "spec": {"groups": rules["groups"]},
    }


def render(rules: dict) -> str:
    """The exact text of the manifest."""
    body = yaml.dump(_blocks(manifest(rules)), Dumper=_Dumper, sort_keys=False, width=1000, allow_unicode=True)
    return HEADER + body


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) the manifest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the manifest is not what would be written")
    args = parser.parse_args(argv)
    text = render(yaml.safe_load(ALERTS.read_text()))
    if args.check:
        if not MANIFEST.exists() or MANIFEST.read_text() != text:
            print(f"stale: {MANIFEST.relative_to(DEPLOY.parent)} (run {Path(__file__).name})", file=sys.stderr)
            return 1
        return 0
    MANIFEST.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
