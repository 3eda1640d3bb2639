-- The kit's tables, created in every service's own schema before its own migrations.

-- Transactional outbox: written in the same transaction as the state change it reports.
CREATE TABLE outbox (
    id          bigserial PRIMARY KEY,
    topic       text        NOT NULL,
    key         text        NOT NULL,
    payload     bytea       NOT NULL,
    event_id    text        NOT NULL,
    event_type  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_outbox', '');
    RETURN NULL;
END $$;

CREATE TRIGGER outbox_inserted AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- Idempotent consumers: an event id is recorded in the same transaction as its effect.
CREATE TABLE processed_events (
    consumer     text        NOT NULL,
    event_id     text        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

-- Stored timers: a restarted service fires them late rather than never.
CREATE TABLE timers (
    timer_id  text        PRIMARY KEY,
    kind      text        NOT NULL,
    due_at    timestamptz NOT NULL,
    payload   jsonb       NOT NULL DEFAULT '{}'::jsonb,
    fired_at  timestamptz
);
CREATE INDEX timers_due ON timers (due_at) WHERE fired_at IS NULL;
