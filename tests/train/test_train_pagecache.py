"""The trainer's large libraries read into the page cache at launch (train/pagecache.py, pageread.py).

Real files, a real side process in this interpreter; what the read-ahead is worth on a cold GPU
machine is measured in docs/validation/vllm-smoke/README.md ("Third pass"), not here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.train import pagecache, pageread
from patchctl.train.profiles import load_profiles


def lib(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    return path


def test_libraries_are_the_large_shared_objects_largest_first_each_once(tmp_path: Path) -> None:
    big = lib(tmp_path / "site/nvidia/cublas/lib/libcublasLt.so.13", 3 << 20)
    mid = lib(tmp_path / "site/torch/lib/libtorch_cuda.so", 2 << 20)
    lib(tmp_path / "site/torch/lib/libsmall.so", 4096)  # under the floor: the import reads it soon enough
    lib(tmp_path / "site/torch/data.bin", 5 << 20)  # not a shared library
    lib(tmp_path / "site/pkg-1.0.dist-info/x.so", 5 << 20)  # metadata folders are skipped
    os.link(mid, tmp_path / "site/torch/lib/libtorch_cuda_link.so")  # the same file twice: read once
    found = pageread.libraries([str(tmp_path / "site"), str(tmp_path / "site")], min_bytes=1 << 20)
    assert [s for s, _ in found] == [3 << 20, 2 << 20]
    assert found[0][1] == str(big) and Path(found[1][1]).samefile(mid)


def test_choose_keeps_to_the_budget() -> None:
    found = [(5, "a"), (4, "b"), (3, "c"), (1, "d")]
    assert pageread.choose(found, 8) == [(5, "a"), (3, "c")]
    assert pageread.choose(found, 100) == found
    assert pageread.choose(found, 0) == []


def test_read_reads_every_byte_and_survives_an_unreadable_file(tmp_path: Path) -> None:
    f = lib(tmp_path / "a.so", (9 << 20) + 7)  # more than one chunk
    assert pageread.read(str(f)) == (9 << 20) + 7
    assert pageread.read(str(tmp_path / "gone.so")) == 0


def test_the_script_reads_under_the_trainers_sys_path(tmp_path: Path) -> None:
    """As the trainer's interpreter runs it: its own folder left out, PYTHONPATH's folders read."""
    lib(tmp_path / "site/vllm/_C.abi3.so", 2 << 20)
    done = subprocess.run(
        [sys.executable, pageread.__file__],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "reading" in done.stdout and "read " in done.stdout.splitlines()[-1], done.stdout
    only = subprocess.run(
        [sys.executable, pageread.__file__, str(tmp_path / "site")], capture_output=True, text=True, timeout=60
    )
    assert only.stdout.splitlines()[:2] == [
        "1 libraries of >= 1 MiB under 1 sys.path entries",
        "reading 1 of them, 0.00 GiB (budget " + only.stdout.split("(budget ")[1].split(")")[0] + ")",
    ]
    assert only.stdout.splitlines()[2].startswith("read 0.00 GiB in ")


def test_warming_logs_and_stop_ends_it(tmp_path: Path) -> None:
    lib(tmp_path / "site/torch/lib/libtorch.so", 2 << 20)
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": os.environ.get("PATH", "")}
    w = pagecache.Warming(sys.executable, env, tmp_path / "pc.log")
    deadline = time.monotonic() + 60
    while "read " not in (tmp_path / "pc.log").read_text().split("\n", 2)[-1] and time.monotonic() < deadline:
        time.sleep(0.1)
    w.stop()
    assert (tmp_path / "pc.log").read_text().splitlines()[-1].startswith("read ")
    # an interpreter that does not exist is said in its log, and the run goes on
    pagecache.Warming(str(tmp_path / "no-python"), env, tmp_path / "none.log").stop()
    assert (tmp_path / "none.log").read_text().startswith("not started:")


def test_the_vllm_profiles_ask_for_it_and_the_others_do_not() -> None:
    asks = {n for n, p in load_profiles().items() if p.prefetch_libs}
    assert asks == {"smoke-vllm", "debug", "fast-load"}


@pytest.mark.parametrize("profile", ["smoke-vllm", "smoke"])
def test_train_starts_it_where_the_profile_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str) -> None:
    """End to end with the stand-in trainer (verl 0.6.1 tree; 0.5.0 for the HF smoke)."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    from standin import FIXTURE, stand_in

    monkeypatch.setenv("FAKE_LOG", str(FIXTURE))
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv.txt"))
    version = "0.6.1" if profile == "smoke-vllm" else "0.5.0"
    tree = stand_in(tmp_path / f"verl-{version}", version)
    run_dir = tmp_path / "run"
    done = CliRunner().invoke(
        cli, ["train", "--target", str(tree), "--profile", profile, "--out", str(run_dir), "--json"]
    )
    assert (run_dir / "report.json").is_file(), done.output
    assert (run_dir / pagecache.LOG_NAME).is_file() == (profile == "smoke-vllm")
