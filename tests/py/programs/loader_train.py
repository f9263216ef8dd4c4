"""A small training whose DataLoader waits 1.5 ms a sample (storage latency,
as a slow disk or a remote store gives): argv[1] is its num_workers, argv[2]
its steps (batches of 8, one epoch), argv[3] (optional) the wait in ms,
argv[4] the model's width (256; wider: more compute) and argv[5] the batch
size (8). With FLAG in its environment, writes that file at its first step
(a test then starts CPU burners beside it). Prints the steps it ran; with
TRUTH in its environment, writes there what it measured itself, the ground
truth a test holds the recording to: its steps' mean time (from one batch's
request to the next's), the mean wait for a batch and the mean time of the
rest of a step, over the steps after the first ten."""

import json
import os
import pathlib
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

WAIT = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.0015
WIDTH = int(sys.argv[4]) if len(sys.argv) > 4 else 256
BATCH = int(sys.argv[5]) if len(sys.argv) > 5 else 8


class Slow(Dataset):
    def __len__(self):
        return BATCH * int(sys.argv[2])

    def __getitem__(self, i):
        if WAIT:
            time.sleep(WAIT)  # the latency a worker hides
        return torch.full((64,), float(i % 7)), i % 4


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(Slow(), batch_size=BATCH, num_workers=int(sys.argv[1]))
    model = nn.Sequential(nn.Linear(64, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = 0
    flag = os.environ.get("FLAG")
    waits, trains = [], []
    batches = iter(loader)
    while True:
        asked = time.perf_counter()
        try:
            x, y = next(batches)
        except StopIteration:
            break
        got = time.perf_counter()
        if flag and steps == 0:
            pathlib.Path(flag).write_text("go")
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        steps += 1
        waits.append(got - asked)
        trains.append(time.perf_counter() - got)
    print(json.dumps({"steps": steps}))
    if os.environ.get("TRUTH") and steps > 20:
        n = len(waits) - 10
        wait, train = sum(waits[10:]) / n, sum(trains[10:]) / n
        truth = {"steps": steps, "step_s": wait + train, "wait_s": wait, "train_s": train}
        pathlib.Path(os.environ["TRUTH"]).write_text(json.dumps(truth))
