-- A draw is kept per (competition, round, settings): what a round plays is the draw made under
-- the competition's own settings, so a draw asked for under other settings (variant, mode or
-- thematic opening) is a record of its own and can never stand in for the round's, nor make the
-- round's own draw be refused. `settings` is "<variant> <mode>", plus " opening <n>" for a
-- thematic draw, as services/openings/store.py spells it (draw_settings).
ALTER TABLE opening_draws ADD COLUMN settings text;
UPDATE opening_draws
   SET settings = variant || ' ' || mode || CASE WHEN mode = 'thematic' THEN ' opening ' || number ELSE '' END;
ALTER TABLE opening_draws ALTER COLUMN settings SET NOT NULL;
ALTER TABLE opening_draws DROP CONSTRAINT opening_draws_pkey;
ALTER TABLE opening_draws ADD PRIMARY KEY (competition_kind, competition_id, round, settings);

-- O-10 within the draws of one settings: other settings never take a number from the round's own.
DROP INDEX opening_draws_no_repeat;
CREATE UNIQUE INDEX opening_draws_no_repeat
    ON opening_draws (competition_kind, competition_id, settings, number) WHERE no_repeat;
