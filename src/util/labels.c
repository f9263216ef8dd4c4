/* labels.c: building label JSON objects without a JSON library. */
#include "util/labels.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Appends s as a JSON string literal at buf+*len, never overflowing cap. */
static void append_string(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = *len;
    if (n + 1 < cap)
        buf[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\')
            snprintf(esc, sizeof esc, "\\%c", *p);
        else if (*p < 0x20)
            snprintf(esc, sizeof esc, "\\u%04x", *p);
        else
            snprintf(esc, sizeof esc, "%c", *p);
        size_t el = strlen(esc);
        if (n + el + 1 >= cap)
            break;
        memcpy(buf + n, esc, el);
        n += el;
    }
    if (n + 1 < cap)
        buf[n++] = '"';
    buf[n < cap ? n : cap - 1] = '\0';
    *len = n;
}

static void append_char(char *buf, size_t cap, size_t *len, char c)
{
    if (*len + 1 < cap) {
        buf[(*len)++] = c;
        buf[*len] = '\0';
    }
}

void tp_labels2(char *buf, size_t cap, const char *k1, const char *v1, const char *k2,
                const char *v2)
{
    size_t len = 0;
    buf[0] = '\0';
    append_char(buf, cap, &len, '{');
    if (k1) {
        append_string(buf, cap, &len, k1);
        append_char(buf, cap, &len, ':');
        append_string(buf, cap, &len, v1);
    }
    if (k2) {
        append_char(buf, cap, &len, ',');
        append_string(buf, cap, &len, k2);
        append_char(buf, cap, &len, ':');
        append_string(buf, cap, &len, v2);
    }
    append_char(buf, cap, &len, '}');
}

void tp_labels1(char *buf, size_t cap, const char *key, const char *value)
{
    tp_labels2(buf, cap, key, value, NULL, NULL);
}

void tp_labels_display(const char *json, char *out, size_t cap)
{
    size_t n = 0;
    bool in_string = false;
    for (const char *p = json; *p && n + 1 < cap; p++) {
        char c = *p;
        if (c == '\\' && in_string && p[1]) {
            out[n++] = *++p;
            continue;
        }
        if (c == '"') {
            in_string = !in_string;
            continue;
        }
        if (!in_string && (c == '{' || c == '}'))
            continue;
        out[n++] = (!in_string && c == ':') ? '=' : c;
    }
    out[n] = '\0';
}
