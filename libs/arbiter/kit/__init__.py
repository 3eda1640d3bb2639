"""The service kit: settings, logs, metrics, Kafka, gRPC, PostgreSQL, Redis, outbox, timers."""
