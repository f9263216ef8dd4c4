"""PyTorch Lightning, unchanged scripts under record: the steps are
Lightning's global steps (with two optimizers a batch, its batches), the
epochs its epochs, and its sanity check,
validation and checkpoints are named phases outside the steps. Lightning's
own counts (trainer.global_step, a callback of the script's counting the
validation passes and the saves) are the ground truth."""

import json

import pytest
from conftest import PYTHON, needs, report_json, trainprof

needs("lightning")

SCRIPT = """
import json, sys, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as L

class Counts(L.Callback):  # the script's own count of what Lightning ran
    def __init__(self):
        self.validations = self.saves = self.batches = 0
    def on_validation_start(self, trainer, module):
        self.validations += not trainer.sanity_checking
    def on_save_checkpoint(self, trainer, module, checkpoint):
        self.saves += 1
    def on_train_batch_start(self, trainer, module, batch, i):
        self.batches += 1

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    def training_step(self, batch, i):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)

def loader(n):
    g = torch.Generator().manual_seed(n)
    return DataLoader(TensorDataset(torch.randn(n, 16, generator=g),
                                    torch.randint(0, 4, (n,), generator=g)), batch_size=8)

args = json.loads(sys.argv[1])
counts = Counts()
trainer = L.Trainer(max_epochs=2, callbacks=[counts], logger=False, enable_progress_bar=False,
                    enable_model_summary=False, default_root_dir=sys.argv[2], **args)
trainer.fit(Model(), loader(160), loader(48))
if trainer.global_rank == 0:
    print(json.dumps({"global_step": trainer.global_step, "epochs": trainer.current_epoch,
                      "validations": counts.validations, "saves": counts.saves,
                      "batches": counts.batches}))
"""


def record_lightning(tmp_path, run_file, **trainer_args):
    script = tmp_path / "lit.py"
    script.write_text(SCRIPT)
    r = trainprof(
        "record",
        "-q",
        "-o",
        run_file,
        "--",
        PYTHON,
        script,
        json.dumps(trainer_args),
        tmp_path / "out",
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1]), report_json(run_file)


def timing(rep, name, rank=-1):
    found = [t for t in rep["timings"] if t["name"] == name and t["rank"] == rank]
    return found[0] if found else None


def check_training_in_steps(rep, truth, rank=-1):
    """Steps are Lightning's global steps, 2 epochs of 80 samples each, and
    every training phase is inside the steps."""
    [steps] = [s for s in rep["steps"] if s["rank"] == rank]
    assert steps["count"] == truth["global_step"]
    epochs = [e for e in rep["epochs"] if e["rank"] == rank]
    assert [e["epoch"] for e in epochs] == [0, 1]
    assert sum(e["steps"] for e in epochs) == truth["global_step"]
    for name in ("train_batch", "backward", "optimizer_step"):
        t = timing(rep, name, rank)
        # inside the steps: the timed ones, or those a capture window took
        inside = t["in_steps_s"] + t["in_profiled_steps_s"] + t["in_warmup_steps_s"]
        assert inside == pytest.approx(t["total_s"]), name


def test_defaults_sanity_check_and_validation_are_named(tmp_path, run_file):
    truth, rep = record_lightning(tmp_path, run_file)
    assert truth["global_step"] == 40 and truth["validations"] == 2
    # what the script does, as the advice reads it: the training loader's (not
    # the sanity check's) settings, the model Lightning trains
    facts = {k: v for k, v in rep["run"]["meta"].items() if k.startswith("fact.")}
    assert facts["fact.loader.batch_size"] == "8" and facts["fact.loader.num_workers"] == "0"
    assert facts["fact.model.device"] == "cpu" and facts["fact.model.dtype"] == "float32"
    check_training_in_steps(rep, truth)
    assert [e["samples"] for e in rep["epochs"]] == [160, 160]
    assert timing(rep, "sanity_check")["count"] == 1
    evaluate = timing(rep, "evaluate")
    assert evaluate["count"] == truth["validations"] and evaluate["in_steps_s"] == 0
    assert timing(rep, "checkpoint")["count"] == truth["saves"] >= 1
    assert timing(rep, "checkpoint")["in_steps_s"] == 0
    # the validation's forwards ran, outside the steps
    forward = timing(rep, "forward")
    assert forward["count"] == truth["batches"] + 2 * 6 + 2  # 6 batches a pass, 2 sanity
    assert forward["in_steps_s"] < forward["total_s"]


def test_accumulated_batches_are_one_step(tmp_path, run_file):
    truth, rep = record_lightning(
        tmp_path, run_file, accumulate_grad_batches=2, num_sanity_val_steps=0
    )
    assert truth["global_step"] == 20 and truth["batches"] == 40
    check_training_in_steps(rep, truth)
    assert [e["samples"] for e in rep["epochs"]] == [160, 160]
    assert timing(rep, "optimizer_step")["count"] == 20
    assert timing(rep, "sanity_check") is None


def test_validation_mid_epoch_is_outside_the_steps(tmp_path, run_file):
    truth, rep = record_lightning(tmp_path, run_file, val_check_interval=0.5)
    assert truth["validations"] == 4
    check_training_in_steps(rep, truth)
    evaluate = timing(rep, "evaluate")
    assert evaluate["count"] == 4 and evaluate["in_steps_s"] == 0


def test_ddp_on_two_processes(tmp_path, run_file):
    truth, rep = record_lightning(
        tmp_path, run_file, strategy="ddp", accelerator="cpu", devices=2, num_sanity_val_steps=0
    )
    assert truth["global_step"] == 20  # each rank takes half of the 20 batches an epoch
    for rank in (0, 1):
        check_training_in_steps(rep, truth, rank)
        assert timing(rep, "reduce_metrics", rank)["count"] >= truth["global_step"]


GAN = """
import json, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as L

class GAN(L.LightningModule):  # manual optimization: two optimizers a batch
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.batches = 0
        self.G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
        self.D = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    def training_step(self, batch, i):
        (real,) = batch
        self.batches += 1
        opt_g, opt_d = self.optimizers()
        bce = nn.functional.binary_cross_entropy_with_logits
        fake = self.G(torch.randn(len(real), 8))
        d_loss = bce(self.D(real), torch.ones(len(real), 1)) + bce(
            self.D(fake.detach()), torch.zeros(len(real), 1))
        opt_d.zero_grad(); self.manual_backward(d_loss); opt_d.step()
        g_loss = bce(self.D(fake), torch.ones(len(real), 1))
        opt_g.zero_grad(); self.manual_backward(g_loss); opt_g.step()
    def configure_optimizers(self):
        return (torch.optim.Adam(self.G.parameters(), 1e-3),
                torch.optim.Adam(self.D.parameters(), 1e-3))

gan = GAN()
trainer = L.Trainer(max_epochs=2, logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False)
trainer.fit(gan, DataLoader(TensorDataset(torch.randn(160, 16)), batch_size=8))
print(json.dumps({"global_step": trainer.global_step, "batches": gan.batches}))
"""


def test_a_gan_s_two_optimizers_make_one_step_a_batch(tmp_path, run_file):
    """Manual optimization, the discriminator's and the generator's updates
    on each batch: Lightning's global_step counts both optimizers' steps
    (twice the batches); a step is the batch, as the script counts them."""
    script = tmp_path / "gan.py"
    script.write_text(GAN)
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, script, timeout=600)
    assert r.returncode == 0, r.stderr
    truth, rep = json.loads(r.stdout.splitlines()[-1]), report_json(run_file)
    assert truth == {"global_step": 80, "batches": 40}
    check_training_in_steps(rep, {"global_step": truth["batches"]})
    assert [e["samples"] for e in rep["epochs"]] == [160, 160]
    assert timing(rep, "optimizer_step")["count"] == truth["global_step"]
