"""Regenerate nbcluster/proto/ (*_pb2.py, *_pb2.pyi, *_pb2_grpc.py) from protos/.

Usage: python scripts/gen_protos.py [--out DIR]

Runs grpc_tools' bundled protoc with `-Iprotos`, so the generated modules
import each other as `nbcluster.proto.*`. The output is only byte-stable for
one grpcio-tools version: the dev dependencies pin it, and
tests/proto/test_proto_generated.py fails when the committed modules drift.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO_ROOT / "protos"
PROTO_PACKAGE = Path("nbcluster") / "proto"
INIT_DOCSTRING = '"""Generated protobuf and gRPC modules (sources in protos/; never edit by hand)."""\n'


def proto_files() -> list[Path]:
    """Return the .proto sources, relative to protos/, in a stable order."""
    return sorted(p.relative_to(PROTO_ROOT) for p in (PROTO_ROOT / PROTO_PACKAGE).glob("*.proto"))


def generate(out: Path) -> None:
    """Write the generated modules for every proto under `out`/nbcluster/proto.

    Raises:
        RuntimeError: protoc failed (its stderr is in the message).
    """
    out.mkdir(parents=True, exist_ok=True)
    sources = [str(p) for p in proto_files()]
    if not sources:
        raise RuntimeError(f"no .proto files under {PROTO_ROOT / PROTO_PACKAGE}")
    cmd = [
        sys.executable, "-m", "grpc_tools.protoc",
        "-Iprotos",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--pyi_out={out}",
        *(str(Path("protos") / s) for s in sources),
    ]
    # cwd=REPO_ROOT keeps the paths protoc records (and so the output) the
    # same wherever the script is called from.
    done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"protoc failed ({done.returncode}):\n{done.stderr}")
    init = out / PROTO_PACKAGE / "__init__.py"
    if not init.exists():
        init.write_text(INIT_DOCSTRING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT,
                        help="root to write nbcluster/proto/ under (default: the repo root)")
    args = parser.parse_args(argv)
    generate(args.out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
