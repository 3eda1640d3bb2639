"""The rules packages form the intended DAG and import nothing but the standard library and each other.

Read from the source (every import statement, also those inside functions), so that a new import
that breaks the layering fails here before anyone has to find the cycle at run time.
"""

from __future__ import annotations

import ast
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

LIBS = Path(__file__).resolve().parents[3] / "libs" / "arbiter"

# Who may import whom: the shared words at the root, the draughts rules next, competition on top.
INTENDED: dict[str, frozenset[str]] = {
    "vocabulary": frozenset(),
    "draughts": frozenset({"vocabulary"}),
    "clocks": frozenset({"vocabulary"}),
    "rating": frozenset({"vocabulary"}),
    "openings": frozenset({"vocabulary", "draughts", "rating"}),
    "competition": frozenset({"vocabulary", "rating", "openings"}),
}
# Compiled modules a package may hold beside its Python (the FIDE Dutch engine's core, setup.py).
COMPILED = {"competition": frozenset({"arbiter.competition._dutch_core"})}


def sources(package: str) -> list[Path]:
    """The Python files of one rules package (a module or a directory)."""
    module = LIBS / f"{package}.py"
    return [module] if module.exists() else sorted((LIBS / package).rglob("*.py"))


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file; `from a import b` names `a.b` too when that is a module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            assert node.module is not None
            found.append((node.lineno, node.module))
            found.extend(
                (node.lineno, f"{node.module}.{alias.name}") for alias in node.names
                if is_arbiter_module(f"{node.module}.{alias.name}")
            )
    return found


def is_arbiter_module(module: str) -> bool:
    """Whether `module` is a module of libs/arbiter: a source file, a package, or a compiled core."""
    if any(module in compiled for compiled in COMPILED.values()):
        return True
    parts = module.split(".")
    if parts[0] != "arbiter":
        return False
    base = LIBS.parent.joinpath(*parts)
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def arbiter_package(module: str) -> str | None:
    """The rules package an `arbiter.*` module belongs to; None for anything outside arbiter."""
    parts = module.split(".")
    if parts[0] != "arbiter":
        return None
    return parts[1] if len(parts) > 1 else ""


def test_the_intended_graph_is_a_dag_with_the_vocabulary_at_the_root_and_draughts_next() -> None:
    order = list(TopologicalSorter(INTENDED).static_order())
    assert order[0] == "vocabulary" and order[-1] == "competition"
    assert INTENDED["draughts"] == {"vocabulary"}


@pytest.mark.parametrize("package", sorted(INTENDED))
def test_a_rules_package_imports_only_the_standard_library_and_the_packages_below_it(package: str) -> None:
    allowed = INTENDED[package] | {package}
    wrong = []
    for path in sources(package):
        for line, module in imported_modules(path):
            where = f"{path.relative_to(LIBS.parent.parent)}:{line} imports {module}"
            owner = arbiter_package(module)
            if owner is None:
                if module.split(".")[0] not in sys.stdlib_module_names:
                    wrong.append(f"{where}: not the standard library")
            elif owner not in allowed:
                wrong.append(f"{where}: {package} may import only {sorted(allowed)}")
            elif not is_arbiter_module(module) or any(
                module in compiled for other, compiled in COMPILED.items() if other != package
            ):
                wrong.append(f"{where}: neither a source module nor {package}'s compiled core")
    assert not wrong, "\n".join(wrong)


def test_the_graph_the_imports_make_has_no_cycle() -> None:
    actual: dict[str, set[str]] = {package: set() for package in INTENDED}
    for package in INTENDED:
        for path in sources(package):
            for _, module in imported_modules(path):
                owner = arbiter_package(module)
                if owner in INTENDED and owner != package:
                    actual[package].add(owner)
    try:
        TopologicalSorter(actual).prepare()
    except CycleError as cycle:
        pytest.fail(f"the rules packages import each other in a cycle: {cycle.args[1]}")
    assert all(actual[package] <= INTENDED[package] for package in INTENDED), actual
