"""Generate the Python contracts package `arbiter.contracts` from `proto/`.

Usage: python proto/generate.py [--check]
  (no flag)  rewrite libs/arbiter/contracts/ from the .proto files
  --check    regenerate into a temporary folder and exit 1 if the committed code is stale
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

PROTO_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PROTO_ROOT.parent
PACKAGE_DIR = Path("arbiter") / "contracts"
TARGET = REPO_ROOT / "libs" / PACKAGE_DIR
INIT_TEXT = '"""Generated protobuf and gRPC code for the Arbiter contracts (do not edit: run proto/generate.py)."""\n'


def generate(out_root: Path) -> Path:
    """Run protoc over every .proto file into `out_root`; return the package folder."""
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / PACKAGE_DIR).glob("*.proto"))
    well_known = Path(protoc.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    package = out_root / PACKAGE_DIR
    (package / "__init__.py").write_text(INIT_TEXT)
    (out_root / "arbiter" / "__init__.py").unlink(missing_ok=True)
    return package


def stale_files(fresh: Path, committed: Path) -> list[str]:
    """Names that differ between a fresh generation and the committed package."""
    names = {p.name for p in fresh.iterdir() if p.is_file()}
    names |= {p.name for p in committed.glob("*") if p.is_file() and p.suffix in {".py", ".pyi"}}
    return sorted(
        n for n in names
        if not (fresh / n).exists() or not (committed / n).exists()
        or not filecmp.cmp(fresh / n, committed / n, shallow=False)
    )


def main() -> int:
    """Generate, or with --check compare against what is committed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        if args.check:
            stale = stale_files(fresh, TARGET)
            if stale:
                print("generated contracts are stale, run `python proto/generate.py`: " + ", ".join(stale))
                return 1
            print("generated contracts are up to date")
            return 0
        if TARGET.exists():
            shutil.rmtree(TARGET)
        shutil.copytree(fresh, TARGET)
    print(f"generated {TARGET.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
