"""A user's own regions (trainprof.region with a name of no standard
phase) inside a phase and between the phases: a stack sample carries only
the innermost region, yet what ran in "augment" inside train_batch is
train_batch's time too, and what ran in "logging" between the phases is the
step's time outside them ("other"). The report, the verdict's citation, the
JSON and the summary that stores what each ran inside say so (the regime
causes: test_pace.py)."""

import os
import textwrap

from conftest import PYTHON, assert_same_report, report_from_rows, report_json, trainprof

AUGMENTING = textwrap.dedent("""
    import sys, time, trainprof

    def flip_images(n):            # the user's augmentation, inside train_batch
        x = 0
        for i in range(n):
            x += i * i
        return x

    def model_step(n):             # train_batch's own work
        s = 0.0
        for i in range(n):
            s += (i % 7) * 0.5
        return s

    def write_log():               # between the phases, in a region of the user's
        time.sleep(0.002)

    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        trainprof.step()
        with trainprof.region("train_batch"):
            with trainprof.region("augment"):
                flip_images(90000)
            model_step(30000)
        with trainprof.region("logging"):
            write_log()
""")


def record_rank(tmp_path, rank, seconds):
    """The script recorded as rank of two (its own node): the run file."""
    script = tmp_path / "augmenting.py"
    script.write_text(AUGMENTING)
    run = tmp_path / f"node{rank}.db"
    env = dict(os.environ, RANK=str(rank), LOCAL_RANK="0", WORLD_SIZE="2")
    argv = ["record", "-q", "--agent", f"node{rank}", "-o", run, "--", PYTHON, script, seconds]
    r = trainprof(*argv, env=env)
    assert r.returncode == 0, r.stderr
    return run


def test_a_user_region_counts_in_the_phase_around_it(tmp_path):
    run_file = record_rank(tmp_path, 0, "1.5")
    rep = report_json(run_file)
    groups = {g["phase"]: g for g in rep["stacks"]}
    tb, aug, log, none = groups["train_batch"], groups["augment"], groups["logging"], groups[None]
    # augment's samples are train_batch's too, and counted once in the run's
    assert aug["within"] == "train_batch" and aug["samples_in_user_regions"] == 0
    assert tb["within"] is None and tb["samples_in_user_regions"] == aug["samples"] > 0
    assert tb["samples"] > aug["samples"]  # and its own model_step
    tops = [f["function"] for f in tb["functions"]]
    assert tops[0] == "flip_images" and "model_step" in tops, tb["functions"]
    # logging ran outside every phase: its samples are "other"'s
    assert log["within"] is None
    assert none["samples_in_user_regions"] == log["samples"] > 0
    # the verdict cites train_batch's time as what it is: mostly augment's
    text = trainprof("report", run_file).stdout
    each_once = sum(g["samples"] - g["samples_in_user_regions"] for g in rep["stacks"])
    assert f"(sampled Python stacks: {each_once} samples;" in text, text
    assert [v for v in rep["verdicts"] if v["kind"] == "compute_bound"]
    cite = " ".join(text.split("Inside: train_batch's time goes to ")[1].split())
    assert cite.startswith("flip_images ("), cite
    inside = text.split("Inside the phases")[1]
    assert "augment (inside train_batch): " in inside, inside
    assert "logging (outside the phases): " in inside, inside
    assert "in regions of yours inside it)" in inside.split("train_batch: ")[1].split("\n")[0]
    # the page's flame graphs say the same
    page = tmp_path / "run.html"
    assert trainprof("html", "-o", page, run_file).returncode == 0
    html = page.read_text()
    assert "augment, inside train_batch (" in html and "% in regions of yours inside it" in html
    # the summary stores what each user region ran inside; its report is the rows'
    assert trainprof("summarize", "--force", run_file).returncode == 0
    assert_same_report(report_json(run_file), report_from_rows(run_file, tmp_path))
    # and a merge of node files' summaries carries it: each rank's augment
    # inside its train_batch
    merged = tmp_path / "merged.db"
    other = record_rank(tmp_path, 1, "1.5")
    r = trainprof("merge", "--summary", "-o", merged, run_file, other)
    assert r.returncode == 0, r.stderr
    stacks = report_json(merged)["stacks"]
    for rank in (0, 1):
        [aug] = [g for g in stacks if g["rank"] == rank and g["phase"] == "augment"]
        [tb] = [g for g in stacks if g["rank"] == rank and g["phase"] == "train_batch"]
        assert aug["within"] == "train_batch" and tb["samples_in_user_regions"] == aug["samples"]
