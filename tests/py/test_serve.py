"""Live metrics for Prometheus: `record --serve` and `trainprof serve`, scraped
over loopback by urllib, checked by promtool, and by a real Prometheus server."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from conftest import FAKE_NVML, PROGRAM, PYTHON, ROOT, trainprof

# mostly waiting (sleeps, timeouts, servers): sent to a worker early (conftest.py)
pytestmark = pytest.mark.waits

REGIONS = """
import time, trainprof
from trainprof import _native
for i in range({steps}):
    trainprof.step()
    trainprof.samples(8)
    start = _native.now_ns()
    with trainprof.region("work"):
        time.sleep(0.02)
    if {device}:  # as trainprof.torch does for a CUDA region: 5 ms on the device
        _native.device_time(trainprof.region("work"), start, 5_000_000)
        # and as trainprof.runtime.device_memory does at a step: the allocator's figures
        _native.device_memory(1 << 30, 2 << 30, 3 << 30, 4 << 30, 80 << 30, i, 0)
"""


def start_serving(args, tmp_path, steps=1500, name="train.py", env=None, device=False):
    """Starts `trainprof record --serve 127.0.0.1:0 ARGS -- python script` and
    returns (process, base URL) once it says where it serves; with device, each
    region also has a device time of 5 ms."""
    script = tmp_path / name
    script.write_text(REGIONS.format(steps=steps, device=device))
    p = subprocess.Popen(
        [PROGRAM, "record", "--serve", "127.0.0.1:0", *map(str, args), "--", PYTHON, str(script)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return p, served_url(p)


def served_url(p):
    line = p.stderr.readline()
    m = re.search(r"serving metrics at (http://\S+)/metrics", line)
    assert m, line
    threading.Thread(target=p.stderr.read, daemon=True).start()  # never block its stderr
    return m.group(1)


def get(url, method="GET"):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def wait_for(fn, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def value_of(text, name, **labels):
    """The value of the sample `name{labels...}` in exposition text, or None."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def stop(p):
    p.send_signal(signal.SIGTERM)
    return p.wait(timeout=20)


def test_record_serves_metrics_and_timings(tmp_path):
    p, url = start_serving(
        ["-o", tmp_path / "run.db", "--agent", "node-a", "-i", "0.2"], tmp_path, device=True
    )
    try:
        wait_for(
            lambda: value_of(get(url + "/metrics")[2], "trainprof_phase_device_seconds_count"),
            what="device times in /metrics",
        )
        status, ctype, text = get(url + "/metrics")
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
        assert 'trainprof_info{agent="node-a",' in text
        assert value_of(text, "trainprof_cpu_util_ratio", agent="node-a", cpu="0") is not None
        assert value_of(text, "trainprof_host_mem_used_bytes", agent="node-a") > 0
        assert value_of(text, "trainprof_proc_processes", agent="node-a") >= 1
        count = value_of(text, "trainprof_phase_seconds_count", phase="work")
        total = value_of(text, "trainprof_phase_seconds_sum", phase="work")
        assert count >= 1 and 0.015 * count <= total <= 0.2 * count  # 20 ms sleeps
        device_count = value_of(text, "trainprof_phase_device_seconds_count", phase="work")
        device_total = value_of(text, "trainprof_phase_device_seconds_sum", phase="work")
        assert device_count >= 1 and device_total == pytest.approx(0.005 * device_count)
        assert value_of(text, "trainprof_cuda_allocated_bytes", agent="node-a") == 1 << 30
        assert value_of(text, "trainprof_cuda_capacity_bytes", agent="node-a") == 80 << 30
        retries = value_of(text, "trainprof_cuda_alloc_retries_total", agent="node-a")
        assert retries is not None and "# TYPE trainprof_cuda_alloc_retries_total counter" in text
        steps = value_of(text, "trainprof_steps_total", agent="node-a")
        assert value_of(text, "trainprof_samples_total") == pytest.approx(8 * steps, abs=8)
        assert value_of(text, "trainprof_batches_total") == pytest.approx(steps, abs=1)
        # Counters only grow between scrapes.
        time.sleep(1.5)
        later = get(url + "/metrics")[2]
        assert value_of(later, "trainprof_steps_total") > steps
        assert value_of(later, "trainprof_cuda_alloc_retries_total") > retries
        assert value_of(later, "trainprof_phase_seconds_count", phase="work") > count
        if shutil.which("promtool"):
            lint = subprocess.run(
                ["promtool", "check", "metrics"], input=later, capture_output=True, text=True
            )
            assert lint.returncode == 0, lint.stdout + lint.stderr
        # Only /metrics, only reading.
        assert get(url + "/")[0] == 200
        assert get(url + "/nothing")[0] == 404
        assert get(url + "/metrics", method="POST")[0] == 405
        assert get(url + "/metrics", method="HEAD")[0] == 200
    finally:
        assert stop(p) == 128 + signal.SIGTERM
    assert (tmp_path / "run.db").exists()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def test_memory_stays_bounded_under_many_scrapes(tmp_path):
    p, url = start_serving(["-q", "-o", tmp_path / "run.db"], tmp_path)
    try:
        wait_for(lambda: value_of(get(url + "/metrics")[2], "trainprof_steps_total"))

        def scrape(n):
            for _ in range(n):
                assert get(url + "/metrics")[0] == 200

        def burst(threads, n):
            ts = [threading.Thread(target=scrape, args=(n,)) for _ in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()

        burst(16, 20)
        before = rss_kib(p.pid)
        burst(16, 150)  # 2,400 more scrapes, 16 at a time
        after = rss_kib(p.pid)
        assert after - before < 4096, (before, after)
        # Idle connections beyond the limit are refused or queued, never grow memory.
        where = urllib.parse.urlsplit(url)
        socks = [socket.create_connection((where.hostname, where.port)) for _ in range(64)]
        assert rss_kib(p.pid) - before < 4096
        for s in socks:
            s.close()
        assert get(url + "/metrics")[0] == 200
    finally:
        stop(p)


def test_slow_clients_cannot_hold_the_endpoint(tmp_path):
    """40 clients trickling their request a byte every 0.5 s (an idle timeout
    never fires on them) against 32 connections: each is cut 2 s after it
    opened without a whole request, and a scrape is served all along."""
    p, url = start_serving(["-q", "-o", tmp_path / "run.db"], tmp_path)
    where = urllib.parse.urlsplit(url)
    stop_trickle = threading.Event()
    cut = []

    def slow_client():
        s = socket.create_connection((where.hostname, where.port))
        opened = time.monotonic()
        s.settimeout(0.5)
        try:
            for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\n" * 20:
                if stop_trickle.is_set():
                    return
                s.send(bytes([byte]))
                try:
                    if s.recv(1) == b"":  # the server ended it
                        cut.append(time.monotonic() - opened)
                        return
                except socket.timeout:
                    pass
        except OSError:  # reset, or refused while the server was full
            cut.append(time.monotonic() - opened)
        finally:
            s.close()

    try:
        wait_for(lambda: value_of(get(url + "/metrics")[2], "trainprof_steps_total"))
        slow = [threading.Thread(target=slow_client) for _ in range(40)]
        for t in slow:
            t.start()
        time.sleep(1)
        for _ in range(5):  # the scraper, while they trickle
            t0 = time.monotonic()
            status, _, text = get(url + "/metrics")
            assert status == 200 and "trainprof_steps_total" in text
            assert time.monotonic() - t0 < 3
            time.sleep(0.5)
        stop_trickle.set()
        for t in slow:
            t.join(timeout=10)
        assert len(cut) >= 35 and max(cut) < 6, sorted(cut)
    finally:
        stop_trickle.set()
        stop(p)


def test_bad_or_busy_address_is_refused_before_the_command_runs(tmp_path):
    marker = tmp_path / "ran"
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    for addr, why in (
        (f"127.0.0.1:{port}", "Address already in use"),
        ("nonsense", "expected HOST:PORT"),
        ("127.0.0.1:70000", "bad port"),
    ):
        r = trainprof("record", "--serve", addr, "-o", tmp_path / "run.db", "--", "touch", marker)
        assert r.returncode == 2 and why in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert not marker.exists() and not (tmp_path / "run.db").exists()
    busy.close()


def test_serve_without_a_recording(tmp_path):
    p = subprocess.Popen(
        [PROGRAM, "serve", "--listen", "127.0.0.1:0", "--interval", "0.2", "--agent", "idle-node"],
        stderr=subprocess.PIPE,
        text=True,
    )
    url = served_url(p)
    try:
        text = wait_for(
            lambda: (lambda t: t if "trainprof_cpu_util_ratio" in t else None)(
                get(url + "/metrics")[2]
            ),
            what="CPU metrics",
        )
        assert value_of(text, "trainprof_host_mem_available_bytes", agent="idle-node") > 0
        assert "trainprof_phase_" not in text and "trainprof_proc_" not in text
    finally:
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=10) == 0
    r = trainprof("serve", "--bogus")
    assert r.returncode == 2 and "see trainprof serve --help" in r.stderr


DASHBOARD = ROOT / "docs" / "grafana-dashboard.json"
# panels that stay empty here: the scripts' only phase is "work", no RAPL, a
# virtual NIC with no link speed and no InfiniBand
MAY_BE_EMPTY = ("dataloader_next", "reduce_metrics", "cpu_energy", "net_link_speed")


def check_dashboard(port):
    """Every query of the Grafana dashboard is valid PromQL for this
    Prometheus, and those the two recorders feed return series for both."""
    dash = json.loads(DASHBOARD.read_text())
    agents = [v for v in dash["templating"]["list"] if v["name"] == "agent"]
    assert agents and agents[0]["definition"] == "label_values(trainprof_info, agent)"
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 15
    for expr in exprs:
        q = expr.replace("$__rate_interval", "5s").replace("$agent", ".*")
        status, _, body = get(
            f"http://127.0.0.1:{port}/api/v1/query?query=" + urllib.parse.quote(q)
        )
        answer = json.loads(body)
        assert status == 200 and answer["status"] == "success", (expr, body)
        if not any(word in expr for word in MAY_BE_EMPTY):
            assert answer["data"]["result"], f"no data for {expr}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not shutil.which("prometheus"), reason="Debian's prometheus is not installed")
def test_a_real_prometheus_scrapes_two_recorders(tmp_path):
    """Two recorders stand for two nodes; Prometheus scrapes both and answers
    queries about both agents through its HTTP API."""
    recorders = []
    try:
        for agent in ("node-a", "node-b"):
            d = tmp_path / agent
            d.mkdir()
            recorders.append(
                start_serving(
                    ["-q", "-o", d / "run.db", "--agent", agent, "-i", "0.2"],
                    d,
                    env={"TRAINPROF_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"},
                    device=True,
                )
            )
        targets = [urllib.parse.urlsplit(url).netloc for _, url in recorders]
        port = free_port()
        (tmp_path / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: trainprof\n"
            f"    static_configs: [{{targets: {json.dumps(targets)}}}]\n"
        )
        prom = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={tmp_path / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            api = f"http://127.0.0.1:{port}/api/v1/query?query="

            def query(q):
                try:
                    status, _, body = get(api + urllib.parse.quote(q))
                except (urllib.error.URLError, ConnectionError):
                    return None
                if status != 200:
                    return None
                result = json.loads(body)["data"]["result"]
                return {r["metric"].get("agent"): float(r["value"][1]) for r in result} or None

            def both(q):
                r = query(q)
                return r if r and set(r) == {"node-a", "node-b"} else None

            # up has no agent label: the targets' own label set is agent-free.
            wait_for(
                lambda: (query('count(up{job="trainprof"} == 1)') or {}).get(None) == 2,
                timeout=60,
                what="both targets up",
            )

            def stepping():  # both trainings past their start (beside two burners, one
                # was scraped at 0 steps/s while the other ran: its loop had not begun)
                r = both("sum by (agent) (rate(trainprof_steps_total[5s]))")
                return r if r and all(v > 0 for v in r.values()) else None

            steps = wait_for(stepping, timeout=60, what="step rates of both agents")
            assert all(5 < v < 60 for v in steps.values()), steps  # ~45 steps/s each
            work = both('sum by (agent) (trainprof_phase_seconds_count{phase="work"})')
            assert work and all(v >= 1 for v in work.values())
            cpu = both("avg by (agent) (trainprof_cpu_util_ratio)")
            assert cpu and all(0 <= v <= 1 for v in cpu.values())
            check_dashboard(port)
        finally:
            prom.terminate()
            prom.wait(timeout=30)
    finally:
        for p, _ in recorders:
            stop(p)


def test_clients_that_ask_and_never_read_cannot_hold_the_endpoint(tmp_path):
    """200 clients that send a whole GET and then neither read the answer nor
    close, against 32 connections: they are let go as room is needed, and a
    scrape is served all along."""
    p, url = start_serving(["-q", "-o", tmp_path / "run.db"], tmp_path)
    where = urllib.parse.urlsplit(url)
    holders = []
    try:
        wait_for(lambda: value_of(get(url + "/metrics")[2], "trainprof_steps_total"))
        for _ in range(200):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            s.connect((where.hostname, where.port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            holders.append(s)
        for _ in range(5):  # the scraper, while they hold on
            t0 = time.monotonic()
            status, _, text = get(url + "/metrics")
            assert status == 200 and "trainprof_steps_total" in text
            assert time.monotonic() - t0 < 5, time.monotonic() - t0
            time.sleep(0.5)
    finally:
        for s in holders:
            s.close()
        stop(p)
