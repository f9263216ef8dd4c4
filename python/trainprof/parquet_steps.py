"""The steps of `export --format parquet` (trainprof.parquet) as the report
counts them: each thread's steps from its marks, and their kinds as
analyze/step_kinds.c settles them (warm-up, profiled, stalled), so that a
fleet's engine counts the steps the report counts. Pure Python over rows:
trainprof.parquet reads them from SQLite."""

import bisect

WARMUP_SLOW = 2.0  # analyze/step_kinds.h's TP_WARMUP_SLOW
STALL_MIN_S, STALL_STEPS, STALL_FIRST_STEP_S = 30.0, 10.0, 600.0  # core/stall_rule.h


def _overlaps(spans, thread, a, b):
    starts, ends = spans.get(thread, ((), ()))
    i = bisect.bisect_left(starts, b)  # the spans starting before b
    return any(ends[k] > a for k in range(max(0, i - 64), i))


STEP_COLUMNS = (
    "agent",
    "pid",
    "tid",
    "rank",
    "epoch",
    "step",
    "start_s",
    "end_s",
    "duration_s",
    "samples",
    "batches",
    "warmup",
    "profiled",
    "stalled",
)


def thread_steps(marks, windows, compiles):
    """One thread's steps (rows of STEP_COLUMNS but the last: settle_kinds
    makes the flags the report's) from its marks (rows of trainprof.parquet's MARKS_SQL), flagged
    for the compile warm-up and for the capture windows they overlap."""
    out, open_step, epoch, number, warming = [], None, None, 0, True
    for agent, pid, tid, rank, thread, kind, t, value in marks:
        if kind == 6:  # samples
            if open_step is not None and isinstance(value, int):
                open_step = (open_step[0], open_step[1] + value, open_step[2] + 1)
        elif kind == 4:  # epoch: no step across its mark
            epoch, open_step = value, None
        elif t is not None:  # a step or step_end mark (any other kind reads as a step)
            if open_step is not None:
                start, samples, batches = open_step
                number += 1
                warming = warming and _overlaps(compiles, thread, start, t)
                out.append(
                    [
                        agent,
                        pid,
                        tid,
                        rank,
                        epoch,
                        number,
                        start / 1e9,
                        t / 1e9,
                        (t - start) / 1e9,
                        samples,
                        batches,
                        warming,
                        _overlaps(windows, thread, start, t),
                    ]
                )
            open_step = (t, 0, 0) if kind != 9 else None
    return out


def _p50(values):
    """The median as core/stats.c takes it (interpolated at (n - 1) / 2)."""
    v = sorted(values)
    pos = 0.5 * (len(v) - 1)
    lo = int(pos)
    return v[lo] if lo + 1 >= len(v) else v[lo] + (v[lo + 1] - v[lo]) * (pos - lo)


def _stall_threshold(stall_after_s, durations):
    """core/stall_rule.h's: record's --stall-after, else ten median steps
    and at least 30 s, else (no step) 10 minutes."""
    if stall_after_s > 0:
        return stall_after_s
    median = _p50(durations) if durations else 0
    return max(STALL_STEPS * median, STALL_MIN_S) if median > 0 else STALL_FIRST_STEP_S


def settle_kinds(threads, stall_after_s):
    """A rank's steps (each thread's, from thread_steps) given the report's
    kinds (analyze/step_kinds.c): a compile's steps are warm-up, or profiled
    where a window ran in them; after them a step longer than the stall
    threshold stalled, one a window ran in is profiled; of the rest, a
    thread's first ones that each took more than WARMUP_SLOW times their
    median are warm-up too, at most a tenth of them, none after a window's;
    where no step is left, none is warm-up."""
    stall_s = _stall_threshold(stall_after_s, [row[8] for rows in threads for row in rows])
    after_window = []  # each thread's: whether a window's step came at or before each
    for rows in threads:
        windowed, flags = False, []
        for row in rows:
            warming, in_window = row[11], row[12]
            windowed = windowed or in_window
            flags.append(windowed)
            stalled = not warming and row[8] > stall_s
            row[11:13] = [warming and not in_window, in_window and not stalled]
            row.append(stalled)
        after_window.append(flags)
    steady = [row[8] for rows in threads for row in rows if not any(row[11:14])]
    if not steady:  # every step compiled: none is warm-up (analyze/timings.c)
        for rows in threads:
            for row in rows:
                row[11] = False
    if len(steady) < 3:
        return
    median, room = _p50(steady), max(1, len(steady) // 10)
    for rows, flags in zip(threads, after_window):
        leading = True
        for row, windowed in zip(rows, flags):
            if any(row[11:14]):
                continue
            leading = leading and room > 0 and not windowed
            leading = leading and row[8] > WARMUP_SLOW * median
            if leading:
                row[11], room = True, room - 1
