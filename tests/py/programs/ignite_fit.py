"""PyTorch Ignite: create_supervised_trainer, and an evaluator run at each
epoch's end and after the training; argv[1] (JSON) varies it: accumulate
(gradient_accumulation_steps), list_data (batches in a list, no DataLoader),
eval_first (an evaluation before the training). Prints Ignite's counts."""

import json
import sys

import torch
from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer
from ignite.metrics import Accuracy, Loss
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
torch.manual_seed(0)


def loader(n, shuffle):
    data = TensorDataset(torch.randn(n, 32), torch.randint(0, 4, (n,)))
    if args.get("list_data"):  # batches in a list, no DataLoader
        return [(data.tensors[0][i : i + 16], data.tensors[1][i : i + 16]) for i in range(0, n, 16)]
    return DataLoader(data, batch_size=16, shuffle=shuffle)


train, val = loader(800, True), loader(200, False)
model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
crit = nn.CrossEntropyLoss()
trainer = create_supervised_trainer(
    model, opt, crit, gradient_accumulation_steps=args.get("accumulate", 1)
)
evaluator = create_supervised_evaluator(model, metrics={"acc": Accuracy(), "loss": Loss(crit)})
counts = {"evals": 0, "updates": 0}
orig_step = opt.step


def counted_step(*a, **k):
    counts["updates"] += 1
    return orig_step(*a, **k)


opt.step = counted_step


@trainer.on(Events.EPOCH_COMPLETED)
def validate(engine):
    evaluator.run(val)
    counts["evals"] += 1


if args.get("eval_first"):
    evaluator.run(val)  # a baseline before the training
    counts["evals"] += 1
trainer.run(train, max_epochs=3)
evaluator.run(val)  # a last evaluation, after the training
counts["evals"] += 1
print(json.dumps({"iterations": trainer.state.iteration, "epochs": trainer.state.epoch, **counts}))
