"""trainprof's own work out of the stacks it shows (analyze/stack_own.c): what
the modules that work for trainprof call (device times' CUDA events, capture
windows' profiler, the run's facts) is taken for the user's frame above, as
our own wrappers are; the call a wrapper stands in for stays the user's."""

import ast
import re
import sqlite3
import textwrap

from conftest import PYTHON, ROOT, report_json, trainprof

# The real device-time bookkeeping (patches/device.py's DeviceTimes.poll),
# polled from the user's loop in region "poll", with an end event whose
# query burns CPU (a busy driver; a real CUDA event needs a GPU), and the
# user's own work of the same kind in region "user".
SCRIPT = textwrap.dedent("""
    import sys, time
    import trainprof
    from trainprof.patches import device

    def spin(n):
        x = 0
        for i in range(n):
            x += i * i
        return x

    class Event:                   # stands in for torch.cuda.Event
        def query(self):
            spin(40000)
            return False           # not done yet: poll puts it back

    def main():
        times = device.DeviceTimes()
        times.pending.append(("train_batch", 0, Event(), Event(), 0))
        end = time.time() + float(sys.argv[1])
        while time.time() < end:
            trainprof.step()
            with trainprof.region("poll"):
                times.poll()
            with trainprof.region("user"):
                spin(40000)

    main()
""")


def test_what_our_device_time_polling_calls_is_shown_as_the_users_frame(tmp_path):
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    run = tmp_path / "run.db"
    r = trainprof(
        "record", "-q", "-o", run, "--stacks", "200", "--", PYTHON, path, "2", timeout=300
    )
    assert r.returncode == 0, r.stderr
    # sampled as it ran: our poll calling the script's query and spin
    with sqlite3.connect(run) as db:
        sampled = {
            f
            for (f,) in db.execute(
                "SELECT DISTINCT f.function FROM stack_sample s JOIN name n ON n.id = s.phase_id"
                " JOIN stack_node d ON d.id = s.node_id JOIN frame f ON f.id = d.frame_id"
                " WHERE n.text = 'poll'"
            )
        }
    assert {"Event.query", "spin"} & sampled, sampled
    folded = trainprof("export", "--format", "folded", run).stdout.splitlines()
    polled = [x for x in folded if x.startswith("poll;")]
    user = [x for x in folded if x.startswith("user;")]
    assert polled and user

    # shown as the user's loop: no frame of ours, nothing our poll called. A
    # few samples at the regions' edges pair a phase with the next one's stack
    # (the sampler reads the open region, then the stack, as the thread runs)
    # or tear (frames of two moments): 1 to 3 in 200 here; all but those
    # named query and spin before the analysis took them for the user's loop
    def count(lines):
        return sum(int(x.rsplit(" ", 1)[1]) for x in lines)

    shown_main = [x for x in polled if re.search(r";main \([^;]*\) \d+$", x)]
    called = [x for x in polled if "query (" in x or "spin (" in x]
    assert count(shown_main) >= 0.85 * count(polled), polled
    assert count(called) <= 0.1 * count(polled), polled
    assert not any("poll (" in x or "device.py" in x for x in folded), polled
    # the same function called by the user is the user's work
    assert any(re.search(r";spin \([^;]*\) \d+$", x) for x in user), user
    report = report_json(run)
    group = next(g for g in report["stacks"] if g["phase"] == "poll")
    assert group["functions"][0]["function"] == "main", group["functions"][:3]
    assert group["functions"][0]["self_share"] >= 0.85, group["functions"][:3]


def _own_work_table():
    """analyze/stack_own.c's modules that work for trainprof, and the
    wrappers among their functions: {module: [wrapper names]}."""
    source = (ROOT / "src" / "analyze" / "stack_own.c").read_text()
    table = source.split("own_work[] = {", 1)[1].split("};", 1)[0]
    rows = re.findall(r'\{"([^"]+)", \{([^}]*)\}\}', table)
    return {module: re.findall(r'"([^"]+)"', names) for module, names in rows}


def test_the_modules_that_work_for_us_and_their_wrappers_are_the_packages():
    """A module renamed or moved, or a wrapper renamed, fails here rather than
    turning the user's work into ours in every stack shown."""
    table = _own_work_table()
    assert len(table) >= 3, table
    package = ROOT / "python" / "trainprof"
    for module, wrappers in table.items():
        path = package / module
        assert path.is_file(), module
        defined = {
            node.name
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        assert set(wrappers) <= defined, (module, set(wrappers) - defined)
        # every function defined inside another function of these modules
        # and calling a name its enclosing function was given (a wrapper of
        # the call it was given) is named
        for outer in ast.walk(ast.parse(path.read_text())):
            if not isinstance(outer, ast.FunctionDef):
                continue
            given = {a.arg for a in outer.args.args} | {
                t.id
                for node in outer.body
                if isinstance(node, ast.Assign)
                for target in node.targets
                for t in (target.elts if isinstance(target, ast.Tuple) else [target])
                if isinstance(t, ast.Name)
            }
            for inner in outer.body:
                if not isinstance(inner, ast.FunctionDef):
                    continue
                calls = {
                    c.func.id
                    for c in ast.walk(inner)
                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                }
                if calls & given:
                    assert inner.name in wrappers, (module, inner.name)
