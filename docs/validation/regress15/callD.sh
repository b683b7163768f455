#!/usr/bin/env bash
# gpu15 call D (a fresh machine, main at 9f135c6: b77654f changed the host side's command reader):
# setup; validate smoke-vllm; --baseline judge of its report; Ctrl-C at "head up at" and after step 1.
set -uo pipefail
: "${END:?END}"
ROOT=$PWD; START=$(date +%s); FINAL=$OUT; O=/tmp/g15/oD
say() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - START ))s, $(( END - $(date +%s) ))s left] $*"; }
pack() { tar -czf $FINAL/oD.tar.gz -C $O --exclude=results.tar.gz . 2>/dev/null; cp $O/results.tar.gz $FINAL/v21resD.tar.gz 2>/dev/null; }
git -C $ROOT log -1 --format='device tree: %H %s' 2>/dev/null | cut -c1-120; git -C $ROOT status --short 2>/dev/null | head -5
rm -rf /tmp/g15 && mkdir -p /tmp/g15/wt $O && tar --exclude=./.gpu -cf - . | tar -xf - -C /tmp/g15/wt
cp -r .gpu/repro40/debs /tmp/g15/debs && cp -r .gpu/gpu15 /tmp/g15/gpu15
cd /tmp/g15/wt
export OUT=$O
grep -c . src/patchctl/validate/host/caller.py | sed 's/^/host\/caller.py lines: /'
say "setup"
bash docs/validation/vllm-smoke/run_gpu.sh setup $ROOT/.gpu/repro40/p3
[ -f /tmp/vassets/patchctl.toml ] || { say "setup failed"; pack; exit 3; }
say "validate (migrate + validate one --profile smoke-vllm)"
VALIDATE_TIMEOUT=300 bash docs/validation/vllm-smoke/run_gpu.sh validate
say "validate done"
python3 /tmp/g15/gpu15/summ.py /tmp/v21res/validate/one-node/validate.json /tmp/v21res/validate/one-node/report.json | tee $O/summary.txt
pc() { PYTHONPATH=$PWD/src:/tmp/vsite python3 -c 'import sys; sys.argv[0] = "patchctl"; from patchctl.cli.main import main; main()' "$@"; }
echo "== patchctl validate one-node/report.json --baseline docs/validation/repro/runs/" | tee $O/judge.txt
pc validate /tmp/v21res/validate/one-node/report.json --baseline docs/validation/repro/runs/ > /tmp/g15/judge.out 2>&1; echo "rc=$?" >> /tmp/g15/judge.out
tail -n 4 /tmp/g15/judge.out | tee -a $O/judge.txt
pack
export PATCHCTL_SSHD=/usr/local/sbin/sshd NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=$PWD/src:/tmp/vsite PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 VLLM_NO_USAGE_STATS=1
say "Ctrl-C at head up, then after step 1"
timeout $(( END - $(date +%s) - 5 )) python3 /tmp/g15/gpu15/ctrlc.py --tree /tmp/w/verl-0.9.1 --out $O/ctrlc \
    --env PYTHONPATH=$PWD/src:/tmp/vsite --env RAY_memory_monitor_refresh_ms=0 --trigger head --trigger step --wait 40 \
    --end $END --need 160 2>&1 | grep -v "^\[ *[0-9.]* s\] [│┃┏┡└]" | tee $O/ctrlc.log
pack
say "call D done"
