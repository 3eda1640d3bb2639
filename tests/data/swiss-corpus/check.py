"""Run a Swiss pairing command on every file of this corpus and compare its answers with the reference.

    python check.py [--only rounds|formats] [--jobs N] [--timeout S] COMMAND...

The file replaces a `{}` argument of COMMAND, or is appended. The command's standard output, or
`exit N` when it exits with status N, must equal NAME.expected line by line (line endings and
trailing spaces aside). Prints the files that differ, then `swiss-corpus: K/N identical`; exit
status 0 only when every file is identical.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent


def lines(text: str) -> list[str]:
    """Lines without line-ending style, trailing spaces or trailing blank lines."""
    out = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while out and not out[-1]:
        out.pop()
    return out


def files(only: str | None) -> list[Path]:
    """Every .trf file of the corpus, rounds first, in name order."""
    groups = [only] if only else ["rounds", "formats"]
    return [path for group in groups for path in sorted((HERE / group).glob("*.trf"))]


def answer(command: list[str], path: Path, timeout: float) -> list[str]:
    """What the command answers for one file."""
    args = [str(path) if a == "{}" else a for a in command]
    if "{}" not in command:
        args.append(str(path))
    try:
        done = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return [f"timeout after {timeout:g} s"]
    except OSError as exc:
        return [f"cannot run: {exc}"]
    if done.returncode:
        return [f"exit {done.returncode}"]
    return lines(done.stdout.decode("utf-8", "replace"))


def main() -> int:
    """Check every file; print the differences and the total."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("rounds", "formats"))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if not args.command:
        parser.error("give the command to run")
    paths = files(args.only)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        answers = list(pool.map(lambda p: answer(args.command, p, args.timeout), paths))
    same = 0
    for path, got in zip(paths, answers, strict=True):
        expected = lines(path.with_suffix(".expected").read_text(encoding="utf-8"))
        if got == expected:
            same += 1
        else:
            print(f"{path.parent.name}/{path.name}: expected {expected[:1]}, got {got[:1]}")
    print(f"swiss-corpus: {same}/{len(paths)} identical")
    return 0 if paths and same == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main())
