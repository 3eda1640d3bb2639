"""The load benchmark: the machine's raw Kafka and Redis rates, then the running system under rising load.

Stages, in one run:
1. raw: produce and consume on a scratch topic with aiokafka; pipelined and one-at-a-time Redis.
2. played: the simulator plays real random games (no think time) in round robins: moves/s, results/s.
3. tournament results at rising offered rates: the simulator answers every GameRequested at once
   (GameStarted + GameFinished, no moves) at most R results/s, published every `result_every_ms`;
   measured: achieved results/s, p50/p99 result -> next pairing, result -> rating updated, CPU per service.
   The services off that path (clock, arena, rating, openings) run at `off_path_nice` meanwhile, as
   CPU weights would rank them where services share a host (each in its scheduling group too, see
   `set_niceness`), and are put back for the stages after; the burst and the firehose nice those of
   them off their own path (not rating, which they measure).
   The first stage starts once every round 1 is requested and every service's consumer groups have
   committed all they were sent, so that no stage times the setup's backlog (each burst below waits alike).
4. burst: a whole round of many round robins, its games started, finishes at once: how fast pairing
   takes the results into the standings and the rating service rates them, while the next round
   is paired; several rounds one after the other, the figures their medians.
5. firehose: rated GameFinished events straight onto game.finished at rising rates: what the
   rating service (and the pairing consumer, which skips games it does not own) keeps up with.
Bench scripts print figures; nothing here asserts a timing.

The modules: `host` (host probes), `readings` (what it reads of the running system), `stages` (the
stages and `run_bench`), `report` (the report). Import from them: the package itself imports
nothing, so a caller of one reading does not load the stages and the play site.
"""
