-- One row per pool, its version bumped by every transaction that takes the pool's lock to write
-- it (store.lock_pools). A replica that finds the version one above the one it committed last
-- knows nobody wrote the pool in between, so the players' states it kept in memory are still
-- the stored ones and need not be read again (services/rating/cache.py). Whatever else writes
-- `ratings` must bump it too, or those replicas would rate from states it changed.
CREATE TABLE rating_pools (
    variant  text     NOT NULL,
    speed    smallint NOT NULL,
    version  bigint   NOT NULL,
    PRIMARY KEY (variant, speed)
);
