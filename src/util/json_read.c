/* json_read.c: a strict reader for flat objects and arrays of strings. */
#include "util/json_read.h"

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Reads the string literal at p into out (room for strlen(p) + 1: a decoded
 * string is never longer than its literal); returns the character after its
 * closing quote, or NULL when p holds no valid string. A \u escape of a lone
 * surrogate becomes U+FFFD. */
static const char *read_string(const char *p, char *out)
{
    if (*p++ != '"')
        return NULL;
    size_t n = 0;
    for (;;) {
        unsigned char c = (unsigned char)*p++;
        if (c == '"')
            break;
        if (c < 0x20) /* NUL (the end) and unescaped control characters */
            return NULL;
        if (c != '\\') {
            out[n++] = (char)c;
            continue;
        }
        char e = *p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            out[n++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            continue;
        }
        if (e != 'u')
            return NULL;
        uint32_t cp = 0;
        for (int i = 0; i < 4; i++) {
            int h = hex_value(*p++);
            if (h < 0)
                return NULL;
            cp = cp << 4 | (uint32_t)h;
        }
        if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff)) /* no NUL; pairs are not needed here */
            cp = 0xfffd;
        n += tp_utf8_encode(cp, out + n); /* at most 3 bytes for the 6 of \uXXXX */
    }
    out[n] = '\0';
    return p;
}

/* The one reader of both shapes: json must be open, then strings (each,
 * for an object, a "key": "value" pair) separated by commas, then close and
 * nothing more. Calls pair (object) or item (array) for each. */
static bool each_string(const char *json, char open, char close, tp_json_pair_fn pair,
                        tp_json_item_fn item, void *ctx)
{
    if (!json)
        return false;
    size_t len = strlen(json);
    char *key = malloc(len + 1), *value = malloc(len + 1);
    const char *p = skip_space(json);
    bool ok = key && value && *p++ == open;
    for (bool first = true; ok && *(p = skip_space(p)) != close; first = false) {
        if (!first && *p++ != ',')
            ok = false;
        else if (pair && (!(p = read_string(skip_space(p), key)) || *(p = skip_space(p)) != ':' ||
                          !(p = read_string(skip_space(p + 1), value))))
            ok = false;
        else if (!pair && !(p = read_string(skip_space(p), value)))
            ok = false;
        else if (pair)
            pair(ctx, key, value);
        else
            item(ctx, value);
    }
    ok = ok && *skip_space(p + 1) == '\0';
    free(key);
    free(value);
    return ok;
}

bool tp_json_flat_object(const char *json, tp_json_pair_fn fn, void *ctx)
{
    return each_string(json, '{', '}', fn, NULL, ctx);
}

bool tp_json_string_array(const char *json, tp_json_item_fn fn, void *ctx)
{
    return each_string(json, '[', ']', NULL, fn, ctx);
}
