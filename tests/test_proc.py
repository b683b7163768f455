"""proc: the one way to run programs — run to the end, or spawn in the background."""

from __future__ import annotations

import subprocess
import sys

import pytest

from patchctl import proc
from patchctl.errors import CommandFailed, ToolMissing


def test_run_failure_names_the_command_code_and_stderr() -> None:
    with pytest.raises(CommandFailed) as caught:
        proc.run([sys.executable, "-c", "import sys; sys.stderr.write('bad thing\\n'); sys.exit(4)"])
    assert "exited with 4: bad thing" in str(caught.value) and caught.value.returncode == 4


@pytest.mark.parametrize("call", [proc.run, proc.spawn])
def test_a_missing_program_is_one_clear_error(call: object) -> None:
    with pytest.raises(ToolMissing, match="no-such-tool-xyz: not found on PATH; install it"):
        call(["no-such-tool-xyz", "--version"])


def test_spawn_streams_output_and_takes_input_later() -> None:
    code = "import sys\nfor n in range(3): print(n, flush=True)\nprint(sys.stdin.read().upper())"
    p = proc.spawn([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout is not None
    assert [p.stdout.readline() for _ in range(3)] == [b"0\n", b"1\n", b"2\n"]  # read while it still runs
    out, _ = p.communicate(b"late input")
    assert out == b"LATE INPUT\n" and p.returncode == 0


def test_spawn_never_inherits_the_terminal_by_default() -> None:
    p = proc.spawn([sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"])
    assert p.wait(timeout=30) == 0 and p.stdout is None and p.stdin is None  # /dev/null: no hang, no pipe
