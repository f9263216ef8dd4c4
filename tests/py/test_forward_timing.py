"""How the forward (the outermost module call) is timed: global module hooks
find the modules called outermost, each gets a timed call of its own, and
the global hooks go, so that the other module calls keep torch's fast path.
Real training under record; what the script saw of torch's state is
written out as JSON."""

import json
import subprocess
import textwrap

from conftest import PYTHON, report_json, trainprof


def record_script(tmp_path, run_file, text, name="train.py"):
    """text as a script under record; what it printed."""
    script = tmp_path / name
    script.write_text(textwrap.dedent(text))
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


KEEPS = """
import torch
from torch import nn

class Keeps(nn.Module):
    # pickles its whole __dict__, as torchmetrics' Metric does
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)
    def forward(self, x):
        return self.lin(x)
    def __getstate__(self):
        return self.__dict__.copy()
"""

SCRIPT = (
    KEEPS
    + """
import copy, io, json, sys
from torch.nn.modules import module as mm
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
criterion = nn.CrossEntropyLoss()
keeps = Keeps()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(640, 8), torch.randint(0, 4, (640,))),
                    batch_size=8)
facts = {}
for x, y in loader:  # 80 steps, 3 outermost calls each
    opt.zero_grad()
    criterion(model(x), y).backward()
    with torch.no_grad():
        keeps(x)
    opt.step()
facts["global_hooks_after_training"] = (len(mm._global_forward_pre_hooks)
                                        + len(mm._global_forward_hooks))
facts["timed"] = [type(m._compiled_call_impl).__name__ for m in (model, criterion, keeps)]
facts["inner_not_timed"] = model[0]._compiled_call_impl is None

# another pass of the same loader looks again, briefly: a network that joins
# in its first step is found, and the hooks go again (10 steps, 2 or 3 calls)
joins = nn.Linear(8, 4)
for step, (x, y) in enumerate(loader):
    if step == 0:
        with torch.no_grad():
            joins(x)
    opt.zero_grad()
    criterion(model(x), y).backward()
    opt.step()
    if step == 9:
        break
facts["global_hooks_after_second_pass"] = (len(mm._global_forward_pre_hooks)
                                           + len(mm._global_forward_hooks))
facts["joined"] = type(joins._compiled_call_impl).__name__

# passes 3 and 4 of the loader: the third looks again, the fourth does not
# (each look puts every module call of its steps on torch's slow path)
hooks_in_pass = []
for _ in range(2):
    for step, (x, y) in enumerate(loader):
        if step == 0:
            hooks_in_pass.append(len(mm._global_forward_pre_hooks))
        opt.zero_grad()
        criterion(model(x), y).backward()  # 2 outermost calls a step
        opt.step()
        if step == 2:
            break
facts["hooks_in_passes_3_4"] = hooks_in_pass

# a network first called after the hooks went, in a new loop, and a
# submodule called on its own: both found again (5 batches)
probe = nn.Linear(8, 4)
with torch.no_grad():
    for (x,) in DataLoader(TensorDataset(torch.randn(40, 8)), batch_size=8):
        probe(x)
        model[0](x)
# a forward that raises ends all the same; the next one is timed
try:
    model(torch.randn(2, 3))
except RuntimeError:
    facts["raised"] = True
model(torch.randn(2, 8))

# what must not change for the script: copies, whole-model saves, TorchScript
facts["copy_call"] = repr(copy.deepcopy(model)._compiled_call_impl)
facts["copy_keeps_call"] = repr(copy.deepcopy(keeps)._compiled_call_impl)
torch.save({"model": model, "keeps": keeps}, sys.argv[1])
facts["scripted"] = "forward" in torch.jit.script(model).code
json.dump(facts, open(sys.argv[2], "w"))
"""
)

LOAD = (
    KEEPS
    + """
import sys
both = torch.load(sys.argv[1], weights_only=False)
x = torch.randn(2, 8)
print(both["model"](x).shape[1], both["keeps"](x).shape[1],
      both["keeps"]._compiled_call_impl, "trainprof" in sys.modules)
"""
)


def test_forward_is_timed_by_each_outermost_module_once_the_global_hooks_go(run_file, tmp_path):
    script, saved, facts_path = tmp_path / "train.py", tmp_path / "model.pt", tmp_path / "f.json"
    script.write_text(SCRIPT)
    r = trainprof(
        "record", "-q", "-o", run_file, "--", PYTHON, script, saved, facts_path, timeout=300
    )
    assert r.returncode == 0, r.stderr
    facts = json.loads(facts_path.read_text())
    # after 32 outermost calls that found nothing new, no global hook is left
    assert facts["global_hooks_after_training"] == 0
    assert facts["joined"] == "TimedCall" and facts["global_hooks_after_second_pass"] == 0
    assert facts["hooks_in_passes_3_4"] == [1, 0]
    assert facts["timed"] == ["TimedCall"] * 3 and facts["inner_not_timed"]
    assert facts["raised"]
    assert facts["copy_call"] == "None" and facts["copy_keeps_call"] == "None"
    assert facts["scripted"]

    names = {t["name"]: t for t in report_json(run_file)["timings"] if t["rank"] == -1}
    # the model's and keeps' calls: 80 x 2 in training, 10 + 1 in the second pass,
    # 2 x 3 in passes 3 and 4, 5 x 2 in the new loop, the forward that raised, the last
    assert names["forward"]["count"] == 160 + 11 + 6 + 10 + 1 + 1
    # the loss module's calls are loss, one a step: 80 + 10 + 2 x 3, inside the steps
    loss = names["loss"]
    assert loss["count"] == 80 + 10 + 6 == names["train_batch"]["count"]
    assert 0 < loss["in_steps_s"] <= loss["total_s"] < names["forward"]["total_s"]
    assert names["backward"]["count"] == 96

    # a model saved whole loads where trainprof is not imported
    load = tmp_path / "load.py"
    load.write_text(LOAD)
    out = subprocess.run([PYTHON, load, saved], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["4", "4", "None", "False"]


NESTED_COMPILE = """
import torch, warnings
from torch import nn
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
x = torch.randn(4, 8)
for _ in range(3):
    model(x)  # eager first: the model gets its timed call
compiled = torch.compile(model, backend="eager")
with warnings.catch_warnings(record=True) as seen:  # the filters as they are
    for _ in range(3):
        compiled(x)
about_hooks = [w for w in seen if "global hooks" in str(w.message)]
from torch._dynamo.utils import counters
print(counters["stats"]["unique_graphs"], sum(counters["graph_break"].values()), len(about_hooks))
"""


def test_a_model_timed_eagerly_then_compiled_makes_one_graph(run_file, tmp_path):
    out = record_script(tmp_path, run_file, NESTED_COMPILE, "compiled.py")
    # one graph, no break in it, and no warning that global hooks fire twice
    assert out.split() == ["1", "0", "0"]
    names = {t["name"]: t for t in report_json(run_file)["timings"]}
    # 3 eager; 3 compiled, each once (not for the compiled wrapper and again for
    # the model it wraps)
    assert names["forward"]["count"] == 3 + 3


HOOKED_IN_COMPILED = """
import torch
from torch import nn
from torch._dynamo.utils import counters
from trainprof.patches import forward

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
for _ in range(40):  # eager: the global hooks find the model, then go
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
gone = forward.Discovery.handles is None
# a hook of the model's own: Dynamo calls Module.__call__, and so its timed call
model.register_forward_hook(lambda module, args, output: None)
step = torch.compile(lambda x, y: nn.functional.cross_entropy(model(x), y), backend="eager")
for _ in range(3):
    step(x, y).backward()
print(type(model._compiled_call_impl).__name__, gone, counters["stats"]["unique_graphs"],
      sum(counters["graph_break"].values()))
"""


def test_a_timed_call_traced_by_dynamo_breaks_no_graph(run_file, tmp_path):
    """The timed call is C, but Dynamo inlines its Python twin (the type's
    __call__ as Python sees it) where it traces a module call with hooks:
    one graph, no break, and the compiled calls are the graph's, not timed."""
    out = record_script(tmp_path, run_file, HOOKED_IN_COMPILED, "hooked.py")
    assert out.split() == ["TimedCall", "True", "1", "0"]
    names = {t["name"]: t for t in report_json(run_file)["timings"] if t["rank"] == -1}
    assert names["forward"]["count"] == 40
    assert names["backward"]["count"] == 43


FUNCTIONAL_MODEL = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
w = torch.randn(16, 1, requires_grad=True)  # the model: a function, no module
criterion = nn.MSELoss()  # the only module the loop calls
opt = torch.optim.SGD([w], lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(640, 16), torch.randn(640, 1)), batch_size=32)
for x, y in loader:  # 20 steps
    opt.zero_grad()
    criterion(x @ w, y).backward()
    opt.step()
with torch.no_grad():  # an evaluation's loss: outside the steps
    criterion(x @ w, y)
"""


def test_a_loss_module_is_timed_as_loss_and_opens_a_functional_model_s_batch(run_file, tmp_path):
    """A loss module's outermost calls are loss, not forward; where the model
    is a function, the loss module's training call opens train_batch as a
    model's would, and the steps are found as ever."""
    record_script(tmp_path, run_file, FUNCTIONAL_MODEL, "functional.py")
    rep = report_json(run_file)
    names = {t["name"]: t for t in rep["timings"] if t["rank"] == -1}
    assert "forward" not in names
    assert rep["steps"][0]["count"] == 20 and rep["steps"][0]["samples"] == 640
    assert names["train_batch"]["count"] == names["backward"]["count"] == 20
    # the 20 training calls inside the steps, the evaluation's outside them
    assert names["loss"]["count"] == 21
    assert 0 < names["loss"]["in_steps_s"] < names["loss"]["total_s"]


CUSTOM_LOSSES = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class FocalLoss(nn.Module):  # a loss of the script's own: no parameter
    def forward(self, logits, y):
        p = nn.functional.cross_entropy(logits, y, reduction="none")
        return ((1 - torch.exp(-p)) ** 2 * p).mean()


class ModelWithLoss(nn.Module):  # named as a loss, but the model: its parameters
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.net(x), y)


data = TensorDataset(torch.randn(640, 16), torch.randint(0, 4, (640,)))
model, focal = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), FocalLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in DataLoader(data, batch_size=32):  # 20 steps
    opt.zero_grad()
    focal(model(x), y).backward()
    opt.step()
wrapped = ModelWithLoss()
opt = torch.optim.SGD(wrapped.parameters(), lr=0.01)
for x, y in DataLoader(data, batch_size=64):  # 10 more
    opt.zero_grad()
    wrapped(x, y).backward()
    opt.step()
"""


def test_a_loss_class_of_the_script_s_own_is_loss_and_a_model_with_its_loss_forward(
    run_file, tmp_path
):
    """A custom loss (a plain nn.Module named FocalLoss, no parameter) was a
    second forward a step: 40 forwards for 20 steps, its own calls in the
    model's distribution. Named as a loss and holding no parameter, it is
    loss; a ModelWithLoss holds the model's parameters and stays forward."""
    record_script(tmp_path, run_file, CUSTOM_LOSSES, "custom_loss.py")
    rep = report_json(run_file)
    names = {t["name"]: t for t in rep["timings"] if t["rank"] == -1}
    assert rep["steps"][0]["count"] == 30
    assert names["loss"]["count"] == 20  # FocalLoss's
    assert names["forward"]["count"] == 20 + 10  # the model's, then ModelWithLoss's
