"""Several replicas of each service on one machine: how many, what each is called, what its clients dial.

`arbiter up --replicas 2 --replicas clock=3` reads as: every service twice, the clock three
times. Replicas of a service share its consumer groups, so Kafka divides each topic's
partitions among them: a topic needs at least as many partitions as the largest replica count,
or the replicas beyond it read nothing. Their callers get one gRPC target naming every replica
(`ipv4:A,B`), which `arbiter.kit.grpcclient` balances round robin and fails over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from arbiter.kit.settings import KitSettings

# What the services create topics with when KAFKA_PARTITIONS is not set.
SERVICE_DEFAULT_PARTITIONS: int = KitSettings.model_fields["kafka_partitions"].default


class ReplicaSpecError(ValueError):
    """A `--replicas` value that names no service or no positive count."""


def parse_replicas(values: Iterable[str], services: Sequence[str]) -> dict[str, int]:
    """Replicas per service from `--replicas` values: `N` sets every service, `name=N` one; later values win."""
    counts = dict.fromkeys(services, 1)
    for value in values:
        for part in value.split(","):
            name, sep, number = part.strip().rpartition("=")
            if sep and name not in counts:
                raise ReplicaSpecError(f"--replicas {part!r}: no service {name!r}; one of {', '.join(services)}")
            if not number.isdigit() or int(number) < 1:
                raise ReplicaSpecError(f"--replicas {part!r}: the count must be a whole number of at least 1")
            for service in ([name] if sep else services):
                counts[service] = int(number)
    return counts


def partitions_for(largest_count: int, given: str | None, embedded_partitions: int | None) -> str | None:
    """The KAFKA_PARTITIONS services start with; None leaves the services' own default.

    `given`: the operator's KAFKA_PARTITIONS, kept unless a service has more replicas than that
    (those would read nothing). `embedded_partitions`: the embedded broker's count (None for a
    given broker), raised to the replicas' need but no further, since tansu's fetches cost more
    with every partition they name. A given broker keeps the services' default unless more
    replicas need more.
    """
    if given:
        return str(max(int(given), largest_count))
    if embedded_partitions is not None:
        return str(max(embedded_partitions, largest_count))
    return str(largest_count) if largest_count > SERVICE_DEFAULT_PARTITIONS else None


def replica_label(service: str, replica: int) -> str:
    """The name of one replica in output, logs and REPLICA_ID: the service's own for the first."""
    return service if replica == 1 else f"{service}-{replica}"


def grpc_target(addresses: Sequence[str]) -> str:
    """One `host:port` as it is; several as one `ipv4:` target a channel balances over and fails over between."""
    if not addresses:
        raise ValueError("no replica address")
    if len(addresses) == 1:
        return addresses[0]
    return "ipv4:" + ",".join(addresses)


def replicas_line(counts: Mapping[str, int], partitions: str | None) -> str:
    """One line for `arbiter up`'s output: the replicas of each service and the partitions per topic."""
    shown = ", ".join(f"{name} x{count}" for name, count in counts.items())
    return f"replicas   {shown}; partitions per topic: {partitions or SERVICE_DEFAULT_PARTITIONS}"


def replicas_status(states: Mapping[str, Sequence[tuple[str, bool]]]) -> str:
    """The live view's line: every replica of every service by name, each marked up or DOWN."""
    return "replicas: " + "  ".join(f"{label} {'up' if up else 'DOWN'}"
                                    for replicas in states.values() for label, up in replicas)
