"""``fsutil.write_into`` / ``open_into`` / ``renew_folder``: writing into a folder the user named
without following a link there (issue 41 req 4), on the real file system."""

from __future__ import annotations

import io
import os
import resource
import stat
from pathlib import Path

import pytest

from patchctl import fsutil
from patchctl.errors import WriteFailed


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    f = tmp_path / "outside" / "bashrc"
    f.parent.mkdir()
    f.write_text("the user's own\n")
    return f


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*.part")]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_a_link_at_the_name_is_replaced_never_written_through(tmp_path: Path, outside: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "validate.json").symlink_to(outside)
    assert fsutil.write_into(out, "validate.json", b"{}\n") == out / "validate.json"
    assert outside.read_text() == "the user's own\n"
    assert not (out / "validate.json").is_symlink() and (out / "validate.json").read_bytes() == b"{}\n"
    assert leftovers(out) == []


def test_a_link_on_the_way_to_a_sub_folder_is_refused_and_nothing_is_made(tmp_path: Path, outside: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "assets").symlink_to(outside.parent, target_is_directory=True)
    before = open_fds()
    with pytest.raises(WriteFailed) as caught:
        fsutil.write_into(out, "assets/model/tokenizer/config.json", b"{}")
    assert str(caught.value) == (
        f"{out}/assets: cannot write (it is a symbolic link or a file, and patchctl writes through no link); "
        "nothing was changed — remove it, or name another folder"
    )
    assert sorted(p.name for p in outside.parent.iterdir()) == ["bashrc"] and open_fds() == before


def test_missing_sub_folders_are_made_with_the_modes_of_any_new_file(tmp_path: Path) -> None:
    fsutil.write_into(tmp_path / "new", "a/b/c.txt", b"abc")
    assert (tmp_path / "new" / "a" / "b" / "c.txt").read_bytes() == b"abc"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new" / "a").stat().st_mode) == 0o777 & ~umask
    assert stat.S_IMODE((tmp_path / "new" / "a" / "b" / "c.txt").stat().st_mode) == 0o666 & ~umask


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text("old\n")
    with pytest.raises(RuntimeError), fsutil.open_into(tmp_path, "report.json") as f:
        f.write(b"half")
        raise RuntimeError("the renderer failed")
    assert (tmp_path / "report.json").read_text() == "old\n" and leftovers(tmp_path) == []


def test_a_streamed_file_is_in_place_while_it_grows(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "train.log").symlink_to(outside)
    with fsutil.open_into(tmp_path, "train.log", stream=True) as log:
        log.write(b"step:1\n")
        log.flush()
        assert (tmp_path / "train.log").read_bytes() == b"step:1\n"  # tail -f sees it
    assert outside.read_text() == "the user's own\n" and leftovers(tmp_path) == []


def test_a_name_that_climbs_out_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WriteFailed, match=r"climbs out of the tree with \.\."):
        fsutil.write_into(tmp_path / "out", "../escaped", b"x")
    assert not (tmp_path / "escaped").exists()


def test_renew_folder_removes_a_link_and_not_what_it_points_at(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "assets").symlink_to(outside.parent, target_is_directory=True)
    made = fsutil.renew_folder(run / "assets")
    assert not made.is_symlink() and made.is_dir() and os.listdir(made) == []
    assert outside.read_text() == "the user's own\n"
    (made / "old").write_text("x")
    (made / "link").symlink_to(outside)
    assert os.listdir(fsutil.renew_folder(made)) == [] and outside.read_text() == "the user's own\n"


def test_a_folder_that_is_a_file_is_one_error_and_nothing_leaks(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file\n")
    before = open_fds()
    with pytest.raises(WriteFailed, match=r"^.*/out/validate\.json: cannot write \(File exists\)"):
        fsutil.write_into(tmp_path / "out", "validate.json", b"{}")
    assert open_fds() == before and (tmp_path / "out").read_text() == "a file\n"


def test_folders_above_are_made_and_no_descriptor_is_left_open(tmp_path: Path) -> None:
    before = open_fds()
    fsutil.write_into(tmp_path / "a" / "b", "c/d.txt", b"x")
    with fsutil.open_into(tmp_path / "a" / "b", "log", stream=True) as f:
        f.write(b"y")
    assert (tmp_path / "a" / "b" / "c" / "d.txt").read_bytes() == b"x" and open_fds() == before


@pytest.mark.parametrize("stream", [False, True])
def test_a_name_the_file_system_refuses_is_one_error_with_no_temp_left(tmp_path: Path, stream: bool) -> None:
    with (
        pytest.raises(WriteFailed, match="cannot write \\(File name too long\\)"),
        fsutil.open_into(tmp_path, "x" * 300, stream=stream) as f,
    ):
        f.write(b"data")
    assert os.listdir(tmp_path) == []
    long = "y" * 250  # the longest names still work: the temp file's own name stays short
    assert fsutil.write_into(tmp_path, long, b"ok").read_bytes() == b"ok"


def test_a_text_wrapper_the_caller_closes_still_lands(tmp_path: Path) -> None:
    with fsutil.open_into(tmp_path, "report.txt") as raw, io.TextIOWrapper(raw, encoding="utf-8") as text:
        text.write("täglich\n")
    assert (tmp_path / "report.txt").read_text(encoding="utf-8") == "täglich\n" and leftovers(tmp_path) == []


def test_renew_folder_makes_the_folders_above(tmp_path: Path) -> None:
    assert fsutil.renew_folder(tmp_path / "run" / "codehook").is_dir()  # a run directory not made yet


def test_a_folder_in_the_way_of_the_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "validate.json").mkdir()
    with pytest.raises(WriteFailed, match=r"validate\.json: cannot write \(a folder is in the way\)"):
        fsutil.write_into(tmp_path, "validate.json", b"{}")
    assert leftovers(tmp_path) == []


def test_renew_folder_that_cannot_be_made_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("a file\n")
    with pytest.raises(WriteFailed, match="run/assets: cannot write"):
        fsutil.renew_folder(tmp_path / "run" / "assets")


def test_a_sub_folder_that_cannot_be_opened_says_why(tmp_path: Path) -> None:
    """Out of descriptors just as the sub-folder opens: the cause is said, not taken for a link."""
    (tmp_path / "sub").mkdir()
    free = [n for n in range(3, 4096) if not is_open(n)][:2]  # the folder's fd gets the first, the sub-folder none
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (free[1], hard))
    try:
        with pytest.raises(WriteFailed) as caught:
            fsutil.write_into(tmp_path, "sub/x", b"x")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert "Too many open files" in str(caught.value), str(caught.value)
