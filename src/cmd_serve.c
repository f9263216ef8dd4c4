/* cmd_serve.c: `trainprof serve`: this machine's system metrics for
 * Prometheus, with no training and no run file.
 *
 * The same sampler and live state as `record --serve`; the writer thread
 * applies batches to the live state only. Runs until SIGINT or SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "collect/host_info.h"
#include "commands.h"
#include "record/sampler.h"
#include "record/writer_thread.h"
#include "serve/http_server.h"
#include "live/live_state.h"
#include "util/options.h"
#include "util/log.h"

#define DEFAULT_LISTEN "127.0.0.1:9464"

static const char usage[] =
    "usage: trainprof serve [options]\n"
    "\n"
    "Serves this machine's system metrics (CPU, memory, disks, network, GPUs) in\n"
    "the Prometheus text format at http://ADDR:PORT/metrics until interrupted.\n"
    "Use it on machines that run no recording; `trainprof record --serve` serves\n"
    "a training's metrics and timings while it records them.\n";

int cmd_serve(int argc, char **argv)
{
    const char *listen_at = DEFAULT_LISTEN, *agent = NULL;
    double interval = 1.0;
    const tp_option options[] = {
        TP_STRING('l', "listen", "ADDR:PORT",
                  "where to listen (default: " DEFAULT_LISTEN ", loopback only;\n"
                  "0.0.0.0:9464 for every interface)",
                  &listen_at),
        TP_NUMBER('i', "interval", "SECS", "sampling interval, 0.05 to 60 (default: 1)", &interval,
                  TP_INTERVAL_MIN, TP_INTERVAL_MAX, "seconds"),
        TP_STRING(0, "agent", "NAME", "the agent label (default: host name)", &agent),
    };
    const tp_command cmd = {
        .name = "serve", .usage = usage, TP_OPTION_TABLE(options), .max_operands = 0};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    sigset_t mask, old;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, &old);

    char host[256] = "", err[512];
    gethostname(host, sizeof host - 1);
    tp_live *live = tp_live_new(interval);
    tp_http_server *http =
        live ? tp_http_start(listen_at, live, agent ? agent : host, host, err, sizeof err) : NULL;
    tp_sysroot root;
    if (!http || !tp_sysroot_open(&root, tp_sysroot_default_path())) {
        tp_error("serve: %s", http ? "cannot open /proc" : live ? err : "out of memory");
        tp_http_stop(http);
        tp_live_free(live);
        return 2;
    }
    fprintf(stderr, "trainprof: serving metrics at http://%s/metrics (Ctrl-C stops)\n",
            tp_http_address(http));
    tp_sink *sink = tp_sink_new(tp_clock_mono_ns());
    tp_collect_env env = {&root, sink, 0};
    tp_writer_thread wt;
    tp_writer_thread_start(&wt, sink, NULL, live);
    tp_sampler sampler;
    tp_sampler_start(&sampler, &env, TP_COLLECT_ALL, (uint64_t)(interval * 1e9));
    int sig;
    sigwait(&mask, &sig);
    tp_sampler_stop(&sampler);
    tp_sink_close(sink);
    tp_writer_thread_join(&wt);
    tp_http_stop(http);
    tp_live_free(live);
    tp_sink_free(sink);
    tp_sysroot_close(&root);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return 0;
}
