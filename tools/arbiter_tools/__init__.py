"""What runs the system rather than being it.

The `arbiter` CLI, the embedded stack, the play-site simulator, the load benchmark and the chaos suite.
"""
