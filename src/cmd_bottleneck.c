/* cmd_bottleneck.c: `trainprof bottleneck`: the training's actual sample rate
 * against its two limits, measured by running it three times under `record`
 * (as is; with its DataLoader's first batch replayed; with the loader alone;
 * see python/trainprof/_bottleneck.py for the inside). */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/metric_catalog.h"
#include "analyze/storage_typical.h"
#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "commands.h"
#include "render/verdict_words.h"
#include "store/model_facts_file.h"
#include "record/child.h"
#include "util/json_writer.h"
#include "util/options.h"
#include "util/log.h"
#include "trainprof.h"

extern char **environ;

static const char usage[] =
    "usage: trainprof bottleneck [--steps N] [--warmup N] [--json] [-o PREFIX] -- COMMAND...\n"
    "\n"
    "Runs a PyTorch training command three times under `trainprof record`, each for N steps\n"
    "after a warm-up, then stops it:\n"
    "  1. as it is: the actual sample rate;\n"
    "  2. with the DataLoader's first batch replayed from memory: the training limit;\n"
    "  3. with the loader alone, batches fetched and discarded: the input limit.\n"
    "Prints the three rates, which limit binds and what to do next. The run files are\n"
    "kept as PREFIX-asis.db, PREFIX-replay.db and PREFIX-loader.db.\n";

enum { ASIS, REPLAY, LOADER, MODES };

/* The loader's disk reads count as small (many small files, random access)
 * below this size per request, once there are enough of them to matter. */
#define SMALL_READ_KIB       64.0
#define SMALL_READS_MIN_IOPS 50.0

/* The runs are short: system metrics are sampled more often than record's
 * default so that the measured steps hold several samples. */
#define SAMPLE_INTERVAL "0.1"
static const char *const mode_names[MODES] = {"asis", "replay", "loader"};

typedef struct mode_result {
    char path[4200];
    int exit_status;
    bool found_loader;
    double rate; /* samples/s (or steps/s when batch sizes were not visible) */
    long steps;
    int64_t t0_ns, t1_ns; /* the measured steps: after the warm-up to the last */
    double cpu_mean, disk_read_mb_s, disk_read_iops, workers, gpu_util, gpu_mem_frac;
    int cpus;
    bool has_gpu;
    char facts_path[4200];
    tp_model_facts facts; /* replay run only */
    bool has_facts;
    tp_model_facts run_facts; /* what the script does, from the run file (lib/facts.h) */
} mode_result;

/* Rate over the step marks after the warm-up, on the thread with most steps. */
static void measure_rate(tp_run *run, long warmup, mode_result *r, bool *samples_seen)
{
    tp_run_mark *m;
    size_t n;
    char err[256];
    if (!tp_run_marks(run, &m, &n, err, sizeof err))
        return;
    int64_t best_thread = -1;
    size_t best = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, steps = 0;
        while (j < n && m[j].thread == m[i].thread)
            steps += m[j++].kind == TP_MARK_STEP;
        if (steps > best) {
            best = steps;
            best_thread = m[i].thread;
        }
        i = j;
    }
    long seen = 0;
    int64_t t0 = -1, t1 = -1;
    double samples = 0, pending = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].thread != best_thread)
            continue;
        if (m[i].kind == TP_MARK_SAMPLES) {
            pending += (double)m[i].value;
            continue;
        }
        if (m[i].kind != TP_MARK_STEP)
            continue;
        if (seen > warmup) {
            samples += pending; /* the step that this mark closes */
            t1 = m[i].t_ns;
            r->steps++;
        }
        if (seen == warmup)
            t0 = m[i].t_ns;
        pending = 0;
        seen++;
    }
    free(m);
    *samples_seen = samples > 0;
    r->t0_ns = t0, r->t1_ns = t1;
    if (t0 >= 0 && t1 > t0)
        r->rate = (samples > 0 ? samples : (double)r->steps) / ((double)(t1 - t0) / 1e9);
}

static double stat_of(const tp_summary *s, const char *metric, const char *labels, bool max)
{
    const tp_series_summary *x = tp_summary_find(s, 1, metric, labels);
    return x ? (max ? x->stats.max : x->stats.mean) : NAN;
}

/* The metric's mean while the measured steps ran, else over the whole run
 * (a run too short for a sample inside its steps). */
static double mean_during(const tp_summary *s, const mode_result *r, const char *metric,
                          const char *labels)
{
    double v;
    if (r->t1_ns > r->t0_ns && tp_run_mean_between(s->run, metric, labels, r->t0_ns, r->t1_ns, &v))
        return v;
    return stat_of(s, metric, labels, false);
}

static void analyse(mode_result *r, long warmup, bool *samples_seen)
{
    char err[1024];
    tp_summary s;
    if (tp_summary_load(r->path, &s, err, sizeof err)) {
        tp_run *run = s.run;
        for (size_t i = 0; i < s.timings.nrows; i++)
            r->found_loader |= strcmp(s.timings.rows[i].name, TP_PHASE_DATALOADER_NEXT) == 0;
        measure_rate(run, warmup, r, samples_seen);
        r->cpu_mean = mean_during(&s, r, TP_METRIC_CPU_UTIL_PERCENT, "{}");
        r->disk_read_mb_s = mean_during(&s, r, TP_METRIC_DISK_READ_BYTES_PER_S, "{}") / 1e6;
        r->disk_read_iops = mean_during(&s, r, TP_METRIC_DISK_READ_IOPS, "{}");
        r->workers = stat_of(&s, TP_METRIC_PROC_COUNT, "{}", true) - 1;
        const char *cpus = tp_run_meta_get(run, "cpu_count");
        r->cpus = cpus ? atoi(cpus) : 0;
        r->gpu_util = mean_during(&s, r, TP_METRIC_GPU_UTIL_PERCENT, "{\"gpu\":\"0\"}");
        r->has_gpu = !isnan(r->gpu_util) && run->ngpus > 0;
        r->has_facts = tp_model_facts_read(r->facts_path, &r->facts);
        tp_run_model_facts(run, &r->run_facts);
        if (r->has_gpu && run->gpus[0].mem_total_bytes > 0)
            r->gpu_mem_frac = stat_of(&s, TP_METRIC_GPU_MEM_USED_BYTES, "{\"gpu\":\"0\"}", true) /
                              (double)run->gpus[0].mem_total_bytes;
        tp_summary_close(&s);
    }
}

/* Runs `trainprof record` on the command in one mode; returns its status. */
static int run_mode(const char *self, int mode, const mode_result *r, long steps, long warmup,
                    char **command)
{
    size_t nenv = 0, ncmd = 0;
    while (environ[nenv])
        nenv++;
    while (command[ncmd])
        ncmd++;
    char **envp = calloc(nenv + 5, sizeof *envp);
    char **argv = calloc(ncmd + 10, sizeof *argv);
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        if (strncmp(environ[i], "TRAINPROF_BOTTLENECK", 20) != 0)
            envp[k++] = environ[i];
    char e1[64], e2[64], e3[64], e4[4300];
    snprintf(e1, sizeof e1, "TRAINPROF_BOTTLENECK=%s", mode_names[mode]);
    snprintf(e2, sizeof e2, "TRAINPROF_BOTTLENECK_STEPS=%ld", steps);
    snprintf(e3, sizeof e3, "TRAINPROF_BOTTLENECK_WARMUP=%ld", warmup);
    snprintf(e4, sizeof e4, "TRAINPROF_BOTTLENECK_FACTS=%s", r->facts_path);
    envp[k++] = e1, envp[k++] = e2, envp[k++] = e3, envp[k++] = e4;
    size_t a = 0;
    argv[a++] = (char *)self, argv[a++] = "record", argv[a++] = "-q", argv[a++] = "--force";
    argv[a++] = "--interval", argv[a++] = (char *)SAMPLE_INTERVAL;
    argv[a++] = "-o", argv[a++] = (char *)r->path, argv[a++] = "--";
    for (size_t i = 0; i < ncmd; i++)
        argv[a++] = command[i];
    pid_t pid;
    /* the training's own output goes to our stderr: stdout is the verdict
     * alone (with --json, one parseable document) */
    posix_spawn_file_actions_t io;
    posix_spawn_file_actions_init(&io);
    posix_spawn_file_actions_adddup2(&io, STDERR_FILENO, STDOUT_FILENO);
    int rc = posix_spawn(&pid, self, &io, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&io);
    free(envp);
    free(argv);
    if (rc != 0)
        return 127;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return tp_child_exit_status(status);
}

/* The input-bound advice, fitted to what the loader run saw and what the
 * script does (f, the as-is run's facts): no more workers where the CPUs
 * were already busy, no pin_memory where the loader pins already or the
 * model isn't on a GPU. Ends with "...," for the storage advice that
 * follows. */
static void input_advice(FILE *out, const mode_result *l, const tp_model_facts *f)
{
    if (l->cpu_mean >= 90) {
        fprintf(out,
                " The CPUs were %.0f%% busy while the loader ran alone: loading is CPU-bound, "
                "so more workers won't help; try cheaper decoding or augmentation (or on the "
                "GPU), data stored pre-processed, more cores, ",
                l->cpu_mean);
        return;
    }
    bool pin = f->pin_memory != 1 && (!f->device[0] || strcmp(f->device, "cuda") == 0);
    if (f->num_workers >= 0)
        fprintf(out, " Try more DataLoader workers (num_workers=%d now)", f->num_workers);
    else
        fprintf(out, " Try more DataLoader workers");
    fprintf(out, "%s, a larger prefetch_factor, cheaper decoding or augmentation, ",
            pin ? ", pin_memory=True" : "");
}

static void verdict(FILE *out, const mode_result *r, bool samples, char *kind, size_t cap)
{
    const char *unit = samples ? "samples/s" : "steps/s";
    double train = r[REPLAY].rate, input = r[LOADER].rate;
    /* below (1 - TP_INPUT_BOUND_SHARE) of the training's rate, the as-is run
     * waits for data that share of each step: report's input_bound too */
    if (input < (1 - TP_INPUT_BOUND_SHARE) * train) {
        const mode_result *l = &r[LOADER];
        snprintf(kind, cap, "input_bound");
        fprintf(out,
                "input-bound: the loader alone delivers %.1f %s, the training could take %.1f "
                "(%.1fx); %.2f ms per sample. The loader ran %.0f worker processes on %d CPUs; "
                "CPU averaged %.0f%% and the disks read %.1f MB/s",
                input, unit, train, input > 0 ? train / input : 0, input > 0 ? 1e3 / input : 0,
                l->workers, l->cpus, l->cpu_mean, l->disk_read_mb_s);
        double kib = l->disk_read_iops > 0 ? l->disk_read_mb_s * 1e6 / 1024 / l->disk_read_iops : 0;
        if (l->disk_read_iops >= 1)
            fprintf(out, " in %.0f reads/s of %.0f KiB", l->disk_read_iops, kib);
        fprintf(out,
                " while it ran (typically a disk reads ~%.0f MB/s, NVMe ~%.0f MB/s; "
                "trainprof iobench PATH measures yours).",
                TP_TYPICAL_DISK_MB_S, TP_TYPICAL_NVME_MB_S);
        input_advice(out, l, &r[ASIS].run_facts);
        if (l->disk_read_iops >= SMALL_READS_MIN_IOPS && kib < SMALL_READ_KIB)
            fprintf(out, "and, since reads this small come from many small files or random "
                         "access, samples packed into larger files (WebDataset shards, HDF5, "
                         "LMDB), kept in memory or on local NVMe (see trainprof iobench).\n");
        else
            fprintf(out, "data in memory or on local NVMe (see trainprof iobench).\n");
    } else if (train < 0.9 * input) {
        snprintf(kind, cap, "compute_bound");
        fprintf(out,
                "compute-bound: the training alone takes %.1f %s while the loader could deliver "
                "%.1f (%.1fx). Speed-ups come from the computation",
                train, unit, input, train > 0 ? input / train : 0);
        char hint[512] = "";
        if (r[REPLAY].has_facts)
            tp_precision_words(hint, sizeof hint, &r[REPLAY].facts);
        if (r[REPLAY].has_gpu)
            fprintf(out, ": GPU 0 averaged %.0f%% utilization with %.0f%% of its memory at peak",
                    r[REPLAY].gpu_util, 100 * r[REPLAY].gpu_mem_frac);
        if (hint[0])
            fprintf(out, "; %s", hint);
        else if (r[REPLAY].has_gpu)
            fprintf(out, "; if the model runs in FP32 on a GPU with tensor cores, mixed precision "
                         "(torch.autocast) is typically 1.5-5x");
        else
            fprintf(out, " (no GPU: a GPU, larger batches or a smaller model)");
        fprintf(out, ".\n");
    } else {
        snprintf(kind, cap, "balanced");
        fprintf(out,
                "balanced: the input limit (%.1f %s) and the training limit (%.1f) are close "
                "(the loader alone gives at least %.0f%% of what the training takes, and the "
                "training at least 90%% of what the loader gives); both need work to go "
                "faster.\n",
                input, unit, train, 100 * (1 - TP_INPUT_BOUND_SHARE));
    }
}

/* The kinds of the verdicts `trainprof report` gives the run file at path,
 * each once, into kinds (room for TP_VERDICT_KINDS); how many, -1 when the
 * file can't be read. */
#define TP_VERDICT_KINDS 16
static int report_kinds(const char *path, const char *kinds[TP_VERDICT_KINDS])
{
    char err[1024];
    tp_summary s;
    if (!tp_summary_load(path, &s, err, sizeof err))
        return -1;
    tp_verdicts v;
    tp_verdicts_build(&s, &v);
    int n = 0;
    for (size_t i = 0; i < v.n; i++) {
        const char *kind = tp_verdict_kind_name(v.items[i].kind);
        bool seen = false; /* a verdict per rank or agent: each kind once */
        for (int k = 0; k < n; k++)
            seen |= strcmp(kinds[k], kind) == 0;
        if (!seen && n < TP_VERDICT_KINDS)
            kinds[n++] = kind;
    }
    tp_verdicts_free(&v);
    tp_summary_close(&s);
    return n;
}

int cmd_bottleneck(int argc, char **argv)
{
    long steps = 200, warmup = 20;
    const char *prefix = NULL;
    bool json = false;
    const tp_option options[] = {
        TP_INTEGER(0, "steps", "N", "steps measured in each run (default 200)", &steps, 2, 1000000,
                   NULL),
        TP_INTEGER(0, "warmup", "N", "steps run first and not measured (default 20)", &warmup, 0,
                   1000000, NULL),
        TP_STRING('o', "output", "PREFIX",
                  "run file prefix (default trainprof-bottleneck-DATE-TIME)", &prefix),
        TP_FLAG(0, "json", "one JSON object instead of text", &json),
    };
    const tp_command cmd = {.name = "bottleneck",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = -1,
                            .operands = "a command to run",
                            .stop_at_operand = true};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    char self[4096], def[64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        tp_error("bottleneck: cannot find the trainprof program itself");
        return 1;
    }
    self[n] = '\0';
    if (!prefix) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(def, sizeof def, "trainprof-bottleneck-%Y%m%d-%H%M%S", &tm);
        prefix = def;
    }
    mode_result r[MODES];
    memset(r, 0, sizeof r);
    bool samples = false;
    for (int m = 0; m < MODES; m++) {
        snprintf(r[m].path, sizeof r[m].path, "%s-%s.db", prefix, mode_names[m]);
        if (!json)
            fprintf(stderr, "trainprof bottleneck: run %d of 3 (%s)...\n", m + 1, mode_names[m]);
        snprintf(r[m].facts_path, sizeof r[m].facts_path, "%s-%s.model", prefix, mode_names[m]);
        unlink(r[m].facts_path);
        r[m].exit_status = run_mode(self, m, &r[m], steps, warmup, argv + first);
        bool seen = false;
        analyse(&r[m], warmup, &seen);
        unlink(r[m].facts_path); /* its content is in the verdict and --json */
        samples |= seen;
        if (m == ASIS && !r[m].found_loader)
            break;
    }
    FILE *out = stdout;
    char kind[32] = "none";
    const char *report_said[TP_VERDICT_KINDS];
    int nsaid = -1; /* the kinds `report` finds in the as-is run; -1: not read */
    if (!r[ASIS].found_loader) {
        if (!json && r[ASIS].steps > 0)
            fprintf(out,
                    "no DataLoader found: only the as-is run was made: %.1f %s over %ld steps "
                    "(%s, exit status %d). bottleneck splits input from training at the "
                    "training DataLoader's fetches; `trainprof report %s` splits this run's "
                    "steps by phase.\n",
                    r[ASIS].rate, samples ? "samples/s" : "steps/s", (long)r[ASIS].steps,
                    r[ASIS].path, r[ASIS].exit_status, r[ASIS].path);
        else if (!json)
            fprintf(out,
                    "no DataLoader found, and no steps: only the as-is run was made (%s, exit "
                    "status %d)\n",
                    r[ASIS].path, r[ASIS].exit_status);
        snprintf(kind, sizeof kind, "no_dataloader");
    }
    bool crashed = false;
    for (int m = 0; m < MODES; m++)
        if (r[m].exit_status != 0 && (m == ASIS || r[ASIS].found_loader)) {
            crashed = true;
            if (!json)
                fprintf(out, "the %s run failed with exit status %d (see %s)\n", mode_names[m],
                        r[m].exit_status, r[m].path);
        }
    if (r[ASIS].found_loader && !crashed) {
        const char *unit = samples ? "samples/s" : "steps/s";
        const char *what[MODES] = {"as is", "training limit (batch replayed)",
                                   "input limit (loader alone)"};
        if (!json) {
            for (int m = 0; m < MODES; m++)
                fprintf(out, "  %-34s %10.1f %s   %s\n", what[m], r[m].rate, unit, r[m].path);
            verdict(out, r, samples, kind, sizeof kind);
            if ((nsaid = report_kinds(r[ASIS].path, report_said)) >= 0) {
                fprintf(out, "`trainprof report` of the as-is run: %s", nsaid ? "" : "none");
                for (int k = 0; k < nsaid; k++)
                    fprintf(out, "%s%s", k ? ", " : "", report_said[k]);
                fputc('\n', out);
            }
        } else {
            FILE *devnull = fopen("/dev/null", "w");
            verdict(devnull ? devnull : stderr, r, samples, kind, sizeof kind);
            if (devnull)
                fclose(devnull);
            nsaid = report_kinds(r[ASIS].path, report_said);
        }
    } else if (crashed) {
        snprintf(kind, sizeof kind, "run_failed");
    }
    if (json) {
        json_writer w;
        json_init(&w, out);
        json_object_begin(&w);
        json_key(&w, "verdict");
        json_string(&w, kind);
        json_key(&w, "unit");
        json_string(&w, samples ? "samples_per_s" : "steps_per_s");
        if (nsaid >= 0) { /* the kinds `report` finds in the as-is run */
            json_key(&w, "report_verdicts");
            json_array_begin(&w);
            for (int k = 0; k < nsaid; k++)
                json_string(&w, report_said[k]);
            json_array_end(&w);
        }
        json_key(&w, "runs");
        json_array_begin(&w);
        for (int m = 0; m < MODES && (m == ASIS || r[ASIS].found_loader); m++) {
            json_object_begin(&w);
            json_key(&w, "mode");
            json_string(&w, mode_names[m]);
            json_key(&w, "rate");
            json_double(&w, r[m].rate);
            json_key(&w, "steps");
            json_int(&w, r[m].steps);
            json_key(&w, "exit_status");
            json_int(&w, r[m].exit_status);
            json_key(&w, "run_file");
            json_string(&w, r[m].path);
            json_object_end(&w);
        }
        json_array_end(&w);
        if (r[ASIS].found_loader && !crashed) {
            const mode_result *l = &r[LOADER];
            json_key(&w, "loader");
            json_object_begin(&w);
            json_key(&w, "workers");
            json_double(&w, l->workers);
            json_key(&w, "cpus");
            json_int(&w, l->cpus);
            json_key(&w, TP_METRIC_CPU_UTIL_PERCENT);
            json_double(&w, l->cpu_mean);
            json_key(&w, "disk_read_mb_s");
            json_double(&w, l->disk_read_mb_s);
            json_key(&w, TP_METRIC_DISK_READ_IOPS);
            json_double(&w, l->disk_read_iops);
            json_object_end(&w);
        }
        if (r[REPLAY].has_facts) {
            const tp_model_facts *f = &r[REPLAY].facts;
            char hint[512], cc[32];
            json_key(&w, "model");
            json_object_begin(&w);
            json_key(&w, "dtype");
            json_string(&w, f->dtype);
            json_key(&w, "device");
            json_string(&w, f->device);
            json_key(&w, "compute_capability");
            snprintf(cc, sizeof cc, "%d.%d", f->cc_major, f->cc_minor);
            if (f->cc_major > 0)
                json_string(&w, cc);
            else
                json_null(&w);
            json_key(&w, "autocast");
            if (f->autocast >= 0)
                json_bool(&w, f->autocast == 1);
            else
                json_null(&w);
            json_key(&w, "precision_hint");
            if (tp_precision_words(hint, sizeof hint, f))
                json_string(&w, hint);
            else
                json_null(&w);
            json_object_end(&w);
        }
        json_object_end(&w);
        fputc('\n', out);
    }
    return crashed ? 1 : 0;
}
