"""seeds.py PATTERN OUT.json - the memory patterns users meet, one small
PyTorch program each (tests/gpu/check_seeds.sh records them under
`vramtrace record` in each allocator mode; issues 22 and 25):

  graph_list   a module-level list that keeps each step's held-out loss,
               computed without no_grad, with its autograd graph (the
               saved activations stay alive; no backward frees them)
  logger       a logger object whose list keeps one GPU output per step
  scalars      a training class whose buffer keeps one GPU scalar per step
  slices       a dict of per-step slices (each keeps its whole output)
  closure      a hook whose closure keeps every tensor it is given
  deque        collections.deque(maxlen=8): held, bounded, not a leak
  temporary    a 64 MiB per-step temporary, freed each step: not a leak
  validation   validation without no_grad: graphs built and dropped
  dataloader   a DataLoader with 2 workers; the logger keeps each batch
  clean        a correct training loop: nothing kept

Each step is an NVTX range "stepN".  OUT.json gets what torch.cuda says:
leak_bytes = memory_allocated() after the loop (temporaries dropped,
gradients set to None) minus memory_allocated() before the first step
(model and optimizer state already made), the holder's path the report
must name, the line that allocates what is kept, and the step count."""
import collections
import inspect
import json
import sys

import torch
import torch.nn.functional as F

PATTERN, OUT = sys.argv[1], sys.argv[2]
STEPS = 40
LEAKS = {"graph_list": "__main__.losses", "logger": "__main__.logger.history",
         "scalars": "__main__.trainer.loss_buffer", "slices": "__main__.per_step",
         "closure": "__main__.hook.<closure kept>", "dataloader": "__main__.logger.history"}
HELD_NOT_GROWING = {"deque": "__main__.recent"}
lines = {}


def here(name):
    """The line after the caller's: where the kept tensor is allocated."""
    lines[name] = inspect.currentframe().f_back.f_lineno + 1


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(512, 2048)
        self.fc2 = torch.nn.Linear(2048, 512)

    def forward(self, x):
        here("activation")
        h = F.relu(self.fc1(x))  # saved for backward: 64 x 2048 floats
        return self.fc2(h)


class Logger:
    def __init__(self):
        self.history = []

    def log(self, t):
        self.history.append(t)


class Trainer:
    def __init__(self):
        self.loss_buffer = []

    def record(self, loss):
        here("scalar")
        self.loss_buffer.append(loss.detach() * 1.0)  # a GPU scalar a step


def make_hook():
    kept = []

    def hook(t):
        kept.append(t)
    return hook


torch.manual_seed(0)
model = Net().cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
logger = Logger()
trainer = Trainer()
per_step = {}
hook = make_hook()
recent = collections.deque(maxlen=8)


def batches():
    if PATTERN != "dataloader":
        for _ in range(STEPS):
            yield torch.randn(64, 512), torch.randn(64, 512)
        return
    ds = torch.utils.data.TensorDataset(torch.randn(STEPS * 64, 512), torch.randn(STEPS * 64, 512))
    yield from torch.utils.data.DataLoader(ds, batch_size=64, num_workers=2)


def step_once(i, x, y):
    here("input")
    x, y = x.cuda(), y.cuda()
    out = model(x)
    here("loss")
    loss = F.mse_loss(out, y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if PATTERN == "graph_list":
        xv, yv = torch.randn(64, 512, device="cuda"), torch.randn(64, 512, device="cuda")
        losses.append(F.mse_loss(model(xv), yv))  # keeps its graph: the saved activations
    elif PATTERN == "logger":
        here("logged")
        logger.log(out.detach() * 2.0)
    elif PATTERN == "scalars":
        trainer.record(loss)
    elif PATTERN == "slices":
        here("sliced")
        wide = torch.randn(64, 4096, device="cuda")  # 1 MiB; a slice keeps it all
        per_step[f"step{i}"] = wide[:, :8]
    elif PATTERN == "closure":
        here("hooked")
        hook(out.detach() + 1.0)
    elif PATTERN == "deque":
        here("recent")
        recent.append(out.detach() + 1.0)
    elif PATTERN == "temporary":
        tmp = torch.empty(16 * 1024 * 1024, device="cuda")  # 64 MiB, dropped
        tmp.fill_(float(i))
        del tmp
    elif PATTERN == "validation":
        v = model(torch.randn(64, 512, device="cuda"))  # no no_grad: a graph, dropped
        float(v.sum())
    elif PATTERN == "dataloader":
        logger.log(x)  # the batch on the GPU, kept


# one step before the baseline: Adam's state and cuBLAS's workspace exist
step_once(-1, torch.randn(64, 512), torch.randn(64, 512))
losses.clear(), logger.history.clear(), trainer.loss_buffer.clear(), per_step.clear(), recent.clear()
hook.__closure__[0].cell_contents.clear()
torch.cuda.synchronize()
base = torch.cuda.memory_allocated()
for i, (x, y) in enumerate(batches()):
    torch.cuda.nvtx.range_push(f"step{i}")
    step_once(i, x, y)
    torch.cuda.synchronize()  # a step as long as its kernels (a real loop logs, syncs)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
x = y = None
leak = torch.cuda.memory_allocated() - base
kept_line = {"graph_list": "activation", "logger": "logged", "scalars": "scalar", "slices": "sliced",
             "closure": "hooked", "deque": "recent", "dataloader": "input"}.get(PATTERN)
with open(OUT, "w") as f:
    json.dump({"pattern": PATTERN, "steps": STEPS, "leak_bytes": leak,
               "holder": LEAKS.get(PATTERN) or HELD_NOT_GROWING.get(PATTERN),
               "leak": PATTERN in LEAKS, "file": __file__,
               "line": lines.get(kept_line), "lines": lines}, f)
print(PATTERN, "kept", leak, "bytes")
