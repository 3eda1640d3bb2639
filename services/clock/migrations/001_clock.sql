-- The clock service's records. Live (Fischer) clocks live in Redis only: they last minutes and
-- change at every move. Triple Block clocks last months: PostgreSQL is their system of record and
-- Redis holds a mirror (for reads and the deadline set), rebuilt from here after a Redis loss.

CREATE TABLE tb_games (
    game_id     text        PRIMARY KEY,
    -- Bumped at every change; the Redis mirror keeps only the newest version.
    version     bigint      NOT NULL DEFAULT 1,
    status      text        NOT NULL,
    -- The clocked game as the Redis copy holds it (services/clock/clocked_game.py `encode_body`).
    record      text        NOT NULL,
    -- The next instant the service must decide (competition ms), while the clock runs.
    deadline_ms bigint,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tb_games_live ON tb_games (game_id) WHERE status NOT IN ('over');

-- One verdict per game, ever: a flag re-fired after a crash or by a second replica inserts
-- nothing and so publishes nothing (the outbox event is written in the same transaction).
CREATE TABLE verdicts (
    game_id     text        PRIMARY KEY,
    outcome     text        NOT NULL,      -- flagged | abandoned (T-19)
    loser_id    text        NOT NULL DEFAULT '',
    reason      int         NOT NULL,      -- arbiter.contracts.Termination
    never_sat   boolean     NOT NULL,      -- R-3
    flagged_at  timestamptz NOT NULL,      -- the deadline (competition time)
    decided_at  timestamptz NOT NULL
);
