-- Events the relay has published, kept OUTBOX_KEEP_PUBLISHED_HOURS after Kafka acknowledged them so
-- that they can be sent again when a broker loses them (a memory broker restarted, a cluster restored
-- from nothing): `arbiter republish` moves them back to the outbox (README.md, "Losing the broker").
CREATE TABLE outbox_published (
    id           bigint      PRIMARY KEY,
    topic        text        NOT NULL,
    key          text        NOT NULL,
    payload      bytea       NOT NULL,
    event_id     text        NOT NULL,
    event_type   text        NOT NULL,
    trace_id     text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    published_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_published_at ON outbox_published (published_at);
