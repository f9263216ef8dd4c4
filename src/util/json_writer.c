/* json_writer.c: streaming JSON with automatic commas. */
#include "util/json_writer.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "util/utf8.h"

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

/* The literal of s (quotes included unless !quotes), at most max bytes of it (cut on a
 * character boundary), into out: valid UTF-8 whatever s holds (invalid
 * bytes as U+FFFD), quotes, backslashes and control characters escaped. */
static void escape_into(FILE *out, const char *s, size_t max, bool quotes)
{
    if (quotes)
        fputc('"', out);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    for (size_t used = 0; *p;) {
        uint32_t cp;
        size_t len = tp_utf8_decode(p, &cp);
        if (used + len > max)
            break;
        used += len;
        p += len;
        switch (cp) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (cp < 0x20 || cp == 0x7f) {
                fprintf(out, "\\u%04x", (unsigned)cp);
            } else {
                char buf[4];
                fwrite(buf, 1, tp_utf8_encode(cp, buf), out);
            }
        }
    }
    if (quotes)
        fputc('"', out);
}

void json_write_escaped(FILE *out, const char *s) { escape_into(out, s, SIZE_MAX, true); }

void json_write_escaped_part(FILE *out, const char *s) { escape_into(out, s, SIZE_MAX, false); }

void tp_json_quote(char *buf, size_t cap, const char *s, size_t max)
{
    FILE *mem = fmemopen(buf, cap, "w");
    if (!mem) {
        snprintf(buf, cap, "null");
        return;
    }
    escape_into(mem, s, max, true);
    bool fits = fputc('\0', mem) != EOF && fflush(mem) == 0 && ftell(mem) <= (long)cap;
    fclose(mem);
    if (!fits || !memchr(buf, '\0', cap))
        snprintf(buf, cap, "null");
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

void json_double_fixed(json_writer *w, double v, int digits)
{
    before_value(w);
    if (!isfinite(v))
        fputs("null", w->out);
    else
        fprintf(w->out, "%.*f", digits, v);
}

void json_field_double(json_writer *w, const char *key, double v)
{
    json_key(w, key);
    json_double(w, v);
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
