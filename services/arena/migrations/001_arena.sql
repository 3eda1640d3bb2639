-- The arena's system of record (SPEC AR-1..AR-6); Redis holds only what can be rebuilt from here.

CREATE TABLE arenas (
    id                 text        PRIMARY KEY,
    creator_id         text        NOT NULL,
    request_id         text,
    name               text        NOT NULL,
    variant            text        NOT NULL,
    base_seconds       integer     NOT NULL,
    increment_seconds  integer     NOT NULL,
    speed              text        NOT NULL,
    rated              boolean     NOT NULL,
    duration_minutes   integer     NOT NULL,
    starts_at          timestamptz NOT NULL,
    ends_at            timestamptz NOT NULL,
    -- scheduled -> running -> closing (AR-1 end reached, games still running) -> finished
    state              text        NOT NULL,
    next_seq           bigint      NOT NULL DEFAULT 1,
    settings           bytea       NOT NULL,
    created_at         timestamptz NOT NULL,
    finished_at        timestamptz,
    UNIQUE (creator_id, request_id)
);
CREATE INDEX arenas_live ON arenas (state) WHERE state IN ('scheduled', 'running', 'closing');

-- One row per player who ever joined; `active` false once they left (AR-2: they may come back).
-- The record columns are the running AR-4/AR-5 totals, updated with each scored game.
CREATE TABLE arena_players (
    arena_id   text        NOT NULL REFERENCES arenas (id),
    player_id  text        NOT NULL,
    joined_at  timestamptz NOT NULL,
    active     boolean     NOT NULL DEFAULT true,
    left_at    timestamptz,
    points     integer     NOT NULL DEFAULT 0,
    wins       integer     NOT NULL DEFAULT 0,
    draws      integer     NOT NULL DEFAULT 0,
    losses     integer     NOT NULL DEFAULT 0,
    streak     integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (arena_id, player_id)
);

-- Every requested game; result NULL while it runs. `scored_seq` orders the scoring (AR-4 streaks).
CREATE TABLE arena_games (
    game_id        text        PRIMARY KEY,
    arena_id       text        NOT NULL REFERENCES arenas (id),
    seq            bigint      NOT NULL,
    white_id       text        NOT NULL,
    black_id       text        NOT NULL,
    requested_at   timestamptz NOT NULL,
    white_moved    boolean     NOT NULL DEFAULT false,
    black_moved    boolean     NOT NULL DEFAULT false,
    white_boosted  boolean     NOT NULL DEFAULT false,
    black_boosted  boolean     NOT NULL DEFAULT false,
    result         text,
    termination    text,
    finished_at    timestamptz,
    scored_seq     bigint,
    UNIQUE (arena_id, seq)
);
CREATE SEQUENCE arena_scoring_order;
CREATE INDEX arena_games_running_white ON arena_games (arena_id, white_id) WHERE result IS NULL;
CREATE INDEX arena_games_running_black ON arena_games (arena_id, black_id) WHERE result IS NULL;
CREATE INDEX arena_games_scored ON arena_games (arena_id, scored_seq) WHERE result IS NOT NULL;
