-- R-5: Glicko-2 per (player, variant, speed). A pool is one (variant, speed); its ratings are
-- the sequential result of its rated games in canonical order (finished_at, game_id), see
-- libs/arbiter/rating/ledger.py.

-- The state after each player's latest rated game of the pool (what Get answers).
CREATE TABLE ratings (
    variant        text             NOT NULL,
    speed          smallint         NOT NULL,
    player_id      text             NOT NULL,
    rating         double precision NOT NULL,
    deviation      double precision NOT NULL,
    volatility     double precision NOT NULL,
    games          integer          NOT NULL,
    -- Game time of the last rated game: inactivity is measured from it, never from wall time.
    last_rated_at  timestamptz      NOT NULL,
    PRIMARY KEY (variant, speed, player_id)
);

-- Every rated game once (the game id makes a re-sent game a no-op), with both players' states
-- before and after it: the history, and the checkpoints a late game is replayed from.
CREATE TABLE rated_games (
    -- "C" collation: the canonical order is the same in SQL and in Python (code point order).
    game_id                       text COLLATE "C" PRIMARY KEY,
    variant                       text             NOT NULL,
    speed                         smallint         NOT NULL,
    finished_at                   timestamptz      NOT NULL,
    white_id                      text             NOT NULL,
    black_id                      text             NOT NULL,
    white_score                   double precision NOT NULL CHECK (white_score IN (0, 0.5, 1)),
    white_rating_before           double precision NOT NULL,
    white_deviation_before        double precision NOT NULL,
    white_volatility_before       double precision NOT NULL,
    white_games_before            integer          NOT NULL,
    white_last_rated_at_before    timestamptz,
    white_rating_after            double precision NOT NULL,
    white_deviation_after         double precision NOT NULL,
    white_volatility_after        double precision NOT NULL,
    black_rating_before           double precision NOT NULL,
    black_deviation_before        double precision NOT NULL,
    black_volatility_before       double precision NOT NULL,
    black_games_before            integer          NOT NULL,
    black_last_rated_at_before    timestamptz,
    black_rating_after            double precision NOT NULL,
    black_deviation_after         double precision NOT NULL,
    black_volatility_after        double precision NOT NULL,
    rated_at                      timestamptz      NOT NULL DEFAULT now(),
    -- Set when a game that finished earlier arrived later and changed this game's result.
    revised_at                    timestamptz
);

-- The games after a late one, in canonical order.
CREATE INDEX rated_games_pool_order ON rated_games (variant, speed, finished_at, game_id);
-- History, newest first, for either colour.
CREATE INDEX rated_games_white ON rated_games (white_id, variant, speed, finished_at DESC, game_id DESC);
CREATE INDEX rated_games_black ON rated_games (black_id, variant, speed, finished_at DESC, game_id DESC);
