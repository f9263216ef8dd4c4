"""Loaded at interpreter start by trainprof-autoload.pth, only under
``trainprof record`` (TRAINPROF_SOCKET set): instruments PyTorch right after
it is imported. TRAINPROF_AUTO=0 turns this off. Never raises."""

import importlib.abc
import importlib.util
import os
import sys


class _TorchImportHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_instrument(module):
            exec_module(module)
            try:
                from trainprof import torch as tp_torch

                tp_torch.instrument()
            except Exception as e:  # the training must go on
                print(f"trainprof: warning: PyTorch auto-instrumentation failed: {e}",
                      file=sys.stderr)

        spec.loader.exec_module = exec_and_instrument
        return spec


def _install():
    if os.environ.get("TRAINPROF_AUTO", "1") == "0":
        return
    if "torch" in sys.modules:
        from trainprof import torch as tp_torch

        tp_torch.instrument()
    else:
        sys.meta_path.insert(0, _TorchImportHook())


try:
    _install()
except Exception:
    pass
