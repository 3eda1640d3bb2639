"""The build step pyproject.toml cannot declare yet: the compiled core of the FIDE Dutch engine (T-13).

`pip install` (and `pip install -e .`, which `make setup` runs) compiles it with the C compiler
of the machine; everything else is configured in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "arbiter.competition._dutch_core",
            sources=["libs/arbiter/competition/_dutch_core.c"],
            extra_compile_args=["-O2"],
        )
    ]
)
