"""Proof that the patched code ran, in every process of a run: the hook's set-up and its verdict.

Before the launch, :func:`install` writes ``hook_site.py`` as ``RUN_DIR/codehook/sitecustomize.py``
and returns the environment that puts that folder first on the trainer's ``PYTHONPATH``; every
process of the run inherits it (Ray's workers, vLLM's engine core and GPU workers) and records
each watched module it executed, and from which file. The watched modules are those of the code
patches in the tree's ``.patchctl/applied.json`` (edits of ``.py`` files inside the ``verl``
package), plus ``verl`` itself, whose file tells where each process took verl from.

After the run, :func:`read` turns the records into a :class:`Proof`: per code patch, the processes
that imported its module from the tree and those that imported it from elsewhere. The gate
``patched-code-ran`` fails when a process ran verl from outside the tree (a pip-installed verl
shadowing it, a copy Ray uploaded), when a patched module was never imported although its package
was (the run took that code path, not the patched code), and when a patch of a rollout's package
(``verl.workers.rollout.vllm_rollout``) never ran in that engine's worker processes although the
run had some (the Triton block of ``uky`` acts in vLLM's GPU worker).

Where a patch acts is derived from its module, since manifests do not say: a patch whose package
no process imported acts on a code path this run does not take (verl 0.5.0's vLLM rollout patch in
an HF-rollout smoke run, a critic patch in a GRPO run). The report lists it as off the run's path;
it neither passes nor fails the gate, and a run with every code patch off its path SKIPs it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from patchctl import fsutil
from patchctl.errors import PatchctlError
from patchctl.patchsets import record as rec
from patchctl.train.codeproof import Process, Proof, Watch
from patchctl.train.gates import Gate, GateStatus

DIR_NAME = "codehook"
#: the weight fingerprints' module, imported by the hook where verl's weight sync runs
WEIGHTS_MODULE = "patchctl_hook_weights.py"
#: the per-sample seeds and prompt ids of a reproducible run, imported where PATCHCTL_REPRO_SEED is set
REPRO_MODULE = "patchctl_hook_repro.py"
ENV_DIR, ENV_WATCH = "PATCHCTL_CODEHOOK_DIR", "PATCHCTL_CODEHOOK_WATCH"
#: the kinds whose entries add files rather than edit code that verl runs
NOT_CODE = ("add-file", "shell-env")
#: a rollout package -> the title of the engine processes its patches act in
ENGINE_WORKERS = {"verl.workers.rollout.vllm_rollout": "VLLM::Worker"}
_TITLE = re.compile(r"^(VLLM::\w+|ray::[\w.]+)")


def module_of(path: str) -> str | None:
    """``verl/a/b.py`` -> ``verl.a.b``, ``verl/a/__init__.py`` -> ``verl.a``; None outside the package."""
    parts = Path(path).parts
    if not parts or parts[0] != "verl" or not path.endswith(".py") or ".." in parts:
        return None
    names = [*parts[:-1], Path(parts[-1]).stem]
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names) if all(n.isidentifier() for n in names) else None


def watches(root: Path) -> tuple[Watch, ...]:
    """The code patches the tree's apply record lists (none where there is no record)."""
    try:
        record = rec.load(root)
    except PatchctlError:
        return ()
    out: list[Watch] = []
    for e in record.entries if record else []:
        module = module_of(e.path) if e.kind not in NOT_CODE else None
        if module and not any(w.module == module and w.patch == e.patch for w in out):
            out.append(Watch(e.patchset, e.patch, module, e.path))
    return tuple(out)


def env(run_dir: Path, found: tuple[Watch, ...]) -> dict[str, str]:
    """The variables the hook reads; ``PYTHONPATH`` is the launcher's to order.

    Every process that should record needs them and ``run_dir/codehook`` on its ``PYTHONPATH``:
    the trainer's children inherit them; the workers of a Ray cluster started elsewhere (validate's
    nodes) get them only from the environment their raylet was started with.
    """
    return {
        ENV_DIR: str(run_dir / DIR_NAME / "records"),
        ENV_WATCH: ",".join(sorted({"verl", *(w.module for w in found), *(w.package for w in found)})),
    }


def node_env(root: Path, run_dir: Path, pythonpath: str = "") -> dict[str, str]:
    """What a Ray node started apart from the trainer (validate's) needs for its workers to record:
    the hook's variables, and the tree then the hook folder first on ``PYTHONPATH``. Nothing where
    the tree has no code patch. The hook itself is written by the trainer's launch, before any
    worker of the run starts."""
    found = watches(root)
    if not found:
        return {}
    path = [str(root), str(run_dir / DIR_NAME), *(p for p in pythonpath.split(os.pathsep) if p)]
    return {**env(run_dir, found), "PYTHONPATH": os.pathsep.join(path)}


def install(run_dir: Path) -> Path:
    """Write the hook into ``run_dir/codehook``, made afresh (the records of an earlier run gone,
    and no link left there for the run's processes to write through); returns the folder."""
    folder = fsutil.renew_folder(run_dir / DIR_NAME)
    (folder / "records").mkdir()
    fsutil.write_into(folder, "sitecustomize.py", Path(__file__).with_name("hook_site.py").read_bytes())
    fsutil.write_into(folder, WEIGHTS_MODULE, Path(__file__).with_name("hook_weights.py").read_bytes())
    fsutil.write_into(folder, REPRO_MODULE, Path(__file__).with_name("hook_repro.py").read_bytes())
    return folder


def read(run_dir: Path, tree: Path, found: tuple[Watch, ...]) -> Proof:
    """The records of every process, latest title first; lines a process left half-written are skipped."""
    return Proof(str(tree.resolve()), found, parse(texts(run_dir)))


def texts(run_dir: Path) -> list[str]:
    """Every process's record file, as text."""
    files = sorted((run_dir / DIR_NAME / "records").glob("*.jsonl"))
    return [f.read_text(encoding="utf-8", errors="replace") for f in files]


def parse(texts: list[str]) -> tuple[Process, ...]:
    """One process per record file's text, by pid."""
    processes = []
    for text in texts:
        imports: dict[str, str] = {}
        digests: dict[str, str] = {}
        cmd, pid = "", 0
        for line in text.splitlines():
            try:
                doc = json.loads(line)
                pid, cmd = int(doc["pid"]), str(doc.get("cmd", cmd))
            except (ValueError, KeyError, TypeError):
                continue
            if doc.get("event") == "import" and isinstance(doc.get("module"), str):
                imports.setdefault(doc["module"], str(doc.get("file")))
                if isinstance(doc.get("sha256"), str):
                    digests.setdefault(doc["module"], doc["sha256"])
        if pid:
            processes.append(Process(pid, role(cmd), imports, digests))
    return tuple(sorted(processes, key=lambda p: p.pid))


def role(cmd: str) -> str:
    m = _TITLE.match(cmd)
    if m:
        return m.group(1)
    return "driver" if "verl.trainer.main_ppo" in cmd else "python"


def gate(proof: Proof | None) -> Gate:
    name, bar = "patched-code-ran", "every code patch imported from the tree; no verl from elsewhere"
    if proof is None or not proof.watches:
        return Gate(
            name, GateStatus.SKIP, None, bar, "no code patch in the tree's .patchctl/applied.json: nothing to prove"
        )
    if not proof.processes:
        return Gate(
            name,
            GateStatus.FAIL,
            0,
            bar,
            "no process of the run loaded patchctl's code hook (was "
            "PYTHONPATH replaced?), so nothing shows that the patched code ran",
        )
    away = proof.elsewhere()
    if away:
        p, module, file = away[0]
        where = "a copy Ray uploaded" if "runtime_resources" in file else "not the tree"
        return Gate(
            name,
            GateStatus.FAIL,
            len({q.pid for q, _, _ in away}),
            bar,
            f"pid {p.pid} ({p.role}) ran {module} from {file} ({where}: {proof.tree}); a verl installed in "
            "site-packages or put first on sys.path shadows the tree: remove it (pip uninstall verl)",
        )
    failed = coverage(proof)
    if failed is not None:
        return failed
    on_path = [w for w in proof.watches if proof.on_path(w)]
    off = [w.patch for w in proof.watches if w not in on_path]
    note = f"; off this run's path (their packages never imported): {', '.join(off)}" if off else ""
    if not on_path:
        return Gate(name, GateStatus.SKIP, len(proof.processes), bar, "no code patch is on this run's path" + note)
    counts = ", ".join(f"{w.patch}: {sum(w.module in p.imports for p in proof.processes)} processes" for w in on_path)
    return Gate(
        name,
        GateStatus.PASS,
        len(proof.processes),
        bar,
        f"{len(proof.processes)} processes recorded, verl from the tree in each; {counts}{note}",
    )


def coverage(proof: Proof) -> Gate | None:
    """The failure of a code patch on the run's path that no process (or no engine process it acts
    in) imported; None when each on the path was imported where it acts. Shared with validate's
    judgement of every host's processes (validate/codehosts.py)."""
    name, bar = "patched-code-ran", "every code patch imported from the tree; no verl from elsewhere"
    on_path = [w for w in proof.watches if proof.on_path(w)]
    for w in on_path:
        users = [p for p in proof.processes if w.module in p.imports]
        if not users and all(p.role == "driver" for p in proof.processes):
            return Gate(
                name,
                GateStatus.FAIL,
                0,
                bar,
                f"patch {w.patch} ({w.patchset}): only the driver loaded the "
                "code hook, so nothing shows where the patched code ran; Ray's workers did not inherit the "
                f"trainer's environment (a Ray cluster started without {ENV_DIR}, {ENV_WATCH} and the hook "
                "folder on PYTHONPATH: see codehook.env)",
            )
        if not users:
            return Gate(
                name,
                GateStatus.FAIL,
                0,
                bar,
                f"patch {w.patch} ({w.patchset}) edits {w.module}: the run "
                f"imported its package {w.package} but no process imported the module, so the patched code "
                "never ran",
            )
        for package, title in ENGINE_WORKERS.items():
            engines = [p for p in proof.processes if p.role == title]
            if (w.module + ".").startswith(package + ".") and engines and not any(p in engines for p in users):
                return Gate(
                    name,
                    GateStatus.FAIL,
                    0,
                    bar,
                    f"patch {w.patch} edits {w.module}, which acts in "
                    f"{title} processes; none of the run's {len(engines)} imported it",
                )
    return None
