"""Steps in loops of every shape, under record and unmodified: no
DataLoader, a model first called once discovery ended, an optimizer's
closure, steps a GradScaler skipped, loops that end their epochs in
different ways, micro-batches fetched first, fetches with no work seen,
and compiled functions traced through the instrumentation."""

import json
import socket
import sqlite3

import pytest
from conftest import PYTHON, report_json, trainprof
from test_torch import record_script, timing

NO_DATALOADER = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data, labels = torch.randn(4096, 64), torch.randint(0, 10, (4096,))
def get_batch():
    i = torch.randint(0, 4096 - 32, (1,)).item()
    return data[i:i + 32], labels[i:i + 32]
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
criterion = nn.CrossEntropyLoss()  # a loss module called outermost: loss
# two optimizers stepping each iteration: the first one's steps end the steps
opts = [torch.optim.SGD(model[0].parameters(), lr=0.01),
        torch.optim.SGD(model[2].parameters(), lr=0.01)]
for it in range(30):
    for micro in range(2):
        x, y = get_batch()
        (criterion(model(x), y) / 2).backward()
    for opt in opts:
        opt.step()
        opt.zero_grad()
model.eval()
with torch.no_grad():
    for (x,) in DataLoader(TensorDataset(torch.randn(320, 64)), batch_size=32):
        model(x)
"""


def test_steps_without_a_dataloader(run_file):
    """Each step of the first optimizer to step ends a training step when no
    DataLoader fed the training (a second optimizer stepping in the same
    iteration marks none): 30 steps, one per update (the first began at the
    first training forward), with the samples its model's calls took, none
    from the validation DataLoader iterated afterwards, no epochs."""
    record_script(run_file, NO_DATALOADER)
    rep = report_json(run_file)
    assert rep["steps"][0]["count"] == 30
    # a step's samples: its model's two micro-batches of 32 (not the loss's inputs)
    assert rep["steps"][0]["samples"] == 30 * 64 and rep["steps"][0]["samples_per_s"] > 0
    assert rep["epochs"] == []
    assert timing(rep, "train_batch")["count"] == 30
    # the model's 60 training calls and 10 validation calls; the loss module's are loss
    assert timing(rep, "forward")["count"] == 60 + 10
    assert timing(rep, "loss")["count"] == 60
    assert timing(rep, "optimizer_step")["count"] == 60
    # the validation forwards came after the last step: outside the steps
    fwd = timing(rep, "forward")
    assert fwd["in_steps_s"] < fwd["total_s"]
    # no DataLoader timed: the verdict doesn't claim the wait for data was measured
    verdict = next(v for v in rep["verdicts"] if v["kind"] == "compute_bound")
    assert "making the batches included (no DataLoader timed)" in verdict["message"]


LATE_MODEL = """
import torch
from torch import nn

torch.manual_seed(0)
data, labels = torch.randn(4096, 64), torch.randint(0, 10, (4096,))
features = nn.Linear(64, 64).eval()
with torch.no_grad():  # more outermost calls than the global hooks look for
    for i in range(40):
        features(data[i:i + 32])
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for it in range(20):
    x, y = data[it * 32:(it + 1) * 32], labels[it * 32:(it + 1) * 32]
    nn.functional.cross_entropy(model(x), y).backward()  # no loss module
    opt.step()
    opt.zero_grad()
"""


def test_model_first_called_after_discovery_ended(run_file):
    """A model first called once the global hooks had gone (40 calls of
    another module came first) is found through its first backward, which
    followed no timed forward: from the second iteration on its calls are
    forward and train_batch, and the steps get its samples."""
    record_script(run_file, LATE_MODEL)
    rep = report_json(run_file)
    assert rep["steps"][0]["count"] == 19
    assert timing(rep, "train_batch")["count"] == 19
    assert timing(rep, "forward")["count"] == 40 + 19
    assert timing(rep, "backward")["count"] == 20
    assert rep["steps"][0]["samples"] == 19 * 32


CLOSURE = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
data = TensorDataset(torch.randn(640, 32), torch.randint(0, 4, (640,)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(data, batch_size=32):  # as Lightning's automatic optimization
    def closure():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss
    opt.step(closure=closure)
lbfgs = torch.optim.LBFGS(model.parameters(), max_iter=4)  # calls its closure up to 4 times
calls = [0]
x, y = data[:64]
def lbfgs_closure():
    calls[0] += 1
    lbfgs.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return loss
lbfgs.step(lbfgs_closure)
print(calls[0])
"""


def test_step_closure_is_train_batch_not_optimizer_step(run_file):
    """optimizer.step(closure) runs forward and backward inside the step:
    they are train_batch's, and optimizer_step times only what the optimizer
    does after each call of the closure (nested in train_batch)."""
    r = record_script(run_file, CLOSURE)
    lbfgs_calls = int(r.stdout.split()[-1])
    assert 1 <= lbfgs_calls <= 4
    rep = report_json(run_file)
    assert timing(rep, "train_batch")["count"] == 20 + 1
    assert timing(rep, "forward")["count"] == 20 + lbfgs_calls
    assert timing(rep, "optimizer_step")["count"] == 20 + lbfgs_calls
    with sqlite3.connect(run_file) as db:
        # no forward or backward inside an optimizer_step; each optimizer_step in a train_batch
        inside = db.execute(
            "SELECT count(*) FROM regions o JOIN regions f ON f.tid = o.tid"
            " AND f.start_ns >= o.start_ns AND f.end_ns <= o.end_ns"
            " WHERE o.name = 'optimizer_step' AND f.name IN ('forward', 'backward')"
        ).fetchone()
        outside = db.execute(
            "SELECT count(*) FROM regions o WHERE o.name = 'optimizer_step' AND NOT EXISTS"
            " (SELECT 1 FROM regions t WHERE t.tid = o.tid AND t.name = 'train_batch'"
            " AND t.start_ns <= o.start_ns AND t.end_ns >= o.end_ns)"
        ).fetchone()
    assert inside == (0,) and outside == (0,)


GRAD_SCALER = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(320, 32), torch.randint(0, 4, (320,))
skipped = 0
for it in range(10):  # batches of its own (no DataLoader): optimizer steps mark the steps
    loss = nn.functional.cross_entropy(model(x[it * 32:(it + 1) * 32]), y[it * 32:(it + 1) * 32])
    if it in (3, 6):
        loss = loss * float("inf")  # an overflow: the scaler skips the optimizer's step
    scaler.scale(loss).backward()
    scale = scaler.get_scale()
    scaler.step(opt)
    scaler.update()
    skipped += scaler.get_scale() < scale
    opt.zero_grad()
print(skipped)
"""


def test_step_skipped_by_grad_scaler_still_ends(run_file):
    """GradScaler.step skips optimizer.step() on an overflow: that iteration is
    still a step of its own, its train_batch closed, not merged into the next."""
    r = record_script(run_file, GRAD_SCALER)
    assert r.stdout.split()[-1] == "2"  # the scaler did skip two steps
    rep = report_json(run_file)
    assert timing(rep, "optimizer_step")["count"] == 8
    assert timing(rep, "train_batch")["count"] == 10
    assert rep["steps"][0]["count"] == 10  # one per iteration, skipped or not
    assert rep["steps"][0]["samples"] == 10 * 32


# One DataLoader of 20 batches, iterated three ways, an epoch each: a for loop
# (its last next() raises StopIteration); by its length, as Lightning does, so
# that no next() follows the last batch; and a batch ahead, as accelerate does,
# so that the StopIteration comes before the last batch is trained.
LOOP_STYLES = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(640, 16), torch.randint(0, 4, (640,))), batch_size=32)

def train(x, y):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()

it = iter(loader)
ahead = next(it)
while ahead is not None:
    batch, ahead = ahead, next(it, None)
    train(*batch)
for x, y in loader:
    train(x, y)
it = iter(loader)
for _ in range(len(loader)):
    train(*next(it))
"""


def test_every_batch_is_a_step_however_the_loop_ends_an_epoch(run_file):
    """Also where the run begins with a loop that fetches one ahead: its first
    two fetches come before any work, and are one step (the first batch's)."""
    record_script(run_file, LOOP_STYLES)
    rep = report_json(run_file)
    assert timing(rep, "train_batch")["count"] == 60
    assert [(e["epoch"], e["steps"], e["samples"]) for e in rep["epochs"]] == [
        (0, 20, 640),
        (1, 20, 640),
        (2, 20, 640),
    ]
    assert rep["steps"][0]["count"] == 60


# Hugging Face's Trainer with gradient accumulation: each optimizer step's
# micro-batches are fetched first, then computed, through Accelerate's
# DataLoaderShard, which fetches every batch one ahead of the one it hands out
# (so the loader's last batch and its end come before the last computations).
MICRO_BATCHES_FIRST = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(640, 16), torch.randint(0, 4, (640,))), batch_size=32)

def one_ahead(loader):
    it = iter(loader)
    current = next(it)
    while True:
        try:
            following = next(it)
        except StopIteration:
            yield current
            return
        yield current
        current = following

for epoch in range(3):
    batches = one_ahead(loader)
    for update in range(5):
        micro = [next(batches) for _ in range(4)]
        opt.zero_grad()
        for x, y in micro:
            (nn.functional.cross_entropy(model(x), y) / 4).backward()
        opt.step()
"""


def test_micro_batches_fetched_first_are_one_step(run_file):
    """Batches fetched in a row, with no forward, backward or optimizer step
    between them, are one step: a step is an optimizer step of 4 micro-batches,
    as the Trainer counts them, from the run's first one on (whose fetches wait
    undecided until its work shows what they were), and no computation falls
    outside the steps."""
    record_script(run_file, MICRO_BATCHES_FIRST)
    rep = report_json(run_file)
    assert timing(rep, "train_batch")["count"] == 15
    assert timing(rep, "forward")["count"] == 60
    assert [(e["epoch"], e["steps"], e["samples"]) for e in rep["epochs"]] == [
        (0, 5, 640),
        (1, 5, 640),
        (2, 5, 640),
    ]
    assert rep["steps"][0]["count"] == 15
    for name in ("forward", "backward", "optimizer_step", "train_batch"):
        t = timing(rep, name)
        inside = t["in_steps_s"] + t["in_profiled_steps_s"] + t["in_warmup_steps_s"]
        assert inside == pytest.approx(t["total_s"]), name


# A loop whose work the recorder can't see (no module call, backward or
# optimizer step): its fetches come one after the other with nothing between.
WORK_OUT_OF_SIGHT = """
import time, torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(640, 16)), batch_size=32)
total = torch.zeros(16)
for epoch in range(2):
    for (x,) in loader:
        total += x.sum(0)
        time.sleep(0.02)
"""


def test_fetches_with_no_work_seen_are_a_step_each(run_file):
    """Where no work is ever seen between fetches, each fetch is a step, from
    the first: the undecided fetches go in as steps at their own times (at the
    next epoch and at the end), so each step lasts its batch's 20 ms."""
    record_script(run_file, WORK_OUT_OF_SIGHT)
    rep = report_json(run_file)
    assert [(e["epoch"], e["steps"], e["samples"]) for e in rep["epochs"]] == [
        (0, 20, 640),
        (1, 20, 640),
    ]
    steps = rep["steps"][0]
    assert steps["count"] == 40
    assert steps["p50_s"] >= 0.02 and steps["total_s"] >= 40 * 0.02, steps


# torch.compile traces through the patched calls: a collective, a copy and a
# backward inside compiled functions (Dynamo's eager backend: the graphs are
# what is checked). Dynamo can't trace a C extension's function, so each
# recording call traced was a graph break.
COMPILED_CALLS = """
import json, os, sys, torch, torch.distributed as dist
from torch import nn
from torch._dynamo.utils import counters
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1])
dist.init_process_group("gloo", rank=0, world_size=1)
model = nn.Linear(8, 8)

def collective(x):
    y = x * 2
    dist.all_reduce(y)
    return y + 1

def copy(x):
    return x.to(torch.float64) * 2

def train(x):
    loss = model(x).sum()
    loss.backward()
    return loss

result = {}
for fn, arg in ((collective, torch.ones(4)), (copy, torch.ones(4)), (train, torch.ones(2, 8))):
    torch._dynamo.reset()
    counters.clear()
    torch.compile(fn, backend="eager")(arg)
    result[fn.__name__] = [sum(counters["graph_break"].values()), counters["stats"]["unique_graphs"]]
dist.all_reduce(torch.ones(4))  # eager: timed
dist.destroy_process_group()
print(json.dumps(result))
"""


def test_compiled_functions_trace_through_the_instrumentation(run_file):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = run_file.parent / "compiled.py"
    script.write_text(COMPILED_CALLS)
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, str(port), timeout=300)
    assert r.returncode == 0, r.stderr
    # [graph breaks, graphs]; a backward breaks the graph in plain torch too
    # (Dynamo names the reason twice when the method is patched: one graph all the same)
    result = json.loads(r.stdout.splitlines()[-1])
    assert result["collective"] == [0, 1] and result["copy"] == [0, 1]
    assert result["train"][1] == 1
    assert timing(report_json(run_file), "reduce_metrics", rank=0)["count"] == 1


WARM_UP_THEN_LOADER = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):  # warm-up steps on batches of the script's own, no DataLoader
    x, y = torch.randn(8, 16), torch.randint(0, 2, (8,))
    opt.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); opt.step()
# a validation with neither eval() nor no_grad: it trains nothing
val = DataLoader(TensorDataset(torch.randn(40, 16), torch.randint(0, 2, (40,))), batch_size=8)
losses = [nn.functional.cross_entropy(model(x), y).item() for x, y in val]
train = DataLoader(TensorDataset(torch.randn(64, 16), torch.randint(0, 2, (64,))),
                   batch_size=8, shuffle=True)
for epoch in range(2):
    for x, y in train:
        opt.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); opt.step()
"""


def test_warm_up_steps_then_a_dataloader_hand_it_the_steps(run_file):
    """Updates mark the warm-up's steps (no DataLoader fed them); the
    training's DataLoader, iterated between two of them with the model
    training, marks the steps from then on and its passes are the epochs.
    The validation's loader between them never trains: an evaluation, not
    the training's first pass."""
    record_script(run_file, WARM_UP_THEN_LOADER)
    rep = report_json(run_file)
    steps = rep["steps"][0]
    assert steps["count"] == 5 + 2 * 8
    assert steps["samples"] == 5 * 8 + 2 * 64 and steps["batches"] == 21
    assert [(e["epoch"], e["steps"], e["samples"]) for e in rep["epochs"]] == [
        (0, 8, 64),
        (1, 8, 64),
    ]
    assert timing(rep, "evaluate")["count"] == 1
    assert timing(rep, "optimizer_step")["count"] == 21
    text = " ".join(trainprof("report", run_file).stdout.split())
    assert (
        "1 evaluation (another DataLoader's pass between the training's) ran with gradients on"
        in text
    )


ADAM_THEN_LBFGS = """
import torch
from torch import nn

torch.manual_seed(0)
x = torch.linspace(-1, 1, 256).unsqueeze(1)
y = torch.sin(3 * x)
model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1))
adam = torch.optim.AdamW(model.parameters(), lr=1e-2)
for it in range(50):
    adam.zero_grad(); ((model(x) - y) ** 2).mean().backward(); adam.step()
lbfgs = torch.optim.LBFGS(model.parameters(), max_iter=5)  # adam kept: a PINN's second stage
def closure():
    lbfgs.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    return loss
for it in range(20):
    lbfgs.step(closure)
"""


def test_a_second_optimizer_s_stage_has_its_steps(run_file):
    """Adam's 50 steps, then L-BFGS's 20 on the same model with Adam kept
    (no DataLoader: updates mark the steps): 70 steps, each with its batch
    once however often L-BFGS called its closure."""
    record_script(run_file, ADAM_THEN_LBFGS)
    rep = report_json(run_file)
    steps = rep["steps"][0]
    assert steps["count"] == 50 + 20
    assert steps["samples"] == 70 * 256 and steps["batches"] == 70
    assert timing(rep, "train_batch")["count"] == 70
