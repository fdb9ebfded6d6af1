"""ddp_two_ranks.py - DistributedDataParallel on a tiny model over NCCL, one
process per GPU, for `torchrun --nproc_per_node=2` under `vramtrace record`
(tests/gpu/check_record_ddp.sh).  NCCL allocates its own buffers (channels,
proxy, work FIFOs) during communicator init and the first collective: the
traces must show them.  The process group is destroyed only at the very
end, so those buffers are live during the whole training loop.  Prints
"rank R pid P ok" per rank."""
import os
import sys

# NVLink multicast off, before torch loads NCCL
for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_k, _v)

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).cuda()
    ddp = DDP(model, device_ids=[local])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for _ in range(20):
        x = torch.randn(64, 512, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    ok = int(t.item()) == dist.get_world_size()
    torch.cuda.synchronize()
    # one write per line: with PYTHONUNBUFFERED=1 print() writes the text
    # and its newline apart, and the two ranks' lines interleave
    sys.stdout.write(f"rank {dist.get_rank()} pid {os.getpid()} {'ok' if ok else 'BAD all_reduce'}\n")
    sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
