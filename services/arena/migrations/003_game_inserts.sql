-- A burst pairs thousands of players in one save, and every game row costs its index
-- entries and checks; these two changes make each cheaper without weakening a guarantee.

-- The only writer of games (the pairing save) holds the arena's row in share mode in the same
-- transaction and arenas are never deleted: the per-row foreign-key check proves nothing more.
ALTER TABLE arena_games DROP CONSTRAINT arena_games_arena_id_fkey;

-- Ids compare byte by byte (memcmp, abbreviated keys) rather than through the locale. The order
-- is the same code-point order as C.UTF-8's, and the one Python's min/max give to the pairs that
-- arena_games_pair indexes as least/greatest.
ALTER TABLE arena_games
    ALTER COLUMN game_id TYPE text COLLATE "C",
    ALTER COLUMN arena_id TYPE text COLLATE "C",
    ALTER COLUMN white_id TYPE text COLLATE "C",
    ALTER COLUMN black_id TYPE text COLLATE "C";
