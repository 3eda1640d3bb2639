-- Events Kafka can never take as they are (larger than a whole producer batch), moved here by the
-- relay so that the events saved after them still go out. deploy/README.md says how to send them again.
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
