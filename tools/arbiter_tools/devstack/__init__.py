"""Embedded infrastructure for development, the demo and tests: tansu, Redis, PostgreSQL, the services."""
