/* utf8.c: decoding and cleaning UTF-8. */
#include "util/utf8.h"

#include <string.h>

size_t tp_utf8_decode(const unsigned char *s, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len = c < 0x80                 ? 1
                 : c >= 0xc2 && c <= 0xdf ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    if (len == 1) {
        *cp = c;
        return 1;
    }
    uint32_t v = len == 2 ? c & 0x1fu : len == 3 ? c & 0x0fu : c & 0x07u;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) { /* NUL included: a sequence cut short */
            len = 0;
            break;
        }
        v = v << 6 | (s[i] & 0x3fu);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (len == 0 || v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        *cp = 0xfffd;
        return 1;
    }
    *cp = v;
    return len;
}

size_t tp_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

void tp_utf8_clean(char *out, size_t cap, const char *in)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)(in ? in : "");
    while (*p) {
        uint32_t cp;
        size_t len = tp_utf8_decode(p, &cp);
        char buf[4];
        size_t w = tp_utf8_encode(cp, buf);
        if (n + w >= cap)
            break;
        memcpy(out + n, buf, w);
        n += w;
        p += len;
    }
    out[n] = '\0';
}

void tp_text_write_safe(FILE *out, const char *text)
{
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    while (*p) {
        uint32_t cp;
        size_t len = tp_utf8_decode(p, &cp);
        if ((cp < 0x20 && cp != '\n') || (cp >= 0x7f && cp < 0xa0)) {
            fprintf(out, "\\x%02x", (unsigned)cp);
        } else {
            char buf[4];
            fwrite(buf, 1, tp_utf8_encode(cp, buf), out);
        }
        p += len;
    }
}

void tp_text_escape(char *out, size_t cap, const char *in)
{
    const unsigned char *p = (const unsigned char *)(in ? in : "");
    size_t len = 0;
    while (*p) {
        uint32_t cp;
        size_t n = tp_utf8_decode(p, &cp);
        char buf[8];
        size_t k = (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
                       ? (size_t)snprintf(buf, sizeof buf, "\\x%02x", (unsigned)cp)
                       : tp_utf8_encode(cp, buf);
        if (len + k >= cap)
            break; /* cut before a character (or an escape) that doesn't fit */
        memcpy(out + len, buf, k);
        len += k;
        p += n;
    }
    out[len] = '\0';
}

void tp_utf8_cut(char *s, size_t chars)
{
    size_t i = 0;
    for (size_t n = 0; s[i] && n < chars; n++) {
        uint32_t cp;
        i += tp_utf8_decode((const unsigned char *)s + i, &cp);
    }
    s[i] = '\0';
}
