"""torch_tracker.py - PyTorch's default caching allocator under `vramtrace
record` (tests/gpu/check_torch_tracker.sh): a small training loop with a
logger that keeps one GPU tensor per step (the leak, on LEAK_LINE), and
every 10 steps an NVTX mark "checkN" after which torch.cuda's own
memory_allocated() and memory_reserved() are written to the JSON file
given as argv[1] (the report's allocated and reserved at that mark must
match them); then a 1 TiB request fails (OOM_LINE): the allocator's
out-of-memory error, caught."""
import inspect
import json
import os
import sys

import torch

out = sys.argv[1]
steps = int(os.environ.get("VT_STEPS", "30"))
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
model = torch.nn.TransformerEncoder(layer, 2).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
history = []  # the logger: one GPU tensor per step, never dropped
marks = []


def mark(name):
    torch.cuda.synchronize()
    marks.append({"name": name, "allocated": torch.cuda.memory_allocated(),
                  "reserved": torch.cuda.memory_reserved()})
    torch.cuda.nvtx.mark(name)


LEAK_LINE = None
for step in range(steps):
    torch.cuda.nvtx.range_push(f"step{step}")
    x = torch.randn(16, 128, 256, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    LEAK_LINE = inspect.currentframe().f_lineno + 1
    history.append(torch.randn(256, 1024, device="cuda"))  # 1 MiB a step, kept
    torch.cuda.nvtx.range_pop()
    if step % 10 == 9:
        mark(f"check{step}")
# a request no H200 can serve: the allocator's out-of-memory error, caught
OOM_LINE = inspect.currentframe().f_lineno + 2
try:
    huge = torch.empty(1 << 40, dtype=torch.uint8, device="cuda")  # 1 TiB
except torch.OutOfMemoryError:
    pass
with open(out, "w") as f:
    json.dump({"marks": marks, "leak_line": LEAK_LINE, "oom_line": OOM_LINE, "leak_file": os.path.abspath(__file__),
               "conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "torch": torch.__version__,
               "steps": steps}, f)
print("loss", float(loss), "history", len(history))
