-- Tournaments, their entrants, rounds and games (SPEC T-1..T-22). Timers, outbox and
-- processed events are the kit's tables in the same schema.

CREATE TABLE tournaments (
    id                 text PRIMARY KEY,
    creator_id         text        NOT NULL,
    -- A retried Create with the same request id returns the first tournament.
    request_id         text,
    name               text        NOT NULL,
    variant            text        NOT NULL,
    base_seconds       integer     NOT NULL,
    increment_seconds  integer     NOT NULL,
    speed              text        NOT NULL,
    threshold          integer     NOT NULL,
    capacity           integer     NOT NULL,
    minimum_entrants   integer     NOT NULL,
    starts_at          timestamptz NOT NULL,
    duration_minutes   integer     NOT NULL,
    closes_at          timestamptz NOT NULL,
    private            boolean     NOT NULL,
    -- T-5: only a salted scrypt hash of the password is kept.
    password_hash      text,
    invite_token       text,
    rated              boolean     NOT NULL,
    rated_note         text        NOT NULL DEFAULT '',
    minimum_rating     integer,
    opening_mode       text        NOT NULL,
    thematic_opening   integer,
    home_and_away      boolean     NOT NULL,
    extra_round        boolean     NOT NULL,
    -- The effective TournamentSettings message (password cleared), as Get returns it.
    settings           bytea       NOT NULL,
    notes              jsonb       NOT NULL DEFAULT '[]'::jsonb,
    state              text        NOT NULL
        CHECK (state IN ('scheduled', 'starting', 'running', 'finished', 'cancelled')),
    format             text,
    rounds             integer,
    games_per_pairing  integer,
    current_round      integer     NOT NULL DEFAULT 0,
    plan_notes         jsonb       NOT NULL DEFAULT '[]'::jsonb,
    created_at         timestamptz NOT NULL,
    started_at         timestamptz,
    finished_at        timestamptz,
    cancel_reason      text        NOT NULL DEFAULT '',
    finish_note        text        NOT NULL DEFAULT '',
    -- Final standings as TournamentFinished carried them (rows as JSON).
    final_standings    jsonb,
    UNIQUE (creator_id, request_id)
);
CREATE INDEX tournaments_upcoming ON tournaments (starts_at, id) WHERE state = 'scheduled' AND NOT private;
CREATE INDEX tournaments_active ON tournaments (state) WHERE state IN ('starting', 'running');
CREATE INDEX tournaments_due ON tournaments (starts_at) WHERE state = 'scheduled';

CREATE TABLE entrants (
    tournament_id  text        NOT NULL REFERENCES tournaments (id),
    player_id      text        NOT NULL,
    joined_at      timestamptz NOT NULL,
    -- Filled at the start: rating for the variant and speed, initial rank (T-13), Berger number (T-14).
    rating         double precision,
    initial_rank   integer,
    berger_number  integer,
    PRIMARY KEY (tournament_id, player_id)
);

CREATE TABLE rounds (
    tournament_id  text        NOT NULL REFERENCES tournaments (id),
    round          integer     NOT NULL,
    -- The Opening message every board of the round plays (O-10, O-11).
    opening        bytea       NOT NULL,
    bye_id         text,
    bye_points     integer     NOT NULL DEFAULT 0,
    engine         text        NOT NULL,
    notes          jsonb       NOT NULL DEFAULT '[]'::jsonb,
    paired_at      timestamptz NOT NULL,
    PRIMARY KEY (tournament_id, round)
);

CREATE TABLE games (
    game_id        text PRIMARY KEY,
    tournament_id  text        NOT NULL REFERENCES tournaments (id),
    round          integer     NOT NULL,
    board          integer     NOT NULL,
    leg            integer     NOT NULL,
    white_id       text        NOT NULL,
    black_id       text        NOT NULL,
    -- False for T-18 busy forfeits: those games are never opened.
    requested      boolean     NOT NULL,
    finished       boolean     NOT NULL DEFAULT false,
    kind           text,
    result         text,
    termination    text,
    white_points   integer,
    black_points   integer,
    rated          boolean,
    -- Which event decided the result (the first one to arrive wins).
    decided_by     text,
    finished_at    timestamptz
);
CREATE INDEX games_by_round ON games (tournament_id, round);
CREATE INDEX games_open ON games (tournament_id) WHERE NOT finished;
