/* log.h: the one place that prints errors and warnings.
 *
 * Every message is one line on stderr, prefixed "trainprof: ". */
#ifndef TP_UTIL_LOG_H
#define TP_UTIL_LOG_H

#define TP_PRINTF(a, b) __attribute__((format(printf, a, b)))

void tp_error(const char *fmt, ...) TP_PRINTF(1, 2);
void tp_warn(const char *fmt, ...) TP_PRINTF(1, 2);

#endif
