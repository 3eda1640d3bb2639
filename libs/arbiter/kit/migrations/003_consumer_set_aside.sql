-- Records a consumer could not handle (arbiter.kit.poison), kept so that the partition moves on
-- and an operator can look at them and publish them again (`arbiter set-aside`). Everything of the
-- record is kept as it came: key and value as bytes, headers as [{"key": base64, "value": base64}].
-- reason: undecodable (not the topic's message), invalid (a field breaks the kit's field rules,
-- detail names it) or handler_failed (the handler kept raising; detail is its last error).
-- attempts: the handler calls the record took part in (0: it never reached the handler).
-- One row per consumer group and record: a redelivery after a crash sets nothing aside twice.
CREATE TABLE consumer_set_aside (
    id             bigserial   PRIMARY KEY,
    consumer_group text        NOT NULL,
    topic          text        NOT NULL,
    partition      integer     NOT NULL,
    "offset"       bigint      NOT NULL,
    key            bytea,
    value          bytea,
    headers        jsonb       NOT NULL DEFAULT '[]'::jsonb,
    record_time    timestamptz,
    reason         text        NOT NULL,
    detail         text        NOT NULL,
    attempts       integer     NOT NULL,
    set_aside_at   timestamptz NOT NULL DEFAULT now(),
    -- When `arbiter set-aside replay` published the record again (to a new offset).
    replayed_at    timestamptz,
    UNIQUE (consumer_group, topic, partition, "offset")
);
