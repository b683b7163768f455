"""The files a run needs before verl reads them, built by the trainer's interpreter.

The smoke profile's tiny model and letters data, and the record's ``train_tiny.parquet``, are
written with numpy, pyarrow and tokenizers: verl's dependencies, not patchctl's. patchctl's own
process must work after a plain ``pip install patchctl`` (issue 10), so the builders run in
``--python``, the interpreter that runs verl and has them anyway. That interpreter imports the
builder modules straight from this package's directory, not through patchctl's environment,
whose packages (another numpy, say) would otherwise shadow the trainer's own.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from patchctl import proc
from patchctl.errors import CommandFailed, PatchctlError

#: what the trainer's interpreter runs: ``patchctl`` as a bare package rooted at argv[1]
#: (its ``__init__`` and patchctl's environment stay out), then :func:`main` with the rest
BOOT = (
    "import sys, types\n"
    "pkg = types.ModuleType('patchctl'); pkg.__path__ = [sys.argv[1]]; sys.modules['patchctl'] = pkg\n"
    "from patchctl.train.assets import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)
#: what each kind of asset needs in the interpreter that builds it
NEEDS = {
    "smoke": "numpy, pyarrow and tokenizers",
    "smoke-bytes": "numpy, pyarrow and tokenizers",
    "tiny-dataset": "pyarrow",
}
#: the profiles' ``assets`` values whose model and data patchctl builds itself (-> the kind built)
OWN = {"smoke": "smoke", "smoke-bytes": "smoke-bytes"}


class AssetsFailed(PatchctlError):
    def __init__(self, kind: str, python: str, dest: Path, detail: str) -> None:
        self.kind, self.python, self.dest = kind, python, dest
        super().__init__(
            f"building the {kind} files in {dest} with {python} failed ({detail}); that interpreter "
            f"runs verl and needs {NEEDS[kind]} (verl's own dependencies): install them there, "
            "or pass --python with verl's interpreter"
        )


def build(kind: str, dest: Path, python: str, env: Mapping[str, str] | None = None, timeout: float = 300) -> None:
    """Build ``kind`` ("smoke", "smoke-bytes" or "tiny-dataset") into ``dest`` with the interpreter ``python``."""
    package = Path(__file__).resolve().parents[1]
    try:
        proc.run([python, "-c", BOOT, str(package), kind, str(dest)], env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssetsFailed(kind, python, dest, f"no result after {timeout:.0f} s") from None
    except CommandFailed as exc:
        lines = [ln.strip() for ln in exc.stderr.strip().splitlines() if ln.strip()]
        raise AssetsFailed(kind, python, dest, lines[-1] if lines else f"exit code {exc.returncode}") from None


def main(argv: list[str]) -> int:
    """The trainer-side entry: ``smoke DIR``, ``smoke-bytes DIR`` or ``tiny-dataset DIR``."""
    kind, dest = argv[0], Path(argv[1])
    if kind in ("smoke", "smoke-bytes"):
        from patchctl.train import smoke

        smoke.build(dest, "bytes" if kind == "smoke-bytes" else "word")
    elif kind == "tiny-dataset":
        from patchctl.train.data import tiny_dataset

        tiny_dataset(dest)
    else:
        print(f"unknown asset kind {kind!r}", file=sys.stderr)
        return 2
    return 0
