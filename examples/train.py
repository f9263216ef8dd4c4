"""A small, real PyTorch training run for trying trainprof on a CPU.

A convolutional network learns to classify synthetic 28x28 images (each class
is a noisy blob at its own place), fed by a DataLoader with worker processes:
enough to show CPU, memory and process-tree figures in well under a minute.

    trainprof record -o run.db -- python examples/train.py --epochs 2
    trainprof report run.db
"""

import argparse
import contextlib
import json
import statistics
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class BlobImages(Dataset):
    """Images of class c have a bright blob at a position that depends on c."""

    def __init__(self, size: int, classes: int = 10, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, classes, (size,), generator=g)
        self.noise = torch.randn(size, 1, 28, 28, generator=g) * 0.3
        self.classes = classes

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        c = int(self.labels[i])
        img = self.noise[i].clone()
        row, col = 4 + (c // 5) * 12, 2 + (c % 5) * 5
        img[0, row : row + 8, col : col + 5] += 1.0
        return img, c


def make_model(classes: int = 10) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 64),
        nn.ReLU(),
        nn.Linear(64, classes),
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--samples", type=int, default=12288, help="training images per epoch")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument(
        "--device", default="cpu", help="where the model trains: cpu (default), cuda, cuda:1..."
    )
    p.add_argument(
        "--torch-profiler",
        action="store_true",
        help="run under torch.profiler (for comparing overheads)",
    )
    p.add_argument(
        "--timing-json",
        action="store_true",
        help="print the median step time as JSON at the end (for benchmarks)",
    )
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device(args.device)
    loader = DataLoader(
        BlobImages(args.samples),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
        pin_memory=device.type == "cuda",
    )
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    profiler = (
        torch.profiler.profile(activities=activities)
        if args.torch_profiler
        else contextlib.nullcontext()
    )
    step_times = []
    with profiler:
        train(args, device, loader, model, opt, sched, loss_fn, step_times)
    if args.timing_json:
        print(
            json.dumps({"step_s_median": statistics.median(step_times), "steps": len(step_times)})
        )


def train(args, device, loader, model, opt, sched, loss_fn, step_times):
    for epoch in range(args.epochs):
        start, seen, correct, total_loss = time.perf_counter(), 0, 0, 0.0
        last = time.perf_counter()
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            opt.zero_grad()
            out = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            opt.step()
            total_loss += loss.item() * len(y)
            correct += int((out.argmax(1) == y).sum())
            seen += len(y)
            now = time.perf_counter()
            step_times.append(now - last)
            last = now
        sched.step()
        secs = time.perf_counter() - start
        print(
            f"epoch {epoch + 1}/{args.epochs}: loss {total_loss / seen:.3f}, "
            f"accuracy {correct / seen:.1%}, {seen / secs:.0f} samples/s",
            flush=True,
        )


if __name__ == "__main__":
    main()
