"""PyTorch auto-instrumentation: unmodified training scripts under record."""

import json
import sqlite3
import subprocess
import textwrap

import pytest
from conftest import PYTHON, ROOT, OthersCpu, report_json, trainprof, words

VENV_BIN = ROOT / ".venv" / "bin"

TRAIN = """
import sys, time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

class Data(Dataset):
    def __init__(self, n, dim, sleep):
        self.x = torch.randn(n, dim)
        self.y = torch.randint(0, 10, (n,))
        self.sleep = sleep
    def __len__(self):
        return len(self.y)
    def __getitem__(self, i):
        if self.sleep > 0:
            time.sleep(self.sleep)
        t = time.perf_counter()
        while time.perf_counter() - t < -self.sleep:  # sleep < 0: that long on the CPU
            pass
        return self.x[i], self.y[i]

def main(n, dim, hidden, batch, sleep, workers, method, epochs):
    torch.manual_seed(0)
    kw = dict(num_workers=workers, multiprocessing_context=method) if workers else {}
    loader = DataLoader(Data(n, dim, sleep), batch_size=batch, **kw)
    model = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                          nn.ReLU(), nn.Linear(hidden, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    for _ in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            loss.item()
        sched.step()

if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[0]), int(a[1]), int(a[2]), int(a[3]), float(a[4]), int(a[5]), a[6], int(a[7]))
"""


def record_training(run_file, *args, env=None):
    script = run_file.parent / "train.py"
    script.write_text(TRAIN)
    r = trainprof(
        "record",
        "-q",
        "--interval",
        "0.05",
        "-o",
        run_file,
        "--",
        PYTHON,
        script,
        *map(str, args),
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return report_json(run_file)


def record_script(run_file, text):
    """Records PYTHON running text as a script; returns the finished record."""
    script = run_file.parent / "script.py"
    script.write_text(text)
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def timing(rep, name, rank=-1):
    for t in rep["timings"]:
        if t["name"] == name and t["rank"] == rank:
            return t
    return None


def kinds(rep):
    return {v["kind"] for v in rep["verdicts"]}


def test_sleepy_dataset_is_input_bound(run_file):
    with OthersCpu() as load:
        rep = record_training(run_file, 64, 32, 32, 8, 0.01, 0, "fork", 1)
    assert "input_bound" in kinds(rep), rep["verdicts"]
    assert "compute_bound" not in kinds(rep)
    nxt = timing(rep, "dataloader_next")
    assert nxt["count"] == 8 + 1  # 8 batches and the fetch that ends the epoch
    assert nxt["mean_s"] > 0.06  # 8 samples x 10 ms
    [verdict] = [v for v in rep["verdicts"] if v["kind"] == "input_bound"]
    assert verdict["evidence"]["dataloader_next_share"] >= 0.25
    if verdict["evidence"]["cause"] == "contention":  # others kept the CPUs busy, it says
        assert load.busy and "other processes compete" in verdict["message"], load.cpus
    else:
        assert "num_workers" in verdict["message"] and verdict["evidence"]["cause"] == "latency"


def test_cpu_heavy_loader_is_input_bound_on_busy_cpus(run_file):
    """Two workers whose transforms keep both cores busy: input-bound, and the
    advice is not "more workers" (the CPUs have nothing left). The CPUs' median
    is over the training steps: over the whole run, the 2-3 s importing torch
    takes on one core put 5 s of training on the edge of 90 %."""
    with OthersCpu() as load:
        rep = record_training(run_file, 1024, 32, 32, 8, -0.01, 2, "fork", 1)
    found = [v for v in rep["verdicts"] if v["kind"] == "input_bound"]
    if load.busy and not found:  # others took the CPUs from the step thread as well
        return
    [verdict] = found
    # the CPUs busy: by its own workers, or (others competing) by both
    assert verdict["evidence"]["cause"] in (("cpu", "contention") if load.busy else ("cpu",)), (
        load.cpus,
        verdict,
    )
    assert verdict["evidence"]["cpu_util_p50_percent"] >= 90
    assert verdict["evidence"]["over"] == "steps"
    assert "more workers won't help" in verdict["message"]


def test_fast_loader_big_model_is_compute_bound(run_file):
    # 32 steps: with 16 (0.34 s in all) one slow fetch once took dataloader_next past 10 %
    rep = record_training(run_file, 4096, 512, 1024, 256, 0, 0, "fork", 2)
    assert "compute_bound" in kinds(rep), rep["verdicts"]
    assert "input_bound" not in kinds(rep)
    for name in ("train_batch", "forward", "backward", "optimizer_step"):
        assert timing(rep, name)["count"] == 32, name
    assert timing(rep, "step_lr_schedulers")["count"] >= 2
    assert rep["steps"][0]["count"] == 32
    assert [e["steps"] for e in rep["epochs"]] == [16, 16]
    assert [e["samples"] for e in rep["epochs"]] == [4096, 4096]
    assert rep["steps"][0]["samples_per_s"] > 0


# A step that computes for 20 ms (a sleep in forward: about the same share
# beside other work) and waits 5 ms for its batch: 15 % of the step on a quiet
# machine, 19 % beside two CPU burners (measured).
# (14 % of a step alone: beside other work each sleep's wake-up waits for a
# CPU too, which the short fetch feels the most: 8.5 ms against 5 once, 26 %
# of the step, when the fetch slept 5 ms and the step 20)
LOADER_NEXT = """
import time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
class Batches(Dataset):
    def __len__(self):
        return 60
    def __getitem__(self, i):
        time.sleep(0.004)
        return torch.randn(8, 4), torch.randint(0, 2, (8,))
class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x):
        time.sleep(0.024)
        return self.fc(x)
model = Slow()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(Batches(), batch_size=None):
    opt.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); opt.step()
"""


def test_a_loader_between_keeping_up_and_input_bound_is_named_next(run_file):
    """Waiting for data 10-25 % of a step that otherwise computes: compute-bound
    (not "nothing stands out"), with the loader named as what comes next."""
    record_script(run_file, LOADER_NEXT)
    rep = report_json(run_file)
    assert "input_bound" not in kinds(rep), rep["verdicts"]
    [v] = [v for v in rep["verdicts"] if v["kind"] == "compute_bound"]
    assert 0.10 <= v["evidence"]["dataloader_next_share"] < 0.25, v["evidence"]
    message = words(v["message"])
    assert "Speed-ups come first from the computation" in message, message
    assert "The loader comes next" in message and "trainprof bottleneck" in message, message
    text = words(trainprof("report", run_file).stdout)
    assert "No rule of thumb fired" not in text
    assert "[compute_bound]" in text.split(" System metrics")[0]


# Training with a validation pass after each epoch: a big evaluation set that
# loads slowly, which must not make the training look input-bound.
TRAIN_AND_VALIDATE = """
import time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

class Slow(Dataset):
    def __len__(self):
        return 640
    def __getitem__(self, i):
        time.sleep(0.0005)
        return torch.ones(256), 0

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train = DataLoader(TensorDataset(torch.randn(640, 256), torch.randint(0, 10, (640,))),
                   batch_size=32)
val = DataLoader(Slow(), batch_size=32)
for epoch in range(2):
    model.train()
    for x, y in train:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        for x, y in val:
            model(x)
"""


@pytest.mark.machine  # judges timings: the training's fetches' share stays under 25 %
def test_a_validation_pass_counts_but_takes_no_share(run_file):
    script = run_file.parent / "train_val.py"
    script.write_text(TRAIN_AND_VALIDATE)
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    nxt, fwd = timing(rep, "dataloader_next"), timing(rep, "forward")
    # every fetch and forward counts, validation's too (2 x 20 each, and 2 ends)
    assert nxt["count"] == 2 * (21 + 21) and fwd["count"] == 2 * (20 + 20)
    # validation's slow fetches (16 ms a batch) happened outside the steps
    assert nxt["total_s"] > 0.5 and nxt["in_steps_s"] < 0.5 * nxt["total_s"]
    assert fwd["in_steps_s"] < fwd["total_s"]
    assert nxt["share"] < 0.25 and "input_bound" not in kinds(rep), rep["verdicts"]
    assert fwd["share"] <= timing(rep, "train_batch")["share"] <= 1
    text = words(trainprof("report", run_file).stdout)
    assert "outside the steps (not in the shares): dataloader_next" in text
    # each validation pass, after its epoch, is an evaluate pause
    evaluate = timing(rep, "evaluate")
    assert evaluate["count"] == 2 and evaluate["in_steps_s"] == 0
    assert evaluate["total_s"] > 2 * 20 * 0.016 * 0.9  # its 2 x 20 slow fetches


VALIDATE_FIRST = """
import json, sys, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
train = DataLoader(TensorDataset(torch.randn(640, 32), torch.randint(0, 4, (640,))),
                   batch_size=32, shuffle=True)
val = DataLoader(TensorDataset(torch.randn(256, 32), torch.randint(0, 4, (256,))), batch_size=64)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05)

def validate():
    model.eval()
    if sys.argv[1] == "no_grad":  # the usual way
        with torch.no_grad():
            for x, y in val:
                criterion(model(x), y)
    else:  # the loader iterated with gradients on, each call under no_grad
        for x, y in val:
            with torch.no_grad():
                criterion(model(x), y)
    model.train()

validate()  # a baseline before the training
updates = 0
for epoch in range(2):
    for x, y in train:
        opt.zero_grad()
        criterion(model(x), y).backward()
        opt.step()
        updates += 1
    validate()
print(json.dumps({"updates": updates}))
"""


A_DATASET_EACH_EPOCH = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
val = DataLoader(TensorDataset(torch.randn(128, 32), torch.randint(0, 4, (128,))), batch_size=64)
for epoch in range(3):  # a curriculum: each epoch a new, larger dataset
    n = 320 * (epoch + 1)
    data = TensorDataset(torch.randn(n, 32), torch.randint(0, 4, (n,)))
    model.train()
    for x, y in DataLoader(data, batch_size=32, shuffle=True):
        opt.zero_grad()
        criterion(model(x), y).backward()
        opt.step()
    model.eval()  # its validation: gradients on, the model in eval mode
    for x, y in val:
        with torch.no_grad():
            criterion(model(x), y)
"""


def test_a_new_dataset_each_epoch_is_the_training_s_next_pass(run_file):
    """A new DataLoader over a new dataset each epoch (a curriculum,
    progressive resizing): iterated with gradients on and the model in
    training mode, between the training loader's passes, it is the next
    epoch (only the first epoch's 10 steps were found). The validation
    loader, the model in eval mode, is each epoch's evaluate."""
    script = run_file.parent / "curriculum.py"
    script.write_text(A_DATASET_EACH_EPOCH)
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    assert rep["steps"][0]["count"] == 10 + 20 + 30
    assert [(e["epoch"], e["steps"], e["samples"]) for e in rep["epochs"]] == [
        (0, 10, 320),
        (1, 20, 640),
        (2, 30, 960),
    ]
    evaluate = timing(rep, "evaluate")
    assert evaluate["count"] == 3 and evaluate["in_steps_s"] == 0


@pytest.mark.parametrize("how", ["no_grad", "grad_on"])
def test_a_validation_before_the_training_leaves_the_training_loader_be(run_file, how):
    """The first loader iterated was the validation's, before the training:
    taken for the training loader, its 4 batches were the run's steps and
    the training's 40 none. A loader iterated under no_grad never trains;
    one iterated with gradients on gives the role up to the first loader
    whose pass trains, and its own pass, held until then, is an evaluate
    (it kept a step a batch and an epoch before). The validations after the
    epochs are evaluate too."""
    script = run_file.parent / "validate_first.py"
    script.write_text(VALIDATE_FIRST)
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, how, timeout=300)
    assert r.returncode == 0, r.stderr
    truth = json.loads(r.stdout.splitlines()[-1])
    rep = report_json(run_file)
    assert truth["updates"] == 40
    assert rep["steps"][0]["count"] == truth["updates"]
    assert [(e["epoch"], e["steps"], e["samples"]) for e in rep["epochs"]] == [
        (0, 20, 640),
        (1, 20, 640),
    ]
    assert timing(rep, "evaluate")["count"] == 3  # the baseline too
    assert timing(rep, "evaluate")["in_steps_s"] == 0
    assert timing(rep, "train_batch")["count"] == truth["updates"]


# An evaluation every 5 steps, in the middle of the epochs (as the Trainer's
# eval_steps and Lightning's val_check_interval run it), over a slow loader.
EVALUATE_MID_EPOCH = (
    TRAIN_AND_VALIDATE.split("for epoch in range(2):")[0]
    + """
for epoch in range(2):
    for step, (x, y) in enumerate(train):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if step % 5 == 4:
            model.eval()
            with torch.no_grad():
                for vx, vy in val:
                    model(vx)
            model.train()
"""
)


@pytest.mark.machine  # judges timings: its steps' longest must stay short
def test_an_evaluation_mid_epoch_is_in_no_step(run_file):
    """A pass over another loader, with no training forward, backward or
    optimizer step in it, that begins once a step has done its work, ends that
    step: its fetches and forwards are outside the steps, the steps stay 20 an
    epoch, and the slow evaluation loader makes no input-bound verdict."""
    record_script(run_file, EVALUATE_MID_EPOCH)
    rep = report_json(run_file)
    assert [(e["epoch"], e["steps"], e["samples"]) for e in rep["epochs"]] == [
        (0, 20, 640),
        (1, 20, 640),
    ]
    nxt, fwd = timing(rep, "dataloader_next"), timing(rep, "forward")
    assert nxt["count"] == 2 * 21 + 8 * 21 and fwd["count"] == 2 * 20 + 8 * 20
    # 8 evaluations of 20 fetches of 16 ms: 2.5 s, none of it in a step
    assert nxt["total_s"] > 2 and nxt["in_steps_s"] < 0.2 * nxt["total_s"], nxt
    assert fwd["in_steps_s"] < 0.5 * fwd["total_s"], fwd
    assert "input_bound" not in kinds(rep), rep["verdicts"]
    steps = rep["steps"][0]
    assert steps["count"] == 40 and steps["max_s"] < 0.2, steps
    with sqlite3.connect(run_file) as db:
        ends = db.execute("SELECT count(*) FROM marks WHERE kind = 'step_end'").fetchone()[0]
    assert ends == 6  # the evaluations after steps 5, 10 and 15; step 20 ended the epoch
    # all 8 are evaluate pauses, each over its 20 slow fetches, none in a step
    evaluate = timing(rep, "evaluate")
    assert evaluate["count"] == 8 and evaluate["in_steps_s"] == 0
    assert evaluate["total_s"] > 8 * 20 * 0.016 * 0.9, evaluate


# An auxiliary loader run to its end inside each step, its batches taken by a
# training forward before the step's backward: that pass is part of the step.
AUXILIARY_PASS = (
    TRAIN_AND_VALIDATE.split("for epoch in range(2):")[0]
    + """
aux = DataLoader(TensorDataset(torch.randn(64, 256)), batch_size=32)
for epoch in range(2):
    for x, y in train:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        for (a,) in aux:
            loss = loss + model(a).pow(2).mean() * 1e-3
        loss.backward()
        opt.step()
"""
)


def test_a_loader_pass_with_training_work_stays_in_the_step(run_file):
    record_script(run_file, AUXILIARY_PASS)
    rep = report_json(run_file)
    assert [(e["epoch"], e["steps"], e["samples"]) for e in rep["epochs"]] == [
        (0, 20, 640),
        (1, 20, 640),
    ]
    for name in ("forward", "backward", "optimizer_step"):
        t = timing(rep, name)
        inside = t["in_steps_s"] + t["in_profiled_steps_s"] + t["in_warmup_steps_s"]
        assert inside == pytest.approx(t["total_s"]), name
    with sqlite3.connect(run_file) as db:
        assert db.execute("SELECT count(*) FROM marks WHERE kind = 'step_end'").fetchone()[0] == 0


# each start method and each count once (4 spawned workers cost as much as
# the other three runs together, and test nothing the two pairs miss)
@pytest.mark.parametrize("workers, method", [(4, "fork"), (2, "spawn")])
def test_dataloader_workers(run_file, workers, method):
    rep = record_training(run_file, 512, 16, 16, 16, 0.002, workers, method, 1)
    assert timing(rep, "dataloader_next")["count"] == 32 + 1
    assert rep["steps"][0]["count"] == 32
    procs = next(m for m in rep["agents"][0]["metrics"] if m["name"] == "proc_count")
    assert procs["max"] >= 1 + workers


def test_device_transfers_are_timed(run_file, tmp_path):
    script = tmp_path / "moves.py"
    script.write_text(
        textwrap.dedent("""
        import torch
        x = torch.ones(4)
        for _ in range(5):
            x.to("meta")              # leaves the CPU: counted
            x.to(torch.float64)       # a dtype change: not a transfer
            x.to("cpu")               # stays: not a transfer
        x.to(device="meta")               # by keyword: counted
        x.to(torch.device("meta"), torch.float64)  # a torch.device: counted
        x.to(x, non_blocking=True)        # like a CPU tensor: not a transfer
        x.to("cpu", torch.float16)        # a dtype change on the CPU: not one
        torch.ones(2, device="meta").to("meta")  # already off the CPU: not one
        assert x.sum().item() == 4.0  # CPU tensor: not a device-to-host copy
        x.cpu(), x.tolist(), x.numpy()  # nor these

        class OnDevice(torch.Tensor):  # a tensor that says it is not on the CPU
            __torch_function__ = torch._C._disabled_torch_function_impl  # calls once

            @property
            def is_cpu(self):
                return False

        d = torch.ones(1).as_subclass(OnDevice)
        assert d.item() == 1.0 and d.tolist() == [1.0]  # each waits for the device
        assert float(d.cpu()) == 1.0 and d.numpy().tolist() == [1.0]
        item = d.item  # a bound method, timed when called
        assert item() == 1.0
        try:
            torch.Tensor.item()  # the method's own error, untimed
        except TypeError:
            pass
        # is_cpu is read through the getter it was found as, until the type
        # changes: torch.Tensor's own, patched after the calls above, is heard
        torch.Tensor.is_cpu = property(lambda self: False)
        assert torch.ones(()).item() == 1.0  # "not on the CPU": timed
        del torch.Tensor.is_cpu
        assert torch.ones(()).item() == 1.0  # the CPU's again: untimed
        print("ok")
    """)
    )
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok"]
    rep = report_json(run_file)
    assert timing(rep, "to_device")["count"] == 5 + 2
    assert timing(rep, "from_device")["count"] == 5 + 1


def test_torchrun_ranks_record_reduce_metrics(run_file, tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(
        textwrap.dedent("""
        import torch, torch.distributed as dist
        dist.init_process_group("gloo")
        t = torch.ones(8)
        for _ in range(10):
            dist.all_reduce(t)
        dist.barrier()
        dist.destroy_process_group()
    """)
    )
    r = trainprof(
        "record",
        "-q",
        "-o",
        run_file,
        "--",
        VENV_BIN / "torchrun",
        "--standalone",
        "--nproc_per_node",
        "2",
        script,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    for rank in (0, 1):
        assert timing(rep, "reduce_metrics", rank)["count"] == 11  # 10 all_reduce + barrier


def test_auto_instrumentation_can_be_turned_off(run_file):
    rep = record_training(run_file, 64, 8, 8, 16, 0, 0, "fork", 1, env={"TRAINPROF_AUTO": "0"})
    assert rep["timings"] == []


def test_nothing_loads_outside_record():
    out = subprocess.run(
        [PYTHON, "-c", "import sys, torch; print('trainprof' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == "False"


def test_dataloader_workers_are_named_tracks(run_file, tmp_path):
    script = tmp_path / "workers.py"
    script.write_text(
        textwrap.dedent("""
        import torch, trainprof
        from torch.utils.data import DataLoader, Dataset
        class D(Dataset):
            def __len__(self):
                return 16
            def __getitem__(self, i):
                with trainprof.region("load_item"):
                    return torch.tensor([i])
        if __name__ == "__main__":
            for method in ("fork", "spawn"):
                for _ in DataLoader(D(), batch_size=4, num_workers=2,
                                    multiprocessing_context=method):
                    pass
    """)
    )
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    assert timing(report_json(run_file), "load_item")["count"] == 32
    trace = json.loads(trainprof("export", run_file).stdout)
    names = [
        e["args"]["name"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "process_name"
    ]
    assert sum(n.startswith("DataLoader worker 0 ") for n in names) == 2  # fork and spawn
    assert sum(n.startswith("DataLoader worker 1 ") for n in names) == 2


# Batches from a custom iterator (as nanoGPT's get_batch), two micro-batches
# of gradient accumulation per optimizer step, then a validation DataLoader.
