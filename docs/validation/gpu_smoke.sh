#!/usr/bin/env bash
# The GPU proof run (issue 5): verl 0.5.0 from its source release, patched by `patchctl apply`
# with `uky` and `verl05-nofa-hf`, checked by `patchctl verify`, then `patchctl train --profile
# smoke`. Run from the repository root on the GPU test machine, with .gpu/ holding the bundle
# from ../shared/gpu/build_bundle.sh (site.tar.xz) and verl-0.5.0.tar.gz; results go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/patchctl-gpu-out}
mkdir -p "$OUT"
S=$(date +%s.%N)
say() { printf "[%6.1f s] %s\n" "$(awk -v a="$(date +%s.%N)" -v b="$S" "BEGIN{print a-b}")" "$*"; }

# -- environment: what `pip install` would have done (unpack and byte-compile the packages) --
say "unpack the package bundle"
mkdir -p /tmp/site && tar -xJf .gpu/site.tar.xz -C /tmp/site
python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site
patchctl() { python3 -c 'import sys; sys.argv[0] = "patchctl"; from patchctl.cli.main import main; main()' "$@"; }

say "unpack verl 0.5.0"
mkdir -p /tmp/w && tar -xzf .gpu/verl-0.5.0.tar.gz -C /tmp/w
T=/tmp/w/verl-0.5.0
if command -v git >/dev/null; then
    git -C "$T" init -q -b main && git -C "$T" add -A &&
        git -C "$T" -c user.name=patchctl -c user.email=patchctl@localhost commit -qm "verl 0.5.0 source release"
    say "verl tree is a git repository"
else
    say "no git on this machine: the tree is a plain directory"
fi

# -- the proof ------------------------------------------------------------------------------
say "patchctl apply"
patchctl apply --target "$T" --patchset uky --patchset verl05-nofa-hf > "$OUT/apply.txt" 2>&1; echo "apply rc=$?"
tail -n 3 "$OUT/apply.txt"
say "patchctl verify"
patchctl verify --target "$T" --patchset uky --patchset verl05-nofa-hf > "$OUT/verify.txt" 2>&1; echo "verify rc=$?"
tail -n 2 "$OUT/verify.txt"
python3 -m compileall -q -j 0 "$T/verl" >/dev/null 2>&1

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
# RUNS=2 repeats the run on the now warm machine (page cache filled, bytecode compiled)
for i in $(seq 1 "${RUNS:-1}"); do
    sfx=$([ "$i" = 1 ] && echo "" || echo "-run$i")
    say "patchctl train --profile smoke (run $i)"
    B=$(date +%s.%N)
    patchctl train --target "$T" --profile smoke --out "/tmp/run$i" --timeout 300 --json "$@" \
        > "$OUT/report$sfx.json" 2> "$OUT/progress$sfx.txt"
    rc=$?
    E=$(date +%s.%N)
    say "train rc=$rc, wall $(awk -v a="$E" -v b="$B" "BEGIN{print a-b}") s (shell to shell)"
    [ "$i" = 1 ] && cp "/tmp/run$i/train.log" "/tmp/run$i/report.png" "$OUT/" 2>/dev/null
    sleep 1; left=$(ps -eo stat,args | awk '$1 !~ /^Z/' | grep -c "[r]aylet\|[g]cs_server" || true); say "Ray processes left running: $left"
    python3 - "$OUT/report$sfx.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("verdict", d["verdict"], "| breakdown", d["breakdown"], "| verdict at", d["timings"]["verdict"])
for g in d["gates"]:
    print(f'  {g["name"]:<20} {g["status"]:<5} {g["value"]}  ({g["threshold"]})  {g["reason"]}')
PY
done
