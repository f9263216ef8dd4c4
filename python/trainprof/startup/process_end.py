"""How this process ends, told to the recorder (lib/facts.h's process facts):
an uncaught exception's type, message and innermost frames, taken as the
interpreter hands them to sys.excepthook (the hook that was there then runs
right after, so what the script prints and its exit status stay its own);
and, in a process that trained, that the interpreter shut down normally
(an atexit handler, the last to run). A process that ended without either
died of a signal, os._exit or a crash; the recorder reads its exit status
where the kernel still has it. Nothing is imported for it."""

import atexit
import sys

from trainprof import _native
from trainprof.runtime import device_memory as _device_memory

_TEXT_MAX = 200  # of a fact's 256 bytes, its key and "=" aside


def _printable(text, limit=_TEXT_MAX):
    """text as printable ASCII (other characters escaped), at most limit."""
    out = str(text).encode("ascii", "backslashreplace").decode("ascii")
    out = "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" for c in out)
    return out[:limit]


def _where(tb):
    """The innermost frames of a traceback, "file:line function" innermost
    first, joined by " < ", as many as fit."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append(
            f"{code.co_filename}:{tb.tb_lineno} {getattr(code, 'co_qualname', code.co_name)}"
        )
        tb = tb.tb_next
    text = ""
    for frame in reversed(frames):
        part = (" < " if text else "") + _printable(frame, 120)
        if len(text) + len(part) > _TEXT_MAX:
            break
        text += part
    return text


def _send(key, value):
    try:
        _native.fact(f"{key}={value}")
    except Exception:  # noqa: BLE001 - never change how the script ends (not even its stderr)
        pass


def _hook(previous):
    def excepthook(kind, value, tb):
        try:
            name = (
                kind.__qualname__
                if kind.__module__ == "builtins"
                else f"{kind.__module__}.{kind.__qualname__}"
            )
            _send("exception.type", _printable(name))
            _send("exception.message", _printable(value))
            _send("exception.where", _where(tb))
            message = str(value)
            if _device_memory.is_out_of_memory(name, message):
                _device_memory.read()  # the allocator's figures as it gave up
                tried, free = _device_memory.out_of_memory_figures(message)
                if tried is not None:
                    _send("exception.oom_tried_bytes", tried)
                if free is not None:
                    _send("exception.oom_free_bytes", free)
        except Exception:  # noqa: BLE001 - never change how the script ends (not even its stderr)
            pass
        previous(kind, value, tb)

    excepthook.__trainprof__ = True
    return excepthook


def _exited():
    if "trainprof.torch" in sys.modules:  # a process that trained: the others have no ring
        _send("process.exit", "python")


def install():
    if not getattr(sys.excepthook, "__trainprof__", False):
        sys.excepthook = _hook(sys.excepthook)
    atexit.register(_exited)
