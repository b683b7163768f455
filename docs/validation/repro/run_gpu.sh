#!/usr/bin/env bash
# Issue 40 req 3 and 4 on nvidia-h200-x4 (verl 0.9.1 + vLLM 0.24 + Ray 2.60, the docs/validation/vllm
# bundle), from a copy of this tree (.gpu/repro40/wt; the bundle parts in ../p0..p3, sshd in ../debs).
# part and setup are ../vllm-smoke/run_gpu.sh's. Results go to $OUT.
#
#   run_gpu.sh train NAME:GPUS[:OVERRIDE,...] ...   patchctl train --profile smoke-vllm, one after
#                                                   another; reports in $R/runs/NAME-report.json. With
#                                                   PARALLEL=1 all at once: verl's weight-sync socket is
#                                                   /tmp/rl-colocate-zmq-<Ray job id>-..., and every fresh
#                                                   Ray cluster's first job is 01000000, so runs beside
#                                                   each other collide (README.md: 7 of 12 disturbed)
#   run_gpu.sh judge                                 docs/validation/repro/repro_table.py over the healthy
#                                                   runs, then validate --baseline for every other run
#   run_gpu.sh layout LAYOUT [OVERRIDE...]           benchmarks/validate_nodes.py --layout (1x2, 2x1, 2x2)
#   run_gpu.sh busbw                                 all-reduce busbw of every GPU pair (NCCL, 256 MiB)
set -uo pipefail
MODE=${1:?usage: run_gpu.sh train|judge|layout|busbw ...}
shift
OUT=${OUT:-/tmp/r40-out}
mkdir -p "$OUT"
S=$(date +%s.%N)
say() { printf "[%6.1f s] %s\n" "$(awk -v a="$(date +%s.%N)" -v b="$S" 'BEGIN{print a-b}')" "$*"; }
HERE=$PWD/docs/validation/repro
export PYTHONPATH=$PWD/src:/tmp/vsite
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
       RAY_USAGE_STATS_ENABLED=0 RAY_memory_monitor_refresh_ms=0 RAY_DEDUP_LOGS=0 \
       NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
patchctl() { python3 -c 'import sys; sys.argv[0] = "patchctl"; from patchctl.cli.main import main; main()' "$@"; }
T=/tmp/w/verl-0.9.1
R=/tmp/r40res
mkdir -p $R/runs
CFG=(--cluster gpu --config /tmp/vassets/patchctl.toml)

train() {
    [ -f /tmp/vassets/patchctl.toml ] || { say "no setup state in /tmp: run ../vllm-smoke/run_gpu.sh setup first"; exit 3; }
    local pids=() names=() spec name gpus extra ov
    for spec in "$@"; do
        IFS=: read -r name gpus extra <<< "$spec"
        ov=()
        [ -n "${extra:-}" ] && IFS=, read -ra ov <<< "$extra"
        rm -rf /tmp/vrun/$name
        # END (epoch seconds): the call's end; a run starts only with MIN_LEFT (120) s left and stops 15 s before it
        local limit=${TRAIN_TIMEOUT:-420} left
        if [ -n "${END:-}" ]; then
            left=$((END - $(date +%s) - 15))
            [ "$left" -ge "${MIN_LEFT:-120}" ] || { say "train $name skipped: $left s left before END"; continue; }
            [ "$left" -ge "$limit" ] || limit=$left
        fi
        CUDA_VISIBLE_DEVICES=$gpus patchctl train --target "$T" --profile smoke-vllm "${CFG[@]}" --out /tmp/vrun/$name \
            --timeout "$limit" --json "${ov[@]}" > "$R/runs/$name.json" 2> "$R/runs/$name-progress.txt" &
        names+=("$name")
        [ -n "${PARALLEL:-}" ] || { wait "$!"; say "train $name rc=$? (timeout $limit s)"; collect "$name"; continue; }
        pids+=($!)
        say "train $name on GPU $gpus ${ov[*]:-}"
        sleep "${STAGGER:-4}"
    done
    local i
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}"; say "train ${names[$i]} rc=$?"
    done
    [ -n "${PARALLEL:-}" ] || return 0
    for name in "${names[@]}"; do collect "$name"; done
}

# one run's report and log into $R/runs, its verdict line printed, and $R packed into $OUT at once
# (a call cut by its limit still brings back every run that ended)
collect() {
    local name=$1
    cp /tmp/vrun/$name/report.json "$R/runs/$name-report.json" 2>/dev/null
    cp /tmp/vrun/$name/train.log "$R/runs/$name-train.log" 2>/dev/null
    python3 - "$R/runs/$name-report.json" "$name" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as exc:  # noqa: BLE001
    sys.exit(f"{sys.argv[2]}: no report: {exc}")
bad = [f'{g["name"]}={g["status"]}' for g in d["gates"] if g["status"] not in ("pass", "skip")]
t = d.get("timings") or {}
print(f'{sys.argv[2]}: {d["verdict"]} steps={len(d["steps"])} first_step={t.get("first_step")} verdict={t.get("verdict")} {" ".join(bad)}')
PY
    tar -czf "$OUT/r40res.tar.gz" -C $R --exclude='*-train.log' . 2>/dev/null
}

judge() {
    mkdir -p $R/healthy
    cp $R/runs/healthy-*-report.json $R/healthy/ 2>/dev/null
    python3 "$HERE/repro_table.py" $R/healthy/*-report.json --bands $R/bands.json | tee $R/repro-table.md
    for f in $R/runs/*-report.json; do
        case $f in *healthy-*) continue ;; esac
        echo "== $(basename "$f"): validate --baseline healthy/ (the absolute gates first)"
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"], [(g["name"], g["status"]) for g in d["gates"]])' "$f"
        patchctl validate "$f" --baseline $R/healthy 2>&1 | tail -n 3
        echo "rc=$?"
    done
}

layout() {
    local lay=$1; shift
    sshd_up
    # cold: the page cache dropped; with COLD=1 also Triton's, torch's and vLLM's caches (not while
    # other runs start beside this one: they read them)
    [ -n "${COLD:-}" ] && rm -rf ~/.triton ~/.cache/torch ~/.cache/vllm ~/.cache/flashinfer /tmp/torchinductor_*
    sync; if (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then say "page cache dropped"; else say "page cache NOT dropped"; fi
    local extra=() o
    for o in "$@"; do extra+=(--override "$o"); done
    rm -rf $R/layout-$lay
    python3 "$PWD/benchmarks/validate_nodes.py" --tree "$T" --out $R/layout-$lay --profile smoke-vllm --only healthy \
        --layout "$lay" --env "PYTHONPATH=$PWD/src:/tmp/vsite" --env "RAY_memory_monitor_refresh_ms=0" \
        --env "NCCL_NVLS_ENABLE=0" --env "TORCH_SYMM_MEM_DISABLE_MULTICAST=1" --env "NVSHMEM_DISABLE_NVLS=1" \
        --timeout "${VALIDATE_TIMEOUT:-330}" "${extra[@]}"
    say "layout $lay done"
    python3 - $R/layout-$lay/healthy <<'PY'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
try:
    v = json.loads((run / "validate.json").read_text())
except Exception as exc:  # noqa: BLE001
    sys.exit(f"no validate.json: {exc}")
print("verdict", v.get("verdict"), v.get("cause", ""), "| timings", v.get("timings"))
for g in (v.get("trained") or {}).get("gates", []):
    print(f'  {g["name"]:<22} {g["status"]:<5} {g["value"]}  {g["reason"][:160]}')
try:
    r = json.loads((run / "report.json").read_text())
    print("gpus", [(g.get("host"), g.get("uuid", "")[:12], g.get("name")) for g in r.get("gpus", [])])
except Exception as exc:  # noqa: BLE001
    print("no report.json", exc)
PY
}

sshd_up() {
    mkdir -p /tmp/sys && for d in "$PWD"/../debs/*.deb; do dpkg-deb -x "$d" /tmp/sys || dpkg -x "$d" /tmp/sys; done
    mkdir -p /usr/local/bin /usr/local/sbin /usr/local/lib /usr/local/lib/openssh
    cp --update=none /tmp/sys/usr/bin/* /usr/local/bin/ 2>/dev/null; cp --update=none /tmp/sys/usr/sbin/sshd /usr/local/sbin/
    cp --update=none /tmp/sys/usr/lib/openssh/* /usr/local/lib/openssh/ 2>/dev/null
    cp --update=none /tmp/sys/usr/lib/x86_64-linux-gnu/*.so* /tmp/sys/lib/x86_64-linux-gnu/*.so* /usr/local/lib/ 2>/dev/null
    ldconfig
    id sshd >/dev/null 2>&1 || useradd -r -M -d /run/sshd -s /usr/sbin/nologin sshd 2>/dev/null \
        || echo 'sshd:x:105:65534::/run/sshd:/usr/sbin/nologin' >> /etc/passwd
    export PATCHCTL_SSHD=/usr/local/sbin/sshd
    # no `ray stop --force` here: it would end the Ray clusters of runs beside this one
}

busbw() {
    nvidia-smi topo -m 2>&1 | head -8
    python3 "$HERE/pair_busbw.py"
}

case $MODE in
    train) train "$@" 2>&1 | tee -a "$OUT/train.log" ;;
    judge) judge 2>&1 | tee "$OUT/judge.log" ;;
    layout) layout "$@" 2>&1 | tee -a "$OUT/layout.log" ;;
    busbw) busbw 2>&1 | tee "$OUT/busbw.log" ;;
    *) echo "unknown mode $MODE"; exit 2 ;;
esac
tar -czf "$OUT/r40res.tar.gz" -C $R --exclude='*-train.log' . 2>/dev/null
