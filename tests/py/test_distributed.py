"""Data-parallel training under one record: DDP and FSDP on gloo, ranks side by side,
launched by torchrun or as a batch scheduler launches them (conftest.launch_ranks)."""

import shutil
import socket
import sqlite3
import textwrap

import pytest
from conftest import (
    PYTHON,
    OthersCpu,
    assert_same_report,
    in_short,
    launch_ranks,
    meta,
    report_from_rows,
    report_json,
    trainprof,
    words,
)

# torchrun of the interpreter the tests run under (and so of its torch)
TORCHRUN = (PYTHON, "-m", "torch.distributed.run")

# Unchanged DDP training; SLOW_RANK's Dataset sleeps per sample, USER_HOOK
# registers the script's own communication hook (=late: after a first forward,
# as DDP allows; =builtin: DDP's C++ FP16_COMPRESS), KILL_RANK dies at step 20.
# Each rank writes its parameters' checksum and its hook's call count.
DDP = """
import os, signal, sys, time, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

class Data(Dataset):
    def __init__(self, slow):
        g = torch.Generator().manual_seed(1)
        self.x, self.y = torch.randn(256, 32, generator=g), torch.randint(0, 4, (256,), generator=g)
        self.slow = slow
    def __len__(self):
        return 256
    def __getitem__(self, i):
        if self.slow:
            time.sleep(0.002)
        return self.x[i], self.y[i]

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4)))
calls = [0]
hook = os.environ.get("USER_HOOK")
def counting_hook(state, bucket):
    calls[0] += 1
    return default_hooks.allreduce_hook(state, bucket)
if hook == "late":
    model(torch.zeros(1, 32))
if hook in ("1", "late"):
    model.register_comm_hook(None, counting_hook)
elif hook == "builtin":
    model._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
# each rank its own shard: different gradients, which only the all-reduce evens out
data = Data(rank == int(os.environ.get("SLOW_RANK", "-1")))
data.x = data.x + rank
loader = DataLoader(data, batch_size=8)
for step, (x, y) in enumerate(loader):
    if step == 20 and rank == int(os.environ.get("KILL_RANK", "-1")):
        os.kill(os.getpid(), signal.SIGKILL)
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
total = sum(float(p.double().sum()) for p in model.parameters())
with open(os.path.join(sys.argv[1], f"rank{rank}"), "w") as f:
    f.write(f"{total!r} {calls[0]}")
dist.destroy_process_group()
# PyTorch's gloo backend now and then aborts while the interpreter tears down
# ("terminate called without an active exception": 5 of 30 runs of this
# script without trainprof, torch 2.13 CPU, after destroy_process_group had
# returned): torch 2.13's backward keeps a contextvars.Context in its thread
# state, which each all-reduce's work copies, and gloo's thread, dropping a
# work after the interpreter began finalizing, asks for the GIL and is ended
# (a core dump's stack: ~AsyncWork, ~ThreadLocalState, take_gil,
# pthread_exit); all the tests look at is written by now
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""


def ranks_of(ranks, *argv, torchrun=False):
    """The command that starts `ranks` ranks of the script argv: through torchrun
    where asked, else as a batch scheduler does (conftest.launch_ranks)."""
    if torchrun:
        return (*TORCHRUN, "--standalone", "--nproc_per_node", str(ranks), *argv)
    return launch_ranks(ranks, PYTHON, *argv)


def run_ddp(tmp_path, run_file, ranks, record_args=(), torchrun=False, **env):
    script = tmp_path / "ddp.py"
    script.write_text(textwrap.dedent(DDP))
    out = tmp_path / "out"
    out.mkdir()
    r = trainprof(
        "record",
        "-q",
        "-o",
        run_file,
        *record_args,
        "--",
        *ranks_of(ranks, script, out, torchrun=torchrun),
        env=env,
        timeout=300,
    )
    results = {}
    for f in out.iterdir():
        checksum, calls = f.read_text().split()
        results[int(f.name[4:])] = (float(checksum), int(calls))
    return r, results


STEP_WAIT = "step_thread_cpu_wait_percent"


def reduce_counts(rep):
    return {t["rank"]: t["count"] for t in rep["timings"] if t["name"] == "reduce_metrics"}


@pytest.mark.machine  # judges the share of each step the all-reduce takes
def test_ddp_on_gloo_waiting_in_backward_is_exposed_communication(tmp_path, run_file):
    """gloo's all-reduce runs on a thread of its own while backward waits for
    it: that wait is no compute. The model's one bucket is launched when its
    gradients are all ready, so none of its all-reduce can hide behind
    compute, and it is most of each step here."""
    with OthersCpu() as load:
        r, results = run_ddp(tmp_path, run_file, 2, torchrun=True)
    assert r.returncode == 0 and len(results) == 2, r.stderr
    rep = report_json(run_file)
    totals = {(t["rank"], t["name"]): t["total_s"] for t in rep["timings"]}
    for row in rep["ranks"]["per_rank"]:
        # what a miss needs to be read: the rank's phases and the machine's load
        said = (
            row,
            {
                name: totals.get((row["rank"], name))
                for name in ("train_batch", "backward", "reduce_metrics")
            },
            load.cpus,
        )
        assert row["comm_overlap_s"] <= 0.1 * row["comm_s"], said
        assert row["comm_s"] - row["comm_overlap_s"] >= 0.25 * row["window_s"], said
    # exposed communication fires communication_bound, unless the loaded machine
    # made one rank a straggler (whose verdict then comes first, by the rule)
    kinds = [v["kind"] for v in rep["verdicts"]]
    assert "communication_bound" in kinds or "straggler" in kinds, kinds
    if "communication_bound" in kinds:
        short = in_short(trainprof("report", run_file).stdout)
        # beside other processes that held the CPUs (the training waited
        # for them half its time beside two burners), they lead
        led = ("[communication_bound]", "[straggler]") + (
            ("[cpu_contention]",) if load.busy else ()
        )
        assert any(x in short for x in led), (load.cpus, short)


def test_four_ranks_straggler_named_with_its_cause(tmp_path, run_file):
    # sampled every 0.1 s: each rank steps for about a second
    r, results = run_ddp(tmp_path, run_file, 4, ("-i", "0.1"), SLOW_RANK="2")
    assert r.returncode == 0, r.stderr
    # DDP still averages gradients with trainprof's hook in place: same weights everywhere
    assert len(results) == 4
    assert len({checksum for checksum, _ in results.values()}) == 1
    rep = report_json(run_file)
    # DDP's own gradient all-reduce (no collective in the script): one bucket per step
    assert reduce_counts(rep) == {0: 32, 1: 32, 2: 32, 3: 32}
    # the loop's own count: 32 batches of 8 on every rank, one update each
    assert {s["rank"]: (s["count"], s["samples"]) for s in rep["steps"]} == {
        r: (32, 256) for r in range(4)
    }
    ranks = rep["ranks"]["per_rank"]
    assert [x["rank"] for x in ranks] == [0, 1, 2, 3]
    # each rank's step thread's wait for a CPU, read by the recorder: one
    # series per rank process (torchrun's launcher marks no steps)
    with sqlite3.connect(run_file) as db:
        rank_pids = {str(p) for (p,) in db.execute("SELECT pid FROM thread WHERE rank >= 0")}
    waits = [m for a in rep["agents"] for m in a["metrics"] if m["name"] == STEP_WAIT]
    assert len(rank_pids) == 4 and {m["labels"]["pid"] for m in waits} == rank_pids, waits
    assert all(0 <= m["in_steps"]["mean"] <= 100 for m in waits), waits
    # and each rank's over its own window, beside its parts
    assert all(0 <= x["cpu_wait_percent"] <= 100 for x in ranks), ranks
    for x in ranks:
        parts = x["input_s"] + x["compute_s"] + x["comm_s"] + x["other_s"]
        assert abs(parts - x["window_s"]) < 1e-6 * x["window_s"] + 1e-9
        assert 0 <= x["comm_overlap_s"] <= x["comm_s"]
    slow = ranks[2]
    figures = [(x["rank"], x["straggler"], round(x["excess"], 3), x["cause"]) for x in ranks]
    assert slow["straggler"] and "input" in slow["cause"], figures
    assert slow["input_s"] > 5 * max(x["input_s"] for x in ranks if x["rank"] != 2)
    # the others' own work within a fraction of the median (rank 2's: 6 to 7
    # times it); beside other work, a rank the scheduler shortchanged may
    # also pass the straggler's 10 %, truly, but far behind rank 2
    assert all(x["excess"] < slow["excess"] / 5 for x in ranks if x["rank"] != 2), figures
    # the others wait for it: their communication is longer than the straggler's
    # (twice as long on a quiet machine, 1.6 times beside other work)
    assert min(x["comm_s"] for x in ranks if x["rank"] != 2) > 1.25 * slow["comm_s"]
    kinds = [(v["kind"], v["evidence"].get("rank")) for v in rep["verdicts"]]
    assert ("straggler", 2) in kinds
    assert not any(k == "compute_bound" for k, _ in kinds)  # waiting is not computing
    # the summary the recorder stored gives the very figures the rows give
    assert_same_report(rep, report_from_rows(run_file, tmp_path))
    text = trainprof("report", run_file).stdout
    assert "Rank 2 is a straggler" in text and "Ranks, per step" in text
    page = tmp_path / "run.html"
    assert trainprof("html", run_file, "-o", page).returncode == 0
    html = page.read_text()
    assert "parts by interval union" in html and "rank 2 (slow)" in html


# Unchanged DDP training whose pace changes at step SLOW_FROM: from then on
# every rank's Dataset takes 5 ms a sample (40 ms a batch, no workers), and
# rank 1 computes 20 ms more a step (CPU time, its own thread's): data moved
# to a slow store, and a straggler appeared.
PACE_CHANGE = """
import os, sys, time, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
SLOW_FROM = int(os.environ["SLOW_FROM"])
class Data(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(1)
        self.x, self.y = torch.randn(8 * 240, 32, generator=g), torch.randint(0, 4, (8 * 240,), generator=g)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        if i // 8 >= SLOW_FROM:
            time.sleep(0.005)
        return self.x[i], self.y[i]
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step, (x, y) in enumerate(DataLoader(Data(), batch_size=8)):
    opt.zero_grad()
    out = model(x)
    if rank == 1 and step >= SLOW_FROM:
        end = time.thread_time() + 0.02
        while time.thread_time() < end:
            pass
    nn.functional.cross_entropy(out, y).backward()
    opt.step()
    time.sleep(0.015)
dist.destroy_process_group()
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # gloo's teardown now and then aborts (DDP above)
"""


def test_a_pace_that_changed_across_ranks_is_judged_on_the_steps_since(tmp_path, run_file):
    script = tmp_path / "pace.py"
    script.write_text(textwrap.dedent(PACE_CHANGE))
    r = trainprof(
        "record", "-q", "-o", run_file, "--",
        *ranks_of(2, script), env={"SLOW_FROM": "160"}, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    latest = rep["ranks"]["latest"]
    # the first rank's pace changed where the data and rank 1 slowed (its
    # 161st step), and the ranks were compared over the steps since
    # (beside other work the slow steps' pace may change again, with the
    # load: the latest pace then begins later, still within the slow steps)
    assert latest and 158 <= latest["first_step"] <= 220, rep["regimes"]
    since_step = latest["first_step"]
    assert latest["last_step"] == 240
    whole = {x["rank"]: x for x in rep["ranks"]["per_rank"]}
    since = {x["rank"]: x for x in latest["per_rank"]}
    assert abs(since[1]["steps"] - (241 - since_step)) <= 2 and since[1]["straggler"], since
    # over the steps since, rank 1 computes 20 ms more than rank 0 a step;
    # over the whole run a third of that, diluted by the even steps before
    # (excess, against the median of two ranks, is bounded by 1: its own
    # work per step tells)
    more = {
        k: t[1]["compute_s"] / t[1]["steps"] - t[0]["compute_s"] / t[0]["steps"]
        for k, t in (("whole", whole), ("since", since))
    }
    assert more["since"] > 0.015 and more["since"] > 2 * more["whole"], more
    verdicts = {(v["kind"], v["evidence"].get("rank")): v["evidence"] for v in rep["verdicts"]}
    assert verdicts[("straggler", 1)]["since_step"] == since_step, verdicts
    # every rank waits for its data since then: each rank's step verdicts
    # judge its own split over those steps, not the whole run's average
    for rank in (0, 1):
        judged = verdicts[("input_bound", rank)]
        whole_share = next(
            t["share"]
            for t in rep["timings"]
            if t["rank"] == rank and t["name"] == "dataloader_next"
        )
        assert judged["since_step"] == since_step, judged
        assert judged["dataloader_next_share"] > whole_share + 0.05, (judged, whole_share)
        assert 0.035 < judged["dataloader_next_mean_s"] < 0.1, judged  # 40 ms and its wrappers
    # the summary the recorder stored gives the very figures the rows give
    assert_same_report(rep, report_from_rows(run_file, tmp_path))
    # why the first rank's pace changed: it waits for its data, and for rank 1
    [cause] = [c for c in rep["regimes"]["regimes"][-1]["causes"] if c["kind"] == "straggler"]
    assert cause["rank"] == 1 and cause["part"] == "compute", cause
    assert cause["after"] > 3 * cause["before"] and cause["after"] > cause["median_after"], cause
    short = in_short(trainprof("report", run_file).stdout)
    became = "rank 1 became a straggler, whom the others wait for"
    if len(rep["regimes"]["regimes"]) == 2:  # else the short answer tells the biggest change
        assert became in short, short
    assert f"since step {since_step}, a step: communication" in short, short
    text = words(trainprof("report", run_file).stdout)
    assert became in text, text  # under Changes of pace: every change's causes
    assert f"Since step {since_step}, rank 1 is a straggler" in text, text
    assert f"Judged on steps {since_step}-240, its latest pace" in text, text
    assert f"since step {since_step}, rank 1 is input-bound" in text, text
    out = tmp_path / "parquet"  # and the Parquet export carries the table over the latest pace
    env = {"TRAINPROF_PYTHON": PYTHON}
    assert trainprof("export", "--format", "parquet", "-o", out, run_file, env=env).returncode == 0
    pads = pytest.importorskip("pyarrow.dataset")
    rows = pads.dataset(out / "summary_rank_latest").to_table().to_pylist()
    assert sorted((x["rank"], x["first_step"], x["last_step"]) for x in rows) == [
        (0, since_step, 240),
        (1, since_step, 240),
    ]
    page = tmp_path / "run.html"  # the page draws the ranks over both spans
    assert trainprof("html", run_file, "-o", page).returncode == 0
    assert f"interval union; steps {since_step}-240, the latest pace" in page.read_text()
    # a file's stored rows are not trusted: a rank without a step is left out
    # (its figures are divided by its steps); one rank left compares nothing,
    # and the whole run's straggler is named
    hostile = tmp_path / "hostile.db"
    shutil.copyfile(run_file, hostile)
    with sqlite3.connect(hostile) as db:
        db.execute("UPDATE summary_rank_latest SET steps = 0 WHERE rank = 1")
    rep = report_json(hostile)
    assert rep["ranks"]["latest"] is None
    kinds = [
        (v["kind"], v["evidence"].get("rank"), v["evidence"].get("since_step"))
        for v in rep["verdicts"]
    ]
    assert ("straggler", 1, None) in kinds, kinds


@pytest.mark.parametrize("when", ["1", "late"])
def test_scripts_own_comm_hook_is_kept_and_timed(tmp_path, run_file, when):
    """trainprof's timed hook is registered when the DDP is made; the
    script's own, registered after (after a first forward too, which DDP
    allows: registering at the first forward made DDP raise then), runs in
    its place, timed."""
    r, results = run_ddp(tmp_path, run_file, 2, USER_HOOK=when)
    assert r.returncode == 0, r.stderr
    assert {calls for _, calls in results.values()} == {32}  # the script's hook ran every step
    assert len({checksum for checksum, _ in results.values()}) == 1
    rep = report_json(run_file)
    assert reduce_counts(rep) == {0: 32, 1: 32}
    assert meta(run_file, "fact.ddp.hook") == "timed"
    # each rank's stacks, sampled in its own process, carry its rank and phases
    phases = {(g["rank"], g["phase"]) for g in rep["stacks"]}
    assert {rank for rank, _ in phases} >= {0, 1}
    assert any(p in ("train_batch", "forward", "backward") for rank, p in phases if rank == 1)


def test_builtin_comm_hook_runs_as_its_python_equivalent_timed(tmp_path, run_file):
    """DDP's C++ FP16_COMPRESS, registered after trainprof's hook, runs as
    default_hooks.fp16_compress_hook inside it: the script doesn't fail, the
    ranks agree, and the all-reduce is timed."""
    r, results = run_ddp(tmp_path, run_file, 2, USER_HOOK="builtin")
    assert r.returncode == 0, r.stderr
    assert len({checksum for checksum, _ in results.values()}) == 1
    assert reduce_counts(report_json(run_file)) == {0: 32, 1: 32}
    assert "not in reduce_metrics" not in trainprof("report", run_file).stdout
    # where DDP had to be left alone (its Python reducer), the report says so
    with sqlite3.connect(run_file) as db:
        db.execute("UPDATE meta SET value = 'left' WHERE key = 'fact.ddp.hook'")
    assert (
        "DDP's gradient all-reduce is not in reduce_metrics: DDP ran its Python reducer"
        in trainprof("report", run_file).stdout
    )


def test_ddp_hook_can_be_turned_off(tmp_path, run_file):
    r, results = run_ddp(tmp_path, run_file, 2, TRAINPROF_DDP_HOOK="0")
    assert r.returncode == 0, r.stderr
    assert len({checksum for checksum, _ in results.values()}) == 1
    rep = report_json(run_file)
    assert reduce_counts(rep) == {}
    assert len(rep["ranks"]["per_rank"]) == 2


def test_rank_killed_mid_run_keeps_what_every_rank_did(tmp_path, run_file):
    r, results = run_ddp(tmp_path, run_file, 2, torchrun=True, KILL_RANK="1")
    assert r.returncode != 0
    assert results == {}  # no rank finished
    rep = report_json(run_file)
    assert rep["run"]["exit_status"] == r.returncode
    # the killed rank's last events were still in its ring: drained after its death
    fetches = {t["rank"]: t["count"] for t in rep["timings"] if t["name"] == "dataloader_next"}
    assert fetches[1] == 21
    assert fetches[0] >= 21
    assert {x["rank"]: x["steps"] for x in rep["ranks"]["per_rank"]}[1] == 20


# FSDP2 (fully_shard) on gloo; the script counts the communication calls that
# pass through torch.distributed (FSDP's all-gathers and reduce-scatters, and
# its own async all-reduce, which on rank 0 completes once rank 1 joins it,
# RANK1_LATE seconds later).
FSDP = """
import os, sys, time, torch, torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

calls = [0]
def counted(fn):
    def wrapper(*args, **kwargs):
        calls[0] += 1
        return fn(*args, **kwargs)
    return wrapper
for name in ("all_gather_single", "reduce_scatter_single", "all_gather_into_tensor",
             "reduce_scatter_tensor", "all_reduce"):
    setattr(dist, name, counted(getattr(dist, name)))

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
fully_shard(model[0])
fully_shard(model[2])
fully_shard(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(rank)
x, y = torch.randn(80, 32, generator=g), torch.randint(0, 4, (80,), generator=g)
for i in range(10):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x[i * 8:(i + 1) * 8]), y[i * 8:(i + 1) * 8]).backward()
    opt.step()
if rank == 1:
    time.sleep(RANK1_LATE)
work = dist.all_reduce(torch.ones(4), async_op=True)
work.wait()
with open(os.path.join(sys.argv[1], f"rank{rank}"), "w") as f:
    f.write(str(calls[0]))
dist.destroy_process_group()
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # see DDP above
"""


@pytest.mark.machine  # judges timings: the last all-reduce's length on each rank
def test_fsdp_collectives_and_async_work_timed_to_completion(tmp_path, run_file):
    """FSDP2's all-gathers and reduce-scatters are reduce_metrics, each call
    once; an async all-reduce lasts until its work completes, not until its
    launch returned."""
    late = 0.5
    script = tmp_path / "fsdp.py"
    script.write_text(FSDP.replace("RANK1_LATE", str(late)))
    out = tmp_path / "out"
    out.mkdir()
    r = trainprof(
        "record",
        "-q",
        "-o",
        run_file,
        "--",
        *ranks_of(2, script, out),
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    calls = {int(f.name[4:]): int(f.read_text()) for f in out.iterdir()}
    assert calls[0] == calls[1] and calls[0] >= 10 * 4  # all-gathers, reduce-scatters a step
    rep = report_json(run_file)
    assert reduce_counts(rep) == calls
    # no DataLoader: the loop's 10 updates of 8 samples are the steps on each rank
    assert {s["rank"]: (s["count"], s["samples"]) for s in rep["steps"]} == {
        0: (10, 80),
        1: (10, 80),
    }
    # the async all-reduce after rank 1's sleep is each rank's last: rank 0's
    # lasts until rank 1 joins it, rank 1's completes at once (an earlier
    # collective of rank 1 may wait for a rank 0 the machine kept from a CPU)
    with sqlite3.connect(run_file) as db:
        last = {
            rank: duration
            for rank, _start, duration in db.execute(
                "SELECT rank, start_ns, duration_ns FROM regions"
                " WHERE name = 'reduce_metrics' ORDER BY rank, start_ns"
            )
        }
    assert last[0] >= 0.8 * late * 1e9
    assert last[1] < 0.5 * late * 1e9


# torch.multiprocessing.spawn: the children's environment names no rank
# (Lightning's launcher sets LOCAL_RANK only, as the script does when told)
SPAWN = """
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

def train(index, world, port):
    # "reversed": the ranks run against the processes' order, as where a
    # script numbers its ranks its own way; the local rank is still the index
    rank = world - 1 - index if sys.argv[2] == "reversed" else index
    if sys.argv[2] == "local":
        os.environ["LOCAL_RANK"] = str(rank)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(128, 32) + rank, torch.randint(0, 4, (128,)))
    for x, y in DataLoader(data, batch_size=8):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # see DDP above

if __name__ == "__main__":
    mp.spawn(train, args=(2, int(sys.argv[1])), nprocs=2)
"""


@pytest.mark.parametrize("local", ["local", "reversed"])
def test_ranks_from_torch_distributed_when_the_environment_has_none(tmp_path, run_file, local):
    """mp.spawn's processes learn their rank from init_process_group, not the
    environment: each is still its own rank, its threads before that included;
    with no LOCAL_RANK either (plain mp.spawn), each one's local rank is its
    index in the spawn, recorded with its rank. The ranks are numbered
    against the processes' order there (a spawn numbered in its order, as
    plain mp.spawn is, would not tell the index from the rank)."""
    script = tmp_path / "spawn.py"
    script.write_text(SPAWN)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {name: "" for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    r = trainprof(
        "record", "-q", "-o", run_file, "--", PYTHON, script, str(port), local, env=env, timeout=300
    )
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    assert reduce_counts(rep) == {0: 16, 1: 16}
    fetches = {t["rank"]: t["count"] for t in rep["timings"] if t["name"] == "dataloader_next"}
    assert fetches == {0: 17, 1: 17}  # the 17th ends the pass
    per_rank = rep["ranks"]["per_rank"]
    expected = [(0, 1, 16), (1, 0, 16)] if local == "reversed" else [(0, 0, 16), (1, 1, 16)]
    assert [(x["rank"], x["local_rank"], x["steps"]) for x in per_rank] == expected
    with sqlite3.connect(run_file) as db:  # recorded so, not guessed by the analysis
        recorded = set(db.execute("SELECT DISTINCT rank, local_rank FROM thread WHERE rank >= 0"))
    assert recorded == {(r, lr) for r, lr, _ in expected}


# Tensor parallelism through DTensor, and a functional collective of its own,
# on gloo: the collectives return at once and wait where their result is
# first used.
FUNCTIONAL = """
import os, sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp
import trainprof
from torch import nn

def train(rank, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    dist.barrier()  # the imports (torch._dynamo among them) take each rank its own time
    if rank == 1:
        time.sleep(0.5)
    with trainprof.region("late"):  # rank 0 waits there for rank 1's all_reduce
        summed = funcol.all_reduce(torch.ones(4), "sum", dist.group.WORLD)
        assert summed.tolist() == [2.0] * 4
    mesh = init_device_mesh("cpu", (2,))
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
    parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    with CommDebugMode() as comm:  # torch's own count of one step's collectives
        model(torch.randn(8, 16)).sum().backward()
    with trainprof.region("tp"):
        for _ in range(5):
            model(torch.randn(8, 16)).sum().backward()
    if rank == 0:
        print("per_step", comm.get_total_counts())
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # see DDP above: gloo's teardown aborts now and then (it did here, once)

if __name__ == "__main__":
    mp.spawn(train, args=(sys.argv[1],), nprocs=2)
"""


def test_functional_collectives_timed_until_their_result_is_waited(tmp_path, run_file):
    script = tmp_path / "functional.py"
    script.write_text(FUNCTIONAL)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, str(port), timeout=300)
    assert r.returncode == 0, r.stderr
    per_step = int(r.stdout.split()[-1])
    assert per_step >= 1
    db = sqlite3.connect(run_file)
    spans = {}
    for outer in ("late", "tp"):
        spans[outer] = db.execute(
            "SELECT t.rank, (r.end_ns - r.start_ns) / 1e9 FROM region r"
            " JOIN thread t ON t.id = r.thread_id JOIN name n ON n.id = r.name_id"
            " WHERE n.text = 'reduce_metrics' AND EXISTS (SELECT 1 FROM region o"
            "  JOIN name m ON m.id = o.name_id JOIN thread u ON u.id = o.thread_id"
            "  WHERE m.text = ? AND u.rank = t.rank"
            "  AND r.start_ns >= o.start_ns AND r.end_ns <= o.end_ns)",
            (outer,),
        ).fetchall()
    # rank 0's all_reduce lasts until rank 1 joins it, 0.5 s later
    late = dict(spans["late"])
    assert sorted(late) == [0, 1] and late[0] >= 0.4 and late[1] < 0.2
    # every collective of the 5 tensor-parallel steps, on each rank
    assert sorted(rank for rank, _ in spans["tp"]) == [0] * 5 * per_step + [1] * 5 * per_step


# DDP the way pytorch/examples and most tutorials shard data: a
# DistributedSampler with set_epoch, and gradient accumulation over 2
# micro-batches whose first skips the all-reduce (no_sync).
DDP_ACCUMULATION = """
import os, sys, contextlib, torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
data = TensorDataset(torch.randn(256, 32), torch.randint(0, 4, (256,)))
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=8, sampler=sampler)
model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
updates = 0
for epoch in range(2):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        sync = i % 2 == 1
        with contextlib.nullcontext() if sync else model.no_sync():
            (nn.functional.cross_entropy(model(x), y) / 2).backward()
        if sync:
            opt.step()
            opt.zero_grad()
            updates += 1
with open(os.path.join(sys.argv[1], f"rank{rank}"), "w") as f:
    f.write(str(updates))
dist.destroy_process_group()
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # as DDP above: gloo's teardown aborts now and then
"""


def test_distributed_sampler_with_accumulation_counts_updates(tmp_path, run_file):
    script = tmp_path / "ddp_acc.py"
    script.write_text(DDP_ACCUMULATION)
    out = tmp_path / "out"
    out.mkdir()
    r = trainprof(
        "record",
        "-q",
        "-o",
        run_file,
        "--",
        *ranks_of(2, script, out),
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    updates = {int(f.name[4:]): int(f.read_text()) for f in out.iterdir()}
    assert updates == {0: 16, 1: 16}  # 128 samples a rank and epoch, 16 batches, 8 updates
    rep = report_json(run_file)
    assert {s["rank"]: (s["count"], s["samples"], s["batches_per_step"]) for s in rep["steps"]} == {
        r: (16, 256, 2) for r in range(2)
    }
    assert {(e["rank"], e["epoch"]): (e["steps"], e["samples"]) for e in rep["epochs"]} == {
        (r, e): (8, 128) for r in range(2) for e in range(2)
    }
    # the all-reduce runs once an update: the no_sync micro-batch skips it
    assert reduce_counts(rep) == {0: 16, 1: 16}
