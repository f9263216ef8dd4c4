/* http_server.c: see http_server.h. */
#include "serve/http_server.h"
#include "serve/prom_exposition.h"
#include "util/thread.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CONNECTION_MEMORY  (64 * 1024)
#define CONNECTION_TIMEOUT 10 /* seconds without progress */
#define EXPOSITION_TYPE    "text/plain; version=0.0.4; charset=utf-8"
/* Whole-request deadlines, which an idle timeout is not: a client sending a
 * byte every few seconds never idles. A request must have arrived whole 2 s
 * after its connection opened (or its last answer went out), and its answer
 * gone 10 s after it arrived; and while fewer than HEADROOM connections are
 * free, the oldest that has not sent its request yet makes room, else the
 * oldest whose answer is unread, so a scraper is served whatever slow or
 * non-reading clients hold. */
#define REQUEST_DEADLINE_NS (2 * 1000000000LL)
#define ANSWER_DEADLINE_NS  (10 * 1000000000LL)
#define HEADROOM            4
#define WATCH_PERIOD_NS     100000000L

/* A connection MHD has open: its socket and since when. */
typedef struct watched {
    int fd;           /* -1: a free entry */
    int64_t since_ns; /* opened, or (answered) its latest request arrived */
    bool answered;    /* its request arrived whole */
    bool cut;         /* shut down by the watchdog already */
} watched;

struct tp_http_server {
    struct MHD_Daemon *daemon;
    tp_live *live;
    char agent[256], host[256]; /* the exposition's labels */
    char address[128];
    pthread_mutex_t lock; /* the watched table, between MHD's thread and the watchdog */
    watched conns[TP_HTTP_MAX_CONNECTIONS + 8];
    pthread_t watchdog;
    bool watching;
    atomic_bool stop;
    /* POST /capture: asks the recording for a capture window (record
     * --serve sets it once its drain runs; NULL: not a recording) */
    void (*capture)(void *ctx); /* under lock: cleared only once no call is under way */
    void *capture_ctx;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int fd_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/* MHD opened or is closing a connection: it enters or leaves the table,
 * its entry kept as the connection's socket context (so that a closing
 * connection frees its own entry, never one of a reused descriptor). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    tp_http_server *s = cls;
    pthread_mutex_lock(&s->lock);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        int fd = fd_of(c);
        for (size_t i = 0; fd >= 0 && i < sizeof s->conns / sizeof *s->conns; i++)
            if (s->conns[i].fd < 0) {
                s->conns[i] = (watched){fd, now_ns(), false, false};
                *socket_context = &s->conns[i];
                break;
            }
    } else if (*socket_context) {
        ((watched *)*socket_context)->fd = -1;
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&s->lock);
}

/* c's state changes (answered: a request arrived whole, its answer's
 * deadline starts; not: its answer went out, it waits for its next
 * request), from now. */
static void mark(tp_http_server *s, struct MHD_Connection *c, bool answered)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    pthread_mutex_lock(&s->lock);
    watched *w = info ? info->socket_context : NULL;
    if (w && w->fd >= 0) {
        w->since_ns = now_ns();
        w->answered = answered;
    }
    pthread_mutex_unlock(&s->lock);
}

/* A request's answer went out whole (or the request ended): its connection
 * waits for its next request, under the request deadline and evictable,
 * as a new one does. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode code)
{
    (void)state, (void)code;
    mark(cls, c, false);
}

static void cut(watched *w)
{
    shutdown(w->fd, SHUT_RDWR); /* MHD sees the end and closes it */
    w->cut = true;
}

/* Every 100 ms: connections past their deadline are shut down, and while
 * fewer than HEADROOM are free, the oldest that has sent no request. */
static void *watchdog_main(void *arg)
{
    tp_http_server *s = arg;
    while (!atomic_load(&s->stop)) {
        nanosleep(&(struct timespec){0, WATCH_PERIOD_NS}, NULL);
        int64_t now = now_ns();
        pthread_mutex_lock(&s->lock);
        size_t open = 0;
        for (size_t i = 0; i < sizeof s->conns / sizeof *s->conns; i++) {
            watched *w = &s->conns[i];
            if (w->fd < 0 || w->cut)
                continue;
            int64_t limit = w->answered ? ANSWER_DEADLINE_NS : REQUEST_DEADLINE_NS;
            if (now - w->since_ns > limit)
                cut(w);
            else
                open++;
        }
        /* room: the oldest waiting for a request first, else the oldest
         * whose answer is still unread (a client that asks and never reads) */
        while (open + HEADROOM > TP_HTTP_MAX_CONNECTIONS) {
            watched *oldest = NULL;
            for (int answered = 0; answered < 2 && !oldest; answered++)
                for (size_t i = 0; i < sizeof s->conns / sizeof *s->conns; i++) {
                    watched *w = &s->conns[i];
                    if (w->fd >= 0 && !w->cut && w->answered == (answered == 1) &&
                        (!oldest || w->since_ns < oldest->since_ns))
                        oldest = w;
                }
            if (!oldest)
                break;
            cut(oldest);
            open--;
        }
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, "Allow", "GET, HEAD, POST (/capture)");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* Whether the connection's client is this machine (127.0.0.0/8, ::1, or
 * either mapped). */
static bool from_loopback(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa && sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}

/* POST /capture: a capture window of the recording, asked from this
 * machine only. */
static enum MHD_Result capture(tp_http_server *s, struct MHD_Connection *c)
{
    if (!from_loopback(c))
        return answer_text(c, MHD_HTTP_FORBIDDEN, "capture is asked from this machine only\n");
    pthread_mutex_lock(&s->lock);
    bool asked = s->capture != NULL;
    if (asked)
        s->capture(s->capture_ctx);
    pthread_mutex_unlock(&s->lock);
    if (!asked)
        return answer_text(c, MHD_HTTP_NOT_FOUND,
                           "no recording here: capture windows are taken by trainprof record\n");
    return answer_text(c, MHD_HTTP_ACCEPTED,
                       "capture window asked: the next steps of every traced process (record's "
                       "--ops-steps)\n");
}

void tp_http_on_capture(tp_http_server *s, void (*fn)(void *ctx), void *ctx)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->capture = fn;
    s->capture_ctx = ctx;
    pthread_mutex_unlock(&s->lock);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **state)
{
    (void)version, (void)upload_data;
    tp_http_server *s = cls;
    bool post = strcmp(method, "POST") == 0 && strcmp(url, "/capture") == 0;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 && !post)
        return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served\n");
    if (*state == NULL) { /* the first call only has the headers */
        *state = (void *)1;
        mark(s, c, true);
        return MHD_YES;
    }
    if (post) {
        if (*upload_size) { /* a body is read and ignored */
            *upload_size = 0;
            return MHD_YES;
        }
        return capture(s, c);
    }
    if (strcmp(url, "/") == 0)
        return answer_text(c, MHD_HTTP_OK, "trainprof: metrics are at /metrics\n");
    if (strcmp(url, "/metrics") != 0)
        return answer_text(c, MHD_HTTP_NOT_FOUND, "not found: metrics are at /metrics\n");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return MHD_NO;
    tp_prom_expose(f, s->live, s->agent, s->host);
    if (fclose(f) != 0) {
        free(text);
        return MHD_NO;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", EXPOSITION_TYPE);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

/* Parses HOST:PORT into addr; false with a reason. */
static bool parse_listen(const char *where, struct sockaddr_storage *addr, socklen_t *len,
                         char *err, size_t cap)
{
    char host[256];
    const char *port;
    if (where[0] == '[') {
        const char *close = strchr(where, ']');
        if (!close || close[1] != ':') {
            snprintf(err, cap, "bad address '%s' (expected [V6ADDR]:PORT)", where);
            return false;
        }
        snprintf(host, sizeof host, "%.*s", (int)(close - where - 1), where + 1);
        port = close + 2;
    } else {
        const char *colon = strrchr(where, ':');
        if (!colon) {
            snprintf(err, cap, "bad address '%s' (expected HOST:PORT, e.g. 127.0.0.1:9464)", where);
            return false;
        }
        snprintf(host, sizeof host, "%.*s", (int)(colon - where), where);
        port = colon + 1;
    }
    char *end;
    long p = strtol(port, &end, 10);
    if (!*port || *end || p < 0 || p > 65535) {
        snprintf(err, cap, "bad port in '%s' (0 to 65535)", where);
        return false;
    }
    if (!host[0])
        snprintf(host, sizeof host, "127.0.0.1");
    struct addrinfo hints = {.ai_flags = AI_NUMERICSERV, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, cap, "cannot resolve '%s': %s", host, gai_strerror(rc));
        return false;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

tp_http_server *tp_http_start(const char *where, tp_live *live, const char *agent,
                              const char *host_label, char *err, size_t cap)
{
    struct sockaddr_storage addr;
    socklen_t addrlen;
    if (!parse_listen(where, &addr, &addrlen, err, cap))
        return NULL;
    /* Bind here, so that a port in use is reported with its reason. */
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&addr, addrlen) != 0 || listen(fd, 64) != 0) {
        snprintf(err, cap, "cannot listen on %s: %s", where, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    tp_http_server *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    s->live = live;
    snprintf(s->agent, sizeof s->agent, "%s", agent);
    snprintf(s->host, sizeof s->host, "%s", host_label);
    pthread_mutex_init(&s->lock, NULL);
    for (size_t i = 0; i < sizeof s->conns / sizeof *s->conns; i++)
        s->conns[i].fd = -1;
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    char host[INET6_ADDRSTRLEN] = "?", port[16] = "?";
    if (getsockname(fd, (struct sockaddr *)&bound, &blen) == 0)
        getnameinfo((struct sockaddr *)&bound, blen, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(s->address, sizeof s->address, bound.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host,
             port);
    s->daemon =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, on_request,
                         s, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
                         (unsigned)TP_HTTP_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                         (size_t)CONNECTION_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
                         (unsigned)CONNECTION_TIMEOUT, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
                         s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
    s->watching = s->daemon && tp_thread_start(&s->watchdog, watchdog_main, s, TP_STACK_OWN_CODE);
    if (!s->daemon || !s->watching) {
        snprintf(err, cap, "cannot serve on %s: the HTTP server did not start", where);
        if (s->daemon)
            MHD_stop_daemon(s->daemon);
        else
            close(fd);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    return s;
}

const char *tp_http_address(const tp_http_server *s) { return s->address; }

void tp_http_stop(tp_http_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stop, true);
    pthread_join(s->watchdog, NULL);
    MHD_stop_daemon(s->daemon); /* closes the listening socket too */
    pthread_mutex_destroy(&s->lock);
    free(s);
}
