"""The README's set-up works as written on a stock system (#19).

A Debian 12 / Ubuntu 24.04 system Python is externally managed (PEP 668): ``pip install .``
outside a venv fails there. The set-up command is run here literally, with such a Python first
on ``PATH``, in a copy of the repository as a clone would have it. Releases download without
pip: a venv made ``--without-pip`` (as ``uv venv`` makes them) fetches one from the real index.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

from patchctl import releases
from realparts import unavailable

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def readme_block(after: str) -> str:
    """The first ```bash block after the paragraph starting with ``after``."""
    text = README.read_text()
    found = re.search(re.escape(after) + r".*?```bash\n(.*?)\n```", text, re.S)
    assert found, after
    return found.group(1)


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    command = readme_block("Run the tests")
    assert command.startswith("python3 -m venv .venv && ")
    assert command in (ROOT / ".ci" / "run").read_text().splitlines()


def externally_managed_python() -> Path:
    """A python3 marked externally managed (PEP 668) that can make venvs; the test needs one."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        python = Path(candidate)
        if not python.is_file():
            continue
        probe = subprocess.run(
            [python, "-c", "import sysconfig, ensurepip, venv; print(sysconfig.get_path('stdlib'))"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and (Path(probe.stdout.strip()) / "EXTERNALLY-MANAGED").is_file():
            return python
    unavailable("no externally managed python3 with venv here (Debian 12 / Ubuntu 24.04: apt-get install python3-venv)")
    raise AssertionError("unreachable")


def clone(dest: Path) -> Path:
    """The repository as a clone holds it: tracked and untracked-not-ignored files, no venv."""
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


def test_readme_setup_on_an_externally_managed_python(tmp_path: Path, release_cache: Path) -> None:
    python = externally_managed_python()
    repo = clone(tmp_path / "patchctl")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(python)
    # the system's tools (git), but no venv of this test run: `python3` is the system's
    path = os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])
    cache = tmp_path / "cache"
    (cache / "releases").mkdir(parents=True)
    shutil.copy2(releases.sdist("0.6.1"), cache / "releases")  # downloaded once, as for every release test
    env = {**os.environ, "PATH": path, "PATCHCTL_CACHE": str(cache), "VIRTUAL_ENV": ""}
    env.pop("PYTHONPATH", None)

    before = subprocess.run(["python3", "-m", "pip", "install", "."], cwd=repo, env=env, capture_output=True, text=True)
    assert before.returncode != 0 and "externally-managed-environment" in before.stdout + before.stderr

    command = readme_block("Run the main job")
    done = subprocess.run(["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.rstrip().endswith("verify: ok")
    # where the README says the patched tree lives
    tree = cache / "trees" / "verl-0.6.1"
    assert (tree / ".patchctl" / "applied.json").is_file() and (tree / "fix_triton.py").is_file()


def without_pip_venv(dest: Path) -> Path:
    """A venv made ``--without-pip`` holding patchctl's dependencies (put there by this run's pip)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = dest / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            site,
            *_installed(
                "libcst",
                "click",
                "rich",
                "packaging",
                "pyyaml",
                "pygments",
                "markdown-it-py",
                "mdurl",
                "typing_extensions",
            ),
        ],
        check=True,
    )
    return python


def _installed(*names: str) -> list[str]:
    """``name==version`` of each dependency as this run has it: the same code, nothing new fetched."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for n in names:
        try:
            out.append(f"{n}=={version(n)}")
        except PackageNotFoundError:
            continue
    return out


def test_a_release_downloads_in_a_venv_without_pip(tmp_path: Path, release_cache: Path) -> None:
    try:
        urllib.request.urlopen("https://pypi.org/simple/verl/", timeout=20).close()
    except OSError as exc:
        unavailable(f"pypi.org not reachable ({exc})")
    python = without_pip_venv(tmp_path / "venv")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PATCHCTL_CACHE": str(tmp_path / "cache")}
    no_pip = subprocess.run([python, "-m", "pip", "--version"], env=env, capture_output=True, text=True)
    assert no_pip.returncode != 0 and "No module named pip" in no_pip.stderr

    done = subprocess.run(
        [python, "-m", "patchctl", "verify", "--target", "verl==0.6.1", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr  # downloaded and checked: the patches are not applied yet
    got = tmp_path / "cache" / "releases" / "verl-0.6.1.tar.gz"
    cached = releases.sdist("0.6.1")  # the other release tests' copy
    assert hashlib.sha256(got.read_bytes()).digest() == hashlib.sha256(cached.read_bytes()).digest()
