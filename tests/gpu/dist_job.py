"""dist_job.py - a job of two ranks for `torchrun --nproc_per_node=2` under
`vramtrace record` (tests/gpu/check_dist.sh, issue 39): a small transformer
trained one process per GPU over NCCL, in one of four modes:

  ddp     DistributedDataParallel, clean
  fsdp    the same model under FSDP2 (torch.distributed.fsdp.fully_shard;
          FullyShardedDataParallel where torch is older), clean
  leak1   ddp, and rank 1 keeps one tensor a step in the module-level list
          KEPT (keep_for_later); rank 0 stays clean
  oom1    ddp; after --oom-step steps rank 1 (--oom-rank) fills its GPU (grab: 4 GiB
          blocks into the module-level list HOARD) until the allocator
          fails; rank 0 goes on into the next step's all-reduce and is left
          waiting there, until the launcher stops it or the process
          group's timeout (--pg-timeout s) ends it

  python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
      dist_job.py MODE [--steps N] [--leak-rank R] [--oom-rank R] [--expect DIR]

On one GPU (--nproc_per_node=1) `leak1 --leak-rank 0` and `oom1
--oom-rank 0` run the same code paths, as a smoke test of the script.

Each step is an NVTX range "step" (the report's steps).  Each rank prints
one line when it starts ("rank R pid P start MODE") and one at the end
("rank R pid P done steps N step_ms M allocated B reserved B kept B") or,
for the rank that runs out of memory, "rank R pid P oom at step N line L
allocated B reserved B"; with --expect DIR it writes DIR/expect.rank{R}.json
with the same facts and the lines of the leak and of the OOM
(tests/gpu/check_dist.py reads them, on the GPU and on the fixtures).
NVLink multicast stays off: the environment variables are set here too,
before torch loads NCCL."""
import argparse
import datetime
import inspect
import json
import os
import sys
import time

for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_k, _v)

import torch
import torch.distributed as dist
from torch import nn

KEPT = []   # leak1: what rank 1 keeps, one tensor a step (the holder: __main__.KEPT)
HOARD = []  # oom1: what rank 1 grabs before the allocator fails (the OOM walk's holder)


class Model(nn.Module):
    """A small transformer: embedding, 4 encoder layers, a head."""

    def __init__(self, vocab=4096, d=512, heads=8, layers=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True) for _ in range(layers))
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        h = self.emb(x)
        for layer in self.layers:
            h = layer(h)
        return self.head(h), h


def keep_for_later(h):
    KEPT.append(h.detach().clone())  # the leak: one activation a step, never dropped


def grab(device):
    while True:
        HOARD.append(torch.empty(4 << 30, dtype=torch.uint8, device=device))  # the OOM: 4 GiB blocks until none is left


def line_of(fn, text):
    src, first = inspect.getsourcelines(fn)
    for i, s in enumerate(src):
        if text in s:
            return first + i
    return 0


def wrap(model, mode, local):
    if mode == "fsdp":
        try:
            from torch.distributed.fsdp import fully_shard
        except ImportError:
            fully_shard = None
        if fully_shard is not None:
            for layer in model.layers:
                fully_shard(layer)
            fully_shard(model)
            return model, "fully_shard"
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        return FSDP(model, device_id=local), "FullyShardedDataParallel"
    from torch.nn.parallel import DistributedDataParallel as DDP
    return DDP(model, device_ids=[local]), "DistributedDataParallel"


def say(text):
    # one write per line: the two ranks' lines must not interleave
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["ddp", "fsdp", "leak1", "oom1"])
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--leak-rank", type=int, default=None, help="this rank keeps a tensor a step (leak1: 1)")
    ap.add_argument("--oom-step", type=int, default=20)
    ap.add_argument("--oom-rank", type=int, default=1, help="oom1: the rank that fills its GPU")
    ap.add_argument("--pg-timeout", type=float, default=60.0, help="the process group's timeout, s")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--expect", default=None, help="write DIR/expect.rank{R}.json")
    a = ap.parse_args()
    steps = a.steps if a.steps is not None else {"ddp": 200, "fsdp": 200, "leak1": 100, "oom1": 100}[a.mode]
    leak_rank = a.leak_rank if a.leak_rank is not None else (1 if a.mode == "leak1" else -1)

    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    # a rank left waiting in a collective ends after the timeout, not never
    dist.init_process_group("nccl", device_id=dev, timeout=datetime.timedelta(seconds=a.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    say(f"rank {rank} pid {os.getpid()} start {a.mode} world {world}")
    torch.manual_seed(0)
    model, how = wrap(Model().to(dev), "fsdp" if a.mode == "fsdp" else "ddp", local)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device=dev).manual_seed(1234 + rank)
    expect = {"mode": a.mode, "rank": rank, "world": world, "pid": os.getpid(), "wrapper": how, "steps": steps,
              "leak_rank": leak_rank, "oom_rank": a.oom_rank if a.mode == "oom1" else -1, "oom_step": a.oom_step,
              "leak_line": line_of(keep_for_later, "KEPT.append"), "leak_function": "keep_for_later",
              "leak_holder": "__main__.KEPT", "oom_line": line_of(grab, "HOARD.append"), "oom_function": "grab",
              "oom_holder": "__main__.HOARD", "file": os.path.basename(__file__)}

    def write_expect():
        if a.expect:
            os.makedirs(a.expect, exist_ok=True)
            with open(os.path.join(a.expect, f"expect.rank{rank}.json"), "w") as f:
                json.dump(expect, f, indent=1)

    expect["outcome"] = "started"  # a rank stopped before its end leaves this
    write_expect()
    torch.cuda.synchronize()
    allocated_before = torch.cuda.memory_allocated()
    times = []
    t_block = time.perf_counter()
    for step in range(steps):
        if a.mode == "oom1" and rank == a.oom_rank and step == a.oom_step:
            try:
                grab(dev)
            except torch.cuda.OutOfMemoryError:
                expect.update(outcome="oom", at_step=step, hoard_bytes=sum(t.numel() for t in HOARD),
                              allocated=torch.cuda.memory_allocated(), reserved=torch.cuda.memory_reserved())
                say(f"rank {rank} pid {os.getpid()} oom at step {step} line {expect['oom_line']} "
                    f"allocated {expect['allocated']} reserved {expect['reserved']}")
                write_expect()
                # the exception ends the program, as an uncaught OOM does;
                # the launcher then stops rank 0, waiting in the all-reduce
                return 3
        torch.cuda.nvtx.range_push("step")
        x = torch.randint(0, 4096, (a.batch, a.seq), device=dev, generator=gen)
        logits, h = model(x)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), x.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if rank == leak_rank:
            keep_for_later(h)
        torch.cuda.nvtx.range_pop()
        if (step + 1) % 10 == 0:  # step time over blocks of 10 steps, one sync a block
            torch.cuda.synchronize()
            now = time.perf_counter()
            times.append((now - t_block) / 10)
            t_block = now
    torch.cuda.synchronize()
    t = torch.ones(1, device=dev)
    dist.all_reduce(t)
    ok = int(t.item()) == world
    times = sorted(times[1:] or times)  # the first block holds the warm-up
    step_ms = 1e3 * times[len(times) // 2] if times else 0.0
    kept = sum(k.numel() * k.element_size() for k in KEPT)
    expect.update(outcome="done" if ok else "bad all_reduce", step_ms=step_ms, allocated=torch.cuda.memory_allocated(),
                  reserved=torch.cuda.memory_reserved(), allocated_before=allocated_before, kept_bytes=kept,
                  kept_tensors=len(KEPT))
    write_expect()
    say(f"rank {rank} pid {os.getpid()} {'done' if ok else 'BAD all_reduce'} steps {steps} step_ms {step_ms:.3f} "
        f"allocated {expect['allocated']} reserved {expect['reserved']} kept {kept}")
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
