"""check_pytest_report.py REPORT_JSON|(--run VRAMTRACE DIR) LINE|FILE - the
report of tests/gpu/pytest_leak.py run under the pytest plugin
(tests/gpu/check_pytest.sh on the GPU machine; in CI on its recording,
the fixture tests/data/pytest/): processes[].tests[] holds the four
tests, test_leaks left 4 MiB at pytest_leak.py:LINE, the others nothing,
test_caches peaked at its 64 MiB; the verdict is a leak in test_leaks at
that line.  FILE: pytest_leak.py, whose line
marked VT_LEAK_LINE is LINE."""
import json
import subprocess
import sys



def leak_line(arg):
    if arg.isdigit():
        return int(arg)
    return [i for i, t in enumerate(open(arg), 1) if t.rstrip().endswith("# VT_LEAK_LINE")][0]


if sys.argv[1] == "--run":
    out = subprocess.run([sys.argv[2], "report", "--json", "--no-symbols", sys.argv[3]], capture_output=True,
                         text=True, check=True).stdout
    rep, line = json.loads(out), leak_line(sys.argv[4])
else:
    rep, line = json.load(open(sys.argv[1])), leak_line(sys.argv[2])
tests = [t for p in rep["processes"] for t in p.get("tests", [])]
by = {t["name"].split("::")[-1]: t for t in tests}
errs = []
if sorted(by) != ["test_after", "test_caches", "test_clean", "test_leaks"]:
    errs.append("tests in the report: %s" % sorted(by))
leak = by.get("test_leaks", {})
if leak.get("leaked_bytes", 0) < 4 << 20:
    errs.append("test_leaks leaked_bytes %s, 4 MiB wanted" % leak.get("leaked_bytes"))
uf = ((leak.get("sites") or [{}])[0].get("user_frame") or {})
if not (uf.get("file", "").endswith("pytest_leak.py") and uf.get("line") == line):
    errs.append("test_leaks's site: %s:%s, pytest_leak.py:%d wanted" % (uf.get("file"), uf.get("line"), line))
for name in ("test_clean", "test_caches", "test_after"):
    if by.get(name, {}).get("leaked_bytes", 1):
        errs.append("%s leaked_bytes %s, 0 wanted" % (name, by.get(name, {}).get("leaked_bytes")))
if by.get("test_caches", {}).get("peak_bytes", 0) < 64 << 20:
    errs.append("test_caches peak_bytes %s, 64 MiB wanted" % by.get("test_caches", {}).get("peak_bytes"))
# the process's verdict: the test that left memory live is a leak, named
# with its line (a test run grows over no steps: "no leak" would be wrong)
v = rep["processes"][0].get("verdict") or {}
vuf = ((v.get("site") or {}).get("user_frame") or {})
if v.get("kind") != "leak" or not (v.get("test") or {}).get("name", "").endswith("::test_leaks") or vuf.get("line") != line:
    errs.append("verdict: %s in test %s at line %s, leak in test_leaks at line %d wanted"
                % (v.get("kind"), (v.get("test") or {}).get("name"), vuf.get("line"), line))
for e in errs:
    print("FAIL: report: " + e)
print("%d failed" % len(errs) if errs else "ok: the report's tests section")
sys.exit(1 if errs else 0)
