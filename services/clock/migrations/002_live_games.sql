-- Live (Fischer) game records, copied here once per handled batch of events (never once per move),
-- so that Redis can lose them at any moment: the handler returns, and Kafka's offsets are committed,
-- only once the batch's records are here, so this copy is never behind what was consumed. After a
-- Redis loss every game not over (and those over for a short while) is written back to Redis from
-- here; older finished games come back when something asks for them.

CREATE TABLE live_games (
    game_id    text        PRIMARY KEY,
    -- The version the Redis string had when this record was written; a copy rebuilt from this row
    -- goes on from it, so an older write never replaces a newer one.
    version    bigint      NOT NULL,
    status     text        NOT NULL,
    -- The record as the Redis string holds it (services/clock/clocked_game.py `encode_body`).
    record     text        NOT NULL,
    -- Moves that came before the clock started, as JSON {ply: "player\x1fplayed_at ms"} ('' when none).
    early      text        NOT NULL DEFAULT '',
    -- When Redis would let the record expire (a finished game, or events of a game that never
    -- started); NULL while it lives. Only those two kinds of write set it, so a move's update
    -- changes no indexed column and stays a heap-only update.
    expires_at timestamptz
) WITH (fillfactor = 70);
CREATE INDEX live_games_expiry ON live_games (expires_at) WHERE expires_at IS NOT NULL;

-- The epoch of the Redis copy, per key prefix (CLOCK_REDIS_PREFIX): a rebuild moves it on (under
-- its row's lock) before it reads live_games, and a batch's records are written only under the
-- epoch its Redis writes were made in, so a batch written to a Redis lost meanwhile is handled
-- again rather than lost.
CREATE TABLE hot_epoch (
    prefix text PRIMARY KEY,
    epoch  text NOT NULL
);
