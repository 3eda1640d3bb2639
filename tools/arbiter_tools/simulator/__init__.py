"""The play-site simulator: bots that join competitions and play the requested games.

A tool, not rules: it does I/O (Kafka, gRPC) and stands in for the play site in the demo,
the end-to-end tests and the load benchmark. `PlaySite` opens and plays games;
`scenario` creates and watches competitions; `view` draws the live terminal view.
"""
