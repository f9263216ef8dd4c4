"""`trainprof mcp` (issue 60): the MCP server, driven by the official SDK's
own client over stdio as an assistant drives it: the tools listed with
their documentation, then each called on real run files (the golden
corpus's and a live recording), bad arguments and paths outside its roots
answered as the tool's errors."""

import asyncio
import json
import shutil
import signal
import subprocess
import time

import pytest
from conftest import PROGRAM, PYTHON, ROOT, lazily, report_json, trainprof

mcp = lazily("mcp")  # 0.7 CPU-seconds at every collection otherwise

RUNS = ROOT / "tests" / "golden" / "runs"
TOOLS = {
    "list_recordings",
    "list_run_files",
    "report",
    "compare",
    "stalls_and_deaths",
    "capture",
    "metric_series",
}


def session(roots, calls):
    """Starts `trainprof mcp --root R...` and runs calls(client) against it:
    what it returns."""

    async def main():
        args = ["mcp"] + [a for r in roots for a in ("--root", str(r))]
        async with mcp.Client(mcp.StdioServerParameters(command=str(PROGRAM), args=args)) as client:
            return await calls(client)

    return asyncio.run(main())


def report_json_of(*paths):
    r = trainprof("report", "--json", *paths)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def result(answer):
    """A tool call's JSON answer, or its error text."""
    text = answer.content[0].text
    return ("error", text) if answer.is_error else json.loads(text)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("mcp-runs")
    for name in ("example.db", "ddp.db", "stalled.db", "died.db", "node_a.db", "node_b.db"):
        shutil.copy(RUNS / name, d / name)
    return d


def test_the_tools_are_listed_with_what_they_return(runs):
    async def calls(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in session([runs], calls)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description) > 80, tool.name
    assert "seconds" in tools["report"].description and "bytes" in tools["report"].description
    assert "paths" in tools["report"].input_schema["properties"]
    assert tools["metric_series"].input_schema["required"] == ["path", "metric"]
    # a host may run the readers without asking; capture asks a live run for work
    readers = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    assert readers == TOOLS - {"capture"}
    assert tools["capture"].annotations.destructive_hint is False


def test_each_tool_on_real_run_files(runs):
    async def calls(client):
        out = {}
        out["files"] = result(await client.call_tool("list_run_files", {}))
        out["report"] = result(await client.call_tool("report", {"paths": [str(runs / "ddp.db")]}))
        out["merged"] = result(
            await client.call_tool(
                "report", {"paths": [str(runs / "node_a.db"), str(runs / "node_b.db")]}
            )
        )
        out["compare"] = result(
            await client.call_tool(
                "compare", {"baseline": "example.db", "candidate": str(runs / "ddp.db")}
            )
        )
        out["stalled"] = result(await client.call_tool("stalls_and_deaths", {"path": "stalled.db"}))
        out["died"] = result(await client.call_tool("stalls_and_deaths", {"path": "died.db"}))
        out["series"] = result(
            await client.call_tool(
                "metric_series",
                {"path": "example.db", "metric": "cpu_util_percent", "labels": {}, "max_points": 5},
            )
        )
        return out

    out = session([runs], calls)
    assert {f["path"] for f in out["files"]["run_files"]} == {
        str(runs / n)
        for n in ("example.db", "ddp.db", "stalled.db", "died.db", "node_a.db", "node_b.db")
    }
    rep = report_json(runs / "ddp.db")
    assert out["report"]["verdicts"] == rep["verdicts"]
    assert out["report"]["steps"] == rep["steps"] and "agents" not in out["report"]
    merged = report_json_of(runs / "node_a.db", runs / "node_b.db")
    assert (
        out["merged"]["steps"] == merged["steps"]
        and out["merged"]["verdicts"] == merged["verdicts"]
    )
    direct = json.loads(trainprof("compare", "--json", runs / "example.db", runs / "ddp.db").stdout)
    assert out["compare"]["step_change"] == direct["step_change"]
    assert out["compare"]["samples_per_s_change"] == direct["samples_per_s_change"]
    assert out["stalled"]["stalls"] and out["stalled"]["stalls"][0]["rank"] is not None
    assert out["died"]["deaths"][0]["exception"]["type"] == "FloatingPointError"
    series = out["series"]
    assert series["unit"] == "percent" and series["averaged"] and len(series["points"]) <= 5
    assert series["samples"] > 5 and all(0 <= v <= 100 for _, v in series["points"])


def test_bad_arguments_and_foreign_paths_are_the_tools_errors(runs, tmp_path):
    outside = tmp_path / "elsewhere.db"
    shutil.copy(RUNS / "example.db", outside)
    (runs / "link.db").symlink_to(outside)

    async def calls(client):
        return [
            result(await client.call_tool("report", {"paths": [str(outside)]})),
            result(await client.call_tool("report", {"paths": ["link.db"]})),
            result(await client.call_tool("report", {"paths": ["../" * 8 + "etc/passwd"]})),
            result(await client.call_tool("report", {"paths": ["nothing.db"]})),
            result(await client.call_tool("metric_series", {"path": "example.db", "metric": "x"})),
            result(
                await client.call_tool(
                    "metric_series",
                    {"path": "example.db", "metric": "cpu_util_percent", "labels": {"cpu": "99"}},
                )
            ),
            result(
                await client.call_tool(
                    "metric_series",
                    {"path": "example.db", "metric": "cpu_util_percent", "max_points": 0},
                )
            ),
            result(await client.call_tool("report", {"paths": "not a list"})),
            result(await client.call_tool("no_such_tool", {})),
        ]

    answers = session([runs], calls)
    for answer in answers:  # the SDK checks the arguments' types itself: its words, its lines
        assert answer[0] == "error" and "Traceback" not in answer[1], answer
    for answer in answers[:7]:  # trainprof's own refusals: one line each
        assert "\n" not in answer[1].strip(), answer
    assert "outside the folders this server may read" in answers[0][1]
    assert "outside the folders" in answers[1][1]  # a link out is outside
    assert "outside the folders" in answers[2][1]
    assert "no such run file" in answers[3][1]
    assert "metric 'x': not in this run file (it has cpu_util_percent" in answers[4][1]
    assert 'labels {"cpu": "99"}: no series of cpu_util_percent has them' in answers[5][1]
    assert "max_points: 1 to 5000" in answers[6][1]


def test_a_live_recording_is_listed_and_captured(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(
        "import time, trainprof\n"
        "for i in range(3000):\n"
        "    trainprof.step()\n"
        "    with trainprof.region('work'):\n"
        "        time.sleep(0.01)\n"
    )
    run = tmp_path / "live.db"
    p = subprocess.Popen(
        [PROGRAM, "record", "-q", "-o", run, "--", PYTHON, script], stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while str(run) not in trainprof("capture", "--list").stdout:
            assert time.monotonic() < deadline, "the recording never announced itself"
            time.sleep(0.2)

        async def calls(client):
            listed = result(await client.call_tool("list_recordings", {}))
            captured = result(await client.call_tool("capture", {"run_file": "live.db"}))
            return listed, captured

        listed, captured = session([tmp_path], calls)
        (rec,) = [r for r in listed["recordings"] if r["run_file"] == str(run)]
        assert rec["pid"] == p.pid and rec["started_unix_s"] > 0
        assert isinstance(captured, dict), captured  # an answer, not ("error", why)
        assert "step" in captured["answer"]
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)


def test_the_command_line():
    r = trainprof("mcp", "--help")
    assert r.returncode == 0 and "--root DIR" in r.stdout and "trainprof[mcp]" in r.stdout
    r = trainprof("mcp", "--root")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "expected --root DIR" in r.stderr
    r = trainprof("mcp", "--root", "/nonexistent-folder", stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and r.stderr == (
        "trainprof: error: mcp: --root /nonexistent-folder: not a folder\n"
    )
    assert "mcp" in trainprof("--help").stdout
