"""Runs code right after a module is imported, by whoever imports it, so that
trainprof imports nothing the script would not: PyTorch is instrumented once
the script imports torch, and the parts that need torch._dynamo or torch's
functional collectives wait for the script to import those (torch._dynamo
alone is 800 modules and a second of start-up). Imports no more than the
interpreter's own import machinery."""

import importlib.abc
import importlib.util
import sys

_waiting = {}  # module name -> [callbacks], each run once, after that module's code
_finding = set()  # names this finder is asking the others for now


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a module it waits on, it asks the finders
    after it for the spec and makes the spec's loader run the callbacks once
    the module's code has run. A callback that raises costs its own work
    only, with a warning: the script's import goes on."""

    def find_spec(self, name, path=None, target=None):
        if name not in _waiting or name in _finding:
            return None
        _finding.add(name)  # the finders after this one: not this one again
        try:
            spec = importlib.util.find_spec(name)
        finally:
            _finding.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_call(module):
            exec_module(module)
            # taken only now: a find_spec alone (an availability check such
            # as Lightning's RequirementCache) imports nothing
            callbacks = _waiting.pop(name, [])
            if not _waiting and self in sys.meta_path:
                sys.meta_path.remove(self)
            for callback in callbacks:
                try:
                    callback(module)
                except Exception as e:  # noqa: BLE001 - said below; the training must go on
                    print(f"trainprof: warning: instrumenting {name} failed: {e}", file=sys.stderr)

        spec.loader.exec_module = exec_then_call
        return spec


_finder = _AfterImport()


def after_import(name, callback):
    """Calls callback(module) once module `name` has been imported: now, if it
    already is, else right after its code has run (before the import that
    asked for it returns)."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    _waiting.setdefault(name, []).append(callback)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
