"""add-file and shell-env: before/after, conflicts, round trips."""

from __future__ import annotations

from pathlib import Path

from patchctl.patchsets.kinds.add_file import AddFile
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.shell_env import ShellEnv
from patchctl.patchsets.loader import builtin_dir, load_patchset
from patchctl.patchsets.model import Presence

UKY = load_patchset(builtin_dir() / "uky")
ENV = UKY.get("grpo-script-fast-load-env")
SCRIPT = UKY.get("grpo-script-debug")
CTX = Context(Path("."), "run.sh")

USER_SCRIPT = "#!/bin/bash\nset -x\nexport OMP_NUM_THREADS=1  # Uky\n\npython3 -m verl.trainer.main_ppo \\\n  a=b\n"


def test_shell_env_adds_missing_exports_before_the_command() -> None:
    edit = ShellEnv().apply(USER_SCRIPT, ENV, CTX)
    assert edit.status is EditStatus.CHANGED
    lines = edit.text.splitlines()
    cmd = lines.index("python3 -m verl.trainer.main_ppo \\")
    assert lines[cmd - 1] == "export TOKENIZERS_PARALLELISM=false  # Uky"
    assert "export LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH  # Uky" in lines
    assert lines.count("export OMP_NUM_THREADS=1  # Uky") == 1  # kept, not duplicated
    assert ShellEnv().check(edit.text, ENV, CTX).presence is Presence.PRESENT
    ctx = Context(Path("."), "run.sh", edit.undo)
    assert ShellEnv().revert(edit.text, ENV, ctx).text == USER_SCRIPT


def test_shell_env_conflicting_value() -> None:
    src = USER_SCRIPT.replace("OMP_NUM_THREADS=1  # Uky", "OMP_NUM_THREADS=8")
    edit = ShellEnv().apply(src, ENV, CTX)
    assert edit.status is EditStatus.CONFLICT
    assert "line 3: OMP_NUM_THREADS=8" in edit.reason


def test_add_file_creates_with_mode_and_reverts() -> None:
    edit = AddFile().apply(None, SCRIPT, CTX)
    assert edit.status is EditStatus.CHANGED and edit.mode == 0o755
    assert AddFile().check(edit.text, SCRIPT, CTX).presence is Presence.PRESENT
    assert AddFile().revert(edit.text, SCRIPT, CTX).text is None


def test_add_file_keeps_users_own_script() -> None:
    edit = AddFile().apply("#!/bin/bash\necho mine\n", SCRIPT, CTX)
    assert edit.status is EditStatus.NOT_APPLICABLE
    assert "already exists with other content; kept" in edit.reason


def test_add_file_conflict_shows_diff() -> None:
    doc = UKY.get("quick-fix")
    edit = AddFile().apply("something else\n", doc, Context(Path("."), "QUICK_FIX.md"))
    assert edit.status is EditStatus.CONFLICT
    assert "+something else" in edit.detail
