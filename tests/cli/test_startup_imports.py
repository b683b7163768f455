"""What a command imports decides its start-up time (issue 39.13): ``verify`` of a local checkout
is measured against ``grep -rn`` and must not load the release and archive machinery (tarfile,
zipfile, lzma's archive reader, the index client), the config reader or the journal recovery,
which only a ``verl==X`` target, a target given by name or an interrupted change needs.

Each command runs as a user runs it, a fresh ``python -m patchctl``, and the test reads the
modules it had loaded when it exited. Timings are the benchmark's business
(benchmarks/bench_core.py); this only keeps an import from creeping back to the top of a module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import patchctl

SRC = Path(patchctl.__file__).resolve().parent.parent

#: modules a command on a local checkout has no use for: what they cost, and who needs them
NOT_FOR_A_CHECKOUT = {
    "patchctl.archive": "unpacking a release (verl==X targets)",
    "tarfile": "unpacking a release",
    "zipfile": "unpacking a release",
    "patchctl.pypi": "downloading a release",
    "patchctl.progress": "a download's or unpack's progress line",
    "patchctl.config": "a target given by name (the config's [targets])",
    "patchctl.recovery": "a tree with an interrupted change",
    "secrets": "nothing: os.urandom(n).hex() names a journal and a temporary file",
}


#: runs ``python -m patchctl ARGS`` and, as the interpreter exits, writes the names of every
#: module loaded to the file the first argument names (``-X importtime`` misses those loaded
#: through importlib.import_module, as the commands and the patch kinds are)
DRIVER = """
import atexit, runpy, sys
out = sys.argv.pop(1)
def dump():
    with open(out, "w") as f:
        f.write("\\n".join(sorted(sys.modules)))
atexit.register(dump)
sys.argv[0] = "patchctl"
runpy.run_module("patchctl", run_name="__main__", alter_sys=True)
"""


def imported(*args: str, cwd: Path) -> set[str]:
    """The modules a fresh ``patchctl ARGS`` had loaded when it exited."""
    out = cwd.parent / "modules.txt"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(out), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    names = set(out.read_text().split())
    assert {"patchctl.cli.main", "patchctl.cli.quick"} & names, names  # the command ran through the CLI
    return names


@pytest.fixture
def checkout(release_tree: Callable[[str], Path]) -> Path:
    return release_tree("0.6.1")


#: what verify in particular does without
NOT_FOR_VERIFY = {
    "patchctl.patchsets.plan": "apply's planner (verify reads the pending conflicts only)",
    "patchctl.patchsets.kinds.marking": "apply --conflicts=markers",
    # verify of a checkout starts no process: git's answers (HEAD, the work tree's top) are read
    # only by the commands that use them (target.Target.on_disk)
    "subprocess": "starting a program: verify runs none",
    "patchctl.git": "asking git about the tree (apply, revert, migrate)",
    "patchctl.proc": "starting a program",
    "shutil": "copying and removing folders (its zlib, bz2 and lzma with it): a write's",
    # a plain verify command line is read without click (patchctl.cli.quick): click, the command
    # group and the options' types were a quarter of a verify --json
    "click": "reading a command line verify's own reader leaves to click",
    "patchctl.cli.main": "the click command group",
    # issue 39.13, second round: each of these was imported at the top of a module verify loads
    "difflib": "the diff of a file or block that differs: verify of a tree that matches shows none",
    "patchctl.journal": "the journal's writers: verify and the lock need only its names (journal_paths)",
    "patchctl.fsutil": "writing files; verify hashes a file only when it no longer loads",
    "packaging.specifiers": "a specifier beyond plain comparisons (uky's drop_when is one), or a patch's versions",
    "packaging.version": "comparing versions: a patch's versions, a kept resolution's since",
    # uky has no text hunk: only a 3-way placement in the record (threeway.recorded) needs the kind
    "patchctl.patchsets.kinds.text_hunk": "a text-hunk patch, or a 3-way placement the record holds",
    # patchctl.sha: CPython's own sha256, without hashlib asking OpenSSL for every digest
    "hashlib": "a digest beyond sha256 (patchctl.sha gives verify's)",
}


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_verify_of_a_checkout_loads_no_release_machinery(checkout: Path, output: list[str]) -> None:
    names = imported("verify", "--target", str(checkout), *output, cwd=checkout)
    unneeded = {**NOT_FOR_A_CHECKOUT, **NOT_FOR_VERIFY}
    if output:
        unneeded["rich"] = "tables for a person to read"
        # rich's tables import it; the JSON report has no use for it (cli.entry waits for threads
        # at exit only where something imported threading)
        unneeded["threading"] = "waiting for threads at exit, where something started them"
        # issue 39.13, third round: the classes on verify's path are patchctl.records, made
        # without dataclasses' exec; importing dataclasses brought inspect (dis, tokenize) along.
        # rich's tables are dataclasses of their own: only the JSON report does without
        unneeded["dataclasses"] = "a class made by @dataclass (verify's are patchctl.records)"
        unneeded["inspect"] = "dataclasses' import (a @dataclass without a docstring asks it for one)"
    loaded = {name: why for name, why in unneeded.items() if name in names}
    assert not loaded, f"verify of a local checkout imported modules only these need: {loaded}"


@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
def test_apply_to_a_checkout_loads_no_release_machinery(checkout: Path, dry_run: list[str]) -> None:
    names = imported("apply", *dry_run, "--json", cwd=checkout)
    unneeded = {
        **NOT_FOR_A_CHECKOUT,
        "patchctl.cli.dryrun": "a dry run's summary for a person (not --json)",
        # issue 39.13, second round
        "patchctl.patchsets.kinds.marking": "apply --conflicts=markers, and a conflict's reason",
    }
    if not dry_run:  # a dry run's JSON carries each file's diff
        unneeded["difflib"] = "a diff shown (--diff, a dry run), or a conflict's"
    loaded = {name: why for name, why in unneeded.items() if name in names}
    assert not loaded, f"apply to a local checkout imported modules only these need: {loaded}"
