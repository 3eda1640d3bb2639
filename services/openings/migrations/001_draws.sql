-- The opening drawn for each round of each competition (O-10), kept so that a repeated
-- draw, a restarted service and every replica return the same one.
CREATE TABLE opening_draws (
    competition_kind text        NOT NULL,
    competition_id   text        NOT NULL,
    round            integer     NOT NULL CHECK (round >= 0),
    variant          text        NOT NULL,
    mode             text        NOT NULL,
    -- The official number (1..174) for table and thematic draws; NULL for free and random moves.
    number           integer     CHECK (number BETWEEN 1 AND 174),
    moves            text[]      NOT NULL,
    fen              text        NOT NULL,
    class_label      text,
    level            integer,
    name             text,
    -- O-10: drawn without repeating the competition's earlier table openings (Swiss).
    no_repeat        boolean     NOT NULL,
    drawn_at         timestamptz NOT NULL,
    PRIMARY KEY (competition_kind, competition_id, round)
);

-- O-10 held by the database too: within one competition a no-repeat draw never shares its number.
CREATE UNIQUE INDEX opening_draws_no_repeat
    ON opening_draws (competition_kind, competition_id, number) WHERE no_repeat;

-- Tournaments cancelled (tournament.cancelled): their draws are forgotten and no new ones are made.
CREATE TABLE cancelled_competitions (
    competition_kind text        NOT NULL,
    competition_id   text        NOT NULL,
    reason           text        NOT NULL,
    cancelled_at     timestamptz NOT NULL,
    PRIMARY KEY (competition_kind, competition_id)
);
