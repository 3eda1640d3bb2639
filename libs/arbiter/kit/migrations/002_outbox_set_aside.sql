-- Events the broker can never take as they are (a record batch of one larger than its
-- message.max.bytes, KAFKA_MAX_MESSAGE_BYTES), moved here by the relay so that the events saved
-- after them still go out. deploy/README.md says how to send them again.
CREATE TABLE outbox_set_aside (
    id          bigint      PRIMARY KEY,
    topic       text        NOT NULL,
    key         text        NOT NULL,
    payload     bytea       NOT NULL,
    event_id    text        NOT NULL,
    event_type  text        NOT NULL,
    created_at  timestamptz NOT NULL,
    set_aside_at timestamptz NOT NULL DEFAULT now(),
    reason      text        NOT NULL
);
