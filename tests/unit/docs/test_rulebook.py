"""docs/rules.md against the code: every rule applied and tested, no number cited it lacks, its where-lines current."""

from __future__ import annotations

from pathlib import Path

from arbiter_tools.rulebook import (
    RULEBOOK,
    RuleSites,
    cited_rules,
    coverage_problems,
    problems_in,
    rule_numbers,
    rulebook_text,
    with_sites,
)

ROOT = Path(__file__).resolve().parents[3]

# Sample numbers are spelt "T-" "1" so that the scanner does not count this file as citing them.
ONE, TWO, LACKING, LACKING_ARENA = "T-" "1", "T-" "2", "T-" "99", "AR-" "9"
BOOK = f"""# Rules

**{ONE} — One.** Text.
<!-- where:{ONE} -->
<!-- /where -->

**{TWO} — Two.** Text.
<!-- where:{TWO} -->
<!-- /where -->
"""


def test_every_rule_is_applied_and_tested_and_every_citation_exists() -> None:
    assert problems_in(ROOT) == []


def test_the_where_lines_are_current() -> None:
    written = (ROOT / RULEBOOK).read_text(encoding="utf-8")
    assert written == rulebook_text(ROOT), "stale where-lines: run `.venv/bin/python docs/generate.py`"


def test_citations_in_text_ranges_and_test_names() -> None:
    assert cited_rules("see T-" "13 and AR-" "5") == {"T-" "13", "AR-" "5"}
    assert cited_rules("T-" "16..T-" "18 apply") == {"T-" "16", "T-" "17", "T-" "18"}
    assert cited_rules("O-" "5..7") == {"O-" "5", "O-" "6", "O-" "7"}
    assert cited_rules("def " "test_t19_both_absent():\ndef " "test_tb9_captain():") == {"T-" "19", "TB-" "9"}
    assert cited_rules("TRF-2026, SHA-256, round-1, XXR 9") == set()


def test_rule_numbers_come_from_the_bold_openings() -> None:
    assert rule_numbers(BOOK) == [ONE, TWO]


def test_a_rule_nobody_applies_or_tests_is_a_problem() -> None:
    problems = coverage_problems(BOOK, {"libs/a.py": {ONE}}, {"tests/test_a.py": {ONE, TWO}})
    assert problems == [f"{TWO} is applied nowhere (no module outside tests/ cites it)"]
    problems = coverage_problems(BOOK, {"libs/a.py": {ONE, TWO}}, {"tests/test_a.py": {ONE}})
    assert problems == [f"{TWO} is tested nowhere (no test file cites it)"]


def test_a_number_the_rulebook_lacks_is_a_problem() -> None:
    problems = coverage_problems(BOOK, {"libs/a.py": {ONE, TWO, LACKING}}, {"tests/t.py": {ONE, TWO, LACKING_ARENA}})
    assert problems == [f"libs/a.py (code) cites {LACKING}, which the rulebook lacks",
                        f"tests/t.py (tests) cites {LACKING_ARENA}, which the rulebook lacks"]


def test_a_rule_without_its_block_is_a_problem() -> None:
    book = BOOK.replace(f"<!-- where:{TWO} -->\n<!-- /where -->\n", "")
    problems = coverage_problems(book, {"a.py": {ONE, TWO}}, {"t.py": {ONE, TWO}})
    assert problems == [f"{TWO} has no where-block after it"]


def test_blocks_are_written_from_the_sites() -> None:
    sites = {ONE: RuleSites(("libs/a.py",), ("tests/t.py",)), TWO: RuleSites((), ())}
    written = with_sites(BOOK, sites)
    assert "*Implemented in:* `libs/a.py`  \n*Tested by:* `tests/t.py`" in written
    assert (
        f"<!-- where:{TWO} -->\n*Implemented in:* nothing yet  \n*Tested by:* nothing yet\n<!-- /where -->" in written
    )
    assert with_sites(written, sites) == written
