#!/usr/bin/env bash
# check_dist.sh - GPU check of a job of two ranks (issue 39): for each mode
# of tests/gpu/dist_job.py (ddp, fsdp, leak1, oom1),
#   vramtrace record -o DIR -- torchrun --nproc_per_node=2 dist_job.py MODE
# then tests/gpu/check_dist.py on DIR (`vramtrace report --json DIR`): two
# traces named by rank and nothing from the launcher; NCCL's buffers
# outside the allocator with their library; the merged verdict: clean for
# ddp and fsdp, rank 1 named with its line and holder for leak1 (rank 0
# clean), rank 1's OOM with its line and who held the memory for oom1,
# rank 0's trace ending without an OOM.  ddp and fsdp also run untraced:
# the overhead per rank (step time ratio, the wall time record adds) in a
# table, $W/overhead.md.  Two short recordings stay small for the
# fixtures tests/data/ddp/ (leak1) and tests/data/fsdp/ (fsdp, rank 1
# leaking): $W/fixtures/, also packed as $OUT/dist-fixtures.tar.gz
# (tests/data/README.md says how they are refreshed).
# SKIPs (exit 0) with fewer than 2 GPUs or without torch's NCCL.  Run by
# scripts/gpu-test.sh with VRAMTRACE_CLI, VRAMTRACE_LIB and OUT, or alone
# with the same variables.  DIST_STEPS=N shortens every run; DIST_ONLY=REGEX
# picks runs (fixture-ddp fixture-fsdp leak1 oom1 ddp fsdp); DIST_RUN_S caps
# each torchrun (170 s).  Prints "check_dist: ..." last.
#
# On the two-GPU machine (nvidia-h200-x2), in one call of about 6 minutes,
# with the build carried (`cmake --build build --target vramtrace
# vramtrace_loader`: build/libvramtrace.so and libvramtrace_cupti.so beside
# it; libdw/libelf copied into build/extra-lib as `scripts/gpu-all.sh
# --prepare` does):
#   export LD_LIBRARY_PATH=$PWD/build/extra-lib VRAMTRACE_LIB=$PWD/build/libvramtrace.so \
#     VRAMTRACE_CLI=$PWD/build/vramtrace PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 \
#     TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
#   { timeout 90 bash tests/gpu/check_record_ddp.sh; timeout -k 10 470 bash tests/gpu/check_dist.sh; } \
#     2>&1 | tee $OUT/dist.log
#   tar czf $OUT/record_ddp.tar.gz -C $OUT record_ddp; cp $OUT/dist/overhead.md $OUT/
#   rm -rf $OUT/record_ddp $OUT/dist   # what comes back: dist.log, dist-fixtures.tar.gz, ...
set -u
name=check_dist
here=$(cd "$(dirname "$0")" && pwd)
export VRAMTRACE_LIB=${VRAMTRACE_LIB:?VRAMTRACE_LIB must name libvramtrace.so}
cli=${VRAMTRACE_CLI:-}
if [ ! -x "$cli" ]; then
    libdir=$(dirname "$VRAMTRACE_LIB")
    for c in "$libdir/vramtrace" "$libdir/src/cli/vramtrace" "$here/../../build/vramtrace"; do
        if [ -x "$c" ]; then cli=$c; break; fi
    done
fi
W=${OUT:-/tmp}/dist
rm -rf "$W"
mkdir -p "$W/logs" "$W/fixtures"
log=$W/log.txt
fail() { echo "$name: FAIL: $* (log: $log)"; exit 1; }
[ -x "$cli" ] || fail "no vramtrace binary (VRAMTRACE_CLI='${VRAMTRACE_CLI:-}')"
"$cli" --version >/dev/null 2>&1 || fail "$cli does not run here"

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${ngpu:-0}" -lt 2 ]; then
    echo "$name: SKIP: needs 2 GPUs, ${ngpu:-0} visible (run on nvidia-h200-x2)"
    exit 0
fi
if ! python3 -c 'import torch.distributed as d, sys; sys.exit(0 if d.is_nccl_available() else 1)' 2>/dev/null; then
    echo "$name: SKIP: torch with NCCL is not available"
    exit 0
fi
# NVLink multicast off in every environment built here (and dist_job.py
# sets them again before torch loads NCCL)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
export VRAMTRACE_CACHE_DIR=${VRAMTRACE_CACHE_DIR:-$W/cache} # the PyTorch shim, built once
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' >>"$log" 2>&1
nvidia-smi -L >>"$log" 2>&1

want() { [ -z "${DIST_ONLY:-}" ] || [[ $1 =~ $DIST_ONLY ]]; }
steps() { [ -n "${DIST_STEPS:-}" ] && echo "--steps $DIST_STEPS" || echo "$*"; }
now() { date +%s.%N; }
torchrun=(python3 -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node=2)

# go NAME DIR traced|untraced ARGS...: one torchrun of dist_job.py; its
# wall time in $W/logs/NAME.wall, its exit status returned
go() {
    local n=$1 d=$2 how=$3
    shift 3
    mkdir -p "$d"
    local t0 rc
    t0=$(now)
    if [ "$how" = traced ]; then
        # --no-symbolize where no check needs native names (the long leak
        # and OOM runs); the fixtures and the overhead runs symbolize, as a
        # user's record does
        timeout "${DIST_RUN_S:-170}" "$cli" record ${NOSYM:+--no-symbolize} -o "$d" -- \
            "${torchrun[@]}" "$here/dist_job.py" "$@" --expect "$d" \
            >"$W/logs/$n.out" 2>"$W/logs/$n.err"
    else
        timeout "${DIST_RUN_S:-170}" "${torchrun[@]}" "$here/dist_job.py" "$@" --expect "$d" \
            >"$W/logs/$n.out" 2>"$W/logs/$n.err"
    fi
    rc=$?
    python3 -c "print(f'{$(now) - $t0:.2f}')" >"$W/logs/$n.wall"
    echo "$n: exit $rc in $(cat "$W/logs/$n.wall") s: $(grep -E '^rank [01] pid [0-9]+ (done|oom|BAD)' "$W/logs/$n.out" | tr '\n' ';')" >>"$log"
    return $rc
}

bad=0
checked() { # NAME DIR: check_dist.py on a recording
    python3 "$here/check_dist.py" "$cli" "$2" >"$W/logs/$1.check" 2>&1
    local rc=$?
    tail -1 "$W/logs/$1.check" | sed "s/^check_dist:/$1:/" >>"$log"
    grep '^FAIL' "$W/logs/$1.check" >>"$log"
    [ $rc -eq 0 ] || bad=$((bad + 1))
    summary+=("$1 $(tail -1 "$W/logs/$1.check" | sed 's/^check_dist: //')")
}
summary=()
pack() { (cd "$W" && tar czf "${OUT:-/tmp}/dist-fixtures.tar.gz" fixtures log.txt logs $(ls overhead.md 2>/dev/null) 2>/dev/null); }

# the fixtures first (small: 40 steps), then the leak and the OOM, then
# the clean jobs with their untraced twins for the overhead
if want fixture-ddp; then
    go fixture-ddp "$W/fixtures/ddp" traced leak1 $(steps --steps 40) || echo "fixture-ddp: exit $?" >>"$log"
    checked fixture-ddp "$W/fixtures/ddp"
fi
if want fixture-fsdp; then
    go fixture-fsdp "$W/fixtures/fsdp" traced fsdp --leak-rank 1 $(steps --steps 40) || echo "fixture-fsdp: exit $?" >>"$log"
    checked fixture-fsdp "$W/fixtures/fsdp"
fi
pack # the fixtures come back even if a later run outlives the call
if want leak1; then
    NOSYM=1 go leak1 "$W/leak1" traced leak1 $(steps) || echo "leak1: exit $?" >>"$log"
    checked leak1 "$W/leak1"
fi
if want oom1; then
    # rank 1 ends on its OOM (exit 3), torchrun then stops rank 0: a
    # non-zero exit is the expected one
    NOSYM=1 go oom1 "$W/oom1" traced oom1 --oom-step 20 --pg-timeout 60 $(steps) && echo "oom1: exit 0, expected a failure" >>"$log"
    checked oom1 "$W/oom1"
fi
rows=()
for m in ddp fsdp; do
    want "$m" || continue
    go "$m" "$W/$m" traced "$m" $(steps) || echo "$m: exit $?" >>"$log"
    checked "$m" "$W/$m"
    go "$m-untraced" "$W/$m-untraced" untraced "$m" $(steps) || echo "$m-untraced: exit $?" >>"$log"
    for r in 0 1; do
        rows+=("$(python3 - "$W/$m/expect.rank$r.json" "$W/$m-untraced/expect.rank$r.json" \
            "$(cat "$W/logs/$m.wall")" "$(cat "$W/logs/$m-untraced.wall")" "$m" "$r" <<'PY'
import json, sys
def get(f):
    try:
        return json.load(open(f)).get("step_ms")
    except (OSError, ValueError):
        return None
t, u = get(sys.argv[1]), get(sys.argv[2])
wt, wu = float(sys.argv[3]), float(sys.argv[4])
ratio = f"{t / u:.2f}x" if t and u else "?"
fmt = lambda x: f"{x:.2f}" if x else "?"
print(f"| {sys.argv[5]} | {sys.argv[6]} | {fmt(u)} | {fmt(t)} | {ratio} | {wu:.1f} | {wt:.1f} | {wt - wu:+.1f} |")
PY
)")
    done
done
if [ ${#rows[@]} -gt 0 ]; then
    {
        echo "Overhead per rank, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x2, $(date -u +%F):"
        echo "step time = median of 10-step blocks after the first (dist_job.py); wall = the whole torchrun, record's start-up and symbolization included"
        echo
        echo "| mode | rank | untraced step ms | traced step ms | ratio | untraced wall s | traced wall s | record adds s |"
        echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
        printf '%s\n' "${rows[@]}"
    } >"$W/overhead.md"
    cat "$W/overhead.md" >>"$log"
fi

# what comes back stays small: the long runs' traces go once checked (their
# reports stay), the fixtures stay whole
for d in "$W"/leak1 "$W"/oom1 "$W"/ddp "$W"/fsdp; do
    [ -d "$d" ] || continue
    "$cli" report --no-progress "$d" >"$d/report.txt" 2>/dev/null
    find "$d" -name '*.zst' -size +4M -exec rm -f {} {}.sym \;
done
rm -rf "$W/cache" "$W"/*-untraced/*.zst
du -sh "$W/fixtures"/* >>"$log" 2>&1
pack
cat "$log"
printf '%s\n' "${summary[@]}"
if [ $bad -gt 0 ]; then
    echo "$name: FAIL: $bad of ${#summary[@]} recordings failed their checks: $(printf '%s; ' "${summary[@]}")"
    exit 1
fi
echo "$name: PASS: ${#summary[@]} recordings checked ($(printf '%s; ' "${summary[@]}")), overhead in $W/overhead.md"
