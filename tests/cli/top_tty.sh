#!/bin/bash
# top_tty.sh VRAMTRACE RECORD_CHILD DATADIR WORKDIR
#
# `vramtrace top` on a terminal (tmux: send-keys / capture-pane, 80x24):
# the screen, the keys (Tab, Right, 1-9, s, q), the terminal's mode
# restored on q, around Ctrl-Z (SIGTSTP, then SIGCONT) and on SIGTERM;
# and `vramtrace record --live`: with stdout not a terminal the command's
# stdout is untouched and plain screens go to stderr; on a terminal the
# view takes the screen and the command's output goes to DIR/output.log.
# Without tmux the terminal part is skipped (the rest still runs).
set -u
vt=$1 child=$2 data=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
fail() {
    echo "FAIL: $*"
    [ -n "${sock:-}" ] && tmux -L "$sock" kill-server 2>/dev/null
    exit 1
}

# record --live stands in a library that is never loaded: record_child
# writes the trace itself (tests/cli/record_child.c)
: >"$work/libvramtrace.so"
export VRAMTRACE_LIB=$work/libvramtrace.so VRAMTRACE_TORCH_SHIM='!not in this test'

# ---- record --live, stdout not a terminal --------------------------------
"$vt" record --live --no-symbolize --no-holders -o "$work/rec1" -- "$child" trace-slow 8 150 \
    >"$work/out1" 2>"$work/err1" </dev/null
rc=$?
[ "$rc" = 0 ] || fail "record --live exited $rc: $(cat "$work/err1")"
grep -qx done "$work/out1" || fail "the command's stdout did not come through: $(cat "$work/out1")"
[ "$(grep -c '^allocated' "$work/out1")" = 8 ] || fail "the command's stdout: $(cat "$work/out1")"
grep -q '^vramtrace top' "$work/err1" || fail "no view on stderr: $(cat "$work/err1")"
grep -q 'live 8.00 MiB' "$work/err1" || fail "the last screen does not show 8 MiB live: $(cat "$work/err1")"
[ "$(grep -c '^vramtrace top' "$work/err1")" -ge 2 ] || fail "one screen only: $(cat "$work/err1")"
if grep -q $'\033' "$work/err1"; then fail "escape sequences on a non-terminal"; fi
echo "ok: record --live without a terminal"

if ! command -v tmux >/dev/null; then
    echo "ok: (tmux not installed: the terminal part is skipped)"
    exit 0
fi
sock=vt-top-test-$$
T() { tmux -L "$sock" -f /dev/null "$@"; }
# wait until the pane shows a pattern (5 s)
wait_for() {
    for _ in $(seq 50); do
        T capture-pane -p -J -t t >"$work/pane" 2>/dev/null
        grep -q -- "$1" "$work/pane" && return 0
        sleep 0.1
    done
    fail "the pane never showed '$1':
$(cat "$work/pane")"
}
tty_mode() { stty -a <"$pty" | tr ' ;' '\n\n' | grep -x -e icanon -e -icanon; }

# two processes: a failed allocation and a leak with holders
mkdir -p "$work/dir"
cp "$data/gpu-oom.zst" "$work/dir/" 2>/dev/null || cp "$data/reader-sample.zst" "$work/dir/gpu-oom.zst"
cp "$data"/seeds/graph_list-default/* "$work/dir/"
oompid=$("$vt" report --json --no-symbols "$work/dir/gpu-oom.zst" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["processes"][0]["pid"])')

# a session that lives through the whole test: killing the last session
# ends the tmux server, and a new-session that races its exit fails with
# "server exited unexpectedly"
T new-session -d -s keep "sleep 600"

# an interactive shell with job control (Ctrl-Z stops only a process whose
# group is not orphaned), without line editing (readline would change the
# terminal's mode itself)
T new-session -d -s t -x 80 -y 24 "env PS1='$ ' bash --norc --noprofile --noediting -i"
pty=$(T display -p -t t '#{pane_tty}')
T send-keys -t t "'$vt' top --interval 0.2 '$work/dir'; echo exited \$?" Enter
wait_for '^vramtrace top'
sleep 0.3
pid=$(pgrep -P "$(T display -p -t t '#{pane_pid}')" vramtrace)
[ -n "$pid" ] || fail "no vramtrace process"
[ "$(tty_mode)" = -icanon ] || fail "not in non-canonical mode while drawing"
grep -q '^1 ' "$work/pane" || fail "process 1 not shown: $(cat "$work/pane")"
[ "$(wc -l <"$work/pane")" -le 24 ] || fail "more than 24 lines"
# (in characters: a cut line ends in an ellipsis, one column, three bytes)
python3 -c 'import sys; sys.exit(any(len(l.rstrip("\n")) > 80 for l in open(sys.argv[1], encoding="utf-8")))' "$work/pane" ||
    fail "a line wider than 80 columns"
grep -q 'q quit' "$work/pane" || fail "no key help on the last line"
T send-keys -t t Tab
wait_for '^2 seeds pid 583'
grep -q 'held by __main__.losses' "$work/pane" || fail "no holder: $(cat "$work/pane")"
T send-keys -t t 1
wait_for "^1 .* pid $oompid"
T send-keys -t t Right
wait_for '^2 seeds pid 583'
T send-keys -t t s
wait_for 'sort live'
# Ctrl-Z: the terminal as it was while stopped, the view again after fg
T send-keys -t t C-z
wait_for 'Stopped'
grep -q '^State:.*T' "/proc/$pid/status" || fail "not stopped by Ctrl-Z"
grep -q '^vramtrace top' "$work/pane" && fail "the view stayed on the screen while stopped"
[ "$(tty_mode)" = icanon ] || fail "terminal mode not restored while stopped"
T send-keys -t t fg Enter
wait_for '^vramtrace top'
sleep 0.3
[ "$(tty_mode)" = -icanon ] || fail "non-canonical mode not taken back after fg"
T send-keys -t t q
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "q did not end it"
sleep 0.2
T capture-pane -p -J -t t >"$work/pane"
grep -q '^vramtrace top' "$work/pane" && fail "the view stayed on the main screen"
[ "$(tty_mode)" = icanon ] || fail "terminal mode not restored after q"
# Ctrl-C
T send-keys -t t "'$vt' top '$work/dir'" Enter
wait_for '^vramtrace top'
sleep 0.3
pid=$(pgrep -P "$(T display -p -t t '#{pane_pid}')" vramtrace)
[ "$(tty_mode)" = -icanon ] || fail "not in non-canonical mode the second time"
T send-keys -t t C-c
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "Ctrl-C did not end it"
[ "$(tty_mode)" = icanon ] || fail "terminal mode not restored after Ctrl-C"
T kill-session -t t
echo "ok: top on a terminal: keys, q, Ctrl-Z, Ctrl-C"

# SIGTERM
T new-session -d -s t -x 100 -y 30 "sh -c '\"$vt\" top \"$work/dir\"; echo exited \$?; sleep 60'"
pty=$(T display -p -t t '#{pane_tty}')
wait_for '^vramtrace top'
pid=$(pgrep -P "$(T display -p -t t '#{pane_pid}')" vramtrace)
kill -TERM "$pid"
wait_for '^exited 0'
[ "$(tty_mode)" = icanon ] || fail "terminal mode not restored after SIGTERM"
T kill-session -t t
echo "ok: top on a terminal: SIGTERM"

# record --live on a terminal
T new-session -d -s t -x 80 -y 24 "sh -c '\"$vt\" record --live --no-symbolize --no-holders -o \"$work/rec2\" -- \"$child\" trace-slow 10 200; echo exited \$?; sleep 60'"
pty=$(T display -p -t t '#{pane_tty}')
wait_for 'record_child pid'
wait_for '^exited 0'
grep -q "the command's output: .*output.log" "$work/pane" || fail "record does not say where the output went: $(cat "$work/pane")"
grep -qx done "$work/rec2/output.log" || fail "output.log: $(cat "$work/rec2/output.log")"
[ "$(tty_mode)" = icanon ] || fail "terminal mode not restored after record --live"
T kill-server
echo "ok: record --live on a terminal"
