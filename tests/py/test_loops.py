"""Plain PyTorch training loops written the ways people write them, under
record: the steps are the loop's optimizer updates, its epochs its passes,
its samples what the model consumed. Each script prints its own count, the
ground truth the report is checked against."""

import json

from conftest import (
    PYTHON,
    report_json,
    trainprof,
    words,
)

COMMON = """
import json, sys, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
def data(n, dim=16, classes=4):
    return TensorDataset(torch.randn(n, dim), torch.randint(0, classes, (n,)))
"""


def record(tmp_path, run_file, body):
    script = tmp_path / "loop.py"
    script.write_text(COMMON + body)
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1]), report_json(run_file)


def timing(rep, name):
    found = [t for t in rep["timings"] if t["name"] == name and t["rank"] == -1]
    return found[0] if found else None


def test_gradient_accumulation_is_one_step_per_update(tmp_path, run_file):
    truth, rep = record(
        tmp_path,
        run_file,
        """
loader = DataLoader(data(320), batch_size=8)  # 40 batches
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = 0
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        (nn.functional.cross_entropy(model(x), y) / 4).backward()
        if (i + 1) % 4 == 0:
            opt.step()
            opt.zero_grad()
            updates += 1
print(json.dumps({"updates": updates}))
""",
    )
    assert truth["updates"] == 20
    steps = rep["steps"][0]
    assert steps["count"] == truth["updates"]
    assert [(e["steps"], e["samples"], e["batches"]) for e in rep["epochs"]] == [
        (10, 320, 40),
        (10, 320, 40),
    ]
    assert (steps["samples"], steps["batches"]) == (640, 80)
    assert (steps["batches_per_step"], steps["samples_per_step"]) == (4, 32)
    text = trainprof("report", run_file).stdout
    assert "a step: 4 micro-batches, 32 samples" in text


def test_a_new_dataloader_each_epoch_is_the_training_loader_again(tmp_path, run_file):
    """A script that makes its DataLoader anew for each pass over the same
    dataset: every pass is an epoch of steps (before, only the first pass's
    batches were steps: 5 of 800). An evaluation pass over the training set
    with another loader (unshuffled, its own batch size) stays no epoch."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
train = data(64)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = 0
for epoch in range(6):
    for x, y in DataLoader(train, batch_size=8, shuffle=True):  # 8 batches, a new loader
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        updates += 1
    with torch.no_grad():  # the training set's accuracy, through a loader of its own
        for x, y in DataLoader(train, batch_size=32):
            model(x)
print(json.dumps({"updates": updates}))
""",
    )
    assert truth["updates"] == 48
    assert rep["steps"][0]["count"] == truth["updates"]
    assert [(e["steps"], e["samples"]) for e in rep["epochs"]] == [(8, 64)] * 6
    train = timing(rep, "train_batch")  # inside the steps (timed, or a capture window's)
    inside = train["in_steps_s"] + train["in_profiled_steps_s"] + train["in_warmup_steps_s"]
    assert abs(inside - train["total_s"]) < 1e-6


def test_a_peek_at_the_first_batch_is_no_epoch(tmp_path, run_file):
    """pytorch/examples' DDP tutorial takes the batch size from
    next(iter(loader)) at each epoch's start."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
loader = DataLoader(data(128), batch_size=16)
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
steps = 0
for epoch in range(3):
    size = len(next(iter(loader))[0])
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        steps += 1
print(json.dumps({"steps": steps, "epochs": 3}))
""",
    )
    assert [e["epoch"] for e in rep["epochs"]] == [0, 1, 2]
    assert [e["steps"] for e in rep["epochs"]] == [8, 8, 8]
    assert rep["steps"][0]["count"] == truth["steps"]


def test_sequence_first_batches_count_their_batch_dimension(tmp_path, run_file):
    """An RNN's (seq, batch, features) batches, as a collate_fn makes them:
    the samples are the DataLoader's, not the sequence length."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
seqs = TensorDataset(torch.randn(96, 50, 8), torch.randint(0, 4, (96,)))
def seq_first(items):
    x = torch.stack([i[0] for i in items], dim=1)  # (50, batch, 8)
    return x, torch.stack([i[1] for i in items])
loader = DataLoader(seqs, batch_size=16, collate_fn=seq_first)
rnn, head = nn.GRU(8, 16), nn.Linear(16, 4)
opt = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.01)
for x, y in loader:
    opt.zero_grad()
    out, _ = rnn(x)
    nn.functional.cross_entropy(head(out[-1]), y).backward()
    opt.step()
print(json.dumps({"samples": 96}))
""",
    )
    assert rep["steps"][0]["count"] == 6
    assert rep["epochs"][0]["samples"] == truth["samples"]


def test_an_evaluation_under_no_grad_is_not_training(tmp_path, run_file):
    """No DataLoader; every 5 updates an evaluation calls the model (in eval
    mode) and the loss module (still in training mode) under no_grad: the
    samples are the training batches' alone, and evaluation opens no
    train_batch."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
x_all, y_all = torch.randn(2048, 16), torch.randint(0, 4, (2048,))
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = 0
for it in range(20):
    i = torch.randint(0, 2048, (32,))
    loss_fn(model(x_all[i]), y_all[i]).backward()
    opt.step()
    opt.zero_grad()
    updates += 1
    if (it + 1) % 5 == 0:
        model.eval()
        with torch.no_grad():
            for j in range(0, 2048, 256):
                loss_fn(model(x_all[j:j + 256]), y_all[j:j + 256])
        model.train()
print(json.dumps({"updates": updates, "samples": 32 * updates}))
""",
    )
    assert rep["steps"][0]["count"] == truth["updates"]
    assert rep["steps"][0]["samples"] == truth["samples"]
    assert timing(rep, "train_batch")["count"] == truth["updates"]


def test_a_closure_optimizer_is_one_step_with_its_batch_once(tmp_path, run_file):
    """LBFGS calls the closure up to max_iter times per step(): one update,
    one batch of samples, a step time that is the update's."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
x, y = torch.randn(512, 16), torch.randn(512, 1)
model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))
opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=20)
calls = 0
for it in range(10):
    def closure():
        global calls
        calls += 1
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss
    opt.step(closure)
print(json.dumps({"updates": 10, "samples": 10 * 512, "calls": calls}))
""",
    )
    assert truth["calls"] > 2 * truth["updates"]  # LBFGS did re-evaluate
    steps = rep["steps"][0]
    assert steps["count"] == truth["updates"] and steps["samples"] == truth["samples"]
    assert steps["batches"] == truth["updates"]
    assert steps["p50_s"] > 0 and timing(rep, "forward")["count"] == truth["calls"]


def test_with_nothing_to_find_steps_by_the_report_says_how_to_mark_them(tmp_path, run_file):
    """No DataLoader and no optimizer (a hand-written update): no steps, and
    the report says why and what to do."""
    script = tmp_path / "loop.py"
    script.write_text(
        COMMON
        + """
model = nn.Linear(16, 4)
for _ in range(20):
    nn.functional.cross_entropy(model(torch.randn(8, 16)), torch.randint(0, 4, (8,))).backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad
"""
    )
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    assert report_json(run_file)["steps"] == []
    text = trainprof("report", run_file).stdout
    assert "\nSteps: none found" in text
    assert "trainprof.step()" in text


def test_the_scripts_own_sample_count_replaces_the_automatic_one(tmp_path, run_file):
    """trainprof.samples(n) for a batch whose samples the tracker can't know
    (here: 4 sequences of 8 tokens, counted as tokens): from the first call
    on, the automatic count stops."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
import trainprof
loader = DataLoader(data(64), batch_size=4)
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in loader:
    trainprof.samples(4 * 8)
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print(json.dumps({"tokens": 64 * 8}))
""",
    )
    # the first batch was counted before the script's first call: that count stays
    assert rep["epochs"][0]["samples"] == 4 + truth["tokens"]


def test_checkpoints_are_named_and_outside_the_steps(tmp_path, run_file):
    truth, rep = record(
        tmp_path,
        run_file,
        """
import os
loader = DataLoader(data(256), batch_size=16)
model = nn.Sequential(nn.Linear(16, 256), nn.ReLU(), nn.Linear(256, 4))
opt = torch.optim.Adam(model.parameters())
saves = 0
for i, (x, y) in enumerate(loader):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    if (i + 1) % 4 == 0:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()},
                   os.path.join(sys.argv[0] + ".ckpt"))
        saves += 1
print(json.dumps({"saves": saves, "steps": 16}))
""",
    )
    checkpoint = timing(rep, "checkpoint")
    assert checkpoint["count"] == truth["saves"] and checkpoint["in_steps_s"] == 0
    assert rep["steps"][0]["count"] == truth["steps"]


def test_a_nanogpt_loop_names_its_evaluations_and_keeps_them_out_of_the_steps(tmp_path, run_file):
    """nanoGPT's shape: get_batch() (no DataLoader) for each of its
    gradient_accumulation_steps micro-steps, and at the top of every
    eval_interval-th iteration estimate_loss() under no_grad, then a
    checkpoint. The evaluation at iteration 0 comes before any step; the
    script's last, after its loop, ends with the run (it was lost)."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
x_all, y_all = torch.randn(4096, 16), torch.randint(0, 4, (4096,))
def get_batch():
    i = torch.randint(0, 4096, (32,))
    return x_all[i], y_all[i]
model = nn.Sequential(nn.Linear(16, 256), nn.ReLU(), nn.Linear(256, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
@torch.no_grad()
def estimate_loss():
    model.eval()
    losses = [nn.functional.cross_entropy(model(x_all[j:j + 128]), y_all[j:j + 128])
              for j in range(0, 4096, 128)]
    model.train()
    return sum(losses) / len(losses)
evals = saves = 0
for it in range(20):
    if it % 5 == 0:
        estimate_loss()
        evals += 1
        torch.save(model.state_dict(), sys.argv[0] + ".ckpt")
        saves += 1
    for micro_step in range(2):
        x, y = get_batch()
        (nn.functional.cross_entropy(model(x), y) / 2).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
estimate_loss()  # the final one
evals += 1
print(json.dumps({"updates": 20, "samples": 20 * 2 * 32, "evals": evals, "saves": saves}))
""",
    )
    steps = rep["steps"][0]
    assert steps["count"] == truth["updates"] and steps["samples"] == truth["samples"]
    assert steps["batches_per_step"] == 2 and steps["samples_per_step"] == 64
    evaluate, checkpoint = timing(rep, "evaluate"), timing(rep, "checkpoint")
    assert evaluate["count"] == truth["evals"] - 1 and evaluate["in_steps_s"] == 0
    assert checkpoint["count"] == truth["saves"] and checkpoint["in_steps_s"] == 0
    forward = timing(rep, "forward")  # the evaluations' 32 calls each are outside the steps
    assert forward["in_steps_s"] < 0.9 * forward["total_s"]


def test_compiling_steps_are_warm_up_left_out_of_the_figures(tmp_path, run_file):
    """torch.compile'd model, accumulation 2: the first step compiles and is
    set apart as warm-up; the step figures and shares are the other steps';
    every step still counts in the epochs. Dynamo with aot_eager: the same
    compile regions without Inductor's C++ build (8 CPU-seconds of the suite;
    test_training_untouched.py compiles with Inductor)."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
loader = DataLoader(data(320), batch_size=8, drop_last=True)
model = torch.compile(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), backend="aot_eager")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = 0
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        (nn.functional.cross_entropy(model(x), y) / 2).backward()
        if i % 2 == 1:
            opt.step()
            opt.zero_grad()
            updates += 1
print(json.dumps({"updates": updates}))
""",
    )
    steps, compile_ = rep["steps"][0], timing(rep, "compile")
    assert compile_["pause"] and compile_["count"] >= 1
    assert steps["warmup_steps"] >= 1
    assert steps["count"] == truth["updates"]  # the training's count, its warm-up in it
    parts = steps["timed_steps"] + steps["warmup_steps"] + steps["profiled_steps"]
    assert parts == steps["count"]
    assert [e["steps"] for e in rep["epochs"]] == [20, 20]
    assert steps["warmup_s"] >= compile_["total_s"] - compile_["in_steps_s"]
    assert steps["max_s"] < compile_["max_s"]  # the steady steps hold no compilation
    assert steps["batches_per_step"] == 2 and steps["samples_per_step"] == 16
    train = timing(rep, "train_batch")  # the warm-up's train_batch is not in the shares
    assert train["in_steps_s"] < train["total_s"] - compile_["total_s"] / 2
    text = trainprof("report", run_file).stdout
    assert "torch.compile compiling in them" in words(text)
    assert "not training (pauses outside the steps)" in text


def test_passes_left_at_a_count_keep_their_last_steps(tmp_path, run_file):
    """Epochs of a count of steps over a longer loader (islice; a break at
    steps_per_epoch), and a run that ends after its last update with no
    fetch after it (next(it) for a count of steps): each pass's last step
    was open when the next pass's epoch began, and lost (19 of 20 an
    epoch), the run's last one too. Each ends with its update now."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
import itertools
loader = DataLoader(data(400), batch_size=8, shuffle=True)  # 50 batches
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = 0
for epoch in range(3):
    for x, y in itertools.islice(loader, 20):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        updates += 1
print(json.dumps({"updates": updates}))
""",
    )
    assert truth["updates"] == 60
    assert rep["steps"][0]["count"] == truth["updates"]
    assert [(e["steps"], e["samples"], e["batches"]) for e in rep["epochs"]] == [(20, 160, 20)] * 3


def test_a_validation_with_neither_eval_nor_no_grad_is_an_evaluate(tmp_path, run_file):
    """A validation loader iterated after each epoch with the model left in
    training mode and gradients on: taken for a new training loader, each
    validation was an epoch of no step (six epochs for three) and no
    evaluate. Held until it trains, and it never does: an evaluate, and the
    training loader's next pass the next epoch; the report names the three
    evaluations that ran in training mode."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
train, val = DataLoader(data(160), batch_size=8, shuffle=True), DataLoader(data(40), batch_size=8)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = evaluations = 0
for epoch in range(3):
    for x, y in train:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        updates += 1
    correct = 0
    for x, y in val:  # neither model.eval() nor no_grad
        correct += (model(x).argmax(1) == y).sum().item()
    evaluations += 1
print(json.dumps({"updates": updates, "evaluations": evaluations}))
""",
    )
    assert (truth["updates"], truth["evaluations"]) == (60, 3)
    assert rep["steps"][0]["count"] == truth["updates"]
    assert [(e["steps"], e["samples"], e["batches"]) for e in rep["epochs"]] == [(20, 160, 20)] * 3
    evaluate = timing(rep, "evaluate")
    assert evaluate["count"] == truth["evaluations"] and evaluate["in_steps_s"] == 0
    # and the report says how to run it
    assert rep["run"]["meta"]["fact.evaluate.training_mode"] == "3"
    text = words(trainprof("report", run_file).stdout)
    assert "3 evaluations (another DataLoader's pass between the training's) ran with" in text
    assert "model.eval() and torch.no_grad()" in text
