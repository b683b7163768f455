"""``--compare REPORT``: two run reports side by side, and one plot with both reward curves.

Reads the ``report.json`` that ``train`` (or validate, on the head) wrote, and the
``validate.json`` beside it where there is one (which adds the Ray nodes and their GPUs).
Pure apart from reading the two reports and writing the plot.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl import fsutil
from patchctl.train.logparse import REWARD_KEYS
from patchctl.validate.errors import ReportUnreadable


@dataclass(frozen=True)
class Report:
    path: Path
    doc: dict[str, Any]
    #: validate.json beside it (None for a plain ``train`` report)
    run: dict[str, Any] | None


def load(path: Path) -> Report:
    path = path / "report.json" if path.is_dir() else path
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportUnreadable(str(path), str(exc)) from None
    if not isinstance(doc, dict) or "steps" not in doc or "timings" not in doc:
        raise ReportUnreadable(str(path), "no steps or timings in it")
    try:
        run = json.loads((path.parent / "validate.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        run = None
    return Report(path, doc, run)


def _gpus(r: Report) -> str:
    if r.run and r.run.get("ray"):
        nodes = r.run["ray"]["nodes"]
        names = sorted({n for node in nodes for n in node.get("gpu_names", [])}) or ["GPU"]
        total = sum(int(node["gpus"]) for node in nodes)
        return f"{len(nodes)} node(s) x {nodes[0]['gpus']} = {total} x {', '.join(names)}"
    gpus = r.doc.get("gpus") or []
    return f"1 node, {len(gpus)} x {gpus[0]['name']}" if gpus else "none reported"


def _patches(r: Report) -> set[str]:
    sets = (r.doc.get("tree") or {}).get("patchsets") or {}
    return {f"{name}/{p}" for name, meta in sets.items() for p in meta.get("patches", [])}


def _reward(r: Report) -> list[tuple[int, float]]:
    out = []
    for s in r.doc["steps"]:
        v = next((s["metrics"][k] for k in REWARD_KEYS if s["metrics"].get(k) is not None), None)
        if v is not None:
            out.append((int(s["step"]), float(v)))
    return out


def _per_step(r: Report) -> float | None:
    ats = [s["at"] for s in r.doc["steps"] if s.get("at") is not None]
    return round((ats[-1] - ats[0]) / (len(ats) - 1), 3) if len(ats) > 1 else None


def compare(new: Report, old: Report) -> dict[str, Any]:
    """Rows of (what, new, old) plus the package versions that differ and the patch ids."""

    def fmt(v: Any) -> str:
        return "-" if v is None else str(v)

    rn, ro = _reward(new), _reward(old)
    rows = [
        ("report", str(new.path), str(old.path)),
        ("verdict", fmt(new.doc.get("verdict")), fmt(old.doc.get("verdict"))),
        ("GPUs", _gpus(new), _gpus(old)),
        ("steps", str(len(new.doc["steps"])), str(len(old.doc["steps"]))),
        (
            "time to first step (s)",
            fmt(new.doc["timings"].get("first_step")),
            fmt(old.doc["timings"].get("first_step")),
        ),
        ("seconds per step", fmt(_per_step(new)), fmt(_per_step(old))),
        ("final reward", fmt(round(rn[-1][1], 4) if rn else None), fmt(round(ro[-1][1], 4) if ro else None)),
        ("verdict at (s)", fmt(new.doc["timings"].get("verdict")), fmt(old.doc["timings"].get("verdict"))),
    ]
    pn, po = new.doc.get("packages") or {}, old.doc.get("packages") or {}
    versions = [(k, pn.get(k, "-"), po.get(k, "-")) for k in sorted(set(pn) | set(po)) if pn.get(k) != po.get(k)]
    a, b = _patches(new), _patches(old)
    return {
        "rows": rows,
        "versions": versions,
        "patches": {"both": sorted(a & b), "only_new": sorted(a - b), "only_old": sorted(b - a)},
    }


def plot(new: Report, old: Report, path: Path) -> Path | None:
    """Both reward curves on one axis; None without matplotlib or rewards."""
    rn, ro = _reward(new), _reward(old)
    if not rn and not ro:
        return None
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for series, label, colour in ((rn, f"new: {_gpus(new)}", "tab:green"), (ro, f"old: {_gpus(old)}", "tab:blue")):
        if series:
            ax.plot([s for s, _ in series], [v for _, v in series], marker="o", markersize=3, label=label, color=colour)
    ax.set_xlabel("training step")
    ax.set_ylabel("reward (critic/score/mean)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("patchctl validate --compare")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    return fsutil.write_into(path.parent, path.name, png.getvalue())  # a link at compare.png is replaced
