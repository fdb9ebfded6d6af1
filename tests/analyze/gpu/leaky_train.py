"""leaky_train.py - a PyTorch training loop with the three memory patterns the
growth section must tell apart, for tests/analyze/gpu-analyze.sh:
  - keep_history(): appends every step's output to a list (a real leak),
  - cached_features(): a bounded cache of 8 tensors (fills, then steady),
  - big_temporary(): 256 MiB allocated and freed each step.
argv: STEPS [nvtx]  (nvtx: wrap each step in torch.cuda.nvtx.range "step N")."""
import sys

import torch

history = []
cache = {}


def keep_history(out):
    history.append(out.detach().clone())


def cached_features(step):
    key = step % 8
    if key not in cache:
        cache[key] = torch.randn(1024, 1024, device="cuda")
    return cache[key]


def big_temporary(x):
    tmp = torch.empty(64 * 1024 * 1024, device="cuda")  # 256 MiB
    tmp.fill_(1.0)
    return x + tmp[: x.numel()].view_as(x).mean()


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    nvtx = len(sys.argv) > 2 and sys.argv[2] == "nvtx"
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device="cuda")
    for step in range(steps):
        if nvtx:
            torch.cuda.nvtx.range_push(f"step {step}")
        feats = cached_features(step)
        y = model(x @ feats)
        y = big_temporary(y)
        loss = y.square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        keep_history(y)  # 1 MiB per step, never released
        torch.cuda.synchronize()
        if nvtx:
            torch.cuda.nvtx.range_pop()
    print(f"done: {len(history)} outputs kept, {len(cache)} cached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
