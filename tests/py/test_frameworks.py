"""Keras 3 (on torch, on JAX, and on TensorFlow where it is installed), PyTorch
Ignite and skorch, and a sequence-first language model: real programs
(tests/py/programs/) run unchanged under record, each framework's own
counts the ground truth for the steps, epochs, samples, and the evaluations
and checkpoints named outside the steps."""

import importlib.util
import json
import pathlib

import pytest
from conftest import PYTHON, report_json, trainprof

PROGRAMS = pathlib.Path(__file__).parent / "programs"


def needs(*packages):
    """Skips where a package is not installed (found, not imported: Keras's
    import needs a backend chosen first)."""
    for package in packages:
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")


def record(run_file, program, *args, env=None):
    r = trainprof(
        "record",
        "-q",
        "-o",
        run_file,
        "--",
        PYTHON,
        PROGRAMS / program,
        *args,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "trainprof: warning" not in r.stderr, r.stderr
    return json.loads(r.stdout.splitlines()[-1]), report_json(run_file)


def timing(rep, name):
    found = [t for t in rep["timings"] if t["name"] == name and t["rank"] == -1]
    return found[0] if found else None


def the_steps(rep):
    [steps] = [s for s in rep["steps"] if s["rank"] == -1]
    return steps


def check_keras(rep, truth, batch=32, samples=2048):
    """192 batches of 32 over 3 epochs, as Keras counted them; validation
    each epoch, an evaluate and a predict: evaluate pauses; the
    ModelCheckpoint's saves: checkpoint pauses; none inside the steps."""
    assert truth["iterations"] == truth["train_batches"] == 192 and truth["epochs"] == 3
    steps = the_steps(rep)
    assert steps["count"] == truth["iterations"]
    assert steps["samples"] == truth["iterations"] * batch
    epochs = [e for e in rep["epochs"] if e["rank"] == -1]
    assert [e["epoch"] for e in epochs] == [0, 1, 2]
    assert [e["steps"] for e in epochs] == [64, 64, 64]
    assert [e["samples"] for e in epochs] == [samples] * 3
    evaluate = timing(rep, "evaluate")
    assert evaluate["count"] == truth["tests"] + 1  # 3 validations, evaluate; predict
    assert evaluate["in_steps_s"] == 0
    checkpoint = timing(rep, "checkpoint")
    assert checkpoint["count"] == truth["epochs"] and checkpoint["in_steps_s"] == 0
    assert rep["run"]["meta"]["fact.framework"] == "keras"


@pytest.mark.parametrize("data", ["arrays", "pydataset"])
def test_keras_on_torch_steps_epochs_pauses_and_phases(tmp_path, run_file, data):
    """Arrays (Keras's adapter knows the batch size), or a PyDataset (the
    samples counted from the batches it yields)."""
    needs("keras")
    truth, rep = record(run_file, "keras_fit.py", tmp_path, data, env={"KERAS_BACKEND": "torch"})
    check_keras(rep, truth)
    assert rep["run"]["meta"]["fact.framework.backend"] == "torch"
    # the phases, as PyTorch's: forward, backward, and Keras's optimizer's
    # apply, once a step each, inside the train_batch that ends with the batch
    for name in ("backward", "optimizer_step"):
        t = timing(rep, name)
        assert t["count"] == truth["iterations"], name
        inside = t["in_steps_s"] + t["in_profiled_steps_s"] + t["in_warmup_steps_s"]
        assert inside == pytest.approx(t["total_s"]), name
    # one more train_batch: Keras builds the model with a training call before the steps
    assert timing(rep, "train_batch")["count"] == truth["iterations"] + 1
    assert timing(rep, "dataloader_next")["count"] >= truth["iterations"]
    text = trainprof("report", run_file).stdout
    assert "not seen" not in text


@pytest.mark.parametrize(
    "backend, package, data, name",
    [
        ("jax", "jax", "pydataset", "JAX"),  # samples counted from what the iterator yields
        ("tensorflow", "tensorflow", "arrays", "TensorFlow"),  # from the data adapter
    ],
)
def test_keras_on_other_backends_steps_epochs_and_what_is_not_seen(
    tmp_path, run_file, backend, package, data, name
):
    """JAX's CPU wheel is installed by the bootstrap; TensorFlow's (600 MB)
    is not, and its case runs where it is installed."""
    needs("keras", package)
    truth, rep = record(run_file, "keras_fit.py", tmp_path, data, env={"KERAS_BACKEND": backend})
    assert truth["torch_imported"] is False  # nothing imported that the script would not
    check_keras(rep, truth)
    assert rep["run"]["meta"]["fact.framework.backend"] == backend
    assert {t["name"] for t in rep["timings"]} == {"evaluate", "checkpoint"}
    text = trainprof("report", run_file).stdout
    assert (
        f"Keras ran its train step on the {name} backend, which trainprof does not look inside"
    ) in " ".join(text.split())


@pytest.mark.parametrize("backend, package", [("torch", "torch"), ("jax", "jax")])
def test_keras_keeps_its_asynchronous_callbacks(run_file, backend, package):
    """Keras dispatches batch-end callbacks on another thread while none has
    a batch-end hook: trainprof's callback has none, so the training runs as
    it would without record (Keras's own choice, read by the script)."""
    needs("keras", package)
    env = {"KERAS_BACKEND": backend}
    truth, rep = record(run_file, "keras_async.py", env=env)
    assert truth["async_train"] is True
    assert the_steps(rep)["count"] == truth["iterations"] == 32


@pytest.mark.parametrize(
    "variant, updates_per_epoch, batches_per_step",
    [
        ({}, 50, 1),
        ({"accumulate": 2}, 25, 2),  # a step: two iterations, one update
        ({"list_data": True}, 50, 1),  # no DataLoader: the epochs from the Engine
        ({"eval_first": True}, 50, 1),  # an evaluator's run before the trainer's
    ],
)
def test_ignite_steps_epochs_and_evaluators(run_file, variant, updates_per_epoch, batches_per_step):
    pytest.importorskip("ignite")
    truth, rep = record(run_file, "ignite_fit.py", json.dumps(variant))
    assert truth["iterations"] == 150 and truth["epochs"] == 3
    steps = the_steps(rep)
    assert steps["count"] == truth["updates"] == 3 * updates_per_epoch
    assert steps["samples"] == 3 * 800 and steps["batches"] == truth["iterations"]
    assert steps["batches"] / steps["count"] == batches_per_step
    epochs = [e for e in rep["epochs"] if e["rank"] == -1]
    assert [(e["epoch"], e["steps"], e["samples"]) for e in epochs] == [
        (n, updates_per_epoch, 800) for n in range(3)
    ]
    evaluate = timing(rep, "evaluate")  # each evaluator's run, nested or not
    assert evaluate["count"] == truth["evals"] and evaluate["in_steps_s"] == 0
    # the model, then its loss module, on each iteration's batch and on each
    # evaluation's 13 (its Loss metric): a forward a batch, and a loss
    calls = truth["iterations"] + 13 * truth["evals"]
    assert timing(rep, "forward")["count"] == timing(rep, "loss")["count"] == calls
    assert rep["run"]["meta"]["fact.framework"] == "ignite"


def test_skorch_steps_epochs_and_its_validation(run_file):
    pytest.importorskip("skorch")
    truth, rep = record(run_file, "skorch_fit.py")
    assert truth["epochs"] == 3 and truth["train_batches"] == 75
    steps = the_steps(rep)
    assert steps["count"] == truth["train_batches"]
    assert steps["samples"] == 3 * 800  # its internal split keeps 800 of the 1000
    epochs = [e for e in rep["epochs"] if e["rank"] == -1]
    assert [(e["steps"], e["samples"]) for e in epochs] == [(25, 800)] * 3
    evaluate = timing(rep, "evaluate")  # a validation each epoch, and predict
    assert evaluate["count"] == truth["epochs"] + 1 and evaluate["in_steps_s"] == 0
    assert timing(rep, "forward")["in_steps_s"] < timing(rep, "forward")["total_s"]
    # its criterion on each training and validation batch is loss, not forward;
    # predict's 100 samples are 4 batches of the model alone
    batches = truth["train_batches"] + truth["valid_batches"]
    assert timing(rep, "loss")["count"] == batches
    assert timing(rep, "forward")["count"] == batches + 4
    assert rep["run"]["meta"]["fact.framework"] == "skorch"


@pytest.mark.parametrize("variant", ["seq_first", "batch_first"])
def test_sequence_first_batches_count_their_sequences(run_file, variant):
    """word_language_model's batches are (35 tokens, 20 sequences), the last
    one shorter: 20 samples a step, read from the LSTM's batch dimension; the
    same model made batch_first, fed (20, 35), counts its first dimension."""
    truth, rep = record(run_file, "word_lm.py", variant)
    steps = the_steps(rep)
    assert steps["count"] == truth["batches"]
    assert steps["samples"] == truth["batches"] * truth["batch_size"]


def test_frameworks_are_imported_only_by_the_script(run_file):
    """Under record, a script that imports numpy alone gets no torch, no
    Keras, Ignite, skorch or JAX: the adapters wait for the script's import."""
    code = "import sys, numpy; print(' '.join(sorted(sys.modules)))"
    r = trainprof("record", "-q", "-o", run_file, "--", PYTHON, "-c", code, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = {m.split(".")[0] for m in r.stdout.split()}
    assert loaded & {"torch", "keras", "ignite", "skorch", "jax", "lightning"} == set()
