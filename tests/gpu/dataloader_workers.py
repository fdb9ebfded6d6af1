"""dataloader_workers.py - a tiny PyTorch training loop fed by DataLoader
workers (num_workers=2), once with forked workers (Linux's default) and once
with spawned ones.  Run under `vramtrace record` by
tests/gpu/check_record_dataloader.sh: only this main process uses CUDA, so
it must leave exactly one trace; the workers (CPU only) must leave none.
Prints "main pid N" and "worker pids A B ..." for the check."""
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    """CPU samples; each carries the pid of the worker that made it."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((256,), float(i * i % 97)), os.getpid()


def main():
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 1
    model = torch.nn.Sequential(torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 8)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    workers = set()
    for ctx in (None, "spawn"):
        loader = DataLoader(Squares(), batch_size=8, num_workers=2, pin_memory=True,
                            multiprocessing_context=ctx)
        for x, pids in loader:
            workers.update(int(p) for p in pids)
            x = x.cuda(non_blocking=True)
            loss = model(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    torch.cuda.synchronize()
    workers.discard(os.getpid())
    print("main pid", os.getpid())
    print("worker pids", " ".join(str(p) for p in sorted(workers)))
    return 0 if len(workers) >= 4 else 2


if __name__ == "__main__":
    sys.exit(main())
