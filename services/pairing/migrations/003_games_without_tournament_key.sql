-- Every game is inserted by the round save (store.save_rounds), in the statement that inserts its
-- round, whose own foreign key checks the tournament, while that tournament's row is locked; no
-- tournament is ever deleted. The per-game check of this key only repeated that, with a row lock on
-- the tournament for each game: a quarter of the round save's time in PostgreSQL (tests/bench/bench_round_save.py).
ALTER TABLE games DROP CONSTRAINT IF EXISTS games_tournament_id_fkey;
