#!/usr/bin/env bash
# man_check.sh VRAMTRACE MANPAGE - every option that a subcommand's --help
# names is in the man page, and every command of `vramtrace --help` has its
# section: the installed documentation says what the binary does.
set -eu
bin=$1
man=$2
fail=0
# the man page's text with roff's escaped hyphens plain
text=$(sed 's/\\-/-/g' "$man")
for cmd in $("$bin" --help | awk '/^commands:/ {on = 1; next} on && !NF {exit} on {print $1}'); do
    grep -q "^\.SS $cmd\$" <<<"$text" || { echo "FAIL: no section for '$cmd' in $man"; fail=1; }
    for opt in $("$bin" "$cmd" --help 2>&1 | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
        [ "$opt" = "--help" ] && continue
        grep -qF -- "$opt" <<<"$text" || { echo "FAIL: $cmd $opt not in $man"; fail=1; }
    done
done
[ $fail = 0 ] && echo "man page: every command and option of --help documented"
exit $fail
