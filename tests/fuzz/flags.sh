# tests/fuzz/flags.sh - sourced by scripts/fuzz.sh and bench/fuzz_long.sh:
# the fuzz targets and the libFuzzer flags of each, the same in CI and in
# the long run.
#   $FUZZ_TARGETS         the targets' names (fuzz_NAME, tests/fuzz/tests.cmake)
#   fuzz_flags TARGET     its flags
# -close_fd_mask=2: the analyzer names every read error on stderr;
# sanitizer reports still reach the log through libFuzzer.
# -max_len: fuzz_export's inputs at most MAXLEN_EXPORT bytes.  Every input
# runs the analysis, then an exporter's replay of the same file, so its
# cost grows with its size; with the 64 KiB of the other targets the working
# corpus drifts to the largest seed's 9 KiB and the rate halves within
# three minutes (BENCHMARKS.md, "hardening").
# -max_len for fuzz_render: MAXLEN_RENDER.  Each input is a record stream
# that decodes (not compressed bytes that mostly fail their checksum, as
# most of the other targets' inputs do) and runs one group of renderers
# (dump; the reports; the page; diff: fuzz_render.c), so a run costs an
# analysis's fixed costs whatever its size: 4 KiB of records (a few
# hundred events, every record kind) is enough.
# -entropic=0 for fuzz_render.  libFuzzer (clang 14) keeps every feature
# seen at most N times (default 255) in a list it searches linearly for
# each feature of each run; a render input reaches thousands of features,
# so that search was 70 % of the run at the default and still 43-55 % at
# N = 64.  Without the entropic schedule the rate is 1.2-1.7x that at 64
# and the edges reached in 30 s are more, not fewer (BENCHMARKS.md,
# "fuzz_render"); fuzz_export is no faster without it, so it keeps it.
FUZZ_TARGETS="reader analyze export sidecar render"
MAXLEN_EXPORT=2048
MAXLEN_RENDER=4096
fuzz_flags() {
    local max_len=65536
    [ "$1" = export ] && max_len=$MAXLEN_EXPORT
    [ "$1" = render ] && max_len=$MAXLEN_RENDER
    local sched=
    [ "$1" = render ] && sched=" -entropic=0"
    echo "-max_len=$max_len$sched -timeout=10 -rss_limit_mb=2048 -close_fd_mask=2 -print_final_stats=1"
}
