-- AR-3 cooldowns count the finished meetings of one pair at every result: index the pair.
CREATE INDEX arena_games_pair ON arena_games (arena_id, least(white_id, black_id), greatest(white_id, black_id))
    WHERE result IS NOT NULL;
