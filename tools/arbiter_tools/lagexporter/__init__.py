"""Consumer lag seen from the broker: committed offsets against partition ends, per group, topic and partition.

A process of its own (`python -m arbiter_tools.lagexporter`, settings from the environment:
`LagExporterSettings`) that asks the broker over the Kafka protocol and serves what it finds on
/metrics under kafka-exporter's metric names, so that the alert rules and dashboards written for
kafka-exporter (docker-compose, Kubernetes) read the embedded stack's numbers the same way.
It judges the consumers without being one of them: a frozen service stops committing, and the
broker, asked by someone else, says so.
"""
