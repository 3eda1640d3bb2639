"""The operator command line, `arbiter`."""
