-- Staging for the batch upsert of `ratings`: the consumer COPYs a batch's new states here and
-- moves them into `ratings` in the same transaction (COPY encodes rows far cheaper than array
-- parameters). Rows never outlive their transaction, so no other session ever sees one.
CREATE UNLOGGED TABLE ratings_incoming (LIKE ratings);
