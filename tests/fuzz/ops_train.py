"""The fuzzers' second base run (Makefile: base-ops.db): a tiny PyTorch
training whose capture window (steps 11-12, --ops-steps 2) gives the run file
operators, strings and a window's step marks, so that tests/fuzz/
fuzz_run_file.c edits the op readers' rows too."""

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
for _ in range(16):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
