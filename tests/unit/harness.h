/* harness.h: shared helpers of the C unit tests (cmocka).
 *
 * Fixture trees: fx_root() makes an empty directory that collectors treat as
 * "/"; fx_write() puts a file in it (creating directories). Capturing: every
 * test sink accumulates until cap_take() moves everything into a batch that
 * cap_values() and cap_unavailable() search. */
#ifndef TP_TESTS_HARNESS_H
#define TP_TESTS_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "collect/collector.h"
#include "core/sink.h"

/* A fresh temporary directory; the caller frees the string. */
char *fx_root(void);
/* Writes content to root/rel, creating parent directories. */
void fx_write(const char *root, const char *rel, const char *content);
/* Writes formatted content. */
void fx_printf(const char *root, const char *rel, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fx_mkdir(const char *root, const char *rel);
void fx_remove(const char *root, const char *rel);
/* Removes the whole tree. */
void fx_rmtree(const char *root);

/* Writes what sink s holds into a new run file at path (its agent named
 * agent) through the real writer, and finishes the file; frees s. */
void fx_write_sink(const char *path, tp_sink *s, const char *agent);

/* Moves everything pending in the sink into b (which is cleared first). */
void cap_take(tp_sink *sink, tp_batch *b);
/* Copies the values of series (metric, labels) from b into out; returns how
 * many there were (at most max are copied). */
size_t cap_values(const tp_batch *b, const char *metric, const char *labels, double *out,
                  size_t max);
/* As cap_values, the samples' times (ns). */
size_t cap_times(const tp_batch *b, const char *metric, const char *labels, uint64_t *out,
                 size_t max);
/* Number of series of a metric, whatever their labels. */
size_t cap_series_count(const tp_batch *b, const char *metric);
/* True when an unavailable note for source has a reason containing text. */
bool cap_unavailable(const tp_batch *b, const char *source, const char *text);
/* A metadata value, or NULL. */
const char *cap_meta(const tp_batch *b, const char *key);

/* A collector env over a sysroot at path; root and sink are owned by the env. */
typedef struct test_env {
    tp_sysroot root;
    tp_sink *sink;
    tp_collect_env env;
} test_env;

void test_env_open(test_env *t, const char *root_path, pid_t target);
void test_env_close(test_env *t);

#endif
