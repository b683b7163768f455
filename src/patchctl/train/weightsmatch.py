"""``weights-match``: the rollout engine holds, after every weight sync, exactly the trainer's weights.

The code hook fingerprints every parameter on both sides of each sync (hook_weights.py): what the
trainer sent, and the part of the engine's own parameter that holds each name once the engine has
loaded the sync. Per sync ``k`` and name, the engine's fingerprint must equal the trainer's:

* same dtype: the sha256 of the bytes are equal (exact);
* the trainer in float32, the engine in bfloat16 or float16: the engine holds the trainer's
  values rounded to nearest in its dtype, bit for bit (the sha256 of that rounding, which the
  trainer's side computes, equals the engine's);
* other pairs: the float64 sums agree within the rounding bound ``|sum(e) - sum(t)| <= sum(|t|) * u`` with
  ``u`` the engine dtype's unit roundoff (2^-8 bfloat16, 2^-11 float16, 2^-24 float32).

A sync the engine never recorded, a name it could not place (a parameter-name mismatch), a part it
did not load (dummy weights left) or a sync it skipped all fail, naming the first syncs and
parameters that differ. The bar does not depend on the model's size: one parameter off fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from patchctl.train.gates import Gate, GateStatus

NAME = "weights-match"
BAR = "every parameter, every sync: engine == trainer (exact; rounded to the engine's dtype where they differ)"
#: unit roundoff of the engine's dtype, for the sums' bound where no exact rounding was recorded
UNIT = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 2.0**-24, "float64": 2.0**-53}


@dataclass(frozen=True)
class Sync:
    pid: int
    side: str
    sync: int
    ms: float
    params: dict[str, dict[str, Any]]


def parse(texts: list[str]) -> tuple[Sync, ...]:
    """The ``weights`` records of the hook's files' texts (half-written lines skipped)."""
    out = []
    for text in texts:
        for line in text.splitlines():
            if '"weights"' not in line:
                continue
            try:
                doc = json.loads(line)
                if doc.get("event") != "weights" or doc.get("side") not in ("trainer", "engine"):
                    continue
                params = {str(k): dict(v) for k, v in dict(doc.get("params") or {}).items()}
                out.append(Sync(int(doc["pid"]), str(doc["side"]), int(doc["sync"]), float(doc.get("ms", 0)), params))
            except (ValueError, KeyError, TypeError):
                continue
    return tuple(out)


def same(t: dict[str, Any], e: dict[str, Any]) -> bool:
    """Does the engine's fingerprint ``e`` hold the trainer's ``t``?"""
    if "sha" not in t or "sha" not in e:
        return False
    if e.get("dtype") == t.get("dtype"):
        return bool(e["sha"] == t["sha"])
    rounded = (t.get("as") or {}).get(e.get("dtype"))
    if rounded is not None:
        return bool(e["sha"] == rounded)
    u = UNIT.get(str(e.get("dtype")))
    try:
        return u is not None and abs(float(e["sum"]) - float(t["sum"])) <= float(t["abs"]) * u
    except (KeyError, TypeError, ValueError):
        return False


def _why(t: dict[str, Any], e: dict[str, Any] | None) -> str:
    if e is None:
        return "the engine did not receive it"
    if e.get("unmapped"):
        return "no engine parameter holds this name (a parameter-name mismatch)"
    if "error" in e:
        return f"not fingerprinted ({e['error']})"
    try:
        return f"engine sum {float(e['sum']):.6g} ({e.get('dtype')}), trainer {float(t['sum']):.6g} ({t.get('dtype')})"
    except (KeyError, TypeError, ValueError):
        return "fingerprints differ"


def judge(records: tuple[Sync, ...]) -> Gate:
    trainer = [r for r in records if r.side == "trainer"]
    engine = [r for r in records if r.side == "engine"]
    if not trainer and not engine:
        return Gate(
            NAME,
            GateStatus.SKIP,
            None,
            BAR,
            "no weight sync was recorded (the rollout does not sync through verl's colocated vLLM "
            "transfer, which the code hook fingerprints)",
        )
    if not engine:
        return Gate(
            NAME,
            GateStatus.FAIL,
            len(trainer),
            BAR,
            f"the trainer sent its weights {len(trainer)} times, but no rollout engine recorded loading any",
        )
    if not trainer:
        return Gate(
            NAME, GateStatus.SKIP, None, BAR, "the engine loaded weights, but the trainer's side was not recorded"
        )
    sent: dict[int, list[Sync]] = {}
    for r in trainer:
        sent.setdefault(r.sync, []).append(r)
    engines = sorted({r.pid for r in engine})
    got = {(r.pid, r.sync): r for r in engine}
    bad: list[tuple[int, int, str, str]] = []  # (sync, engine pid, name, why)
    compared = 0
    for pid in engines:
        for k in sorted(sent):
            e = got.get((pid, k))
            if e is None:
                bad.append((k, pid, "", f"engine pid {pid} recorded no load for this sync"))
                continue
            best: list[tuple[int, int, str, str]] | None = None
            for t in sent[k]:  # any trainer rank's sync k (each sends the whole model)
                here = [
                    (k, pid, n, _why(fp, e.params.get(n)))
                    for n, fp in sorted(t.params.items())
                    if not same(fp, e.params.get(n) or {})
                ]
                if best is None or len(here) < len(best):
                    best = here
                compared += len(t.params)
            bad += best or []
    syncs, params = len(sent), max((len(r.params) for r in trainer), default=0)
    cost = (
        f"fingerprints cost {max(r.ms for r in trainer):.1f} ms per sync on the trainer, "
        f"{max(r.ms for r in engine):.1f} ms on the engine"
    )
    if bad:
        first = bad[0]
        steps = sorted({b[0] for b in bad})
        names = [b[2] for b in bad if b[2]]
        return Gate(
            NAME,
            GateStatus.FAIL,
            len(bad),
            BAR,
            f"{len(bad)} parameter(s) differ on {len(steps)} of {syncs} syncs (syncs {', '.join(map(str, steps[:8]))}"
            f"{' ...' if len(steps) > 8 else ''}); first: sync {first[0]}"
            + (f", {first[2]}" if first[2] else "")
            + f": {first[3]}"
            + (f"; also {', '.join(sorted(set(names[1:4]) - {first[2]}))}" if len(set(names)) > 1 else "")
            + f"; {cost}",
        )
    return Gate(
        NAME,
        GateStatus.PASS,
        0,
        BAR,
        f"{syncs} syncs x {params} parameters on {len(engines)} engine process(es): engine == trainer in each; {cost}",
    )


def summary(records: tuple[Sync, ...]) -> dict[str, Any]:
    """For report.json: syncs and the fingerprints' cost per side."""
    out: dict[str, Any] = {}
    for side in ("trainer", "engine"):
        rs = [r for r in records if r.side == side]
        out[side] = {
            "processes": sorted({r.pid for r in rs}),
            "syncs": len({r.sync for r in rs}),
            "parameters": max((len(r.params) for r in rs), default=0),
            "ms_per_sync_max": max((r.ms for r in rs), default=None),
            "ms_total": round(sum(r.ms for r in rs), 3),
        }
    return out
