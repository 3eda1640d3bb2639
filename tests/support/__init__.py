"""What tests of every layer share: waiting for a condition with a deadline, and the play-site stand-in.

Tests import it as `tests.support...` (pytest puts the repository root on `sys.path`, pyproject's `pythonpath`).
"""
