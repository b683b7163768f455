"""A line longer than the reader keeps (1 MiB) is read as its start and end, never held whole (issue 41).

Before, a log without newlines was one string in memory (a 200 MB line: 419 MB resident) and each
signature that looked at it paid its whole length. The errors doctor matches sit at a line's start
or end; these tests show both are still found, and that memory stays bounded (tracemalloc's peak is
a count of bytes, not a timing).
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tracemalloc

from patchctl.doctor import LogReader, diagnose, load_signatures, open_log
from patchctl.doctor.logfile import LINE_HEAD, LINE_TAIL

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
NET = "NET/Socket : Connect to 10.0.0.2<43521> failed : Connection refused"


def _lines(data: bytes) -> tuple[list[str], LogReader]:
    reader = LogReader(io.BytesIO(data), "train.log")
    return list(reader), reader


def test_a_long_line_is_its_start_a_note_and_its_end():
    middle = 3 * LINE_HEAD
    data = ("a" * LINE_HEAD + "b" * middle + "c" * LINE_TAIL + "\nnext\n").encode()
    lines, reader = _lines(data)
    assert reader.lines_read == 2 and reader.lines_cut == 1
    assert lines[1] == "next\n"
    long = lines[0]
    assert long.startswith("a" * LINE_HEAD + " [... ")
    assert long.endswith("] " + "c" * LINE_TAIL + "\n")
    assert f"[... {middle} characters not read ...]" in long and "b" not in long


def test_a_line_up_to_the_limit_is_read_whole():
    for length in (LINE_HEAD - 1, LINE_HEAD, LINE_HEAD + 1, LINE_HEAD + LINE_TAIL):
        lines, reader = _lines(("x" * length + "\ny\n").encode())
        assert lines == ["x" * length + "\n", "y\n"] and reader.lines_cut == 0, length


def test_a_last_line_without_newline_is_cut_too():
    lines, reader = _lines(("a" * (2 * LINE_HEAD) + "z").encode())
    assert reader.lines_cut == 1 and lines[0].startswith("a" * LINE_HEAD) and lines[0].endswith("a" * LINE_TAIL + "z")


def test_findings_at_the_start_and_end_of_long_lines_are_found(tmp_path):
    """doctor on a gzip log: the OOM opens a 3 MiB line, the failed connect closes another one."""
    log = tmp_path / "train.log.gz"
    filler = "[" * (3 * LINE_HEAD)
    log.write_bytes(gzip.compress(f"start\n{OOM} {filler}\n{filler} {NET}\nend\n".encode()))
    with open_log(log) as reader:
        d = diagnose(reader, load_signatures())
    assert reader.lines_cut == 2
    assert {(m.signature.id, m.line) for m in d.matches} == {("cuda-out-of-memory", 2), ("nccl-network", 3)}
    assert d.lines == 4
    out = subprocess.run(
        [sys.executable, "-m", "patchctl", "doctor", "--json", str(log)], capture_output=True, text=True, check=True
    )
    assert {m["id"] for m in json.loads(out.stdout)["matches"]} == {"cuda-out-of-memory", "nccl-network"}


def test_a_huge_line_is_not_held_in_memory(tmp_path):
    log = tmp_path / "dump.log"
    with log.open("w", encoding="utf-8") as f:
        f.write(OOM + " ")
        for _ in range(32):
            f.write("x" * 2**20)
        f.write(" end\n")
    tracemalloc.start()
    try:
        with open_log(log) as reader:
            d = diagnose(reader, load_signatures())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [m.signature.id for m in d.matches] == ["cuda-out-of-memory"]
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB for a 32 MiB line"


def test_the_cli_says_when_a_line_was_cut(tmp_path) -> None:
    from tests.clirun import run

    log = tmp_path / "run.log"
    log.write_bytes(b"x" * (2 * LINE_HEAD) + b"\ntorch.OutOfMemoryError: CUDA out of memory.\n")
    code, out = run("doctor", str(log))
    assert code == 0
    assert "1 line(s) over 1 MiB were read as their first MiB and last 64 KiB" in out
