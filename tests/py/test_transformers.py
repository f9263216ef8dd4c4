"""Hugging Face's Trainer, an unchanged script under record (a 2-layer BERT
made from its config: nothing downloaded): the steps are the Trainer's
global steps, with gradient accumulation, evaluations every few steps,
checkpoints and DataLoader workers. The Trainer's own counts (its
state.global_step, a callback of the script's counting evaluations and
saves) are the ground truth."""

import json

import pytest
from conftest import PYTHON, batches_per_step, needs, report_json, trainprof

needs("transformers", "accelerate")

SCRIPT = """
import json, sys, torch
from torch.utils.data import Dataset
from transformers import (BertConfig, BertForSequenceClassification, Trainer, TrainerCallback,
                          TrainingArguments)

class Data(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(n)
        self.ids = torch.randint(0, 100, (n, 16), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)
    def __len__(self):
        return len(self.labels)
    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}

class Counts(TrainerCallback):  # the script's own count of what the Trainer ran
    evaluations = saves = 0
    def on_evaluate(self, args, state, control, **kwargs):
        Counts.evaluations += 1
    def on_save(self, args, state, control, **kwargs):
        Counts.saves += 1

if __name__ == "__main__":  # workers from a fork server (3.14+) import the script
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
    args = TrainingArguments(output_dir=sys.argv[1], per_device_train_batch_size=8,
                             gradient_accumulation_steps=4, num_train_epochs=2, eval_strategy="steps",
                             eval_steps=5, save_steps=10, dataloader_num_workers=2, report_to=[],
                             use_cpu=True, logging_steps=1000, disable_tqdm=True)
    trainer = Trainer(model=BertForSequenceClassification(config), args=args, train_dataset=Data(320),
                      eval_dataset=Data(64), callbacks=[Counts()])
    trainer.train()
    print(json.dumps({"global_step": trainer.state.global_step, "evaluations": Counts.evaluations,
                      "saves": Counts.saves}))
"""


def timing(rep, name):
    found = [t for t in rep["timings"] if t["name"] == name and t["rank"] == -1]
    return found[0] if found else None


def test_trainer_with_accumulation_evaluations_and_checkpoints(tmp_path, run_file):
    script = tmp_path / "hf.py"
    script.write_text(SCRIPT)
    r = trainprof(
        "record", "-q", "-o", run_file, "--", PYTHON, script, tmp_path / "out", timeout=600
    )
    assert r.returncode == 0, r.stderr
    truth = json.loads(r.stdout.splitlines()[-1])
    rep = report_json(run_file)
    assert truth["global_step"] == 20 and truth["evaluations"] >= 3 and truth["saves"] >= 1
    assert rep["steps"][0]["count"] == truth["global_step"]
    assert [(e["steps"], e["samples"]) for e in rep["epochs"]] == [(10, 320), (10, 320)]
    # each step its four micro-batches, though Accelerate's loader fetches one ahead
    assert batches_per_step(run_file) == [[8, 8, 8, 8]] * 20
    # what the script does, as the advice reads it: the Trainer's model and loader
    meta = rep["run"]["meta"]
    assert meta["fact.model.device"] == "cpu" and meta["fact.model.dtype"] == "float32"
    assert meta["fact.loader.num_workers"] == "2" and meta["fact.model.compiled"] == "0"
    for name in ("backward", "optimizer_step"):
        t = timing(rep, name)
        # inside the steps: the timed ones, or those a capture window took
        inside = t["in_steps_s"] + t["in_profiled_steps_s"] + t["in_warmup_steps_s"]
        assert inside == pytest.approx(t["total_s"]), name
    # the Trainer's saves and evaluations are named, outside the steps
    checkpoint, evaluate = timing(rep, "checkpoint"), timing(rep, "evaluate")
    assert checkpoint["count"] == truth["saves"] and checkpoint["in_steps_s"] == 0
    assert evaluate["count"] == truth["evaluations"] and evaluate["in_steps_s"] == 0
    forward = timing(rep, "forward")  # the evaluations' forwards among them
    assert forward["in_steps_s"] < forward["total_s"]
