"""torch_step.py - one process of the transformer step benchmark: a 6-layer
transformer encoder training step (bf16 autocast, AdamW), median step time
over STEPS steps after WARM warm-up steps.  Prints one JSON line."""
import json
import os
import statistics
import sys
import time

import torch

steps = int(os.environ.get("VT_BENCH_STEPS", "40"))
warm = int(os.environ.get("VT_BENCH_WARM", "10"))
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, dropout=0.1)
model = torch.nn.TransformerEncoder(layer, 6).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(16, 256, 512, device="cuda")


def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)

def barrier(tag=""):
    """bench/gpu_pairs.py: start timing together with the twin process."""
    path = os.environ.get("VT_BENCH_BARRIER")
    if not path:
        return
    path += tag
    open(f"{path}.{os.getpid()}", "w").close()
    d, base = os.path.dirname(path), os.path.basename(path) + "."
    t0 = time.time()
    while sum(f.startswith(base) for f in os.listdir(d)) < 2 and time.time() - t0 < 120:
        if tag:
            step()  # keep loading the machine until the twin is done too
            torch.cuda.synchronize()
        else:
            time.sleep(0.001)


times, cpu = [], []
for i in range(warm + steps):
    if i == warm:
        barrier()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    c0 = time.thread_time()
    torch.cuda.nvtx.range_push("step")
    step()
    torch.cuda.nvtx.range_pop()
    c1 = time.thread_time()  # the main thread's CPU time, before the wait for the GPU
    torch.cuda.synchronize()
    if i >= warm:
        times.append(time.perf_counter() - t0)
        cpu.append(c1 - c0)
barrier("-done")
print(json.dumps({"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3,
                  "cpu_ms": statistics.median(cpu) * 1e3,
                  "steps": steps, "tag": sys.argv[1] if len(sys.argv) > 1 else ""}), flush=True)
