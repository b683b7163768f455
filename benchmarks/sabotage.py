"""The validation's own acceptance test: healthy runs must PASS, each sabotaged set-up must FAIL
with the gate that should catch it.

Every set-up starts from a prepared tree (``--tree``: verl 0.9.1 with ``uky`` applied; ``--tree-hf``:
verl 0.5.0 with ``uky`` + ``verl05-nofa-hf``, for the faster HF-path rows). A sabotage is a
patchset under ``benchmarks/sabotage/`` applied by ``patchctl apply`` to a copy of the tree, a
setting given as an override, or a change of the environment made by this script (never an edit
by hand):

| set-up | how | expected gate |
|---|---|---|
| healthy (x N) | the tree as prepared | none: PASS |
| healthy-v05 (x N) | ``--tree-hf`` as prepared, the smoke profile (HF rollout) | none: PASS |
| sync-off | patchset: vLLM's worker loads no weight bucket (+ free_cache_engine=False) | weights-synced |
| temp-ignored | patchset: vLLM samples at 0.25 whatever the config says | rollout-agrees |
| weights-partial | patchset: vLLM's worker loads only the first half of each weight bucket | weights-match |
| weights-some | patchset: vLLM's worker loads on odd syncs only | weights-match |
| weights-names | patchset: layer 0's and layer 1's weights load under each other's names | weights-match |
| adv-sign | patchset: GRPO's advantage negated | learning |
| opt-skip | patchset: the optimizer step skipped | update-applied |
| lr-zero | setting: actor lr 0 | update-applied |
| shadow | an unpatched verl first on sys.path by a .pth in site-packages (as easy_install's were) | none: PASS |
| ray-copy | Ray uploads an unpatched copy as the job's ``runtime_env.working_dir`` | patched-code-ran |
| reverted | one code patch's file restored to upstream after "migrate" | verify (before any GPU time) |
| adv-sign-v05, opt-skip-v05 | the same patchsets on verl 0.5.0's HF path (``--tree-hf``) | learning, update-applied |

    python benchmarks/sabotage.py --tree T --python PY --pristine verl-0.9.1.tar.gz --out DIR [--only NAME]...
        [--tree-hf T05] [--healthy 3] [--timeout 600] [--dry-run] [-- OVERRIDE ...]

patchctl runs in this script's interpreter, from this checkout's ``src``; ``--python`` is verl's.

The ``.pth`` of ``shadow`` cannot reach a run patchctl launches: ``python -m`` and Ray put the working
directory, the tree, ahead of site-packages in every process (H100, 2026-11-24), so it must PASS with
patched-code-ran showing the tree everywhere. vLLM's worker keeps the weights it loaded at start in
``sync-off`` only while it never sleeps (``free_cache_engine=False``; sleep level 2 frees them).

``--dry-run`` prints every command and writes nothing. The table goes to ``DIR/sabotage.md`` and
``DIR/sabotage.json``; the exit code is 0 when every healthy run passed and every sabotage was caught.
"closest to its bar" is the smallest of report.json's ``margins`` (1.0 is on the bar; see
``patchctl/train/margins.py``): a healthy run whose closest gate reads below about 2 is near its bar.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PATCHSETS = REPO / "benchmarks" / "sabotage"
SHADOW_PTH = "patchctl-sabotage-shadow.pth"


@dataclass(frozen=True)
class SetUp:
    name: str
    #: the gate that must FAIL ("" for a healthy run, which must PASS)
    expect: str
    patchsets: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    #: "hf": runs on --tree-hf with the smoke profile; else --tree with smoke-vllm
    path: str = "vllm"
    #: "shadow" / "ray-copy" / "revert": what this script changes besides patchsets and settings
    special: str = ""


SABOTAGES = (
    SetUp("sync-off", "weights-synced", ("sync-off",), ("actor_rollout_ref.rollout.free_cache_engine=False",)),
    SetUp("temp-ignored", "rollout-agrees", ("temp-ignored",)),
    # issue 40: the faults weights-synced caught only at the run's worst step; weights-match is exact
    SetUp("weights-partial", "weights-match", ("weights-partial",)),
    SetUp("weights-some", "weights-match", ("weights-some",)),
    SetUp("weights-names", "weights-match", ("weights-names",)),
    SetUp("adv-sign", "learning", ("adv-sign",)),
    SetUp("opt-skip", "update-applied", ("opt-skip",)),
    SetUp("lr-zero", "update-applied", (), ("actor_rollout_ref.actor.optim.lr=0",)),
    # a site-packages verl does not reach a run patchctl launches: this must PASS, from the tree
    SetUp("shadow", "", special="shadow"),
    SetUp("ray-copy", "patched-code-ran", special="ray-copy"),
    SetUp("reverted", "verify", special="revert"),
    SetUp("adv-sign-v05", "learning", ("adv-sign-v05",), path="hf"),
    SetUp("opt-skip-v05", "update-applied", ("opt-skip-v05",), path="hf"),
)


def setups(healthy: int) -> list[SetUp]:
    """``healthy`` healthy runs on each path, then every sabotage; the HF ones are left out without --tree-hf."""
    return (
        [SetUp(f"healthy-{i + 1}", "") for i in range(healthy)]
        + [SetUp(f"healthy-v05-{i + 1}", "", path="hf") for i in range(healthy)]
        + list(SABOTAGES)
    )


class Runner:
    """Runs (or, dry, prints) each step; ``patchctl`` is this checkout's, in the trainer's interpreter."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.out, self.dry = args, Path(args.out).resolve(), args.dry_run
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])),
        }

    def patchctl(self, *argv: str) -> list[str]:
        """patchctl in this script's interpreter (``--python`` is the trainer's, which may lack click)."""
        return [sys.executable, "-m", "patchctl", *argv]

    def run(self, argv: list[str], log: Path | None = None) -> int:
        print("$ " + " ".join(shlex.quote(a) for a in argv), flush=True)
        if self.dry:
            return 0
        if log:
            log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") if log else open(os.devnull, "w") as sink:
            return subprocess.run(argv, env=self.env, stdout=sink, stderr=subprocess.STDOUT, check=False).returncode

    def copy(self, tree: Path, dest: Path) -> Path:
        print(f"$ cp -a {shlex.quote(str(tree))} {shlex.quote(str(dest))}  # without .patchctl/runs", flush=True)
        if not self.dry:
            shutil.rmtree(dest, ignore_errors=True)
            runs = (tree / ".patchctl").resolve()
            shutil.copytree(
                tree,
                dest,
                symlinks=True,
                ignore=lambda d, names: [n for n in names if Path(d).resolve() == runs and n in ("runs", "validate")],
            )
        return dest

    def pristine(self) -> Path:
        """The unpatched release (a directory, or the sdist unpacked once into OUT/pristine)."""
        given = Path(self.args.pristine).resolve()
        if given.is_dir():
            return given
        dest = self.out / "pristine"
        print(f"$ tar -xzf {shlex.quote(str(given))} -C {shlex.quote(str(dest))}", flush=True)
        if not self.dry and not dest.is_dir():
            dest.mkdir(parents=True)
            with tarfile.open(given) as tar:
                tar.extractall(dest, filter="data")
        found = sorted(dest.glob("*/verl/__init__.py")) if dest.is_dir() else []
        return found[0].parents[1] if found else dest / f"{given.name.removesuffix('.tar.gz')}"


def base_patchsets(tree: Path) -> list[str]:
    """The patchsets the tree was prepared with (built-in names, else their recorded directories)."""
    try:
        recorded = json.loads((tree / ".patchctl/applied.json").read_text())["patchsets"]
    except (OSError, ValueError, KeyError, TypeError):
        return ["uky"]
    return [name if meta.get("source", "builtin") == "builtin" else meta["source"] for name, meta in recorded.items()]


def site_packages(python: str) -> Path:
    """Where the trainer's interpreter reads .pth files (its purelib)."""
    try:
        done = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return Path("SITE_PACKAGES_OF_" + Path(python).name)
    return Path(done.stdout.strip())


def one(r: Runner, s: SetUp) -> dict[str, object]:
    tree = Path(r.args.tree_hf if s.path == "hf" else r.args.tree).resolve()
    work = r.out / s.name
    row: dict[str, object] = {
        "setup": s.name,
        "expect": s.expect or "none (pass)",
        "verdict": "-",
        "failing": [],
        "doctor": "",
    }
    if s.patchsets or s.special == "revert":
        tree = r.copy(tree, work / "tree")
    for name in s.patchsets:
        sets = [a for p in [*base_patchsets(tree), str(PATCHSETS / name)] for a in ("-p", p)]
        if r.run(r.patchctl("apply", "--target", str(tree), *sets), work / "apply.log") != 0:
            return {**row, "verdict": "set-up failed", "failing": [f"apply {name}: see {work / 'apply.log'}"]}
    if s.special == "revert":
        return revert(r, s, tree, work, row)
    pth = site_packages(r.args.python) / SHADOW_PTH if s.special == "shadow" else None
    if pth is not None:
        line = f"import sys; sys.path.insert(0, {str(r.pristine())!r})\n"
        print(f"$ echo {shlex.quote(line.strip())} > {pth}", flush=True)
        try:
            if not r.dry:
                pth.write_text(line)
        except OSError as exc:
            return {**row, "verdict": "set-up failed", "failing": [f"cannot write {pth} ({exc.strerror})"]}
    # the unpatched release as the job's working directory: Ray uploads it and puts it first on every actor's path
    upload = (f"+ray_kwargs.ray_init.runtime_env.working_dir={r.pristine()}",) if s.special == "ray-copy" else ()
    try:
        profile = "smoke" if s.path == "hf" else "smoke-vllm"
        argv = r.patchctl(
            "train",
            "--target",
            str(tree),
            "--profile",
            profile,
            "--python",
            r.args.python,
            "--out",
            str(work / "run"),
            "--timeout",
            str(r.args.timeout),
            "--json",
            *s.overrides,
            *upload,
            *r.args.overrides,
        )
        code = r.run(argv, work / "train.json")
    finally:
        if pth is not None and not r.dry:
            pth.unlink(missing_ok=True)
    if r.dry:
        return row
    try:
        report = json.loads((work / "run" / "report.json").read_text())
    except (OSError, ValueError):
        return {**row, "verdict": f"no report (exit {code})", "failing": [f"see {work / 'train.json'}"]}
    failing = [g["name"] for g in report["gates"] if g["status"] == "fail"]
    doctor = "; ".join(f.get("id", f.get("error", "")) for f in report.get("doctor") or [])
    margins = {k: v for k, v in (report.get("margins") or {}).items() if v is not None}
    closest = min(margins.items(), key=lambda kv: kv[1]) if margins else None
    return {
        **row,
        "verdict": report["verdict"].upper(),
        "failing": failing,
        "doctor": doctor,
        "closest": f"{closest[0]} x{closest[1]:g}" if closest else "",
        "gates": report["gates"],
    }


def revert(r: Runner, s: SetUp, tree: Path, work: Path, row: dict[str, object]) -> dict[str, object]:
    """A code patch undone on the host (its file back to upstream): verify must fail before any launch."""
    record = {} if r.dry else json.loads((tree / ".patchctl/applied.json").read_text())
    code_files = [
        e["path"]
        for e in record.get("patches", [])
        if e["path"].endswith(".py") and e["kind"] not in ("add-file", "shell-env")
    ]
    rel = code_files[0] if code_files else "verl/workers/rollout/vllm_rollout/__init__.py"
    print(f"$ cp {shlex.quote(str(r.pristine() / rel))} {shlex.quote(str(tree / rel))}", flush=True)
    if not r.dry:
        shutil.copyfile(r.pristine() / rel, tree / rel)
    sets = [a for p in base_patchsets(tree) for a in ("-p", p)]
    code = r.run(r.patchctl("verify", "--target", str(tree), "--json", *sets), work / "verify.json")
    if r.dry:
        return row
    try:
        bad = [
            p
            for p in json.loads((work / "verify.json").read_text())["patches"]
            if p["status"] not in ("present", "applied", "already-applied", "superseded-upstream")
        ]
    except (OSError, ValueError, KeyError):
        bad = []
    finding = f"verify: {bad[0]['patch']} {bad[0]['status']} ({bad[0]['path']})" if bad else ""
    return {
        **row,
        "verdict": "FAIL" if code != 0 else "PASS",
        "failing": ["verify"] if code != 0 else [],
        "doctor": finding,
    }


def table(rows: list[dict[str, object]]) -> str:
    out = [
        "| set-up | expected gate | verdict | failing gates | caught | doctor finding | closest to its bar |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        out.append(
            f"| {row['setup']} | {row['expect']} | {row['verdict']} | {', '.join(row['failing']) or '-'} "
            f"| {caught(row)} | {row['doctor'] or '-'} | {row.get('closest') or '-'} |"
        )
    return "\n".join(out)


def caught(row: dict[str, object]) -> str:
    if row["verdict"] == "-":
        return "-"
    if row["expect"] == "none (pass)":
        return "ok" if row["verdict"] == "PASS" else "NO (a run that should pass failed)"
    return "yes" if row["verdict"] == "FAIL" and row["expect"] in row["failing"] else "NO"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", required=True, help="prepared verl 0.9.1 tree (uky applied)")
    ap.add_argument("--tree-hf", help="prepared verl 0.5.0 tree (uky + verl05-nofa-hf) for the -v05 rows")
    ap.add_argument("--python", default=sys.executable, help="the trainer's interpreter")
    ap.add_argument(
        "--pristine",
        help="the unpatched release of --tree: a directory or its .tar.gz (for shadow, ray-copy and reverted)",
    )
    ap.add_argument("--only", action="append", default=[], help="run only this set-up (repeatable)")
    ap.add_argument("--out", default="sabotage-out")
    ap.add_argument("--healthy", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per training run")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("overrides", nargs="*", help="hydra overrides for every run (after --)")
    args = ap.parse_args()
    chosen = [s for s in setups(args.healthy) if not args.only or s.name in args.only]
    unknown = set(args.only) - {s.name for s in setups(args.healthy)}
    if unknown:
        ap.error(
            f"no set-up named {', '.join(sorted(unknown))}; "
            f"choose from {', '.join(s.name for s in setups(args.healthy))}"
        )
    for flag, tree in (("--tree", args.tree), ("--tree-hf", args.tree_hf)):
        if tree and not args.dry_run and not (Path(tree) / "verl" / "__init__.py").is_file():
            ap.error(f"{flag} {tree} is not a verl tree (no verl/__init__.py); prepare it with patchctl apply")
    if any(s.special for s in chosen) and not args.pristine:
        ap.error("shadow, ray-copy and reverted need --pristine (the unpatched release of --tree)")
    if any(s.path == "hf" for s in chosen) and not args.tree_hf:
        chosen = [s for s in chosen if s.path != "hf"]
        print("# the -v05 rows need --tree-hf; left out", flush=True)
    r = Runner(args)
    rows = []
    for s in chosen:
        print(f"# {s.name}: expect {s.expect or 'PASS'}", flush=True)
        rows.append(one(r, s))
    text = table(rows)
    print(text)
    if args.dry_run:
        return 0
    (r.out / "sabotage.md").write_text(text + "\n")
    (r.out / "sabotage.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(caught(row) in ("yes", "ok") for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
