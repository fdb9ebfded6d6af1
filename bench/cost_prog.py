"""cost_prog.py WORKLOAD - one process of bench/run_cost.py: a training
loop as users write it, timed per step after a warm-up; prints one JSON line
{"workload", "steps", "median_ms", "p10_ms", "setup_s", "w_start", "w_loop",
"w_end"} (the wall clock at the first line, at the loop's start and end).
  launch       launch-bound: a 4-layer MLP of width 256, batch 32 (many
               small kernels, the CPU sets the pace)
  transformer  GPU-bound: 6-layer transformer encoder, d 512, batch 16x256,
               bf16 autocast, AdamW (bench/torch_step.py's model)
  gpt2         HuggingFace GPT-2 small from its config (random weights, 6
               layers), batch 8x512, bf16 autocast, AdamW
Env: VT_COST_STEPS (default 60), VT_COST_WARM (10), VT_COST_HISTORY=1
(PyTorch's own _record_memory_history(stacks="python"), the comparison)."""
import json
import os
import statistics
import sys
import time

t_start = time.perf_counter()
w_start = time.time()  # wall clock: bench/run_cost.py splits the process's time with it
import torch  # noqa: E402

work = sys.argv[1]
steps = int(os.environ.get("VT_COST_STEPS", "60"))
warm = int(os.environ.get("VT_COST_WARM", "10"))
if os.environ.get("VT_COST_HISTORY"):
    torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
torch.manual_seed(0)
dev = "cuda"
if work == "launch":
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(256, 256), torch.nn.ReLU())]).to(dev)
    x = torch.randn(32, 256, device=dev)
    autocast = False
elif work == "transformer":
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, dropout=0.1)
    model = torch.nn.TransformerEncoder(layer, 6).to(dev)
    x = torch.randn(16, 256, 512, device=dev)
    autocast = True
elif work == "gpt2":
    from transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config(n_layer=6)).to(dev)
    x = torch.randint(0, 50257, (8, 512), device=dev)
    autocast = True
else:
    sys.exit(f"cost_prog.py: unknown workload {work}")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)


def step():
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        if work == "gpt2":
            loss = model(x, labels=x).loss
        else:
            loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


setup = time.perf_counter() - t_start
times = []
w_loop = time.time()
for i in range(warm + steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    if i >= warm:
        times.append(time.perf_counter() - t0)
w_end = time.time()
times.sort()
print(json.dumps({"workload": work, "steps": steps, "median_ms": statistics.median(times) * 1e3,
                  "p10_ms": times[len(times) // 10] * 1e3, "setup_s": setup,
                  "w_start": w_start, "w_loop": w_loop, "w_end": w_end}), flush=True)
