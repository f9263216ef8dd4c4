"""PyTorch auto-instrumentation: unmodified training scripts under record."""

import json
import socket
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


@pytest.mark.parametrize("workers, method", [(2, "fork"), (4, "fork"), (2, "spawn"), (4, "spawn")])
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
        assert x.sum().item() == 4.0  # CPU tensor: not a device-to-host copy
    """)
    )
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    assert timing(rep, "to_device")["count"] == 5
    assert timing(rep, "from_device") is None


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
criterion = nn.CrossEntropyLoss()  # a module called outermost too
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
    assert timing(rep, "forward")["count"] == 2 * 60 + 10
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
