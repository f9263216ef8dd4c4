#!/usr/bin/env python3
"""Holds the include graph of src/, lib/, include/ and the Python extension to
the layer order written in docs/contributing.md (its ```layers block), and
fails on any cycle between modules (a module: NAME.c with NAME.h): of
includes, and of calls (a module that calls a function another defines,
read from the build's objects with nm, where the build's
compile_commands.json is there: BUILD, build/ by default). Fails as well on
a function over 80 lines that tools/long_functions.txt does not list, or
longer than it lists it (the list is of those to split, and only shrinks),
and on two comments at the start of a line back to back (no code or blank
line between): one of them was left over the wrong thing when code moved.

A file's layer is its directory under src/ (src/collect/cpu.c: collect), cmd
for the commands (src/*.c), lib for lib/, include/ and python/trainprof/*.c
(what runs inside the training). A layer may include itself and any layer
on a line above its own; layers on one line are siblings and may not
include each other. A module is NAME.c with NAME.h, and NAME_internal.h (its
state, shared with the other files that implement it). Prints one line per finding; exit status 1 if any.
usage: check_layers.py [--root TREE] [--build BUILD]"""

import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "contributing.md"
GENERATED = {"trainprof_version.h", "analysis_id.h"}  # made by the build (meson.build)


def read_order():
    """[[layer, ...] per line, bottom first] from the doc's ```layers block."""
    m = re.search(r"```layers\n(.*?)```", DOC.read_text(), re.S)
    if not m:
        sys.exit(f"{DOC}: no ```layers block")
    lines = [line.split("#")[0].split() for line in m.group(1).splitlines()]
    return [line for line in lines if line][::-1]  # the block lists the top first


def layer_of(path):
    rel = path.relative_to(ROOT)
    if rel.parts[0] in ("lib", "include", "python"):
        return "lib"
    return "cmd" if len(rel.parts) == 2 else rel.parts[1]


def sources():
    for pattern in ("src/**/*.[ch]", "lib/*.[ch]", "include/*.h", "python/trainprof/*.c"):
        yield from sorted(ROOT.glob(pattern))


def resolve(path, name):
    if layer_of(path) == "lib":
        bases = [path.parent, ROOT / "lib", ROOT / "include"]
    else:
        bases = [ROOT / "src", path.parent, ROOT / "lib", ROOT / "include"]
    for base in bases:
        if (base / name).exists():
            return (base / name).resolve()
    return None


def module_of(rel):
    """A file's module: its path without the suffix, and without an
    "_internal" ending (X_internal.h is X's own state, shared by X's files)."""
    return re.sub(r"_internal$", "", str(rel.with_suffix("")))


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


LONG_LIMIT = 80


def long_functions():
    """(path, function, body lines) of each function whose body (from its
    opening brace at column 0 to its closing one) is over LONG_LIMIT."""
    found = []
    for pattern in ("src/**/*.c", "lib/*.c", "python/trainprof/*.c"):
        for path in sorted(ROOT.glob(pattern)):
            lines = path.read_text().splitlines()
            for i, line in enumerate(lines):
                if line != "{" or i == 0:
                    continue
                j = i - 1
                while j > 0 and "(" not in lines[j]:
                    j -= 1
                m = re.search(r"(\w+)\s*\(", lines[j])
                end = i + 1
                while end < len(lines) and lines[end] != "}":
                    end += 1
                if end - i - 1 > LONG_LIMIT:
                    found.append(
                        (str(path.relative_to(ROOT)), m.group(1) if m else "?", end - i - 1)
                    )
    return found


def long_function_findings():
    listed = {}
    known = ROOT / "tools" / "long_functions.txt"
    if known.exists():
        for line in known.read_text().splitlines():
            parts = line.split("#")[0].split()
            if len(parts) == 3:
                listed[(parts[0], parts[1])] = int(parts[2])
    findings = []
    for path, name, n in long_functions():
        most = listed.get((path, name))
        if most is None:
            findings.append(f"{path}: {name} is {n} lines long, over {LONG_LIMIT}: split it")
        elif n > most:
            findings.append(
                f"{path}: {name} grew to {n} lines ({most} listed in "
                f"tools/long_functions.txt, over {LONG_LIMIT}): split it"
            )
    return findings


def stacked_comments():
    """(path, line) of each comment at a line's start that follows another's
    end directly, past a file's opening comment."""
    found = []
    for pattern in ("src/**/*.[ch]", "lib/*.[ch]", "include/*.h", "python/trainprof/*.[ch]"):
        for path in sorted(ROOT.glob(pattern)):
            lines = path.read_text().splitlines()
            i, prev_start, prev_end = 0, None, None
            while i < len(lines):
                if lines[i].startswith("/*"):
                    j = i
                    while j < len(lines) - 1 and "*/" not in lines[j]:
                        j += 1
                    if prev_start and prev_end + 1 == i:  # the file's own comment aside
                        found.append((str(path.relative_to(ROOT)), i + 1))
                    prev_start, prev_end, i = i, j, j + 1
                else:
                    i += 1
    return found


def call_graph(build):
    """module -> modules whose functions or data it uses, from the objects
    compile_commands.json names (nm); None without a build."""
    commands = build / "compile_commands.json"
    if not commands.exists():
        return None
    defined, used = {}, {}
    for entry in json.loads(commands.read_text()):
        source = (pathlib.Path(entry["directory"]) / entry["file"]).resolve()
        try:
            rel = source.relative_to(ROOT)
        except ValueError:
            continue
        obj = pathlib.Path(entry["directory"]) / entry["output"]
        if rel.parts[0] not in ("src", "lib", "python") or not obj.exists():
            continue
        module = module_of(rel)
        out = subprocess.run(["nm", "-g", str(obj)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                used.setdefault(module, set()).add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRCV":
                defined.setdefault(parts[2], module)
    graph = {}
    for module, symbols in used.items():
        for sym in symbols:
            to = defined.get(sym)
            if to and to != module:
                graph.setdefault(module, set()).add(to)
    return graph


def main():
    global ROOT, DOC
    args = sys.argv[1:]
    build = None
    while len(args) >= 2 and args[0] in ("--root", "--build"):
        if args[0] == "--root":  # another tree (the tests')
            ROOT = pathlib.Path(args[1]).resolve()
            DOC = ROOT / "docs" / "contributing.md"
        else:
            build = pathlib.Path(args[1]).resolve()
        args = args[2:]
    build = build or ROOT / "build"
    order = read_order()
    level = {name: i for i, line in enumerate(order) for name in line}
    findings, graph = [], {}
    for path in sources():
        layer = layer_of(path)
        rel = path.relative_to(ROOT)
        if layer not in level:
            findings.append(f"{rel}: layer {layer} is not in {DOC.name}'s order")
            continue
        module = module_of(rel)
        for no, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            if m.group(1) in GENERATED:
                continue
            target = resolve(path, m.group(1))
            if target is None:
                findings.append(f"{rel}:{no}: includes {m.group(1)}, which is not in the tree")
                continue
            to = layer_of(target)
            trel = target.relative_to(ROOT)
            if to not in level:
                continue
            if level[to] > level[layer] or (level[to] == level[layer] and to != layer):
                findings.append(
                    f"{rel}:{no}: {layer} includes {trel} ({to}), against the "
                    f"layer order of docs/contributing.md"
                )
            tmod = module_of(trel)
            if tmod != module:
                graph.setdefault(module, set()).add(tmod)
    for comp in cycles(graph):
        findings.append("a cycle of includes between " + ", ".join(comp))
    calls = call_graph(build)
    for comp in cycles(calls or {}):
        findings.append("a cycle of calls between " + ", ".join(comp))
    findings += long_function_findings()
    findings += [
        f"{p}:{n}: a comment right under another: one of them is over the wrong thing"
        for p, n in stacked_comments()
    ]
    for f in findings:
        print(f)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
