"""weights-match's comparison on real fingerprints (train/hook_weights.py over numpy arrays, the
CPU stand-in's tensors): exact where the dtypes are equal, within the engine dtype's rounding bound
where they differ, and the verdict naming the first sync and parameter that differ."""

from __future__ import annotations

import numpy as np

from patchctl.train import hook_weights, weightsmatch
from patchctl.train.gates import GateStatus
from patchctl.train.weightsmatch import Sync


def _t() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((64, 32)).astype("float32")


def test_equal_dtypes_compare_exactly() -> None:
    t = _t()
    e = t.copy()
    assert weightsmatch.same(hook_weights.fingerprint(t), hook_weights.fingerprint(e))
    e[3, 7] = np.nextafter(e[3, 7], np.float32(np.inf))  # one ulp of one value
    assert not weightsmatch.same(hook_weights.fingerprint(t), hook_weights.fingerprint(e))


def test_a_rounded_engine_dtype_is_held_to_its_rounding_bound() -> None:
    t = _t()
    rounded = t.astype("float16")  # what an engine in float16 holds: the trainer's values rounded
    assert weightsmatch.same(hook_weights.fingerprint(t), hook_weights.fingerprint(rounded))
    off = rounded.copy()
    # the bound is on the sums (sum(|t|) * 2^-11, about 0.8 here): the weak fallback for a pair of
    # dtypes whose exact rounding the trainer's side did not record (torch records bfloat16's and
    # float16's, so on GPUs the comparison is exact); a change beyond it fails
    off[0, 0] += np.float16(4.0)
    assert not weightsmatch.same(hook_weights.fingerprint(t), hook_weights.fingerprint(off))


def test_the_verdict_names_the_first_sync_and_parameter_and_an_unplaced_name() -> None:
    t = {"a.weight": hook_weights.fingerprint(_t()), "b.weight": hook_weights.fingerprint(_t() * 2)}
    good = dict(t)
    trainer = (Sync(1, "trainer", 1, 1.0, t), Sync(1, "trainer", 2, 1.0, t))
    engine = (Sync(2, "engine", 1, 1.0, good), Sync(2, "engine", 2, 1.0, {**good, "b.weight": {"unmapped": True}}))
    g = weightsmatch.judge(trainer + engine)
    assert g.status is GateStatus.FAIL and g.value == 1
    assert "first: sync 2, b.weight: no engine parameter holds this name" in g.reason, g.reason
    assert weightsmatch.judge(trainer + engine[:1]).reason.startswith("1 parameter(s) differ on 1 of 2 syncs")
    assert weightsmatch.judge((*trainer, engine[0], Sync(2, "engine", 2, 1.0, good))).status is GateStatus.PASS
    assert weightsmatch.judge(trainer).status is GateStatus.FAIL  # sent, never loaded
