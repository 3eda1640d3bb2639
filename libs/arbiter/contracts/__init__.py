"""Generated protobuf and gRPC code for the Arbiter contracts (do not edit: run proto/generate.py)."""
