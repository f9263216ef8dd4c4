"""record --log-to (issue 60): trainprof's figures by step, its answer and
its html page in the trackers people already look at, checked through each
tracker's own reader: MLflow's client on a local SQLite store, TensorBoard's
event reader, and W&B's offline run files (read record by record as W&B
writes them, each a protobuf Record of W&B's own). Each tracker's library
is the real one (tools/bootstrap.sh installs them); a training logs into
the run it opened, or trainprof opens one named after the command."""

import glob
import json
import os
import struct
import subprocess

import pytest
from conftest import PROGRAM, PYTHON, lazily, needs, report_json, trainprof

mlflow = lazily("mlflow")
needs("wandb", "tensorboard")

# A small training on the CPU (128 steps of a DataLoader), opening a run
# where OPEN names the tracker's way: mlflow, wandb, tensorboard or none.
TRAIN = """
import os, sys, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
open_with = os.environ.get("OPEN", "none")
if open_with == "mlflow":
    import mlflow
    mlflow.set_tracking_uri(os.environ["URI"])
    run = mlflow.start_run(run_name="the-script")
    print("RUN", run.info.run_id)
elif open_with == "wandb":
    import wandb
    run = wandb.init(project="demo", dir=os.environ["WANDB_DIR"])
    print("RUN", run.id)
elif open_with == "tensorboard":
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter(log_dir=os.environ["TB_DIR"])
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = TensorDataset(torch.randn(2048, 32), torch.randint(0, 2, (2048,)))
for step, (x, y) in enumerate(DataLoader(data, batch_size=16)):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
if open_with == "mlflow":
    mlflow.end_run()
elif open_with == "wandb":
    run.finish()
elif open_with == "tensorboard":
    writer.close()
print("trained")
sys.exit(int(os.environ.get("EXIT", "0")))
"""


def record(tmp_path, log_to, env=None, expect=0, quiet=False):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    run = tmp_path / "run.db"
    r = trainprof(
        "record",
        *(["-q"] if quiet else []),
        "--log-to",
        log_to,
        "-o",
        run,
        "--",
        PYTHON,
        script,
        env={"WANDB_SILENT": "true", "WANDB_MODE": "offline", **(env or {})},
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == expect, r.stderr
    assert "trained" in r.stdout  # the script's output stays its own
    return run, r


def leading_verdict(run):
    """The report's first verdict's kind, "none" where no rule fired (a
    loaded machine can leave this small training without one)."""
    verdicts = report_json(run)["verdicts"]
    return verdicts[0]["kind"] if verdicts else "none"


def steps_per_s(run):
    return report_json(run)["steps"][0]["steps_per_s"]


def test_mlflow_gets_the_figures_in_the_scripts_own_run(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    run, r = record(tmp_path, "mlflow", {"OPEN": "mlflow", "URI": uri})
    run_id = r.stdout.split("RUN ")[1].split()[0]
    assert f"trainprof: logged to MLflow run {run_id}\n" in r.stderr
    client = mlflow.tracking.MlflowClient(uri)
    got = client.get_run(run_id)
    assert got.info.run_name == "the-script"
    history = client.get_metric_history(run_id, "trainprof/steps_per_s")
    assert len(history) >= 100 and history[0].step == 1
    assert [h.step for h in history] == sorted(h.step for h in history)
    assert got.data.metrics["trainprof/run_steps_per_s"] == pytest.approx(steps_per_s(run))
    assert "trainprof/train_batch_s" in got.data.metrics
    assert "trainprof/dataloader_next_s" in got.data.metrics
    assert got.data.tags["trainprof.verdict"] == leading_verdict(run)
    assert "steps/s" in got.data.tags["trainprof.answer"]
    assert [a.path for a in client.list_artifacts(run_id, "trainprof")] == [
        "trainprof/trainprof-report.html"
    ]


def test_mlflow_gets_a_run_of_its_own_where_the_script_opened_none(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    run, r = record(tmp_path, "mlflow", {"MLFLOW_TRACKING_URI": uri})
    client = mlflow.tracking.MlflowClient(uri)
    (got,) = client.search_runs(["0"])
    assert got.info.run_name == "trainprof-train.py" and got.info.status == "FINISHED"
    assert got.data.metrics["trainprof/run_steps_per_s"] == pytest.approx(steps_per_s(run))
    assert "(opened by trainprof)" in r.stderr


def test_tensorboard_gets_the_figures_in_the_scripts_folder(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    folder = tmp_path / "tb"
    env = {"OPEN": "tensorboard", "TB_DIR": str(folder)}
    run, r = record(tmp_path, "tensorboard", env, quiet=True)
    assert r.stderr == "", r.stderr  # -q: where it logged goes unsaid
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    rates = events.Scalars("trainprof/steps_per_s")
    assert len(rates) >= 100 and rates[0].step == 1
    (overall,) = events.Scalars("trainprof/run_steps_per_s")
    assert overall.value == pytest.approx(steps_per_s(run), rel=1e-6)  # float32
    assert "trainprof/answer/text_summary" in events.Tags()["tensors"]
    assert (folder / "trainprof-report.html").read_text().startswith("<!DOCTYPE html>")


def test_tensorboard_gets_a_folder_of_its_own(tmp_path):
    run, r = record(tmp_path, "tensorboard")
    (folder,) = glob.glob(str(tmp_path / "runs" / "trainprof-train.py-*"))
    assert glob.glob(os.path.join(folder, "events.out.tfevents.*"))
    assert f"trainprof: logged to TensorBoard folder runs/{os.path.basename(folder)}" in r.stderr


def wandb_records(path):
    """The protobuf Records of a W&B run file (a .wandb: its 7-byte header,
    then LevelDB's log format: 32 KiB blocks of chunks, each a CRC, a length,
    a type; a record in one chunk or in first/middle/last ones), parsed by
    W&B's own wandb_internal_pb2."""
    from wandb.proto import wandb_internal_pb2

    data = open(path, "rb").read()
    assert data[:4] == b":W&B"
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        room = 32768 - pos % 32768
        if room < 7:
            pos += room
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def key(item):
    """An item's key as W&B writes it: key, or its nested_key's parts."""
    return item.key or ".".join(item.nested_key)


def test_wandb_gets_the_figures_in_the_scripts_run_offline(tmp_path):
    folder = tmp_path / "wb"
    folder.mkdir()
    run, r = record(tmp_path, "wandb", {"OPEN": "wandb", "WANDB_DIR": str(folder)})
    run_id = r.stdout.split("RUN ")[1].split()[0]
    assert f"trainprof: logged to W&B run {run_id}\n" in r.stderr
    files = sorted(glob.glob(str(folder / "wandb" / f"offline-run-*-{run_id}" / "*.wandb")))
    assert len(files) == 2  # the script's, then trainprof's (wandb sync joins them by id)
    history, summary, artifacts = [], {}, []
    for record_ in wandb_records(files[1]):
        kind = record_.WhichOneof("record_type")
        if kind == "history":
            history.append({key(i): json.loads(i.value_json) for i in record_.history.item})
        elif kind == "summary":
            summary.update({key(i): json.loads(i.value_json) for i in record_.summary.update})
        elif kind == "artifact":
            artifacts.append(record_.artifact.type)
        elif kind == "run":
            assert record_.run.run_id == run_id and record_.run.project == "demo"
    steps = [h["trainprof/step"] for h in history if "trainprof/step" in h]
    assert len(steps) >= 100 and steps == sorted(steps) and steps[0] == 1
    assert "trainprof/steps_per_s" in history[0]
    assert summary["trainprof/run_steps_per_s"] == pytest.approx(steps_per_s(run))
    assert summary["trainprof/verdict"] == leading_verdict(run)
    assert "trainprof-report" in artifacts


def test_a_tracker_that_fails_is_one_line_and_the_others_go_on(tmp_path):
    """MLflow at a store it cannot open (under a file): one warning;
    TensorBoard still logged; the command's exit status and output its own."""
    (tmp_path / "a-file").write_text("")
    run, r = record(
        tmp_path,
        "mlflow,tensorboard",
        {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/a-file/mlflow.db", "EXIT": "3"},
        expect=3,
    )
    warnings = [x for x in r.stderr.splitlines() if x.startswith("trainprof: warning: --log-to")]
    assert len(warnings) == 1 and warnings[0].startswith(
        "trainprof: warning: --log-to mlflow failed ("
    ), r.stderr
    assert "trainprof: logged to TensorBoard folder" in r.stderr


def test_a_tracker_whose_library_is_missing_is_said(tmp_path):
    """The helper where `import wandb` fails: one line naming the Python."""
    missing = tmp_path / "missing" / "wandb"
    missing.mkdir(parents=True)
    (missing / "__init__.py").write_text("raise ImportError('no wandb in this Python')\n")
    run = tmp_path / "run.db"
    assert trainprof("record", "-q", "-o", run, "--", "true").returncode == 0
    r = subprocess.run(
        [PYTHON, "-m", "trainprof.trackers", "--log-to", "wandb", "--trainprof", PROGRAM, run],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "missing")},
        timeout=120,
    )
    assert r.returncode == 0
    assert r.stderr.startswith(
        "trainprof: warning: --log-to wandb: its library is not installed here ("
    ), r.stderr
    assert r.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "value, words",
    [
        ("mlfow", "'mlfow' is not a tracker trainprof knows (mlflow, wandb and tensorboard are)"),
        ("wandb,wandb", "'wandb' is named twice"),
        ("", "--log-to names no tracker"),
        ("mlflow,", "'' is not a tracker trainprof knows"),
    ],
)
def test_a_bad_tracker_list_is_refused_before_the_command_runs(tmp_path, value, words):
    marker = tmp_path / "ran"
    r = trainprof("record", "--log-to", value, "-o", tmp_path / "r.db", "--", "touch", marker)
    assert r.returncode == 2 and not marker.exists()
    assert r.stderr.count("\n") == 1 and words in r.stderr, r.stderr


def test_the_help_names_the_trackers():
    text = trainprof("record", "--help").stdout
    assert "--log-to LIST" in text and "mlflow, wandb, tensorboard" in text


LIGHTNING = """
import os, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as L
from lightning.pytorch.loggers import MLFlowLogger

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

data = TensorDataset(torch.randn(1024, 32), torch.randint(0, 2, (1024,)))
logger = MLFlowLogger(experiment_name="lightning", tracking_uri=os.environ["URI"])
trainer = L.Trainer(max_epochs=1, logger=logger, enable_progress_bar=False,
                    enable_checkpointing=False, enable_model_summary=False)
trainer.fit(Model(), DataLoader(data, batch_size=16))
print("RUN", logger.run_id)
"""


def test_lightning_s_mlflow_logger_run_gets_the_figures(tmp_path):
    """Lightning's MLFlowLogger opens its run with MlflowClient.create_run:
    trainprof's figures go into that run, beside its own loss."""
    pytest.importorskip("lightning")
    script = tmp_path / "lit.py"
    script.write_text(LIGHTNING)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    run = tmp_path / "run.db"
    r = trainprof(
        "record",
        "--log-to",
        "mlflow",
        "-o",
        run,
        "--",
        PYTHON,
        script,
        env={"URI": uri},
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.split("RUN ")[1].split()[0]
    assert f"trainprof: logged to MLflow run {run_id}\n" in r.stderr
    got = mlflow.tracking.MlflowClient(uri).get_run(run_id)
    assert "loss" in got.data.metrics  # Lightning's own
    assert got.data.metrics["trainprof/run_steps_per_s"] == pytest.approx(steps_per_s(run))
    client = mlflow.tracking.MlflowClient(uri)
    assert len(client.get_metric_history(run_id, "trainprof/steps_per_s")) >= 50
