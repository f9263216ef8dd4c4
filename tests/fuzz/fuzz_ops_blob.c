/* fuzz_ops_blob.c: libFuzzer target for the recorder's reading of a capture
 * window a training process sends (record/ops_blob.c): bytes the process
 * wrote, trusted in nothing. A window that parses must hold only what it
 * says: every event's name and shapes a string it has, every string valid
 * UTF-8, times non-negative and not overflowing. A crash, a sanitizer
 * report, a leak or a failed check is a finding; a refusal is not.
 * Seeds: tests/fuzz/ops_seed.py's blobs, laid out as trainprof/_ops.py's. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/ops_blob.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        size_t n = tp_utf8_decode(p, &cp);
        if (!n || cp > 0x10FFFF)
            return false;
        p += n;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[200];
    tp_ops_window *w = tp_ops_blob_parse(data, size, why, sizeof why);
    if (!w)
        return 0;
    for (uint32_t i = 0; i < w->nstrings; i++)
        if (!w->strings[i] || !valid_utf8(w->strings[i]))
            abort();
    for (uint32_t i = 0; i < w->nevents; i++) {
        const tp_op_event *e = &w->events[i];
        if (e->name >= w->nstrings || (e->shapes != UINT32_MAX && e->shapes >= w->nstrings) ||
            e->start_ns < 0 || e->dur_ns < 0 || e->start_ns > INT64_MAX - e->dur_ns ||
            e->kind < TP_OP_CPU || e->kind >= TP_OP_KINDS)
            abort();
    }
    if (w->end_ns < w->start_ns)
        abort();
    tp_ops_window_free(w);
    return 0;
}
