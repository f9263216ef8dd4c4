/* json_writer.c: streaming JSON with automatic commas. */
#include "util/json_writer.h"

#include <math.h>

void json_init(json_writer *w, FILE *out)
{
    w->out = out;
    w->depth = 0;
    w->after_key = false;
    w->has_items[0] = false;
}

/* Emits the separator a new value needs at the current position. */
static void before_value(json_writer *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->has_items[w->depth])
        fputc(',', w->out);
    w->has_items[w->depth] = true;
}

static void open_scope(json_writer *w, char c)
{
    before_value(w);
    fputc(c, w->out);
    if (w->depth + 1 < JSON_MAX_DEPTH)
        w->depth++;
    w->has_items[w->depth] = false;
}

static void close_scope(json_writer *w, char c)
{
    fputc(c, w->out);
    if (w->depth > 0)
        w->depth--;
}

void json_object_begin(json_writer *w) { open_scope(w, '{'); }
void json_object_end(json_writer *w) { close_scope(w, '}'); }
void json_array_begin(json_writer *w) { open_scope(w, '['); }
void json_array_end(json_writer *w) { close_scope(w, ']'); }

void json_write_escaped(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

void json_key(json_writer *w, const char *key)
{
    before_value(w);
    json_write_escaped(w->out, key);
    fputc(':', w->out);
    w->after_key = true;
}

void json_string(json_writer *w, const char *s)
{
    before_value(w);
    if (!s)
        fputs("null", w->out);
    else
        json_write_escaped(w->out, s);
}

void json_double(json_writer *w, double v)
{
    before_value(w);
    if (!isfinite(v))
        fputs("null", w->out);
    else
        fprintf(w->out, "%.15g", v);
}

void json_int(json_writer *w, int64_t v)
{
    before_value(w);
    fprintf(w->out, "%lld", (long long)v);
}

void json_bool(json_writer *w, bool v)
{
    before_value(w);
    fputs(v ? "true" : "false", w->out);
}

void json_null(json_writer *w)
{
    before_value(w);
    fputs("null", w->out);
}

void json_raw(json_writer *w, const char *json)
{
    before_value(w);
    fputs(json, w->out);
}
