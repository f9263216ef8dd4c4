"""`trainprof html` on a 24-hour run sampled every 0.5 s (8 cores, 2 GPUs, made by
bench/gen_run): time to write the page (drawn from the plots stored with the
summary; peer: the same page drawn from every row, the plots set aside), its size,
and the time headless Chromium takes to load and lay it out (--dump-dom), against
the same for a minimal page (the browser's own start-up). Medians of 3."""

import json
import pathlib
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def timed(cmd, runs=3):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 2)


def chromium(page):
    return [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--dump-dom",
        pathlib.Path(page).as_uri(),
    ]


with tempfile.TemporaryDirectory() as d:
    run, page, empty = f"{d}/day.db", f"{d}/day.html", f"{d}/empty.html"
    subprocess.run(
        [ROOT / "build" / "bench" / "gen_run", run, "24", "0.5", "8", "2"],
        check=True,
        capture_output=True,
    )
    write_s = timed([ROOT / "build" / "trainprof", "html", run, "-o", page, "--force"])
    rows = f"{d}/rows.db"
    shutil.copyfile(run, rows)
    with sqlite3.connect(rows) as db:
        db.execute("DELETE FROM meta WHERE key = 'plots'")
    rows_s = timed([ROOT / "build" / "trainprof", "html", rows, "-o", f"{d}/rows.html", "--force"])
    pathlib.Path(empty).write_text("<!DOCTYPE html><html><body>empty</body></html>")
    print(
        json.dumps(
            {
                "html_write_s": write_s,
                "html_write_from_rows_s": rows_s,
                "page_mb": round(pathlib.Path(page).stat().st_size / 1e6, 2),
                "chromium_load_s": timed(chromium(page)),
                "chromium_load_minimal_page_s": timed(chromium(empty)),
            }
        )
    )
