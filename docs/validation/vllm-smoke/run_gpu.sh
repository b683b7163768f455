#!/usr/bin/env bash
# Issue 21 on the GPU test machine: verl 0.9.1 + vLLM 0.24 (bundle with Ray 2.60), the start-up
# breakdown (debug before/after), the vLLM learning smoke, the sabotage suite and validate on a
# loopback host. Run from a copy of the gpu branch's tree (the device sends /work/main's checkout;
# the branch's files travel in the carried .gpu/wt, see README.md). Results go to $OUT.
#
#   run_gpu.sh part DIR [probe]   copy DIR's bundle part to /tmp/vparts (one call per part); with
#                                 probe, first the image facts that start-up speed depends on
#                                 (byte-compiled or not, cold and warm import times)
#   run_gpu.sh setup DIR          DIR holds the last part, SHA256SUMS and verl-0.9.1.tar.gz: join,
#                                 check, unpack, byte-compile; the tree: apply uky, verify; assets
#   run_gpu.sh speed              the runs named in $RUNS (NAME:PROFILE:VARIANT[:TIMEOUT] ...), each stamped
#                                 by benchmarks/vllm_stages.py; then the stage table
#   run_gpu.sh suite GROUP...     benchmarks/sabotage.py set-ups; a GROUP is NAME[,NAME...] run at once
#                                 (one sabotage.py each), groups one after another; then the table
#   run_gpu.sh validate           sshd + rsync from .gpu/debs, then benchmarks/validate_one.py:
#                                 migrate + validate --profile smoke-vllm on one loopback host x 1 GPU
#   run_gpu.sh nodes              sshd + rsync, then benchmarks/validate_nodes.py on two loopback hosts
#                                 (nvidia-h200-x2): healthy, then node2's tree reverted after migrate
#   run_gpu.sh health             the same host, validate --profile health twice (issue 22), then
#                                 benchmarks/bench_host_preflight.py
#   run_gpu.sh codehook           benchmarks/bench_codehook.py with the stack's interpreter and imports
set -uo pipefail
MODE=${1:?usage: run_gpu.sh part|setup|speed ...}
OUT=${OUT:-/tmp/v21-out}
mkdir -p "$OUT" /tmp/vparts
S=$(date +%s.%N)
say() { printf "[%6.1f s] %s\n" "$(awk -v a="$(date +%s.%N)" -v b="$S" 'BEGIN{print a-b}')" "$*"; }
HERE=$PWD/docs/validation/vllm-smoke
VHERE=$PWD/docs/validation/vllm
export PYTHONPATH=$PWD/src:/tmp/vsite
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
       RAY_USAGE_STATS_ENABLED=0 RAY_memory_monitor_refresh_ms=0 RAY_DEDUP_LOGS=0 VLLM_LOGGING_LEVEL=INFO
patchctl() { python3 -c 'import sys; sys.argv[0] = "patchctl"; from patchctl.cli.main import main; main()' "$@"; }
R=/tmp/v21res
T=/tmp/w/verl-0.9.1
CFG=(--cluster gpu --config /tmp/vassets/patchctl.toml)
# what this machine and the tiny model need on the debug profile (docs/validation/vllm/README.md)
MACHINE=(+actor_rollout_ref.model.override_config.attn_implementation=eager actor_rollout_ref.model.use_remove_padding=False
         data.image_key=text_only_model trainer.total_epochs=3)
# fast-load on debug's data and shapes (as ../vllm/run_gpu.sh): only the vLLM settings differ
SAME_DATA=("data.train_files=/tmp/vassets/data/train_tiny.parquet" "data.val_files=/tmp/vassets/data/train_tiny.parquet"
           data.train_batch_size=1 data.max_prompt_length=512 data.max_response_length=64
           actor_rollout_ref.rollout.n=2 actor_rollout_ref.actor.ppo_mini_batch_size=1
           actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2
           actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 'trainer.logger=["console"]'
           trainer.save_freq=999 trainer.test_freq=999 trainer.val_before_train=False)

probe() {
    # before anything else reads the disk: what a cold machine pays for an import
    local sp; sp=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    TIMEFORMAT='%R'
    for m in torch torch transformers; do
        t=$( { time python3 -c "import $m" >/dev/null 2>&1; } 2>&1 ); echo "import $m: $t s"
    done
    echo "site-packages: $sp"
    [ -w "$sp" ] && echo "  writable" || echo "  read-only"
    echo "  .py files in torch: $(find "$sp/torch" -name '*.py' | wc -l), .pyc: $(find "$sp/torch" -name '*.cpython-312.pyc' | wc -l)"
    echo "  .py files in transformers: $(find "$sp/transformers" -name '*.py' | wc -l), .pyc: $(find "$sp/transformers" -name '*.cpython-312.pyc' | wc -l)"
    python3 -c 'import sys; print("pycache_prefix", sys.pycache_prefix, "dont_write", sys.dont_write_bytecode)'
    mount | grep -E ' on / | on /opt| on /tmp' | head -5
    nproc; free -g | head -2; df -h / /tmp | tail -2
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
}

setup() {
    if [ ! -f /tmp/vsite/.complete ]; then
        cp "$DIR"/vsite.tar.xz.part* /tmp/vparts/
        (cd /tmp/vparts && sha256sum -c "$DIR/SHA256SUMS") || { say "bundle parts missing or damaged"; exit 3; }
        rm -rf /tmp/vsite && mkdir -p /tmp/vsite
        cat /tmp/vparts/vsite.tar.xz.part* | xz -d -T0 | tar --no-same-owner -xf - -C /tmp/vsite || { say "unpack failed"; exit 3; }
        rm -rf /tmp/vparts
        say "bundle unpacked: $(du -sm /tmp/vsite | cut -f1) MiB"
        python3 -m compileall -q -j 0 /tmp/vsite >/dev/null 2>&1
        touch /tmp/vsite/.complete
        say "bundle byte-compiled: $(du -sm /tmp/vsite | cut -f1) MiB"
    fi
    rm -rf $R && mkdir -p $R
    python3 -c 'import ray, vllm, transformers; print("ray", ray.__version__, "| vllm", vllm.__version__, "| transformers", transformers.__version__)' 2>&1 | grep -v WARNING | tee $R/versions.txt
    rm -rf /tmp/w && mkdir -p /tmp/w && tar --no-same-owner -xzf "$DIR/verl-0.9.1.tar.gz" -C /tmp/w
    git -C "$T" init -q -b main && git -C "$T" add -A &&
        git -C "$T" -c user.name=patchctl -c user.email=patchctl@localhost commit -qm "verl 0.9.1 source release"
    patchctl apply --target "$T" > $R/apply.txt 2>&1; echo "apply rc=$?"
    patchctl verify --target "$T" > $R/verify.txt 2>&1; echo "verify rc=$?"; tail -n 1 $R/verify.txt
    python3 -m compileall -q -j 0 "$T/verl" >/dev/null 2>&1
    cp "$DIR/verl-0.9.1.tar.gz" /tmp/verl-0.9.1.tar.gz
    # the image ships torch's 2141 modules without .pyc and sets PYTHONDONTWRITEBYTECODE=1, so
    # every process of a run compiled torch again (measured: first step 183.5 s -> 100.4 s)
    [ -n "${NO_IMAGE_PYC:-}" ] || { python3 -m compileall -q -j 0 "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null 2>&1; say "image site-packages byte-compiled"; }
    python3 "$VHERE/make_assets.py" /tmp/vassets > $R/assets.json && echo "assets: $(cat $R/assets.json)"
    say "setup done"
}

# one run: NAME PROFILE VARIANT. A variant is a +-joined list of changes:
#   settings  eager vLLM, one agent-loop and one reward worker, no torch.compile in the actor
#   uni       vLLM's uni-process executor: the GPU worker runs inside the engine core process
#             (one process start fewer; verl passes engine_kwargs after its own "mp")
#   head      the Ray head started beside the trainer (profiles' ray_head_cpus, as smoke has)
#   cold      the machine made cold again first: page cache dropped, Triton's, torch's and vLLM's
#             caches removed (what a node pays after a reboot; the first run after setup is only
#             partly cold: setup's import check has read part of the libraries)
# Every run starts without vLLM's caches (~/.cache/vllm); patchctl train writes the model-info one
# beside the launch itself (train/modelinfo.py; the "warm" side script of 2026-11-24 before it).
run_one() {
    # 420 s: the slowest cold trainer exit of the third pass is debug's 190.2 s (page cache dropped;
    # smoke-vllm 177.5 s on a freshly started machine, fast-load 157.7 s): 2.2x
    local name=$1 profile=$2 variant=$3 extra=() limit=${TRAIN_TIMEOUT:-420} pp=$PYTHONPATH
    [ "$profile" = debug ] && extra+=("${MACHINE[@]}")
    [ "$profile" = fast-load ] && extra+=("${MACHINE[@]}" "${SAME_DATA[@]}")
    rm -rf ~/.cache/vllm /tmp/vrun/$name
    python3 -m ray.scripts.scripts stop --force >/dev/null 2>&1
    for v in ${variant//+/ }; do
        case $v in
            asis) ;;
            settings) extra+=(actor_rollout_ref.rollout.enforce_eager=True actor_rollout_ref.rollout.agent.num_workers=1
                              reward.num_workers=1 actor_rollout_ref.actor.use_torch_compile=False) ;;
            uni) extra+=(+actor_rollout_ref.rollout.engine_kwargs.vllm.distributed_executor_backend=uni) ;;
            cold) rm -rf ~/.triton ~/.cache/torch ~/.cache/flashinfer /tmp/torchinductor_*; sync
                  if (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then say "page cache dropped: $(free -m | awk '/Mem:/{print $6}') MiB left in buff/cache"
                  else say "cannot drop the page cache here: $name is not cold"; fi ;;
            head) rm -rf /tmp/src-head && cp -r "$PWD/src" /tmp/src-head &&
                  python3 "$HERE/with_head.py" /tmp/src-head/patchctl/train/profiles.toml "$profile" && pp=/tmp/src-head:/tmp/vsite ;;
            *) echo "unknown variant $v"; return 2 ;;
        esac
    done
    local t0; t0=$(date +%s.%N)
    python3 "$PWD/benchmarks/vllm_stages.py" follow /tmp/vrun/$name/train.log "$t0" --idle 60 > $R/$name.timed &
    local follower=$!
    say "run $name: train --profile $profile ($variant), timeout $limit s"
    PYTHONPATH=$pp patchctl train --target "$T" --profile "$profile" "${CFG[@]}" --out /tmp/vrun/$name --timeout "$limit" \
        --json "${extra[@]}" > "$R/$name-report.json" 2> "$R/$name-progress.txt"
    say "run $name rc=$?"
    sleep 1; kill $follower 2>/dev/null
    cp /tmp/vrun/$name/train.log "$R/$name-train.log" 2>/dev/null
    cp /tmp/vrun/$name/ray-head.log "$R/$name-ray-head.log" 2>/dev/null
    python3 - "$R/$name-report.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as exc:  # noqa: BLE001
    sys.exit(f"no report: {exc}")
print("verdict", d["verdict"], "| timings", d.get("timings"))
for g in d["gates"]:
    print(f'  {g["name"]:<22} {g["status"]:<5} {g["value"]}  ({g["threshold"]})  {g["reason"]}')
PY
}

speed() {
    [ -f $R/assets.json ] || { say "no setup state in /tmp: run setup first"; exit 3; }
    local specs=()
    for r in ${RUNS:?RUNS=NAME:PROFILE:VARIANT ...}; do
        IFS=: read -r name profile variant limit <<< "$r"
        TRAIN_TIMEOUT=${limit:-420} run_one "$name" "$profile" "$variant"
        specs+=("$name=$R/$name.timed")
    done
    python3 "$PWD/benchmarks/vllm_stages.py" table "${specs[@]}" --json "$R/stages.json" | tee "$R/stages.md"
}

# the sabotage suite: each NAME its own sabotage.py (and folder), a group's names at once (unsafe
# with vLLM's sleep mode: healthy-2 of 2026-11-24). Every run gets $SUITE_OVERRIDES (none by default)
suite() {
    [ -f $R/assets.json ] || { say "no setup state in /tmp: run setup first"; exit 3; }
    local group name pids rows=() followers=() i
    # the runs of a group spread over the machine's GPUs (one each on nvidia-h200-x2)
    local ngpu; ngpu=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU" || true); [ "${ngpu:-0}" -ge 1 ] || ngpu=1
    for group in "$@"; do
        pids=(); i=0
        for name in ${group//,/ }; do
            rm -rf /tmp/sab/$name && mkdir -p /tmp/sab/$name
            python3 "$PWD/benchmarks/vllm_stages.py" follow /tmp/sab/$name/$name/run/train.log "$(date +%s.%N)" --idle 120 \
                > $R/suite-$name.timed &
            followers+=($!)
            # 330 s: smoke-vllm's trainer ended at 177.3-177.5 s on freshly started machines (1.9x)
            CUDA_VISIBLE_DEVICES=$((i % ngpu)) python3 "$PWD/benchmarks/sabotage.py" --tree "$T" --python python3 --pristine /tmp/verl-0.9.1.tar.gz \
                --out /tmp/sab/$name --only "$name" --timeout "${SUITE_TIMEOUT:-330}" \
                -- ${SUITE_OVERRIDES:-} > $R/suite-$name.txt 2>&1 &
            pids+=($!)
            say "suite: $name started on GPU $((i % ngpu))"; i=$((i + 1))
            sleep 2
        done
        for pid in "${pids[@]}"; do wait "$pid"; done
        for name in ${group//,/ }; do
            say "suite: $name done"; tail -n 1 $R/suite-$name.txt
            # the first error the trainer printed, so a failed run explains itself in the reply
            sed 's/\x1b\[[0-9;]*m//g' /tmp/sab/$name/$name/run/train.log 2>/dev/null | grep -vE "qutlass|moe_C|UserWarning|warnings.warn" \
                | grep -m 3 -E "^[A-Za-z_.]*(Error|Exception)|Error:|error:" | cut -c1-400
            cp /tmp/sab/$name/$name/run/report.json $R/suite-$name-report.json 2>/dev/null
            cp /tmp/sab/$name/$name/run/train.log $R/suite-$name-train.log 2>/dev/null
            cp /tmp/sab/$name/sabotage.json $R/suite-$name.json 2>/dev/null
            cp /tmp/sab/$name/$name/run/vllm-modelinfo.log $R/suite-$name-modelinfo.log 2>/dev/null
            python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("timings", d["timings"])' \
                /tmp/sab/$name/$name/run/report.json 2>/dev/null
        done
    done
    # only this suite's own followers, by pid (never by a name another user's process may match)
    for pid in "${followers[@]}"; do kill "$pid" 2>/dev/null; done
    python3 - $R <<'PY'
import glob, json, sys
rows = []
for f in sorted(glob.glob(sys.argv[1] + "/suite-*.json")):
    if not f.endswith("-report.json"):
        rows += json.load(open(f))
for r in rows:
    bars = {g["name"]: (g["status"], g["value"], g["threshold"]) for g in r.get("gates", [])}
    print(f'{r["setup"]:<14} expect {r["expect"]:<18} {r["verdict"]:<6} failing {",".join(r["failing"]) or "-":<34} doctor {r["doctor"] or "-"}')
    for name, (st, val, thr) in bars.items():
        print(f'      {name:<20} {st:<5} {val}  ({thr})')
PY
}

sshd_up() {
    say "sshd and rsync from the carried Debian packages (into /usr/local: nothing of / is replaced)"
    mkdir -p /tmp/sys && for d in "$PWD"/../debs/*.deb; do dpkg-deb -x "$d" /tmp/sys || dpkg -x "$d" /tmp/sys; done
    mkdir -p /usr/local/bin /usr/local/sbin /usr/local/lib /usr/local/lib/openssh
    cp --update=none /tmp/sys/usr/bin/* /usr/local/bin/ 2>/dev/null; cp --update=none /tmp/sys/usr/sbin/sshd /usr/local/sbin/
    cp --update=none /tmp/sys/usr/lib/openssh/* /usr/local/lib/openssh/ 2>/dev/null
    cp --update=none /tmp/sys/usr/lib/x86_64-linux-gnu/*.so* /tmp/sys/lib/x86_64-linux-gnu/*.so* /usr/local/lib/ 2>/dev/null
    ldconfig
    id sshd >/dev/null 2>&1 || useradd -r -M -d /run/sshd -s /usr/sbin/nologin sshd 2>/dev/null \
        || echo 'sshd:x:105:65534::/run/sshd:/usr/sbin/nologin' >> /etc/passwd
    missing=$(ldd /usr/local/sbin/sshd /usr/local/bin/ssh /usr/local/bin/rsync 2>&1 | grep "not found" | sort -u)
    [ -n "$missing" ] && { echo "missing libraries: $missing"; exit 1; }
    export PATCHCTL_SSHD=/usr/local/sbin/sshd NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    /usr/local/sbin/sshd -V 2>&1 | head -1; rsync --version | head -1
    python3 -m ray.scripts.scripts stop --force >/dev/null 2>&1
}

validate_one() {
    sshd_up
    rm -rf $R/validate && python3 "$PWD/benchmarks/validate_one.py" --tree "$T" --out $R/validate \
        --env "PYTHONPATH=$PWD/src:/tmp/vsite" --env "RAY_memory_monitor_refresh_ms=0" --timeout "${VALIDATE_TIMEOUT:-400}" "$@"
    say "validate done"
}

# issue 40 req 2 on nvidia-h200-x2: two loopback hosts with their own roots, each one GPU;
# validate healthy (every node's processes listed, each from its own tree), then node2's patched
# module put back to upstream's after migrate (expected FAIL by patched-code-ran, naming node2).
# NODES_ONLY=healthy|reverted runs one of the two (the tree and hosts are made afresh each call).
validate_nodes() {
    sshd_up
    rm -rf $R/nodes-${NODES_ONLY:-both} && python3 "$PWD/benchmarks/validate_nodes.py" --tree "$T" --out $R/nodes-${NODES_ONLY:-both} --profile smoke-vllm \
        --env "PYTHONPATH=$PWD/src:/tmp/vsite" --env "RAY_memory_monitor_refresh_ms=0" \
        --timeout "${VALIDATE_TIMEOUT:-300}" ${NODES_ONLY:+--only $NODES_ONLY} "$@"
    say "nodes done"
}

# issue 22 on one GPU: validate --profile health twice (the second --compare the first), then the
# host preflight's cold time before/after issue 22 (benchmarks/bench_host_preflight.py)
health_one() {
    sshd_up
    rm -rf $R/health && python3 "$PWD/benchmarks/validate_one.py" --health --tree "$T" --out $R/health \
        --env "PYTHONPATH=$PWD/src:/tmp/vsite" --env "RAY_memory_monitor_refresh_ms=0" "$@"
    say "health done"
    PYTHONPATH=/tmp/vsite python3 "$PWD/benchmarks/bench_host_preflight.py" --tree "$T" --python python3 --runs 5 \
        --skip patches --json $R/health/bench-host-preflight-h100.json 2>&1 | tee $R/health/bench-host-preflight-h100.txt
    say "preflight benchmark done"
}

# the code hook's cost per process with this machine's interpreter and the stack's heavy imports
# (benchmarks/bench_codehook.py: alternately with and without the hook, fresh interpreters)
codehook_bench() {
    python3 "$PWD/benchmarks/bench_codehook.py" --python python3 --runs "${HOOK_RUNS:-5}" \
        --heavy "import torch, vllm" 2>&1 | grep -v WARNING
}

case $MODE in
    part)
        DIR=$(cd "${2:?part DIR}" && pwd)
        [ "${3:-}" = probe ] && probe 2>&1 | tee "$OUT/probe.txt"
        cp "$DIR"/vsite.tar.xz.part* /tmp/vparts/ && say "parts in /tmp/vparts: $(cd /tmp/vparts && ls | tr '\n' ' ')"
        exit 0 ;;
    setup) DIR=$(cd "${2:?setup DIR}" && pwd); setup 2>&1 | tee "$OUT/setup.log" ;;
    speed) speed 2>&1 | tee "$OUT/speed.log" ;;
    suite) shift; suite "$@" 2>&1 | tee "$OUT/suite.log" ;;
    validate) shift; validate_one "$@" 2>&1 | tee "$OUT/validate.log" ;;
    nodes) shift; validate_nodes "$@" 2>&1 | tee "$OUT/nodes.log" ;;
    health) shift; health_one "$@" 2>&1 | tee "$OUT/health.log" ;;
    codehook) codehook_bench 2>&1 | tee "$OUT/codehook.log" ;;
    *) echo "unknown mode $MODE"; exit 2 ;;
esac
tar -czf "$OUT/results.tar.gz" -C $R . 2>/dev/null
