"""Load benchmark of the whole system driven by the play-site simulator (prints figures, writes JSON).

    .venv/bin/python tests/bench/bench_system.py [--quick] [--json-out bench-results.json]

Starts the embedded stack and the five services (or uses KAFKA_BOOTSTRAP_SERVERS, REDIS_URL and
DATABASE_URL when set), then runs `arbiter_tools.simulator.bench.stages.run_bench`: raw Kafka and
Redis rates, played games, tournament results at rising rates, and the result firehose into the
rating service.
`arbiter bench` runs the same code.
"""

from __future__ import annotations

import sys

from arbiter_tools.cli.commands.bench import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
