"""The layer check of `make test` (tools/check_layers.py): the tree passes
it, and a tree with an include against the order, or a cycle, fails it."""

import json
import pathlib
import re
import shutil
import subprocess
import sys

from conftest import ROOT

CHECK = [sys.executable, str(ROOT / "tools" / "check_layers.py")]


def test_the_tree_keeps_the_layer_order_and_has_no_cycle():
    r = subprocess.run(CHECK, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_an_include_against_the_order_and_a_cycle_are_named(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "contributing.md", tmp_path / "docs")
    for d in ("core", "store", "collect", "analyze"):
        (tmp_path / "src" / d).mkdir(parents=True)
    (tmp_path / "src" / "core" / "batch.h").write_text('#include "store/writer.h"\n')
    (tmp_path / "src" / "store" / "writer.h").write_text(
        '#include "core/batch.h"\n#include "collect/cpu.h"\n'
    )
    (tmp_path / "src" / "collect" / "cpu.h").write_text("\n")
    (tmp_path / "src" / "analyze" / "a.c").write_text('#include "analyze/b.h"\n')
    (tmp_path / "src" / "analyze" / "b.h").write_text('#include "analyze/a.h"\n')
    (tmp_path / "src" / "analyze" / "a.h").write_text('#include "nowhere.h"\n')
    r = subprocess.run(CHECK + ["--root", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "src/analyze/a.h:1: includes nowhere.h, which is not in the tree",
        "src/core/batch.h:1: core includes src/store/writer.h (store), against the layer order "
        "of docs/contributing.md",
        "src/store/writer.h:2: store includes src/collect/cpu.h (collect), against the layer "
        "order of docs/contributing.md",
        "a cycle of includes between src/analyze/a, src/analyze/b",
        "a cycle of includes between src/core/batch, src/store/writer",
    ]


def test_every_source_file_is_named_in_the_layout():
    """docs/layout.md walks the tree for a newcomer: a C or Python file of
    src/, lib/ or the package that it does not name is one they meet
    without a word (the name, by its stem: `x.[ch]`, `x.c`, `(x)`)."""
    layout = (ROOT / "docs" / "layout.md").read_text()
    files = [
        f
        for top in ("src", "lib", "python/trainprof")
        for f in sorted((ROOT / top).rglob("*"))
        if f.suffix in (".c", ".py") and f.is_file()
    ]
    assert len(files) > 250
    unnamed = [
        str(f.relative_to(ROOT))
        for f in files
        if not re.search(rf"(?<!\w){re.escape(f.stem)}(?!\w)", layout)
    ]
    assert unnamed == []


def test_metric_names_come_from_the_catalogue_only():
    """Every metric is named in src/ by its TP_METRIC_ macro of
    core/metric_catalog.h, never by a string literal of its own (a misspelt
    macro does not compile; a misspelt literal would be a series no one
    reads)."""
    import re

    catalogue = (ROOT / "src" / "core" / "metric_catalog.h").read_text()
    names = re.findall(r'#define TP_METRIC_\w+\s+"([a-z0-9_]+)"', catalogue)
    assert len(names) >= 30
    found = []
    for f in sorted((ROOT / "src").rglob("*.[ch]")):
        if f.name.startswith("metric_catalog"):
            continue
        text = f.read_text()
        found += [f"{f.relative_to(ROOT)}: {n}" for n in names if f'"{n}"' in text]
    assert found == []


def test_label_sets_and_metadata_keys_come_from_their_catalogue():
    """The keys producers and readers share besides metrics (core/run_keys.h:
    the GPU label sets, the metadata keys of the machine and the recording,
    a GPU's own keys) are spelt once: no meta call names a catalogued key by
    a literal, and no file formats a GPU's labels or gpu.N.* keys by hand."""
    import re

    catalogue = (ROOT / "src" / "core" / "run_keys.h").read_text()
    # whole keys only: a GPU's and a process's fields are suffixes (gpu.N.mig,
    # proc.PID.status), which another key may spell alike (the run's status)
    keys = re.findall(r'#define TP_META_(?!GPU_|PROC_)\w+\s+"([a-z_]+)"', catalogue)
    assert len(keys) >= 9
    call = re.compile(
        r"(?:tp_run_meta_get|tp_run_agent_meta_get|tp_sink_meta|meta_addf?|meta_or|"
        r'meta_int)\([^;]*?"(' + "|".join(keys) + r')"'
    )
    by_hand = re.compile(r'\\"gpu\\":\\"%d|"gpu\.%d\.')
    found = []
    for f in sorted((ROOT / "src").rglob("*.c")):
        if f.name == "run_keys.c":
            continue
        text = f.read_text()
        found += [f"{f.relative_to(ROOT)}: {m.group(1)}" for m in call.finditer(text)]
        found += [f"{f.relative_to(ROOT)}: {m.group(0)}" for m in by_hand.finditer(text)]
    assert found == []
    # the check itself finds what it looks for
    assert call.search('tp_run_meta_get(run, "cpu_count")')
    assert by_hand.search('snprintf(b, 9, "{\\"gpu\\":\\"%d\\"}", g)')


def test_every_metadata_key_is_catalogued_and_settings_parsed_once():
    """No meta call names its key by a literal (core/run_keys.h names them
    all: a literal may only follow a prefix, TP_META_ENV "SLURM_JOB_ID"), no
    SQL names one in store/, and the keys the run's settings type are parsed
    in store/run_settings.c alone (run->settings for every other reader)."""
    import re

    literal_key = re.compile(
        r"(?:tp_run_meta_get|tp_sink_meta|meta_addf?|meta_or|meta_int)\(\s*[^,;]+,\s*\""
        r"|tp_run_agent_meta_get\(\s*[^,;]+,[^,;]+,\s*\""
    )
    sql_key = re.compile(r"(?:INTO meta VALUES \(|FROM meta WHERE key (?:=|IN \()\s*)'[a-z]")
    parsed = [
        "STALL_AFTER_S",
        "SUMMARIZED",
        "PLOTS",
        "STALLS_STORED",
        "SUMMARY_ONLY",
        "ENVELOPES",
        "DURATION_NS",
        "EXIT_STATUS",
        "CLOCK_UNCERTAINTY_NS",
    ]
    parsed_read = re.compile(r"tp_run_meta_get\([^;]*TP_META_(" + "|".join(parsed) + r")\b")
    found = []
    for f in sorted((ROOT / "src").rglob("*.c")):
        text, name = f.read_text(), str(f.relative_to(ROOT))
        found += [f"{name}: {m.group(0)}" for m in literal_key.finditer(text)]
        found += [f"{name}: {m.group(0)}" for m in sql_key.finditer(text)]
        if f.name != "run_settings.c":
            found += [f"{name}: {m.group(0)}" for m in parsed_read.finditer(text)]
    assert found == []
    # the checks find what they look for
    assert literal_key.search('tp_run_meta_get(run, "argv")')
    assert literal_key.search('tp_run_agent_meta_get(run, a->id, "host")')
    assert not literal_key.search('tp_run_meta_get(run, TP_META_ENV "WORLD_SIZE")')
    assert sql_key.search("DELETE FROM meta WHERE key = 'plots';")
    assert parsed_read.search("tp_run_meta_get(run, TP_META_STALL_AFTER_S);")


def test_renderers_read_no_metadata_key():
    """render/ says facts (analyze/run_facts.h, the model's facts, the
    verdicts'): it reads no metadata key itself; report --json's verbatim
    "meta" object is the one place it walks the metadata, key by key."""
    found = [
        f"{f.relative_to(ROOT)}: {line.strip()}"
        for f in sorted((ROOT / "src" / "render").glob("*.c"))
        for line in f.read_text().splitlines()
        if "tp_run_meta_get(" in line or "tp_run_agent_meta_get(" in line
    ]
    assert found == []


# What reads a run rather than facts about it: its handle, or store's calls on it.
RUN_READ = re.compile(
    r"->run\b|\btp_run\s*\*|\btp_run_(?:open|meta_get|agent_name|agent_meta_get|facts_get|"
    r"model_facts|start_wall_ns|series_find|series_each)\s*\(|\btp_host_facts_of\s*\("
)


def test_renderers_take_facts_not_the_run():
    """render/ words the summary's facts and its inventory
    (analyze/run_inventory.h): it never reaches through the summary to the
    run it was built from. The exports (export_*.c) are the exception that
    proves it: they stream the run's rows by design."""
    found = [
        f"{f.relative_to(ROOT)}: {line.strip()}"
        for f in sorted((ROOT / "src" / "render").glob("*.[ch]"))
        if not f.name.startswith("export")
        for line in f.read_text().splitlines()
        if RUN_READ.search(line)
    ]
    assert found == []
    assert RUN_READ.search("for (size_t g = 0; g < s->run->ngpus; g++)")
    assert RUN_READ.search("static void header(FILE *out, const tp_run *run)")
    assert RUN_READ.search("tp_run_facts_get(run, &f);")
    assert not RUN_READ.search("const tp_run_gpu *gpu = &s->inv.gpus[g];")


def test_analysis_and_rendering_hold_no_sql():
    """store/ owns every SQL statement: analyze/ turns rows into facts and
    render/ facts into words, neither through SQLite."""
    found = [
        str(f.relative_to(ROOT))
        for d in ("analyze", "render")
        for f in sorted((ROOT / "src" / d).glob("*.[ch]"))
        if "sqlite3" in f.read_text()
    ]
    assert found == []


def test_phase_names_come_from_trainprof_h_only():
    """The standard phases' names are spelt once, in include/trainprof.h
    (TP_PHASE_*): src/ and the Python face's regions use them from there
    (core/phases.h says what each one is)."""
    import re

    header = (ROOT / "include" / "trainprof.h").read_text()
    names = re.findall(r'#define TP_PHASE_\w+\s+"([a-z_]+)"', header)
    assert len(names) == 14
    found = [
        f"{f.relative_to(ROOT)}: {n}"
        for f in sorted((ROOT / "src").rglob("*.[ch]"))
        for n in names
        if f'"{n}"' in f.read_text()
    ]
    torch_common = (ROOT / "python" / "trainprof" / "patches" / "common.py").read_text()
    found += [f"patches/common.py: {n}" for n in names if f'region("{n}")' in torch_common]
    assert found == []


def tree_with_docs(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "contributing.md", tmp_path / "docs")
    (tmp_path / "src" / "analyze").mkdir(parents=True)
    return tmp_path


def test_a_circle_of_calls_between_files_is_named(tmp_path):
    """Two files that include nothing of each other but call each other's
    functions: the objects' symbols (nm) show the circle the includes hide."""
    root = tree_with_docs(tmp_path)
    (root / "src" / "analyze" / "a.c").write_text(
        "int b_fn(int);\nint a_fn(int x);\nint a_fn(int x) { return x ? b_fn(x - 1) : 0; }\n"
    )
    (root / "src" / "analyze" / "b.c").write_text(
        "int a_fn(int);\nint b_fn(int x);\nint b_fn(int x) { return x ? a_fn(x - 1) : 1; }\n"
    )
    (root / "src" / "analyze" / "c.c").write_text(
        "int a_fn(int);\nint c_fn(void);\nint c_fn(void) { return a_fn(3); }\n"
    )
    build = root / "build"
    build.mkdir()
    commands = []
    for name in ("a", "b", "c"):
        source, obj = root / "src" / "analyze" / f"{name}.c", build / f"{name}.o"
        subprocess.run(["cc", "-c", str(source), "-o", str(obj)], check=True)
        commands.append({"directory": str(build), "file": str(source), "output": str(obj)})
    (build / "compile_commands.json").write_text(json.dumps(commands))
    r = subprocess.run(
        CHECK + ["--root", str(root), "--build", str(build)], capture_output=True, text=True
    )
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["a cycle of calls between src/analyze/a, src/analyze/b"]


def test_a_new_function_over_80_lines_and_a_listed_one_grown_are_named(tmp_path):
    root = tree_with_docs(tmp_path)
    body = "    int x = 0;\n" + "    x++;\n" * 80
    (root / "src" / "analyze" / "long.c").write_text(
        "int long_fn(void);\nint long_fn(void)\n{\n" + body + "    return x;\n}\n"
        "int short_fn(void);\nint short_fn(void)\n{\n    return 1;\n}\n"
        "int listed_fn(void);\nint listed_fn(void)\n{\n" + body + "    return x;\n}\n"
    )
    (root / "tools").mkdir()
    (root / "tools" / "long_functions.txt").write_text(
        "# to split\nsrc/analyze/long.c listed_fn 82\n"
    )
    r = subprocess.run(CHECK + ["--root", str(root)], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "src/analyze/long.c: long_fn is 82 lines long, over 80: split it"
    ]
    (root / "tools" / "long_functions.txt").write_text(
        "src/analyze/long.c listed_fn 81\nsrc/analyze/long.c long_fn 82\n"
    )
    r = subprocess.run(CHECK + ["--root", str(root)], capture_output=True, text=True)
    assert r.stdout.splitlines() == [
        "src/analyze/long.c: listed_fn grew to 82 lines (81 listed in tools/long_functions.txt, "
        "over 80): split it"
    ]


def test_a_comment_left_over_another_is_named(tmp_path):
    """Code moved away from under its comment leaves two comments back to
    back; the file's own opening comment and a section's (a blank line
    after it) are not that."""
    root = tree_with_docs(tmp_path)
    (root / "src" / "analyze" / "moved.c").write_text(
        "/* moved.c: the file's own comment. */\n"
        "/* Its first function's. */\n"
        "int first(void);\n\n"
        "/* A section. */\n\n"
        "/* What second does. */\n"
        "/* What a function moved elsewhere did,\n"
        " * over two lines. */\n"
        "/* What third does. */\n"
        "int third(void);\n"
    )
    r = subprocess.run(CHECK + ["--root", str(root)], capture_output=True, text=True)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines == [
        f"src/analyze/moved.c:{n}: a comment right under another: one of them is "
        "over the wrong thing"
        for n in (8, 10)
    ]


def test_every_module_of_the_package_is_installed():
    """meson.build names the package's modules one by one: a module added to
    python/trainprof and not named there is missing from the installed
    package (and the wheels), which a working tree hides where the module
    was copied by hand. Every module of the tree is in the package the tests
    run."""
    import importlib.util

    installed = pathlib.Path(importlib.util.find_spec("trainprof").submodule_search_locations[0])
    tree = ROOT / "python" / "trainprof"
    missing = [
        str(p.relative_to(tree))
        for p in sorted(tree.rglob("*.py"))
        if "__pycache__" not in p.parts and not (installed / p.relative_to(tree)).is_file()
    ]
    assert installed != tree and missing == [], missing
