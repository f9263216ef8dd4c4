/* http_server.c: see http_server.h. */
#include "serve/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNECTION_MEMORY  (64 * 1024)
#define CONNECTION_TIMEOUT 10 /* seconds */
#define EXPOSITION_TYPE    "text/plain; version=0.0.4; charset=utf-8"

struct tp_http_server {
    struct MHD_Daemon *daemon;
    tp_live *live;
    char address[128];
};

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **state)
{
    (void)version, (void)upload_data, (void)upload_size;
    tp_http_server *s = cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served\n");
    if (*state == NULL) { /* the first call only has the headers */
        *state = (void *)1;
        return MHD_YES;
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
    tp_live_render(s->live, f);
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

tp_http_server *tp_http_start(const char *where, tp_live *live, char *err, size_t cap)
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
                         (unsigned)CONNECTION_TIMEOUT, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, cap, "cannot serve on %s: the HTTP server did not start", where);
        close(fd);
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
    MHD_stop_daemon(s->daemon); /* closes the listening socket too */
    free(s);
}
