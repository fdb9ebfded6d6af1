"""A stand-in for torchrun in tests/gpu/dist_fake.sh: instead of starting
tests/gpu/dist_job.py on two GPUs, it leaves what that job would, from the
analyzer's synthetic jobs (FAKE_JOBS: gen_traces' job_leak, job_oom): the
two ranks' traces and holders files where `vramtrace record` points
VRAMTRACE_OUTPUT, and each rank's expect file (with a step time) in the
--expect directory; prints the ranks' lines and exits as the job would
(3 for oom1).  So check_dist.sh's plumbing (the runs, the checks, the
overhead table, the packed fixtures) is tested without a GPU."""
import glob
import json
import os
import shutil
import sys

args = sys.argv[1:]
script = next(a for a in args if a.endswith("dist_job.py"))
rest = args[args.index(script) + 1:]
mode = rest[0]
exp = rest[rest.index("--expect") + 1]
src = os.path.join(os.environ["FAKE_JOBS"], "job_oom" if mode == "oom1" else "job_leak")
traced = bool(os.environ.get("CUDA_INJECTION64_PATH"))
out = os.path.dirname(os.environ.get("VRAMTRACE_OUTPUT", os.path.join(exp, "x"))) if traced else None
os.makedirs(exp, exist_ok=True)
for f in sorted(glob.glob(os.path.join(src, "*"))):
    b = os.path.basename(f)
    if b.startswith("expect."):
        e = json.load(open(f))
        e["step_ms"] = 10.0 if traced else 9.5
        e["argv"] = rest
        with open(os.path.join(exp, b), "w") as g:
            json.dump(e, g)
        print(f"rank {e['rank']} pid {e['pid']} done steps {e['steps']} step_ms {e['step_ms']}")
    elif traced:
        shutil.copy(f, os.path.join(out, b))
sys.exit(3 if mode == "oom1" else 0)
