-- The retention sweep (arbiter.kit.retention) deletes processed-event ids oldest first.
CREATE INDEX processed_events_age ON processed_events (processed_at);
