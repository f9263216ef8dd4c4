/* text_parse.c: cursor-based parsing of kernel text files. */
#include "util/text_parse.h"

#include <string.h>

const char *tp_skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

const char *tp_next_line(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    return nl ? nl + 1 : end;
}

bool tp_parse_u64(const char **p, const char *end, uint64_t *out)
{
    const char *q = tp_skip_blanks(*p, end);
    if (q >= end || *q < '0' || *q > '9')
        return false;
    uint64_t v = 0;
    while (q < end && *q >= '0' && *q <= '9') {
        uint64_t d = (uint64_t)(*q - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
        q++;
    }
    *out = v;
    *p = q;
    return true;
}

bool tp_parse_i64(const char **p, const char *end, int64_t *out)
{
    const char *q = tp_skip_blanks(*p, end);
    bool neg = q < end && *q == '-';
    if (neg)
        q++;
    uint64_t v;
    if (!tp_parse_u64(&q, end, &v) || v > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    *p = q;
    return true;
}

bool tp_parse_word(const char **p, const char *end, const char **word, size_t *len)
{
    const char *q = tp_skip_blanks(*p, end);
    const char *start = q;
    while (q < end && *q != ' ' && *q != '\t' && *q != '\n')
        q++;
    if (q == start)
        return false;
    *word = start;
    *len = (size_t)(q - start);
    *p = q;
    return true;
}

bool tp_word_is(const char *w, size_t len, const char *s)
{
    return strlen(s) == len && memcmp(w, s, len) == 0;
}

void tp_word_copy(char *dst, size_t cap, const char *w, size_t len)
{
    if (cap == 0)
        return;
    if (len >= cap)
        len = cap - 1;
    memcpy(dst, w, len);
    dst[len] = '\0';
}

bool tp_parse_epoch_ns(const char *text, int64_t *out)
{
    const int64_t latest = 4102444800000000000LL; /* 2100-01-01 UTC */
    const char *p = text ? text : "", *end = p + strlen(p);
    *out = 0;
    int64_t v;
    if (!tp_parse_i64(&p, end, &v) || p != end || v < 0 || v > latest)
        return false;
    *out = v;
    return true;
}
