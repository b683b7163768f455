#!/usr/bin/env bash
# The vLLM validation run on the GPU test machine: verl 0.9.1 source release -> patchctl apply (uky)
# -> patchctl verify -> patchctl train --profile debug, then --profile fast-load, with vLLM 0.24.0,
# a tiny Qwen2 made offline and the record's tiny data set. Run from the repository root.
#
#   bash docs/validation/vllm/run_gpu.sh part DIR     copy the bundle part(s) in DIR to /tmp/vparts
#                                                     (one call each: a call carries at most 64 MiB,
#                                                     a warm machine keeps /tmp for the next call)
#   bash docs/validation/vllm/run_gpu.sh setup DIR    DIR holds the last part, verl-0.9.1.tar.gz and
#                                                     SHA256SUMS: join, check, unpack; apply, verify,
#                                                     the model and data, the dry runs
#   bash docs/validation/vllm/run_gpu.sh train DIR    the two runs side by side (debug, then fast-load)
#                                                     and the evidence; needs setup's /tmp state
#   bash docs/validation/vllm/run_gpu.sh run DIR      setup, then train, in one call
#
# DIR comes from docs/validation/vllm/build_bundle.sh (then split into one folder per call, see
# README.md). Results go to $OUT: driver.log, the two report.json, results.tar.gz (train logs,
# plots, apply/verify output, the exact commands, the evidence of the Triton block).
set -uo pipefail
MODE=${1:?usage: run_gpu.sh part|setup|train|run DIR}
DIR=$(cd "${2:?usage: run_gpu.sh part|run DIR}" && pwd)
OUT=${OUT:-/tmp/vllm-out}
mkdir -p "$OUT" /tmp/vparts
S=$(date +%s.%N)
say() { printf "[%6.1f s] %s\n" "$(awk -v a="$(date +%s.%N)" -v b="$S" 'BEGIN{print a-b}')" "$*"; }

cp "$DIR"/vsite.tar.xz.part* /tmp/vparts/ 2>/dev/null
say "parts in /tmp/vparts: $(cd /tmp/vparts && ls | tr '\n' ' ')"
if [ "$MODE" = part ]; then
    # facts about the image that the run depends on (cheap; printed once per part call)
    ls -d /usr/local/cuda/lib64/stubs 2>&1; command -v git nvidia-smi
    python3 -m pip list 2>/dev/null | grep -i -E '^(protobuf|opencv|numba|setuptools|regex|huggingface|tokenizers|transformers|pydantic|cupy|triton|numpy|safetensors) '
    exit 0
fi

# -- the bundle: join, check, unpack, byte-compile (what pip install would do) -----------------
HERE=$PWD/docs/validation/vllm
export PYTHONPATH=$PWD/src:/tmp/vsite:$HERE/evidence
export UKY_EVIDENCE_DIR=/tmp/vev
# this machine: no network, memory that grows lazily (Ray's monitor would kill workers); vLLM's
# INFO lines carry its start-up timings (verl sets WARN only where the variable is unset)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
       RAY_USAGE_STATS_ENABLED=0 RAY_memory_monitor_refresh_ms=0 RAY_DEDUP_LOGS=0 VLLM_LOGGING_LEVEL=INFO
patchctl() { python3 -c 'import sys; sys.argv[0] = "patchctl"; from patchctl.cli.main import main; main()' "$@"; }
R=/tmp/vres
T=/tmp/w/verl-0.9.1
CFG=(--cluster gpu --config /tmp/vassets/patchctl.toml)
# what this machine and model need, on both runs (README.md says why):
MACHINE=(+actor_rollout_ref.model.override_config.attn_implementation=eager   # no flash-attn in the image
         actor_rollout_ref.model.use_remove_padding=False                    # its varlen path needs flash-attn
         data.image_key=text_only_model                                      # the tiny model has no image processor
         trainer.total_epochs=3)                                             # 6 steps instead of 2, for s/step
# fast-load on debug's data and shapes, so that only the vLLM settings differ (side by side)
SAME_DATA=("data.train_files=/tmp/vassets/data/train_tiny.parquet" "data.val_files=/tmp/vassets/data/train_tiny.parquet"
           data.train_batch_size=1 data.max_prompt_length=512 data.max_response_length=64
           actor_rollout_ref.rollout.n=2 actor_rollout_ref.actor.ppo_mini_batch_size=1
           actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2
           actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 'trainer.logger=["console"]'
           trainer.save_freq=999 trainer.test_freq=999 trainer.val_before_train=False)

setup() {
if [ ! -f /tmp/vsite/.complete ]; then
    (cd /tmp/vparts && sha256sum -c "$DIR/SHA256SUMS") || { say "bundle parts missing or damaged"; exit 3; }
    rm -rf /tmp/vsite && mkdir -p /tmp/vsite
    cat /tmp/vparts/vsite.tar.xz.part* | xz -d -T0 | tar --no-same-owner -xf - -C /tmp/vsite || { say "unpack failed"; exit 3; }
    python3 -m compileall -q -j 0 /tmp/vsite >/dev/null 2>&1
    touch /tmp/vsite/.complete
fi
say "bundle unpacked: $(du -sm /tmp/vsite | cut -f1) MiB"
rm -rf $R /tmp/vev /tmp/vev-bare && mkdir -p $R /tmp/vev
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $R/gpu.txt
python3 -m pip list --path /tmp/vsite 2>/dev/null > $R/bundle-pip-list.txt
python3 -m pip list 2>/dev/null > $R/image-pip-list.txt

# -- verl 0.9.1: a plain source-release tree, patched and verified -----------------------------
rm -rf /tmp/w && mkdir -p /tmp/w && tar --no-same-owner -xzf "$DIR/verl-0.9.1.tar.gz" -C /tmp/w
git -C "$T" init -q -b main && git -C "$T" add -A &&
    git -C "$T" -c user.name=patchctl -c user.email=patchctl@localhost commit -qm "verl 0.9.1 source release"
say "patchctl apply"
patchctl apply --target "$T" > $R/apply.txt 2>&1; echo "apply rc=$?" | tee -a $R/apply.txt
patchctl apply --target "$T" --json --dry-run > $R/apply-again.json 2>&1
say "patchctl verify"
patchctl verify --target "$T" > $R/verify.txt 2>&1; echo "verify rc=$?" | tee -a $R/verify.txt
tail -n 2 $R/verify.txt
python3 -m compileall -q -j 0 "$T/verl" >/dev/null 2>&1

# -- the model and data, made here, offline -----------------------------------------------------
python3 "$HERE/make_assets.py" /tmp/vassets | tee $R/assets.json
for p in debug fast-load; do
    extra=("${MACHINE[@]}"); [ $p = fast-load ] && extra+=("${SAME_DATA[@]}")
    patchctl train --target "$T" --profile $p "${CFG[@]}" --out /tmp/vrun/$p --dry-run "${extra[@]}" > $R/$p-dry-run.txt 2>&1
done

# the block's own effect, in a fresh process without the record's LD_LIBRARY_PATH
say "Triton block without LD_LIBRARY_PATH preset"
(cd "$T" && env -u LD_LIBRARY_PATH UKY_EVIDENCE_DIR=/tmp/vev-bare python3 -c \
    'import os, verl.workers.rollout.vllm_rollout as m; print("stubs dir exists:", os.path.isdir(m.cuda_stubs)); print("LD_LIBRARY_PATH:", os.environ.get("LD_LIBRARY_PATH"))' 2>&1 | tail -n 2 | tee $R/block-bare.txt)
say "setup done"
}

train() {
[ -f $R/assets.json ] || { say "no setup state in /tmp: run setup first"; exit 3; }
# ORDER="fast-load debug" runs them the other way round (the second run finds a warm page cache)
for p in ${ORDER:-debug fast-load}; do
    extra=("${MACHINE[@]}"); [ $p = fast-load ] && extra+=("${SAME_DATA[@]}")
    # no Ray left from an earlier run on this machine (a bare ray.init() would join it)
    python3 -m ray.scripts.scripts stop --force >/dev/null 2>&1; rm -rf /tmp/vrun/$p
    # a cold H100 ended the debug trainer at 258 s (Ray 2.60, 2026-11-24) and reached its first
    # step at 275 s in an earlier session: 450 s is 1.5x the slowest cold run, for both profiles.
    # With the image byte-compiled (../vllm-smoke/run_gpu.sh setup) the cold debug trainer ended at
    # 190.2 s and fast-load's at 157.7 s (page cache dropped; third pass): 450 s keeps 2.4x there, and
    # 1.6x for a cluster whose torch has no .pyc files
    limit=${TRAIN_TIMEOUT:-450}
    say "patchctl train --profile $p (timeout $limit s)"
    patchctl train --target "$T" --profile $p "${CFG[@]}" --out /tmp/vrun/$p --timeout "$limit" --json \
        "${extra[@]}" > "$OUT/$p-report.json" 2> $R/$p-progress.txt
    say "train $p rc=$?"
    cp /tmp/vrun/$p/train.log $R/$p-train.log; cp /tmp/vrun/$p/report.png $R/$p-report.png 2>/dev/null
    python3 - "$OUT/$p-report.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as exc:  # noqa: BLE001
    sys.exit(f"no report: {exc}")
print("verdict", d["verdict"], "| timings", d["timings"])
for g in d["gates"]:
    print(f'  {g["name"]:<20} {g["status"]:<5} {g["value"]}  ({g["threshold"]})  {g["reason"]}')
PY
    ps -eo pid,args | grep -c "[r]aylet" | xargs echo "raylets left:"
done

cat /tmp/vev/*.jsonl > $R/evidence.jsonl 2>/dev/null; cat /tmp/vev-bare/*.jsonl > $R/evidence-bare.jsonl 2>/dev/null
python3 "$HERE/evidence_summary.py" $R/evidence.jsonl $R/debug-train.log $R/fast-load-train.log > $R/evidence-summary.txt 2>&1
head -n 20 $R/evidence-summary.txt
python3 "$HERE/compare_runs.py" "$OUT/debug-report.json" $R/debug-train.log "$OUT/fast-load-report.json" $R/fast-load-train.log \
    2>&1 | tee $R/compare.md
say "train done"
}

case $MODE in
    setup) setup ;;
    train) train ;;
    run) setup; train ;;
    *) echo "unknown mode $MODE"; exit 2 ;;
esac
tar -czf "$OUT/results.tar.gz" -C $R .
