"""The rulebook (docs/rules.md) held against the code: where each numbered rule is applied and tested.

Every rule of the rulebook opens with its number in bold (`**T-13 — ...**`) and is followed by a
block between `<!-- where:T-13 -->` and `<!-- /where -->` that this module writes: the modules
that cite the rule outside the tests, and the test files that cite it, in their text or in a test's
name (`def test_t19_...`). A range such as `T-16..T-19` cites every rule in it.
`coverage_problems` lists what the suite refuses: a rule nobody applies or nobody tests, a number
cited in code or tests that the rulebook lacks, a block without its rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

RULEBOOK = Path("docs") / "rules.md"
# Where rules are applied (generated contracts excluded: they only carry the proto's comments).
IMPLEMENTATION_ROOTS = ("libs/arbiter", "services")
IMPLEMENTATION_SUFFIXES = frozenset({".py", ".sql"})
EXCLUDED_PARTS = frozenset({"contracts", "__pycache__"})
TEST_ROOT = "tests"
# Benchmarks print figures and check nothing: they test no rule.
NOT_TESTS = frozenset({"bench"})

_PREFIXES = r"(?:AR|TB|A|T|O|R)"
_CITATION = re.compile(rf"\b({_PREFIXES})-(\d+)(?:\s*(?:\.\.|–)\s*(?:{_PREFIXES}-)?(\d+))?\b")
_TEST_NAME = re.compile(r"\bdef test_(?:\w*?_)?(ar|tb|a|t|o|r)(\d+)(?=_|\()")
_RULE_HEADING = re.compile(rf"^\*\*({_PREFIXES}-\d+) — ", re.MULTILINE)
_WHERE_BLOCK = re.compile(r"<!-- where:(\S+) -->\n.*?<!-- /where -->", re.DOTALL)


@dataclass(frozen=True)
class RuleSites:
    """The files that cite one rule: where it is applied and where it is tested."""

    implemented_in: tuple[str, ...]
    tested_by: tuple[str, ...]


def cited_rules(text: str) -> set[str]:
    """Every rule number `text` cites, ranges expanded."""
    cited: set[str] = set()
    for prefix, first, last in _CITATION.findall(text):
        end = int(last) if last else int(first)
        cited.update(f"{prefix}-{number}" for number in range(int(first), max(end, int(first)) + 1))
    for prefix, number in _TEST_NAME.findall(text):
        cited.add(f"{prefix.upper()}-{int(number)}")
    return cited


def rule_numbers(rulebook: str) -> list[str]:
    """The numbers of the rules in the rulebook's text, in its order."""
    return _RULE_HEADING.findall(rulebook)


def _files(root: Path, top: str, suffixes: Iterable[str]) -> list[Path]:
    wanted = frozenset(suffixes)
    return sorted(path for path in (root / top).rglob("*")
                  if path.suffix in wanted and path.is_file() and not EXCLUDED_PARTS & set(path.parts))


def _citations(root: Path, files: Iterable[Path]) -> dict[str, set[str]]:
    """File (relative to root) -> the rules it cites."""
    return {str(path.relative_to(root)): cited_rules(path.read_text(encoding="utf-8")) for path in files}


def implementation_citations(root: Path) -> dict[str, set[str]]:
    """Every module outside the tests that cites a rule -> those rules."""
    files = [path for top in IMPLEMENTATION_ROOTS for path in _files(root, top, IMPLEMENTATION_SUFFIXES)]
    return {name: rules for name, rules in _citations(root, files).items() if rules}


def test_citations(root: Path) -> dict[str, set[str]]:
    """Every test file (and test helper) that cites a rule -> those rules."""
    files = [path for path in _files(root, TEST_ROOT, {".py"}) if not NOT_TESTS & set(path.parts)]
    return {name: rules for name, rules in _citations(root, files).items() if rules}


def rule_sites(numbers: Iterable[str], implementations: Mapping[str, set[str]],
               tests: Mapping[str, set[str]]) -> dict[str, RuleSites]:
    """For each rule number, the files that apply it and the files that test it."""
    return {
        number: RuleSites(
            implemented_in=tuple(sorted(name for name, rules in implementations.items() if number in rules)),
            tested_by=tuple(sorted(name for name, rules in tests.items() if number in rules)),
        )
        for number in numbers
    }


def _listing(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{name}`" for name in names) if names else "nothing yet"


def where_block(number: str, sites: RuleSites) -> str:
    """The generated block that follows rule `number` in the rulebook."""
    return (f"<!-- where:{number} -->\n"
            f"*Implemented in:* {_listing(sites.implemented_in)}  \n"
            f"*Tested by:* {_listing(sites.tested_by)}\n"
            f"<!-- /where -->")


def with_sites(rulebook: str, sites: Mapping[str, RuleSites]) -> str:
    """The rulebook with every where-block written from `sites` (a block of an unknown rule is left as it is)."""
    def block(match: re.Match[str]) -> str:
        number = match.group(1)
        return where_block(number, sites[number]) if number in sites else match.group(0)

    return _WHERE_BLOCK.sub(block, rulebook)


def rulebook_text(root: Path) -> str:
    """docs/rules.md as it should read for the code under `root`."""
    current = (root / RULEBOOK).read_text(encoding="utf-8")
    sites = rule_sites(rule_numbers(current), implementation_citations(root), test_citations(root))
    return with_sites(current, sites)


def coverage_problems(rulebook: str, implementations: Mapping[str, set[str]],
                      tests: Mapping[str, set[str]]) -> list[str]:
    """What keeps the rulebook and the code apart, one line each (empty when they agree)."""
    numbers = rule_numbers(rulebook)
    known = set(numbers)
    problems = [f"{number} is in the rulebook twice" for number in sorted(known)
                if numbers.count(number) > 1]
    blocks = _WHERE_BLOCK.findall(rulebook)
    problems += [f"{number} has no where-block after it" for number in numbers if number not in blocks]
    problems += [f"a where-block names {number}, which the rulebook lacks" for number in blocks if number not in known]
    sites = rule_sites(numbers, implementations, tests)
    problems += [f"{number} is applied nowhere (no module outside tests/ cites it)"
                 for number, found in sites.items() if not found.implemented_in]
    problems += [f"{number} is tested nowhere (no test file cites it)"
                 for number, found in sites.items() if not found.tested_by]
    for kind, citations in (("code", implementations), ("tests", tests)):
        for name, rules in sorted(citations.items()):
            problems += [f"{name} ({kind}) cites {number}, which the rulebook lacks"
                         for number in sorted(rules - known)]
    return problems


def problems_in(root: Path) -> list[str]:
    """`coverage_problems` for the checkout at `root`."""
    text = (root / RULEBOOK).read_text(encoding="utf-8")
    return coverage_problems(text, implementation_citations(root), test_citations(root))
