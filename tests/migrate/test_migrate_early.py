"""The ``patchctl`` script logs in to a migrate's hosts before the CLI loads (migrate.early).

Real processes: ``python -m patchctl migrate`` (the script's entry point) against real sshd hosts
on loopback, with an ssh config whose ``LocalCommand`` appends the host's name to a file at each
login: a master connection logs in, the sessions multiplexed over it do not. So the file counts
the logins a migrate made: one per host, whether the script began them or the CLI did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from migrate_helpers import make_repo

from patchctl import orphans
from patchctl.clusters import load_cluster
from patchctl.migrate import early, session
from patchctl.migrate.options import Options
from patchctl.remote import ssh

if TYPE_CHECKING:
    from migrate_fixtures import Site


@pytest.mark.parametrize(
    ("argv", "asked"),
    [
        (["gpu"], early.Asked("gpu")),
        (["gpu", "--target", "x", "--json", "--dry-run"], early.Asked("gpu")),
        (["--config", "c.toml", "gpu"], early.Asked("gpu", Path("c.toml"))),
        (["gpu", "--config=c.toml", "-t", "x", "-p", "uky"], early.Asked("gpu", Path("c.toml"))),
        (["gpu", "--host", "n1", "--host=n2", "-j", "1"], early.Asked("gpu", None, ("n1", "n2"), 1)),
        (["gpu", "-j4", "-tDIR", "--jobs=3"], early.Asked("gpu", None, (), 3)),
    ],
)
def test_a_migrate_command_line_names_its_logins(argv: list[str], asked: early.Asked) -> None:
    assert early.read(argv) == asked


@pytest.mark.parametrize(
    "argv",
    [
        [],  # no cluster: the CLI's usage error
        ["gpu", "cpu"],  # two
        ["gpu", "--help"],
        ["-h", "gpu"],
        ["gpu", "--verbose"],  # an option migrate does not have
        ["gpu", "--json=yes"],  # a flag with a value
        ["gpu", "--jobs", "0"],
        ["gpu", "-j", "x"],
        ["gpu", "--config"],  # its value missing
        ["gpu", "--host"],
        ["gpu", "--config="],
        ["--", "gpu"],
    ],
)
def test_a_command_line_this_reader_is_unsure_of_logs_in_nowhere_early(argv: list[str]) -> None:
    assert early.read(argv) is None


def test_nothing_begun_is_nothing_to_take(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    config = site.config("", ["node1"])
    assert early.take(load_cluster("loop", config), None) is None
    monkeypatch.setenv(early.COMPLETE_VAR, "bash_complete")  # a shell completing a word
    early.begin(["loop", "--config", str(config)])
    assert early._begun is None


def _counting(site: Site, tmp_path: Path, aliases: list[str]) -> tuple[Path, Path]:
    """A config for ``aliases`` whose ssh config counts logins in the returned file."""
    logins = tmp_path / "logins"
    counting = tmp_path / "ssh_config"
    counting.write_text(
        f"Host *\n  PermitLocalCommand yes\n  LocalCommand echo %n >> {logins}\n" + site.loop.ssh_config.read_text()
    )
    config = site.config("", aliases)
    config.write_text(config.read_text().replace(str(site.loop.ssh_config), str(counting)))
    return config, logins


def _script(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """``python -m patchctl ARGV`` run to its end, and its pid."""
    child = subprocess.Popen(
        [sys.executable, "-m", "patchctl", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # block-buffered output, as from a user's shell: the script's quick exit must flush it
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
            "PATCHCTL_CACHE": str(tmp_path / "cache"),
        },
    )
    out, err = child.communicate(timeout=120)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err), child.pid


def _control_folders(pid: int) -> list[Path]:
    """The ssh control folders in /tmp that process ``pid`` made (their owner file names it)."""
    found = []
    for path in orphans.BASE.glob(ssh.PREFIX + "*"):
        try:
            if (path / orphans.OWNER).read_text(encoding="ascii").split(" ")[0] == str(pid):
                found.append(path)
        except OSError:  # not ours to read, or swept meanwhile
            continue
    return found


def test_the_logins_the_script_began_are_the_migrates_own(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "", "a.txt": "a\n"})
    config, logins = _counting(site, tmp_path, ["node1", "node2"])
    done, _ = _script(tmp_path, "migrate", "loop", "--target", str(tree), "--config", str(config), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [h["status"] for h in json.loads(done.stdout)["hosts"]] == ["ok", "ok"]
    # one login per host: the CLI took the script's over instead of logging in a second time
    assert sorted(logins.read_text().split()) == ["node1", "node2"]
    assert (site.root("node2") / "a.txt").read_text() == "a\n"


def test_logins_begun_for_another_cluster_are_closed_not_used(site: Site, tmp_path: Path) -> None:
    config = site.config("", ["node1", "node2"])
    early.begin(["loop", "--config", str(config), "--host", "node1"])
    begun = early._begun
    assert begun is not None
    masters = begun[2].masters
    try:
        assert [m.host.ssh for m in masters] == ["node1"]
        assert masters[0].open() is None  # logged in
        # the CLI asks for both hosts: the early login is not what it asked for
        assert early.take(load_cluster("loop", config), None) is None
        assert early._begun is None
        assert masters[0]._proc is not None and masters[0]._proc.poll() is not None  # the master ended
        assert not begun[2].dir.exists()
    finally:
        begun[2].close()


def test_logins_begun_for_a_command_that_fails_are_closed_at_exit(site: Site, tmp_path: Path) -> None:
    config = site.config("", ["node1"])
    argv = ["loop", "--config", str(config), "--list"]
    assert early.read(argv) is not None  # so the script begins the login
    # --list without --dry-run: click's usage error, raised while the script's login is under way
    done, pid = _script(tmp_path, "migrate", *argv)
    assert done.returncode == 2 and "--list shows a dry run's files" in done.stderr, done.stderr
    # and closed it at exit: its control folder is gone (a kill -9 leaves that to the next run's sweep)
    assert _control_folders(pid) == []


def test_logins_nobody_took_over_end_with_patchctl(site: Site) -> None:
    config = site.config("", ["node1"])
    early.begin(["loop", "--config", str(config)])
    begun = early._begun
    assert begun is not None
    master = begun[2].masters[0]
    assert master.open() is None
    early._drop()  # what patchctl's exit runs
    assert master._proc is not None and master._proc.poll() is not None
    assert not begun[2].dir.exists() and early._begun is None


def test_a_session_of_the_same_cluster_takes_the_logins_over(site: Site) -> None:
    config = site.config("", ["node1", "node2"])
    early.begin(["loop", "--config", str(config), "-j", "2"])
    begun = early._begun
    assert begun is not None
    with session.start(load_cluster("loop", config), Options(jobs=2)) as taken:
        assert taken.connections is begun[2]  # not a second login per host
        assert [m.open() for m in taken.connections.masters] == [None, None]
    assert early._begun is None and not begun[2].dir.exists()


def test_each_host_s_agent_starts_as_the_host_logs_in_before_the_run(site: Site, tmp_path: Path) -> None:
    """The agent's ssh session and python3's start on the host overlap the source's check and the
    rest of migrate's loading (issue 39): started once the tree is named, used by the run."""
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "", "a.txt": "a\n"})
    with session.start(site.cluster("", ["node1", "node2"]), Options(jobs=2)) as begun:
        assert begun.agents == []  # nothing runs on a host before the tree is named
        begun.look_at(tree)
        agents = [started.result(timeout=60) for started in begun.agents]
        assert len(agents) == 2
        assert all(a is not None and a._proc is not None and a._proc.poll() is None for a in agents)
        result = begun.run(tree, [])
    assert [h.status.value for h in result.hosts] == ["ok", "ok"]
    assert (site.root("node2") / "a.txt").read_text() == "a\n"
    # the run took them over: it handed them their prescan (and ended them)
    assert all(a is not None and a.prescanned and a._proc is None for a in agents)


def test_agents_a_session_started_end_when_it_closes_without_a_run(site: Site, tmp_path: Path) -> None:
    """A migrate that stops before its run (the source fails verify) leaves no agent on a host."""
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": ""})
    with session.start(site.cluster("", ["node1"])) as begun:
        begun.look_at(tree)
        agent = begun.agents[0].result(timeout=60)
        assert agent is not None and agent._proc is not None
        process = agent._proc
    assert process.poll() is not None  # ended: its ssh session gone with it
    assert not begun.connections.dir.exists()
