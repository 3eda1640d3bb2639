"""`arbiter pair` against the reference corpus (T-13: the 2025 Dutch system, exactly).

Every file of tests/data/swiss-corpus goes through the CLI's own code path (`arbiter pair FILE`)
and must print what the reference engine printed for it, or exit with the same status. The
corpus README says how the files were made and what the answers are.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from arbiter_tools.cli.main import main

CORPUS = Path(__file__).resolve().parents[2] / "data" / "swiss-corpus"
FILES = sorted(CORPUS.glob("rounds/*.trf")) + sorted(CORPUS.glob("formats/*.trf"))


def lines(text: str) -> list[str]:
    """Lines without line-ending style, trailing spaces or trailing blank lines."""
    out = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while out and not out[-1]:
        out.pop()
    return out


def test_the_corpus_is_all_there() -> None:
    # 392 rounds of whole tournaments and 74 files of input forms, each with its answer.
    assert len(list(CORPUS.glob("rounds/*.trf"))) == 392
    assert len(list(CORPUS.glob("formats/*.trf"))) == 74
    assert all(path.with_suffix(".expected").is_file() for path in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_arbiter_pair_answers_as_the_reference(path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["pair", str(path)])
    got = lines(out.getvalue()) if status == 0 else [f"exit {status}"]
    assert got == lines(path.with_suffix(".expected").read_text(encoding="utf-8")), err.getvalue()
