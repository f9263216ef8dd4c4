/* http_server.h: the read-only HTTP endpoint of `record --serve` and
 * `trainprof serve`, on libmicrohttpd.
 *
 * GET (or HEAD) /metrics answers the live state in the Prometheus text format;
 * / answers a one-line pointer to it; anything else is 404, other methods 405.
 * Memory is bounded however many scrapes come: at most TP_HTTP_MAX_CONNECTIONS
 * connections at once, each with a fixed memory limit and a timeout, and each
 * answer built in a buffer freed when it has been sent. */
#ifndef TP_SERVE_HTTP_SERVER_H
#define TP_SERVE_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "live/live_state.h"

#define TP_HTTP_MAX_CONNECTIONS 32

typedef struct tp_http_server tp_http_server;

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" (loopback) into a socket address
 * and listens there. NULL with a one-line reason in err on a bad address or a
 * failed bind. /metrics exposes live, with agent and host as its labels
 * (serve/prom_exposition.h). */
tp_http_server *tp_http_start(const char *listen, tp_live *live, const char *agent,
                              const char *host, char *err, size_t cap);

/* The address actually bound, as HOST:PORT (port 0 asks for any free one). */
const char *tp_http_address(const tp_http_server *s);

void tp_http_stop(tp_http_server *s);

/* Serves POST /capture (from loopback only) by calling fn(ctx): record
 * --serve asks its drain for a capture window. Any thread; NULL s: none. */
void tp_http_on_capture(tp_http_server *s, void (*fn)(void *ctx), void *ctx);

#endif
