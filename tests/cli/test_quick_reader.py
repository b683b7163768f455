"""The quick ``verify`` reader (:mod:`patchctl.cli.quick`) option by option, and the process it
runs: test_quick.py compares whole runs with click's on a released tree (minutes); these are the
edges of the reader a person types (``--target=X``, an option twice, a value that looks like an
option, a ``--config`` click would refuse) and what a user sees of the quick process itself
(click never loaded, SIGTERM and Ctrl-C answered as click's commands answer them), each on a
folder of a few files, found by benchmarks/mutation.py's ``quick`` section. The quick ``migrate``
process too (its reader is checked against click's by tests/migrate/test_migrate_quick.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import patchctl
from patchctl import lock
from patchctl.cli.quick import VerifyLine, read_verify

SRC = Path(patchctl.__file__).resolve().parent.parent
#: the ``patchctl`` script as users run it; at its exit (entry's atexit step), whether click was loaded
SCRIPT = (
    "import atexit, sys; sys.argv[0] = 'patchctl'\n"
    "atexit.register(lambda: print('click loaded:', 'click' in sys.modules, file=sys.stderr))\n"
    "{prelude}\n"
    "from patchctl.cli.entry import main; main()"
)


def patchctl_proc(*args: str, prelude: str = "", **kw: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(prelude=prelude), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,  # type: ignore[call-overload]
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder with a ``verl`` package and nothing of the patch sets: verify answers FAILED (1)."""
    (tmp_path / "tree" / "verl").mkdir(parents=True)
    (tmp_path / "tree" / "verl" / "__init__.py").write_text("")
    return tmp_path / "tree"


@pytest.mark.parametrize(
    ("args", "want"),
    [
        ([], VerifyLine()),
        (["--target", "T"], VerifyLine(target="T")),
        (["--target=T"], VerifyLine(target="T")),
        (["-t", "T", "--target", "U"], VerifyLine(target="U")),  # the last one, as click takes it
        (["--patchset=a", "-p", "b", "--patchset", "c"], VerifyLine(patchsets=["a", "b", "c"])),
        (["--strict"], VerifyLine(strict=True)),
        (["--json", "--strict"], VerifyLine(strict=True, as_json=True)),
        (["--json", "-t", "T"], VerifyLine(target="T", as_json=True)),
        (["--config", "none.toml"], VerifyLine(config=Path("none.toml"))),
        (["--config=none.toml", "--json"], VerifyLine(config=Path("none.toml"), as_json=True)),
    ],
)
def test_each_plain_line_is_read_as_click_reads_it(
    args: list[str], want: VerifyLine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # none.toml: nothing there yet
    line = read_verify(args)
    assert line == want
    # and field by field, not through the defaults both sides share: strict or JSON only when asked
    assert line is not None
    assert (line.strict, line.as_json) == ("--strict" in args, any(a.startswith("--json") for a in args))


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["-t=T"],  # click reads -t's value as "=T"
        ["-tT"],
        ["--json=1"],
        ["--nosuch=1"],
        ["--target"],
        ["--target", ""],
        ["--target="],
        ["--target", "--json"],
        ["--target", "-"],
        ["-p", "--strict"],
        ["--target", "T", "extra"],
        ["extra"],
        ["--target", "T", "--"],
    ],
    ids=repr,
)
def test_lines_click_must_read_go_to_click(args: list[str]) -> None:
    assert read_verify(args) is None


def test_a_config_click_would_refuse_goes_to_click(tmp_path: Path) -> None:
    (tmp_path / "dir.toml").mkdir()
    (tmp_path / "gone.toml").symlink_to(tmp_path / "nowhere.toml")
    (tmp_path / "ok.toml").write_text("")
    assert read_verify(["--config", str(tmp_path / "dir.toml")]) is None
    assert read_verify(["--config", str(tmp_path / "gone.toml")]) is None  # a link to nothing
    assert read_verify(["--config", str(tmp_path / "ok.toml")]) == VerifyLine(config=tmp_path / "ok.toml")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to read as another user")
def test_a_config_its_user_cannot_read_goes_to_click() -> None:
    """Read by a user who may not read the file (root may read everything): click's message."""
    with tempfile.TemporaryDirectory() as top:  # not under pytest's folder, which only root may enter
        Path(top).chmod(0o755)
        cfg = Path(top) / "secret.toml"
        cfg.write_text("")
        cfg.chmod(0o600)
        pid = os.fork()
        if pid == 0:  # the child reads it as nobody, then ends without pytest's teardown
            os.setuid(65534)
            os._exit(0 if read_verify(["--config", str(cfg)]) is None else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        cfg.chmod(0o644)
        assert read_verify(["--config", str(cfg)]) == VerifyLine(config=cfg)


def test_shell_completion_goes_to_click_and_its_absence_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("_PATCHCTL_COMPLETE", raising=False)
    assert read_verify(["--json"]) == VerifyLine(as_json=True)
    monkeypatch.setenv("_PATCHCTL_COMPLETE", "bash_complete")
    assert read_verify(["--json"]) is None


def test_a_plain_verify_runs_without_click_and_says_what_click_says(tree: Path) -> None:
    quick = patchctl_proc("verify", "--target", str(tree), "--json")
    out, err = quick.communicate(timeout=120)
    assert quick.returncode == 1, err
    assert err.splitlines() == ["click loaded: False"]
    slow = patchctl_proc("verify", "--target", str(tree), "--json", "--repo", str(tree / "nowhere"))
    _, slow_err = slow.communicate(timeout=120)
    assert "click loaded: True" in slow_err  # a line only click reads
    # the same verdict through click's own verify
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    click = subprocess.run(
        [sys.executable, "-c", "from patchctl.cli.main import main; main()", "verify", "-t", str(tree), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (click.returncode, click.stdout) == (quick.returncode, out)


def test_a_plain_migrate_runs_without_click_and_says_what_click_says(tree: Path, tmp_path: Path) -> None:
    """A cluster the config does not name: the quick migrate's one-line error, as click's migrate
    says it, and click never loaded (no host is reached before the cluster is read)."""
    config = tmp_path / "patchctl.toml"
    config.write_text('[clusters.loop]\nhosts = ["node1"]\nroot = "/r"\n')
    line = ["migrate", "nosuch", "--target", str(tree), "--config", str(config)]
    quick = patchctl_proc(*line)
    out, err = quick.communicate(timeout=120)
    said = f"error: {config}: no cluster named 'nosuch' (known: loop); add [clusters.nosuch] there"
    assert (quick.returncode, out, err.splitlines()) == (2, "", [said, "click loaded: False"])
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    click = subprocess.run(
        [sys.executable, "-c", "from patchctl.cli.main import main; main()", *line],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (click.returncode, click.stdout, click.stderr.splitlines()) == (2, "", [said])


def _waiting(tree: Path, *prelude: str) -> subprocess.Popen[str]:
    """A quick verify of ``tree`` waiting for its lock, which the test holds."""
    os.environ["PATCHCTL_LOCK_WAIT"] = "60"
    try:
        proc = patchctl_proc("verify", "-t", str(tree), prelude="\n".join(prelude))
    finally:
        os.environ.pop("PATCHCTL_LOCK_WAIT")
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_verify_waits_ends_it_as_click_s_verify(tree: Path, sig: signal.Signals) -> None:
    """SIGTERM unwinds like Ctrl-C: exit 130, "interrupted", the lock's wait given up cleanly."""
    with lock.hold(lock.path_for(tree), shared=False, what=tree):
        proc = _waiting(tree, "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)")
        deadline = time.monotonic() + 60
        while not _sleeping(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert [ln for ln in err.splitlines() if ln.strip()] == ["interrupted", "click loaded: False"], err


def _sleeping(pid: int) -> bool:
    """Whether the process sits in the lock's wait between two tries (``time.sleep``: Linux
    x86-64's clock_nanosleep, syscall 230); nothing before it in verify sleeps."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().startswith("230 ")
    except OSError:
        return False


def test_ctrl_c_before_the_command_runs_says_interrupted(tree: Path) -> None:
    """Ctrl-C while verify still loads its runner (outside the command's own handler): one
    "interrupted" after a blank line, exit 130, and click's verify is not run after it."""
    hook = (
        "import sys\n"
        "class CtrlC:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'patchctl.cli.verify_run':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, CtrlC())"
    )
    proc = patchctl_proc("verify", "-t", str(tree), prelude=hook)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert out == ""
    assert err.splitlines() == ["", "interrupted", "click loaded: False"]
