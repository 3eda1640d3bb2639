#!/bin/bash
# Starts the Apache Kafka broker of docker-compose.yml, then gives it its SCRAM users and ACLs.
#
# Clients authenticate with SASL/SCRAM-SHA-512 on the SASL (in-network) and HOST (127.0.0.1:9094)
# listeners: one user per service, one for the play site and one for kafka-exporter, passwords from
# the environment (KAFKA_PASSWORD_<USER>). The authorizer refuses whatever no ACL allows: each user may produce
# only the topics it owns (arbiter.kit.events.PRODUCERS; tests/integration/deploy checks that this
# file says the same), read every topic and use consumer groups. Users and ACLs are set through
# the LOCAL listener, plain text on the container's loopback only, whose anonymous user is super.
# The container is healthy once /tmp/arbiter-kafka-ready exists: the services start after it.
set -euo pipefail

rm -f /tmp/arbiter-kafka-ready
/etc/kafka/docker/run &
broker=$!
local_server=127.0.0.1:9095
until /opt/kafka/bin/kafka-broker-api-versions.sh --bootstrap-server "$local_server" > /dev/null 2>&1; do
  kill -0 "$broker" || exit 1
  sleep 1
done

user() {  # user NAME PASSWORD
  /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$local_server" --alter --entity-type users \
    --entity-name "$1" --add-config "SCRAM-SHA-512=[iterations=8192,password=$2]"
}
acl() {  # acl USER ARGS...: allow USER what ARGS say
  local name=$1
  shift
  /opt/kafka/bin/kafka-acls.sh --bootstrap-server "$local_server" --add --allow-principal "User:$name" "$@" > /dev/null
}
produces() {  # produces USER TOPIC...
  local name=$1
  shift
  for topic in "$@"; do
    acl "$name" --operation Write --topic "$topic"
  done
}

for name in pairing clock arena rating openings play-site; do
  variable="KAFKA_PASSWORD_$(echo "$name" | tr 'a-z-' 'A-Z_')"
  user "$name" "${!variable}"
  # Everyone reads every topic, describes the cluster and its topics, and uses consumer groups.
  acl "$name" --operation Read --operation Describe --topic '*'
  acl "$name" --operation Read --operation Describe --group '*'
  acl "$name" --operation Describe --cluster
done
# kafka-exporter only reads offsets: it describes the cluster, the topics and the groups (ListGroups,
# DescribeGroups, OffsetFetch, ListOffsets), and never reads a record, joins a group nor writes.
user kafka-exporter "$KAFKA_PASSWORD_KAFKA_EXPORTER"
acl kafka-exporter --operation Describe --topic '*'
acl kafka-exporter --operation Describe --group '*'
acl kafka-exporter --operation Describe --cluster
# The services create their topics at start (arbiter.kit.kafka.ensure_topics).
for name in pairing clock arena rating openings; do
  acl "$name" --operation Create --cluster
done

produces pairing game.requested game.finished tournament.created tournament.started tournament.round_paired \
  tournament.finished tournament.cancelled
produces clock game.abandoned clock.flagged clock.state
produces arena game.requested arena.boost_taken arena.created arena.finished
produces rating rating.updated
produces openings opening.drawn
produces play-site game.started game.move_made game.presence_changed game.finished

touch /tmp/arbiter-kafka-ready
wait "$broker"
