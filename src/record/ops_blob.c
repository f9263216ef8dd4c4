/* ops_blob.c: see ops_blob.h. */
#include "record/ops_blob.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/utf8.h"

static uint32_t u32_at(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int64_t i64_at(const uint8_t *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static tp_ops_window *refuse(tp_ops_window *w, char *why, size_t cap, const char *what)
{
    snprintf(why, cap, "%s", what);
    tp_ops_window_free(w);
    return NULL;
}

/* A text of len bytes at p, as the run keeps it: valid UTF-8, controls
 * escaped, at most TP_OPS_TEXT_MAX bytes once escaped (cut on a character
 * boundary). */
static char *clean_text(const uint8_t *p, uint32_t len)
{
    char raw[TP_OPS_TEXT_MAX + 1];
    size_t n = len < TP_OPS_TEXT_MAX ? len : TP_OPS_TEXT_MAX;
    memcpy(raw, p, n);
    raw[n] = '\0';
    char *out = malloc(TP_OPS_TEXT_MAX + 1);
    if (out)
        tp_text_escape(out, TP_OPS_TEXT_MAX + 1, raw);
    return out;
}

tp_ops_window *tp_ops_blob_parse(const uint8_t *buf, size_t len, char *why, size_t cap)
{
    if (len < TP_OPS_HEADER_BYTES || memcmp(buf, "TPOP", 4) != 0)
        return refuse(NULL, why, cap, "its capture window is not one (no TPOP header)");
    if (u32_at(buf + 4) != 1)
        return refuse(NULL, why, cap, "its capture window is of another version");
    tp_ops_window *w = calloc(1, sizeof *w);
    if (!w)
        return refuse(NULL, why, cap, "the recorder had no memory for its capture window");
    w->reason = u32_at(buf + 8);
    w->steps = u32_at(buf + 12);
    memcpy(&w->first_step, buf + 16, sizeof w->first_step);
    w->tid = (int32_t)u32_at(buf + 24);
    w->flags = u32_at(buf + 28);
    w->start_ns = i64_at(buf + 32);
    w->end_ns = i64_at(buf + 40);
    uint32_t nstrings = u32_at(buf + 48), strings_bytes = u32_at(buf + 52);
    uint32_t nevents = u32_at(buf + 56);
    w->dropped = u32_at(buf + 60);
    w->device_memory = i64_at(buf + 64);
    w->alloc_start = i64_at(buf + 72);
    uint32_t note = u32_at(buf + 80);
    w->skipped = u32_at(buf + 84) != 0;
    if (w->reason < 1 || w->reason > 3 || w->start_ns < 0 || w->end_ns < w->start_ns ||
        w->device_memory < 0 || w->first_step > (uint64_t)INT64_MAX - 1000)
        return refuse(w, why, cap, "its capture window's header is out of bounds");
    if (nevents > TP_OPS_EVENTS_MAX || nstrings > TP_OPS_STRINGS_MAX)
        return refuse(w, why, cap,
                      "its capture window holds more events or strings than a window may");
    size_t body = len - TP_OPS_HEADER_BYTES;
    if (strings_bytes > body || nevents > (body - strings_bytes) / TP_OPS_EVENT_BYTES ||
        (size_t)nevents * TP_OPS_EVENT_BYTES != body - strings_bytes ||
        nstrings > strings_bytes / 4 + 1)
        return refuse(w, why, cap, "its capture window's counts do not fit its size");
    w->strings = calloc(nstrings ? nstrings : 1, sizeof *w->strings);
    if (!w->strings)
        return refuse(w, why, cap, "the recorder had no memory for its capture window");
    const uint8_t *p = buf + TP_OPS_HEADER_BYTES, *end = p + strings_bytes;
    for (uint32_t i = 0; i < nstrings; i++) {
        if (end - p < 4 || u32_at(p) > (size_t)(end - p - 4))
            return refuse(w, why, cap, "its capture window's strings run past their bytes");
        uint32_t n = u32_at(p);
        w->strings[i] = clean_text(p + 4, n);
        w->nstrings = i + 1;
        if (!w->strings[i])
            return refuse(w, why, cap, "the recorder had no memory for its capture window");
        p += 4 + n;
    }
    if (p != end)
        return refuse(w, why, cap, "its capture window's strings do not fill their bytes");
    if (note != UINT32_MAX) {
        if (note >= w->nstrings)
            return refuse(w, why, cap, "its capture window names a string it does not have");
        w->note = strdup(w->strings[note]);
    }
    w->events = malloc((nevents ? nevents : 1) * sizeof *w->events);
    if (!w->events)
        return refuse(w, why, cap, "the recorder had no memory for its capture window");
    for (uint32_t i = 0; i < nevents; i++, p += TP_OPS_EVENT_BYTES) {
        tp_op_event *e = &w->events[i];
        e->kind = u32_at(p);
        e->name = u32_at(p + 4);
        e->shapes = u32_at(p + 8);
        e->thread = u32_at(p + 12);
        e->device = (int32_t)u32_at(p + 16);
        e->stream = i64_at(p + 24);
        e->start_ns = i64_at(p + 32);
        e->dur_ns = i64_at(p + 40);
        e->correlation = i64_at(p + 48);
        e->linked = i64_at(p + 56);
        e->value = i64_at(p + 64);
        if (e->kind < TP_OP_CPU || e->kind >= TP_OP_KINDS || e->name >= w->nstrings ||
            (e->shapes != UINT32_MAX && e->shapes >= w->nstrings) || e->start_ns < 0 ||
            e->dur_ns < 0 || e->dur_ns > INT64_MAX - e->start_ns)
            return refuse(w, why, cap, "its capture window holds an event out of bounds");
    }
    w->nevents = nevents;
    return w;
}

tp_ops_window *tp_ops_blob_read(int fd, char *why, size_t cap)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0 ||
        (uint64_t)sb.st_size > TP_OPS_BLOB_MAX) {
        snprintf(why, cap, "its capture window is not a file of at most %u MiB",
                 TP_OPS_BLOB_MAX >> 20);
        return NULL;
    }
    size_t len = (size_t)sb.st_size;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        snprintf(why, cap, "the recorder had no memory for its capture window");
        return NULL;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)got);
        if (n <= 0 && !(n < 0 && errno == EINTR))
            break;
        got += n > 0 ? (size_t)n : 0;
    }
    tp_ops_window *w = tp_ops_blob_parse(buf, got, why, cap);
    free(buf);
    return w;
}
