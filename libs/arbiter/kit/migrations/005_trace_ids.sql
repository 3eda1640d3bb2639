-- Trace ids (arbiter.kit.trace). An event's trace id is in its payload (EventMeta.trace_id); the
-- outbox keeps a copy beside it so that the relay writes the `trace-id` header without parsing the
-- payload ('' for a row put in without it: the relay reads the payload then).
ALTER TABLE outbox ADD COLUMN trace_id text NOT NULL DEFAULT '';
-- The chain a stored timer belongs to: the trace id of the call or event that set it, taken up
-- again by the work it does when it fires. '' for a timer set outside any chain.
ALTER TABLE timers ADD COLUMN trace_id text NOT NULL DEFAULT '';
