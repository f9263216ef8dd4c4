/* cmd_serve.c: `trainprof serve`: this machine's system metrics for
 * Prometheus, with no training and no run file.
 *
 * The same sampler and live state as `record --serve`; the writer thread
 * applies batches to the live state only. Runs until SIGINT or SIGTERM. */
#include <getopt.h>
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
#include "serve/live_state.h"
#include "util/cli.h"
#include "util/log.h"

#define DEFAULT_LISTEN "127.0.0.1:9464"

static const char usage[] =
    "usage: trainprof serve [options]\n"
    "\n"
    "Serves this machine's system metrics (CPU, memory, disks, network, GPUs) in\n"
    "the Prometheus text format at http://ADDR:PORT/metrics until interrupted.\n"
    "Use it on machines that run no recording; `trainprof record --serve` serves\n"
    "a training's metrics and timings while it records them.\n"
    "\n"
    "options:\n"
    "  -l, --listen ADDR:PORT  where to listen (default: " DEFAULT_LISTEN ", loopback only;\n"
    "                          0.0.0.0:9464 for every interface)\n"
    "  -i, --interval SECS     sampling interval, 0.05 to 60 (default: 1)\n"
    "      --agent NAME        the agent label (default: host name)\n"
    "  -h, --help              show this help\n";

int cmd_serve(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"interval", required_argument, NULL, 'i'},
        {"agent", required_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *listen_at = DEFAULT_LISTEN, *agent = NULL;
    double interval = 1.0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":l:i:h", longopts, NULL)) != -1) {
        if (c == 'l')
            listen_at = optarg;
        else if (c == 'i') {
            if (!tp_sampler_parse_interval(optarg, &interval))
                return 2;
        } else if (c == 'a')
            agent = optarg;
        else if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        } else {
            return tp_cli_option_error("serve", argv, c);
        }
    }
    if (optind < argc) {
        tp_error("serve: unexpected argument '%s' (see trainprof serve --help)", argv[optind]);
        return 2;
    }
    sigset_t mask, old;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, &old);

    char host[256] = "", err[512];
    gethostname(host, sizeof host - 1);
    tp_live *live = tp_live_new(agent ? agent : host, host, interval);
    tp_http_server *http = live ? tp_http_start(listen_at, live, err, sizeof err) : NULL;
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
