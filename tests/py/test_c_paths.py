"""The hot paths in C (a module's timed call, the optimizer step's hooks,
the training DataLoader's fetches, Tensor.backward:
python/trainprof/_timed_call.c, _step_hooks.c, _loader_next.c,
_timed_backward.c) record what their Python twins record: the
same training, recorded once as it runs and once with every C path stepped
aside (trainprof._native._twins_only), gives the same steps, epochs,
samples and regions."""

import json
import textwrap

from conftest import PYTHON, report_json, trainprof

TRAINING = """
import sys
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import trainprof._native

if sys.argv[1] == "twins":
    trainprof._native._twins_only(True)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
criterion = nn.CrossEntropyLoss()
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
if sys.argv[2] == "no_loader":  # the model's calls count the samples, the updates mark the steps
    for _ in range(40):  # the global hooks look for 16, then the C paths take over
        opt.zero_grad()
        criterion(model(torch.randn(7, 8)), torch.randint(0, 3, (7,))).backward()
        opt.step()
    sys.exit(0)
train = DataLoader(TensorDataset(torch.randn(150, 8), torch.randint(0, 3, (150,))),
                   batch_size=16)  # 10 batches a pass, the last of 6
held_out = DataLoader(TensorDataset(torch.randn(40, 8), torch.randint(0, 3, (40,))),
                      batch_size=20)
for epoch in range(3):
    model.train()
    for x, y in train:
        opt.zero_grad()
        criterion(model(x), y).backward()
        opt.step()
    model.eval()
    with torch.no_grad():  # an evaluation pass: another loader, no gradients
        for x, y in held_out:
            criterion(model(x), y)
# a pass of a closure's optimizer: the closure's calls are timed apart
lbfgs = torch.optim.LBFGS(model.parameters(), max_iter=3)
model.train()
for x, y in train:
    def closure():
        lbfgs.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        return loss
    lbfgs.step(closure)
"""


def recorded(tmp_path, how, part):
    """What the report says of TRAINING's part ("loader", "no_loader")
    recorded with the C paths (how "c") or their twins only ("twins")."""
    script, run_file = tmp_path / "train.py", tmp_path / f"{how}-{part}.db"
    script.write_text(textwrap.dedent(TRAINING))
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, how, part, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    steps = rep["steps"][0]
    return {
        "steps": (steps["count"], steps["samples"]),
        "epochs": [(e["epoch"], e["batches"], e["samples"], e["steps"]) for e in rep["epochs"]],
        "regions": {t["name"]: t["count"] for t in rep["timings"] if t["rank"] == -1},
    }


def test_the_c_paths_record_what_their_twins_record(tmp_path):
    c, twins = recorded(tmp_path, "c", "loader"), recorded(tmp_path, "twins", "loader")
    assert c == twins
    # the training's own counts: 3 passes of 10 batches (150 samples), then
    # one of LBFGS, whose steps each call their closure 3 times; an
    # evaluation of 2 batches after each of the first 3
    assert c["steps"] == (4 * 10, 4 * 150)
    assert c["epochs"] == [(0, 10, 150, 10), (1, 10, 150, 10), (2, 10, 150, 10), (3, 10, 150, 10)]
    calls = 3 * 10 + 3 * 2 + 10 * 3  # the model's: training, evaluation, closures
    assert c["regions"] == {
        "forward": calls,
        "loss": calls,
        "backward": 3 * 10 + 10 * 3,
        "optimizer_step": 3 * 10 + 10 * 3,  # a closure's step: timed after each call
        "train_batch": 4 * 10,
        "dataloader_next": 3 * (10 + 1) + 3 * (2 + 1) + (10 + 1),  # batches, and each end
        "evaluate": 3,
    }


def test_the_c_paths_count_a_loop_without_a_loader_as_their_twins_do(tmp_path):
    c, twins = recorded(tmp_path, "c", "no_loader"), recorded(tmp_path, "twins", "no_loader")
    assert c == twins
    assert c["steps"] == (40, 40 * 7) and c["epochs"] == []
    assert c["regions"] == {
        "forward": 40,
        "loss": 40,
        "backward": 40,
        "optimizer_step": 40,
        "train_batch": 40,
    }


DEVICE_ENDS = """
import collections, json, sys
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import trainprof._native
from trainprof.patches.common import ThreadState, per_thread

if sys.argv[1] == "twins":
    trainprof._native._twins_only(True)


class Times:  # stands for a thread's DeviceTimes: counts the ends it is told of
    open = True
    ends = collections.Counter()

    def end(self, region):
        self.ends[region.name] += 1


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = DataLoader(TensorDataset(torch.randn(400, 8), torch.randint(0, 3, (400,))), batch_size=8)
for i, (x, y) in enumerate(data):  # 50 steps; device times told from step 40
    if i == 40:
        per_thread(ThreadState).device_times = Times()
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print(json.dumps(Times.ends, sort_keys=True))
"""


def test_the_c_paths_end_device_times_as_their_twins_do(tmp_path):
    """Where a thread has device times (a CUDA training), each region the C
    paths end is told to them (patches.device.device_end), as the twins do:
    the model's forward, backward, optimizer_step and train_batch, once a
    step from step 40 (train_batch's last at the next fetch, the pass's end)."""
    script = tmp_path / "ends.py"
    script.write_text(textwrap.dedent(DEVICE_ENDS))
    told = []
    for how in ("c", "twins"):
        r = trainprof("record", "-q", "-o", tmp_path / f"{how}.db", "--", PYTHON, script, how)
        assert r.returncode == 0, r.stderr
        told.append(r.stdout.splitlines()[-1])
    assert told[0] == told[1]
    ends = {"backward": 10, "forward": 10, "optimizer_step": 10, "train_batch": 10}
    assert told[0] == json.dumps(ends, sort_keys=True)


STEADY = """
import collections, json, sys
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import trainprof._native
from trainprof.patches.common import loop, tracker
from trainprof.runtime import device_memory
from trainprof.steps.loop_state import Loop
from trainprof.steps.step_optimizer import StepOptimizer
from trainprof.steps.tracker import StepTracker

if sys.argv[1] == "twins":
    trainprof._native._twins_only(True)
calls = collections.Counter()  # the tracker's events that ran its Python


def counted(name, event):
    def counted_event(self, *args):
        calls[name] += 1
        return event(self, *args)

    return counted_event


for name in ("fetch", "fetched", "forward", "backward", "optimizer_begins", "update"):
    setattr(StepTracker, name, counted(name, getattr(StepTracker, name)))
readings = []


def after_step():  # stands for a CUDA model's memory reading, at each step mark
    readings.append(1)


def state():
    # the tracker's and the loop's every slot, a time as "t"
    def plain(v):
        if isinstance(v, list):
            return [plain(e) for e in v]
        if isinstance(v, int) and not isinstance(v, bool) and v > 10**6:
            return "t"
        return repr(v) if v is None or isinstance(v, int) else type(v).__name__

    t = tracker()
    slots = [(n, getattr(t, n)) for n in StepTracker.__slots__ if n not in ("sink", "loop", "switches")]
    slots += [(n, getattr(loop, n)) for n in Loop.__slots__ if n not in ("main_loader", "fetcher")]
    stepping = loop.step_optimizer  # where the updates mark the steps
    if stepping is not None:
        slots += [(n, getattr(stepping, n)) for n in StepOptimizer.__slots__ if n not in ("ref", "other")]
        slots += [("ref", stepping.ref() is opt), ("other", stepping.other)]
    return [(n, plain(v)) for n, v in slots] + [loop.fetcher is t, loop.main_loader is None]


device_memory.after_step = after_step
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
criterion = nn.CrossEntropyLoss()  # a module: the model's and its forward a step
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = DataLoader(TensorDataset(torch.randn(160, 8), torch.randint(0, 3, (160,))), batch_size=8)
if sys.argv[2] == "kept":  # no DataLoader: the optimizer's updates mark the steps
    data = [(torch.randn(8, 8), torch.randint(0, 3, (8,)))] * 20
states = []
for epoch in range(2):  # 20 steps a pass
    for i, (x, y) in enumerate(data):
        if epoch == 1 and i == 5:  # from the 6th batch's work to the 16th's fetch
            calls.clear()
            device_memory.on = True
        if epoch == 1 and i == 15:
            device_memory.on = False
            window = [dict(calls), len(readings)]
        states.append(state())
        opt.zero_grad()
        criterion(model(x), y).backward()
        opt.step()
        states.append(state())
    states.append(state())
print(json.dumps(states))
print(json.dumps(window, sort_keys=True))
"""


def steady(tmp_path, batches):
    """STEADY recorded with the C paths and with their twins, its batches
    through a DataLoader ("loader") or kept ("kept"): for each, the
    tracker's events that ran its Python in the window and the memory
    readings, the tracker's states, and the steps and samples reported."""
    script = tmp_path / "steady.py"
    script.write_text(textwrap.dedent(STEADY))
    seen, states, steps = {}, {}, {}
    for how in ("c", "twins"):
        run_file = tmp_path / f"{how}-{batches}.db"
        r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, how, batches)
        assert r.returncode == 0, r.stderr
        *_, states[how], seen[how] = r.stdout.splitlines()
        s = report_json(run_file)["steps"][0]
        steps[how] = (s["count"], s["samples"])
    return seen, states, steps


def test_a_pass_s_steady_steps_tell_the_tracker_in_c(tmp_path):
    """Mid-pass, the C paths tell the step tracker of each event without a
    Python call (_tracker_events.c), where the twins call it seven times a
    step, and leave it as the twins do: every slot of the tracker and the
    loop the same after each fetch and each update, the same step marks,
    each followed by the GPU memory reading where one is due (marks.step's)."""
    seen, states, steps = steady(tmp_path, "loader")
    # 10 batches' work (the 6th to the 15th) and 10 fetches (the 7th to the 16th)
    events = {"fetch": 10, "fetched": 10, "forward": 20, "backward": 10, "update": 10}
    assert json.loads(seen["twins"]) == [dict(events, optimizer_begins=10), 10]
    assert json.loads(seen["c"]) == [{}, 10]
    assert len(json.loads(states["c"])) == 2 * (2 * 20 + 1)
    assert states["c"] == states["twins"]
    assert steps["c"] == steps["twins"] == (40, 320)


def test_steps_the_updates_mark_tell_the_tracker_in_c(tmp_path):
    """Where no DataLoader feeds the training (nanoGPT's get_batch(), data
    kept on the GPU), the optimizer's updates end the steps and the next
    training work opens the next: the C paths do both, and leave the
    tracker, the loop and the step optimizer as the twins do, the step
    marks (each step's opened 1 ns after the last update) and memory
    readings the same."""
    seen, states, steps = steady(tmp_path, "kept")
    # 10 steps' work (the 6th to the 15th): each opened by its model's forward
    events = {"forward": 20, "backward": 10, "optimizer_begins": 10, "update": 10}
    assert json.loads(seen["twins"]) == [events, 10]
    assert json.loads(seen["c"]) == [{}, 10]
    kept = json.loads(states["c"])
    assert len(kept) == 2 * (2 * 20 + 1)
    assert ["ref", "True"] in kept[-1] and ["open_pending", "t"] in kept[-1]
    assert states["c"] == states["twins"]
    assert steps["c"] == steps["twins"] == (40, 320)
