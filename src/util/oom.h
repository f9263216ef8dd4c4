/* oom.h: running out of memory in a command that reads.
 *
 * The reading commands (report, html, export, compare, ...) hold what they
 * read in memory; when an allocation fails they stop with one line and exit
 * status 1 rather than abort() and a core dump. The recorder never calls
 * this while the command it watches runs: there, out of memory costs data
 * (counted by the sink), not the run. */
#ifndef TP_UTIL_OOM_H
#define TP_UTIL_OOM_H

#include <stddef.h>

/* Says "trainprof: out of memory" on stderr and exits with status 1. */
_Noreturn void tp_out_of_memory(void);

/* malloc, calloc, realloc and strdup that never return NULL
 * (tp_out_of_memory); a size of 0 is taken as 1. */
void *tp_xmalloc(size_t n);
void *tp_xcalloc(size_t n, size_t size);
void *tp_xrealloc(void *p, size_t n);
char *tp_xstrdup(const char *s);

#endif
