"""Under record, the training runs as it would without: nothing imported that
the script does not import, and torch.compile compiles the same graphs, with
no recompilation. The oracle is the same script run without record, and
torch._dynamo's own counters."""

import json
import subprocess

from conftest import PYTHON, trainprof

MODULES = "import sys, torch; print(' '.join(sorted(sys.modules)))"


def modules(run_file=None, code=MODULES):
    cmd = [PYTHON, "-c", code]
    if run_file is None:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    else:
        r = trainprof("record", "-q", "-o", run_file, "--", *cmd, timeout=300)
        assert r.returncode == 0, r.stderr
        out = r.stdout
    return set(out.split())


def test_import_torch_loads_only_trainprof_besides(run_file):
    plain, recorded = modules(), modules(run_file)
    assert "torch._dynamo" not in recorded  # 800 modules, a second of every start-up
    assert {m for m in recorded - plain if m.split(".")[0] != "trainprof"} == set()
    assert "trainprof.torch" in recorded  # instrumented all the same
    assert plain - recorded == set()


def test_a_python_without_the_gil_is_left_without_it(tmp_path):
    """A free-threaded CPython runs without the GIL, and turns it back on to
    import an extension that does not declare it can do without, such as
    trainprof's: under record the training would run otherwise than
    without. The autoload stays out and says so in one line. No
    free-threaded CPython here: a venv whose first .pth makes
    sys._is_gil_enabled() say False, as it does there, before the
    project's site (its autoload .pth) is added; the same venv without it
    is the control."""
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    [site] = venv.glob("lib/python3.*/site-packages")
    ours = subprocess.run(
        [PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (site / "01_project.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    code = "import sys; print(sorted(m for m in sys.modules if m.startswith('trainprof')))"
    loaded = {}
    for gil in ("on", "off"):
        if gil == "off":
            (site / "00_no_gil.pth").write_text("import sys; sys._is_gil_enabled = lambda: False\n")
        run = tmp_path / f"{gil}.db"
        r = trainprof("record", "-q", "-o", run, "--", venv / "bin" / "python", "-c", code)
        assert r.returncode == 0, r.stderr
        loaded[gil] = (r.stdout.strip(), r.stderr)
    assert "'trainprof._native'" in loaded["on"][0], loaded
    assert "without the GIL" not in loaded["on"][1]
    assert loaded["off"][0] == "[]", loaded
    assert "this free-threaded Python runs without the GIL" in loaded["off"][1]
    assert "PYTHON_GIL=1 records them" in loaded["off"][1]
    text = " ".join(trainprof("report", tmp_path / "off.db").stdout.split())
    assert "A free-threaded Python running without the GIL is left without it" in text


def test_deferred_parts_apply_once_the_script_imports_them(run_file):
    """The functional collectives' timing and Dynamo's stand-ins wait for the
    script's own import of those modules, and are there once it happens."""
    code = (
        "import torch, torch._dynamo, torch.distributed._functional_collectives as f; "
        "print(hasattr(f.all_reduce, '__trainprof_wrapped__'))"
    )
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, "-c", code, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True"]


COMPILED = """
import json, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(256, 16), torch.randint(0, 4, (256,))),
                    batch_size=16)  # 48 calls: past the 32 the hooks look for
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
compiled = torch.compile(model)
step = torch.compile(lambda x: x * 2 + 1)  # a compiled function beside the module
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(3):  # each iter() looks for modules again
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(compiled(step(x)), y)
        loss.backward()
        opt.step()
from torch._dynamo.utils import counters
print(json.dumps({"recompiles": sum(counters["recompiles"].values()),
                  "graphs": counters["stats"]["unique_graphs"],
                  "frames": counters["frames"]["total"]}))
"""


def bare_and_recorded(script, run_file):
    """What the script printed run bare (the oracle) and under record,
    each asserted to have succeeded."""
    plain = subprocess.run([PYTHON, script], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=300)
    assert r.returncode == 0, r.stderr
    return plain.stdout, r.stdout


def test_torch_compile_compiles_as_without_record(run_file, tmp_path):
    script = tmp_path / "compiled.py"
    script.write_text(COMPILED)
    plain, recorded = bare_and_recorded(script, run_file)
    expected, got = json.loads(plain), json.loads(recorded.splitlines()[-1])
    assert got == expected and got["recompiles"] == 0, (got, expected)
    rep = json.loads(trainprof("report", "--json", run_file).stdout)
    # ... with record's scheduled capture window over compiled steps (Inductor's
    # kernels under torch.profiler): test_ops.py's window test compiles with
    # aot_eager, the same Dynamo guards without the C++ compiler's 15 CPU-seconds
    [window] = rep["windows"]
    assert window["first_step"] == 11 and window["steps"] == 5 and not window["skipped"], window
    [forward] = [t for t in rep["timings"] if t["name"] == "forward"]
    assert forward["count"] == 3 * 16  # the compiled module's calls are still timed
    # the first step compiled: a warm-up step, counted apart from the figures
    steps = rep["steps"][0]
    assert steps["count"] == 3 * 16 and steps["warmup_steps"] >= 1
    assert steps["timed_steps"] + steps["warmup_steps"] + steps["profiled_steps"] == 3 * 16
    # Dynamo's compilations, named: the module's and the function's, and the
    # compiled backward's
    [compiled] = [t for t in rep["timings"] if t["name"] == "compile"]
    assert compiled["count"] >= got["frames"]


# next() on a DataLoader's iterator inside a compiled function: Dynamo breaks
# the graph there, as it does without record (torch's __next__ is on its skip
# list, trainprof's is C); Dynamo's frame counter also counts its checks of
# trainprof's Python frames met in the break, once each, so it is left out
NEXT_INSIDE = """
import json, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch._dynamo.utils import counters
torch.manual_seed(0)
model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
it = iter(DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,))), batch_size=8))
@torch.compile(backend="eager")
def loss_of_next():
    x, y = next(it)
    return nn.functional.cross_entropy(model(x), y)
for i in range(6):
    opt.zero_grad(); loss_of_next().backward(); opt.step()
print(json.dumps({"recompiles": sum(counters["recompiles"].values()),
                  "graphs": counters["stats"]["unique_graphs"],
                  "breaks": sum(counters["graph_break"].values())}))
"""


def test_next_inside_compiled_code_breaks_the_graph_as_without_record(run_file, tmp_path):
    script = tmp_path / "next_inside.py"
    script.write_text(NEXT_INSIDE)
    plain, recorded = bare_and_recorded(script, run_file)
    expected, got = json.loads(plain), json.loads(recorded.splitlines()[-1])
    assert got == expected and got["recompiles"] == 0 and got["breaks"] == 1, (got, expected)
    rep = json.loads(trainprof("report", "--json", run_file).stdout)
    # the fetches, made in the break, still mark the steps and the pass
    assert rep["steps"][0]["count"] == 6 and rep["steps"][0]["samples"] == 48
    assert [(e["epoch"], e["steps"]) for e in rep["epochs"]] == [(0, 6)]


LET_GO = """
import gc, json, multiprocessing, weakref
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

def train():
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    loader = DataLoader(data, batch_size=16, num_workers=1, persistent_workers=True)
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    return [weakref.ref(o) for o in (loader, model, opt)]

if __name__ == "__main__":
    gone = train()
    freed = [r() is None for r in gone]
    workers = len(multiprocessing.active_children())
    gc.collect()
    print(json.dumps({"freed": freed, "workers": workers, "after_gc": gone[0]() is None}))
"""


def test_a_loader_the_script_lets_go_of_is_freed_as_without_record(run_file, tmp_path):
    """A DataLoader with persistent workers, its model and its optimizer,
    which the script no longer holds, are freed at once, and the workers
    shut down by the loader, under record as without. trainprof held the
    training loader: its workers lived until the interpreter's exit, where
    multiprocessing ended them by SIGTERM (on CPython 3.14, whose workers
    come from a fork server, the report then said a worker was killed)."""
    script = tmp_path / "let_go.py"
    script.write_text(LET_GO)
    plain, recorded = bare_and_recorded(script, run_file)
    expected = {"freed": [True, True, True], "workers": 0, "after_gc": True}
    assert json.loads(plain) == expected  # the oracle: torch's own shutdown
    assert json.loads(recorded.split("\n")[-2]) == expected
