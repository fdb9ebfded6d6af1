"""torch_train.py - a small transformer training loop for the GPU checks of
the injection library, run once per allocator mode (PYTORCH_CUDA_ALLOC_CONF:
unset, expandable_segments:True, backend:cudaMallocAsync).  Each step is an
NVTX range "step<N>".  Prints VT_EXPECT lines for vt_gpucheck."""
import os
import time

import torch

conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
steps = int(os.environ.get("VT_STEPS", "8"))
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
model = torch.nn.TransformerEncoder(layer, 2).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(steps):
    torch.cuda.nvtx.range_push(f"step{step}")
    x = torch.randn(16, 128, 256, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
keep = torch.empty(32 << 20, dtype=torch.uint8, device="cuda")  # live while the sampler runs
time.sleep(0.6)
print("loss", float(loss))


def expect(s):
    print("VT_EXPECT " + s, flush=True)


expect("count kernel >= 200")
expect("nvtx step1")
expect(f"nvtx step{steps - 1}")
expect("count memory_usage >= 1")
expect("count device >= 1")
expect("complete 1")
if "cudaMallocAsync" in conf:
    expect(f"count alloc:malloc_async >= {20 * steps}")
    expect(f"count free:malloc_async >= {10 * steps}")
    expect("count pool_usage >= 1")
elif "expandable_segments:True" in conf:
    expect("count vmm_create >= 1")
    expect("count vmm_map >= 1")
    expect("count vmm_reserve >= 1")
else:
    expect("count alloc:malloc >= 1")
