/* kernel_names.c: see kernel_names.h. */
#include "render/kernel_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

#ifdef TP_HAVE_CXA_DEMANGLE
/* The C++ runtime's demangler (libstdc++), declared here: the program is C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);
#endif

/* Longer mangled names are kept as they are: a run file is hostile, and the
 * demangler recurses on what it reads. */
#define DEMANGLE_MAX 1024

/* The outer name of a mangled name the demangler refused (CUPTI's are cut
 * at the run file's bound, mid-way through their template arguments):
 * "_ZN17cutlass__5x_cudnn6KernelI..." is "cutlass__5x_cudnn::Kernel<...>".
 * Reads <length><identifier> parts after "_ZN" (or the one after "_Z");
 * false where the name starts otherwise. */
static bool outer_name(char *out, size_t cap, const char *name)
{
    const char *p = name + 2;
    bool nested = *p == 'N';
    p += nested;
    size_t len = 0, parts = 0;
    out[0] = '\0';
    while (*p >= '1' && *p <= '9' && len < cap) {
        char *end;
        unsigned long n = strtoul(p, &end, 10);
        if (n == 0 || n > 512 || strnlen(end, n) < n)
            return false;
        len += (size_t)snprintf(out + len, cap - len, "%s%.*s", parts++ ? "::" : "", (int)n, end);
        p = end + n;
        if (!nested)
            break;
    }
    if (parts && *p == 'I' && len < cap)
        snprintf(out + len, cap - len, "<...>");
    return parts > 0;
}

void tp_kernel_demangled(char *out, size_t cap, const char *name)
{
    if (!cap)
        return;
    char outer[512];
#ifdef TP_HAVE_CXA_DEMANGLE
    if (strncmp(name, "_Z", 2) == 0 && strlen(name) <= DEMANGLE_MAX) {
        int status = -1;
        char *plain = __cxa_demangle(name, NULL, NULL, &status);
        if (plain && status == 0) {
            tp_utf8_clean(out, cap, plain);
            free(plain);
            return;
        }
        free(plain);
    }
#endif
    if (strncmp(name, "_Z", 2) == 0 && outer_name(outer, sizeof outer, name)) {
        tp_utf8_clean(out, cap, outer);
        return;
    }
    tp_utf8_clean(out, cap, name);
}

/* Removes every occurrence of what from s. */
static void remove_all(char *s, const char *what)
{
    size_t n = strlen(what);
    for (char *p; (p = strstr(s, what));)
        memmove(p, p + n, strlen(p + n) + 1);
}

/* The end of s's trailing parameter list, cut where it opens at depth 0. */
static void cut_parameters(char *s)
{
    size_t n = strlen(s);
    if (!n || s[n - 1] != ')')
        return;
    int depth = 0;
    for (size_t i = n; i-- > 0;) {
        depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
        if (depth == 0) {
            if (i > 0) /* "(anonymous namespace)" alone is no parameter list */
                s[i] = '\0';
            return;
        }
    }
}

/* s without its template arguments: every <...> at depth 0 removed. */
static void cut_templates(char *s)
{
    size_t w = 0;
    int depth = 0;
    for (size_t r = 0; s[r]; r++) {
        if (s[r] == '<')
            depth++;
        else if (s[r] == '>' && depth > 0)
            depth--;
        else if (depth == 0)
            s[w++] = s[r];
    }
    s[w] = '\0';
}

/* The index at or before i that starts a UTF-8 character of s. */
static size_t char_start(const char *s, size_t i)
{
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

void tp_kernel_short(char *out, size_t cap, const char *name, bool brief, size_t width)
{
    char s[1024];
    tp_kernel_demangled(s, sizeof s, name);
    if (strncmp(s, "void ", 5) == 0)
        memmove(s, s + 5, strlen(s + 5) + 1);
    cut_parameters(s);
    remove_all(s, "(anonymous namespace)::");
    if (brief)
        cut_templates(s);
    size_t n = strlen(s);
    if (width < 8 || n <= width) {
        snprintf(out, cap, "%s", s);
        return;
    }
    size_t head = char_start(s, (width - 3) / 2), tail = char_start(s, n - (width - 3 - head));
    snprintf(out, cap, "%.*s...%s", (int)head, s, s + tail);
}

void tp_kernel_column(char (*out)[160], const char *const *rows, size_t n, size_t width)
{
    bool *alike = calloc(n ? n : 1, sizeof *alike);
    for (size_t i = 0; i < n; i++)
        tp_kernel_short(out[i], sizeof out[i], rows[i], true, width);
    for (size_t i = 0; alike && i < n; i++)
        for (size_t k = 0; k < n && !alike[i]; k++)
            alike[i] = k != i && strcmp(out[i], out[k]) == 0 && strcmp(rows[i], rows[k]) != 0;
    for (size_t i = 0; i < n; i++)
        if (!alike || alike[i]) /* their template arguments tell them apart */
            tp_kernel_short(out[i], sizeof out[i], rows[i], false, width);
    free(alike);
}

size_t tp_rank_kernels(const tp_ops_facts *f, int rank, size_t most, const tp_kernel_fact **rows,
                       char (*column)[160], size_t width)
{
    const char *names[16];
    size_t n = 0;
    if (most > 16)
        most = 16;
    for (size_t i = 0; i < f->nkernels && n < most; i++)
        if (f->kernels[i].rank == rank) {
            rows[n] = &f->kernels[i];
            names[n++] = f->kernels[i].name;
        }
    tp_kernel_column(column, names, n, width);
    return n;
}
