"""After the training: what every tracker gets, from the run file, through
trainprof's own commands (the figures are those `report` computes):

- points: the first rank's steps in at most 1,000 groups (``trainprof export
  --format steps``), each at its first step and its wall time, with
  trainprof/step_s, trainprof/steps_per_s, trainprof/samples_per_s (by the
  run's mean samples a step), trainprof/PHASE_s for each phase the run had,
  and trainprof/gpu_util_percent where NVML measured the rank's GPU;
- final: the whole run's trainprof/run_steps_per_s and
  trainprof/run_samples_per_s (as `report` gives them), and
  trainprof/own_cost_share (trainprof's own work, of the step thread's
  time);
- the answer: the leading verdict's kind ("none" without one) and the
  report's "In short" in words;
- the html page (``trainprof html``), as a file to attach."""

import dataclasses
import json
import os
import subprocess


@dataclasses.dataclass
class Figures:
    run_file: str
    name: str  # the run's name where trainprof opens one: trainprof-<command>
    meta: dict
    points: list  # (step, wall time s, {metric: value}), in step order
    final: dict
    last_step: int
    verdict: str
    answer: str
    html: str  # a file


def _run(trainprof, *args):
    r = subprocess.run([trainprof, *args], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"trainprof {args[0]} failed: {r.stderr.strip()[:300]}")
    return r.stdout


def _name(command):
    """trainprof-train.py of "python train.py --lr 3": the script's, else the program's."""
    words = command.split()
    script = next((w for w in words if w.endswith(".py")), words[0] if words else "run")
    return "trainprof-" + os.path.basename(script)


def _in_short(text):
    block = text.split("In short\n", 1)[-1].split("\n\n", 1)[0]
    return " ".join(block.split())


def gather(trainprof, run_file, workdir):
    """The Figures of run_file, its html page written into workdir."""
    report = json.loads(_run(trainprof, "report", "--json", run_file))
    lines = [json.loads(x) for x in _run(trainprof, "export", "-f", "steps", run_file).splitlines()]
    meta = report["run"].get("meta") or {}
    start = int(meta.get("start_wall_ns", "0") or 0) / 1e9
    rank = min((x["rank"] for x in lines), default=None)
    steps = next((s for s in report["steps"] if s["rank"] == rank), None) or {}
    per_step = steps.get("samples_per_step")
    used = {p for x in lines for p, v in x["phases_s"].items() if v}
    points = []
    for x in (x for x in lines if x["rank"] == rank):
        values = {"trainprof/step_s": x["step_s"], "trainprof/steps_per_s": x["steps_per_s"]}
        if per_step and x["steps_per_s"]:
            values["trainprof/samples_per_s"] = per_step * x["steps_per_s"]
        for phase, v in x["phases_s"].items():
            if phase in used and v is not None:
                values[f"trainprof/{phase}_s"] = v
        if x["gpu_util_percent"] is not None:
            values["trainprof/gpu_util_percent"] = x["gpu_util_percent"]
        at = start + (x["end_s"] if x["end_s"] is not None else 0)
        points.append((x["step"], at, {k: v for k, v in values.items() if v is not None}))
    final = {}
    if steps.get("steps_per_s"):
        final["trainprof/run_steps_per_s"] = steps["steps_per_s"]
    if steps.get("samples_per_s"):
        final["trainprof/run_samples_per_s"] = steps["samples_per_s"]
    own = next((o for o in report.get("own_cost") or [] if o["rank"] == rank), None)
    if own and own.get("share") is not None:
        final["trainprof/own_cost_share"] = own["share"]
    verdicts = report.get("verdicts") or []
    html = os.path.join(workdir, "trainprof-report.html")
    _run(trainprof, "html", "--force", "-o", html, run_file)
    return Figures(
        run_file=os.path.abspath(run_file),
        name=_name(report["run"].get("command") or ""),
        meta=meta,
        points=points,
        final=final,
        last_step=points[-1][0] if points else 0,
        verdict=verdicts[0]["kind"] if verdicts else "none",
        answer=_in_short(_run(trainprof, "report", run_file)),
        html=html,
    )


def fact(figures, key):
    """A tracker fact the training told (lib/facts.h's tracker.*), or None."""
    return figures.meta.get("fact." + key) or None
