"""`trainprof compare`: scalability across runs of different world sizes."""

import json

from conftest import FAKE_NVML, trainprof
from test_html import chromium
from test_timings import EMIT


def test_two_world_sizes(tmp_path):
    one, two = tmp_path / "w1.db", tmp_path / "w2.db"
    gpus = {"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"}
    assert trainprof("record", "-q", "--interval", "0.05", "-o", one, "--", EMIT, "slow_epochs",
                     env=gpus).returncode == 0
    both = (f"RANK=0 WORLD_SIZE=2 {EMIT} slow_epochs & RANK=1 WORLD_SIZE=2 {EMIT} slow_epochs &"
            " wait")
    assert trainprof("record", "-q", "--interval", "0.05", "-o", two, "--", "sh", "-c", both,
                     env=gpus).returncode == 0
    r = trainprof("compare", "--json", two, one)
    assert r.returncode == 0, r.stderr
    runs = {run["world_size"]: run for run in json.loads(r.stdout)["runs"]}
    assert set(runs) == {1, 2}
    assert runs[1]["speedup"] == 1.0 and runs[1]["efficiency"] == 1.0
    # two ranks do twice the samples in the same time: speed-up 2, efficiency 1
    assert 1.8 < runs[2]["speedup"] < 2.2
    assert 0.9 < runs[2]["efficiency"] < 1.1
    assert 0.5 < runs[1]["epoch_s"] < 0.8
    for run in runs.values():
        assert 610 * 0.45 < run["energy_per_epoch_j"] < 610 * 0.8
        assert run["energy_per_sample_j"] > 0
    # twice the samples on the same GPUs: half the energy per sample
    assert runs[2]["energy_per_sample_j"] < 0.6 * runs[1]["energy_per_sample_j"]
    text = trainprof("compare", one, two).stdout
    assert "speed-up" in text and any(x in text for x in ("1.99x", "2.00x", "2.01x"))
    page = tmp_path / "scaling.html"
    r = trainprof("html", "--compare", two, one, "-o", page)
    assert r.returncode == 0, r.stderr
    r = chromium("--dump-dom", page.as_uri())
    assert r.returncode == 0 and ":CONSOLE(" not in r.stderr
    dom = r.stdout
    assert dom.count("<svg") == 4
    for title in ("Samples per second", "Scaling efficiency", "Time per epoch",
                  "Energy per sample"):
        assert title in dom, title
    # bars in world-size order, labelled by world size and file
    assert dom.index("1 (w1.db)") < dom.index("2 (w2.db)")
    assert "<td>2</td>" in dom and "2.0" in dom
    r = trainprof("html", "--compare", "--all", one, two, "-o", tmp_path / "x.html")
    assert r.returncode == 2 and "--all is for one run's page" in r.stderr
    assert not (tmp_path / "x.html").exists()
    r = trainprof("html", "--compare", one, two)
    assert r.returncode == 2 and "-o FILE" in r.stderr


def test_bad_input(tmp_path):
    r = trainprof("compare", tmp_path / "only.db")
    assert r.returncode == 2 and "two or more run files" in r.stderr
    r = trainprof("compare", tmp_path / "a.db", tmp_path / "b.db")
    assert r.returncode == 2 and "no such file" in r.stderr
