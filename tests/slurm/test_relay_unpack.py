"""What comes home from a Slurm job without a shared root (slurm/relay.py): the tar a step of the
job writes is the node's word, untrusted here. Only its regular files arrive, each inside the run
folder; a link, a device, a name leading out, a folder that is a link out, or bytes past the
limit are left out, and a tar cut short still brings the files before the cut. The steps' argv
and the package sent to the nodes are checked as well. Real tar archives, real files; the whole
round trip through a real Slurm is in test_slurm_own_home.py."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from patchctl.slurm import relay


def tar_of(*members: tuple[str, bytes | None, bytes]) -> bytes:
    """A tar of ``(name, data, type)`` members: data None for a non-file, type a tarfile type."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def test_the_run_folder_s_files_arrive_at_their_paths(tmp_path: Path) -> None:
    data = tar_of(
        ("report.json", b'{"verdict": "pass"}', tarfile.REGTYPE),
        ("plots/loss.png", b"png", tarfile.REGTYPE),
        ("job.out", b"", tarfile.REGTYPE),
    )
    assert relay.unpack(data, tmp_path) == ["report.json", "plots/loss.png", "job.out"]
    assert (tmp_path / "report.json").read_bytes() == b'{"verdict": "pass"}'
    assert (tmp_path / "plots" / "loss.png").read_bytes() == b"png"
    assert (tmp_path / "job.out").read_bytes() == b""


def test_a_file_folders_deep_arrives_in_a_folder_not_made_yet(tmp_path: Path) -> None:
    """The run folder here is made by the unpack itself, with every folder a file sits in."""
    data = tar_of(("hosts/n1/nccl_trace/rank_0", b"trace", tarfile.REGTYPE))
    assert relay.unpack(data, tmp_path / "run") == ["hosts/n1/nccl_trace/rank_0"]
    assert (tmp_path / "run" / "hosts" / "n1" / "nccl_trace" / "rank_0").read_bytes() == b"trace"


def test_anything_but_a_regular_file_inside_the_folder_is_left_out(tmp_path: Path) -> None:
    into = tmp_path / "run"
    into.mkdir()
    data = tar_of(
        ("link", None, tarfile.SYMTYPE),
        ("dev", None, tarfile.CHRTYPE),
        ("/tmp/abs.txt", b"x", tarfile.REGTYPE),
        ("../out.txt", b"x", tarfile.REGTYPE),
        ("a/../../out2.txt", b"x", tarfile.REGTYPE),
        ("ok.txt", b"ok", tarfile.REGTYPE),
    )
    assert relay.unpack(data, into) == ["ok.txt"]
    assert sorted(p.name for p in into.iterdir()) == ["ok.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_folder_that_is_a_link_out_of_the_run_folder_is_not_written_through(tmp_path: Path) -> None:
    into, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    into.mkdir()
    elsewhere.mkdir()
    (into / "plots").symlink_to(elsewhere)
    data = tar_of(("plots/loss.png", b"png", tarfile.REGTYPE), ("report.json", b"{}", tarfile.REGTYPE))
    assert relay.unpack(data, into) == ["report.json"]
    assert list(elsewhere.iterdir()) == []


def test_a_file_that_is_a_link_is_replaced_not_written_through(tmp_path: Path) -> None:
    into, target = tmp_path / "run", tmp_path / "precious"
    into.mkdir()
    target.write_bytes(b"keep")
    (into / "report.json").symlink_to(target)
    assert relay.unpack(tar_of(("report.json", b"new", tarfile.REGTYPE)), into) == ["report.json"]
    assert target.read_bytes() == b"keep"
    assert not (into / "report.json").is_symlink() and (into / "report.json").read_bytes() == b"new"


def test_bytes_past_the_limit_are_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay, "MAX_BYTES", 10)
    data = tar_of(
        ("a", b"12345", tarfile.REGTYPE),
        ("b", b"12345", tarfile.REGTYPE),  # exactly at the limit: still in
        ("c", b"1", tarfile.REGTYPE),
    )
    assert relay.unpack(data, tmp_path) == ["a", "b"]
    assert not (tmp_path / "c").exists()


def test_a_tar_cut_short_brings_the_files_before_the_cut(tmp_path: Path) -> None:
    data = tar_of(("first", b"1" * 600, tarfile.REGTYPE), ("second", b"2" * 4000, tarfile.REGTYPE))
    cut = data[: 512 + 1024 + 512 + 100]  # the first member whole, the second's header and part
    assert relay.unpack(cut, tmp_path)[:1] == ["first"]
    assert (tmp_path / "first").read_bytes() == b"1" * 600
    assert relay.unpack(b"no tar at all", tmp_path / "x") == []


def test_a_step_of_the_running_job_is_one_task_on_each_node() -> None:
    assert relay.step("42", "n[1-2]", 2) == [
        "srun",
        "--jobid=42",
        "--overlap",
        "--nodes=2",
        "--ntasks-per-node=1",
        "--nodelist=n[1-2]",
        "--kill-on-bad-exit=0",
    ]


def test_the_package_sent_to_the_nodes_holds_its_sources_and_nothing_compiled() -> None:
    with tarfile.open(fileobj=io.BytesIO(relay.package_tar())) as tar:
        names = tar.getnames()
        kinds = {m.type for m in tar.getmembers()}
    assert "patchctl/__init__.py" in names and "patchctl/slurm/relay.py" in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert kinds <= {tarfile.REGTYPE, tarfile.DIRTYPE}
