-- The GameFinished event that rated each game. A rated game is its own idempotency record: its
-- game id stops a second rating whatever event id it comes under, and this column tells a
-- redelivery of the same event from a play site re-sending the game under a new one, without a
-- processed_events row per rated game (that insert was a large share of a batch's time).
-- Games rated before this column existed have none: a later delivery of theirs counts as
-- "already_rated" instead of "redelivered", and changes nothing either way.
ALTER TABLE rated_games ADD COLUMN event_id text;
