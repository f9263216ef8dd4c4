/* cmd_iobench.c: `trainprof iobench PATH`: what the storage under PATH can
 * read, sequentially and at random, with the page cache kept out of the way
 * (O_DIRECT, or posix_fadvise(DONTNEED) where O_DIRECT is refused), against
 * the lecture's typical figures and, given --run, against what a training
 * actually read. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/metric_catalog.h"
#include "analyze/summary.h"
#include "clock.h"
#include "analyze/storage_typical.h"
#include "commands.h"
#include "collect/iobench_dataset.h"
#include "render/units.h"
#include "util/json_writer.h"
#include "util/options.h"
#include "util/log.h"

#define DISK_MB_S    TP_TYPICAL_DISK_MB_S
#define NVME_MB_S    TP_TYPICAL_NVME_MB_S
#define SEQ_BLOCK    (1u << 20)
#define RAND_BLOCK   4096u
#define RAND_SECONDS 3.0

static const char usage[] =
    "usage: trainprof iobench PATH [--size MB] [--run RUN_FILE] [--json]\n"
    "\n"
    "Measures the read throughput and IOPS of the storage under PATH, sequential (1 MiB\n"
    "reads) and random (4 KiB reads), bypassing the page cache where the filesystem\n"
    "allows, and compares them with typical figures (disk ~150 MB/s, NVMe ~3000 MB/s).\n"
    "PATH is a directory (a test file is written there and removed) or an existing\n"
    "file (only read). A directory's own files (a dataset) are read too, each whole,\n"
    "as a DataLoader reads them: in sorted order (a map-style dataset's) and shuffled\n"
    "(a random sampler's), up to --size MB of them. With --run, also says how the\n"
    "recorded training read its data during its steps.\n";

static char made_file[4200]; /* removed on exit and on Ctrl-C */

static void remove_made_file(void)
{
    if (made_file[0])
        unlink(made_file);
}

static void on_signal(int sig)
{
    remove_made_file();
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct io_result {
    double seq_mb_s, rand_iops, rand_mb_s;
    bool direct; /* O_DIRECT honoured */
    unsigned long long file_bytes;
} io_result;

static void progress(bool tty, const char *what, double fraction)
{
    if (!tty)
        return;
    fprintf(stderr, "\r\033[Ktrainprof iobench: %s %3.0f%%", what, 100 * fraction);
    fflush(stderr);
}

static void dataset_progress(const char *what, double fraction) { progress(true, what, fraction); }

static void print_dataset_text(const char *path, const tp_dataset_reads *d)
{
    if (!d->files_found) {
        printf("no files under %s to read as a dataset\n", path);
        return;
    }
    printf("the dataset's files under %s: %zu found, %zu read (%.1f MiB, %.0f KiB each on "
           "average%s)\n",
           path, d->files_found, d->files, (double)d->bytes / (1 << 20), d->mean_file_kib,
           d->direct ? "" : "; O_DIRECT refused: cache dropped with fadvise");
    printf("  in sorted order (a map-style dataset) %8.1f MB/s %10.0f files/s\n", d->sorted_mb_s,
           d->sorted_files_s);
    printf("  shuffled (a random sampler)           %8.1f MB/s %10.0f files/s\n", d->random_mb_s,
           d->random_files_s);
}

static void dataset_json(json_writer *w, const tp_dataset_reads *d)
{
    json_key(w, "dataset");
    json_object_begin(w);
    json_key(w, "files_found");
    json_int(w, (int64_t)d->files_found);
    json_key(w, "files_read");
    json_int(w, (int64_t)d->files);
    json_key(w, "bytes_read");
    json_int(w, (int64_t)d->bytes);
    json_key(w, "mean_file_kib");
    json_double(w, d->mean_file_kib);
    json_key(w, "sorted_mb_s");
    json_double(w, d->sorted_mb_s);
    json_key(w, "sorted_files_per_s");
    json_double(w, d->sorted_files_s);
    json_key(w, "shuffled_mb_s");
    json_double(w, d->random_mb_s);
    json_key(w, "shuffled_files_per_s");
    json_double(w, d->random_files_s);
    json_key(w, "direct_io");
    json_bool(w, d->direct);
    json_object_end(w);
}

/* Writes size bytes of random-looking data to a new file in dir. */
static bool make_test_file(const char *dir, unsigned long long size, bool tty)
{
    snprintf(made_file, sizeof made_file, "%s/.trainprof-iobench-%d", dir, (int)getpid());
    int fd = open(made_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        tp_error("iobench: cannot create a test file in %s: %s", dir, strerror(errno));
        made_file[0] = '\0';
        return false;
    }
    char *buf = malloc(SEQ_BLOCK);
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < SEQ_BLOCK / 8; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(buf + i * 8, &x, 8);
    }
    bool ok = true;
    for (unsigned long long done = 0; ok && done < size; done += SEQ_BLOCK) {
        ok = write(fd, buf, SEQ_BLOCK) == (ssize_t)SEQ_BLOCK;
        progress(tty, "writing the test file", (double)done / (double)size);
    }
    ok = ok && fsync(fd) == 0;
    if (!ok)
        tp_error("iobench: writing the test file failed: %s", strerror(errno));
    free(buf);
    close(fd);
    return ok;
}

/* Opens for reading without the page cache: O_DIRECT, else drop the file's
 * cached pages first. */
static int open_uncached(const char *path, bool *direct)
{
    int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    *direct = fd >= 0;
    if (fd < 0) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    }
    return fd;
}

static bool measure(const char *path, io_result *r, bool tty)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || sb.st_size < (off_t)SEQ_BLOCK) {
        tp_error("iobench: %s is smaller than 1 MiB", path);
        return false;
    }
    r->file_bytes = (unsigned long long)sb.st_size;
    int fd = open_uncached(path, &r->direct);
    void *buf = NULL;
    if (fd < 0 || posix_memalign(&buf, 4096, SEQ_BLOCK) != 0) {
        tp_error("iobench: cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    uint64_t t0 = tp_clock_mono_ns();
    unsigned long long total = 0, blocks = r->file_bytes / SEQ_BLOCK;
    for (unsigned long long b = 0; b < blocks; b++) {
        ssize_t n = pread(fd, buf, SEQ_BLOCK, (off_t)(b * SEQ_BLOCK));
        if (n <= 0)
            break;
        total += (unsigned long long)n;
        if (b % 16 == 0)
            progress(tty, "sequential reads", (double)b / (double)blocks);
    }
    double secs = (double)(tp_clock_mono_ns() - t0) / 1e9;
    r->seq_mb_s = secs > 0 ? (double)total / 1e6 / secs : 0;
    if (!r->direct)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    unsigned long long slots = r->file_bytes / RAND_BLOCK, reads = 0;
    unsigned int seed = (unsigned int)getpid();
    t0 = tp_clock_mono_ns();
    uint64_t deadline = t0 + (uint64_t)(RAND_SECONDS * 1e9), now = t0;
    while (now < deadline && reads < 200000) {
        unsigned long long slot =
            (((unsigned long long)rand_r(&seed) << 31) ^ (unsigned long long)rand_r(&seed)) % slots;
        if (pread(fd, buf, RAND_BLOCK, (off_t)(slot * RAND_BLOCK)) <= 0)
            break;
        reads++;
        if (reads % 256 == 0) {
            now = tp_clock_mono_ns();
            progress(tty, "random reads", (double)(now - t0) / (RAND_SECONDS * 1e9));
        }
    }
    secs = (double)(tp_clock_mono_ns() - t0) / 1e9;
    r->rand_iops = secs > 0 ? (double)reads / secs : 0;
    r->rand_mb_s = r->rand_iops * RAND_BLOCK / 1e6;
    if (tty)
        fputs("\r\033[K", stderr);
    free(buf);
    close(fd);
    return true;
}

static const char *class_of(double mb_s)
{
    if (mb_s < DISK_MB_S * 1.5)
        return "about what a disk gives (~150 MB/s)";
    if (mb_s < NVME_MB_S * 0.5)
        return "faster than a disk (~150 MB/s), slower than NVMe (~3000 MB/s)";
    return "NVMe class (~3000 MB/s)";
}

typedef struct run_reads {
    bool have;
    bool steps; /* the figures are over the training steps (else the whole run's) */
    double mean_mb_s, max_mb_s, mean_iops, request_kib;
} run_reads;

static bool read_run(const char *path, run_reads *out)
{
    char err[1024];
    tp_summary s;
    bool ok = tp_summary_load(path, 0, &s, err, sizeof err);
    if (ok) {
        const tp_series_summary *b = tp_summary_find(&s, 1, TP_METRIC_DISK_READ_BYTES_PER_S, "{}");
        const tp_series_summary *o = tp_summary_find(&s, 1, TP_METRIC_DISK_READ_IOPS, "{}");
        if (b && o) {
            /* over the training steps, where the run marked them: the whole
             * run's peak is often the start-up's (torch's own import from a
             * cold cache), not what the loader read */
            const tp_stats *bs = tp_series_stats(b, false), *os = tp_series_stats(o, false);
            out->have = true;
            out->steps = b->in_steps && o->in_steps;
            out->mean_mb_s = bs->mean / 1e6;
            out->max_mb_s = bs->max / 1e6;
            out->mean_iops = os->mean;
            out->request_kib = os->mean > 0 ? bs->mean / os->mean / 1024 : NAN;
        }
        tp_summary_close(&s);
    } else {
        tp_error("%s", err);
    }
    return ok;
}

static void print_text(const char *path, const io_result *r, const run_reads *rr,
                       const tp_dataset_reads *d)
{
    printf("storage under %s (%.0f MiB read%s)\n", path, (double)r->file_bytes / (1 << 20),
           r->direct ? ", O_DIRECT" : "; O_DIRECT refused: cache dropped with fadvise");
    printf("  sequential 1 MiB reads  %10.1f MB/s   %s\n", r->seq_mb_s, class_of(r->seq_mb_s));
    printf("  random 4 KiB reads      %10.0f IOPS   (%.1f MB/s)\n", r->rand_iops, r->rand_mb_s);
    printf("  sequential beats random by %.0fx here\n",
           r->rand_mb_s > 0 ? r->seq_mb_s / r->rand_mb_s : 0);
    if (d)
        print_dataset_text(path, d);
    if (!rr)
        return;
    if (!rr->have) {
        printf("the run file has no disk read figures\n");
        return;
    }
    printf("the recorded training read %.1f MB/s on average%s (peak %.1f MB/s = %.0f%% of the "
           "sequential figure), %.0f reads/s",
           rr->mean_mb_s, rr->steps ? " during its steps" : " over the whole run", rr->max_mb_s,
           r->seq_mb_s > 0 ? 100 * rr->max_mb_s / r->seq_mb_s : 0, rr->mean_iops);
    if (!isnan(rr->request_kib))
        printf(", %.0f KiB per request%s", rr->request_kib,
               rr->request_kib < 64 ? ": small requests suggest random access" : "");
    printf("\n");
}

static void print_json(const char *path, const io_result *r, const run_reads *rr,
                       const tp_dataset_reads *d)
{
    json_writer w;
    json_init(&w, stdout);
    json_object_begin(&w);
    json_key(&w, "path");
    json_string(&w, path);
    json_key(&w, "direct_io");
    json_bool(&w, r->direct);
    json_key(&w, "bytes");
    json_int(&w, (int64_t)r->file_bytes);
    json_key(&w, "sequential_mb_s");
    json_double(&w, r->seq_mb_s);
    json_key(&w, "random_iops");
    json_double(&w, r->rand_iops);
    json_key(&w, "random_mb_s");
    json_double(&w, r->rand_mb_s);
    json_key(&w, "class");
    json_string(&w, class_of(r->seq_mb_s));
    if (d)
        dataset_json(&w, d);
    if (rr && rr->have) {
        json_key(&w, "run");
        json_object_begin(&w);
        json_key(&w, "read_mean_mb_s");
        json_double(&w, rr->mean_mb_s);
        json_key(&w, "read_max_mb_s");
        json_double(&w, rr->max_mb_s);
        json_key(&w, "over");
        json_string(&w, rr->steps ? "steps" : "run");
        json_key(&w, "read_iops_mean");
        json_double(&w, rr->mean_iops);
        json_key(&w, "request_kib");
        json_double(&w, rr->request_kib);
        json_object_end(&w);
    }
    json_object_end(&w);
    fputc('\n', stdout);
}

int cmd_iobench(int argc, char **argv)
{
    long size_mb = 256;
    const char *run_path = NULL;
    bool json = false;
    const tp_option options[] = {
        TP_INTEGER(0, "size", "MB",
                   "size of the test file in a directory, and of the dataset's files read "
                   "(default 256)",
                   &size_mb, 1, 1 << 20, "MB"),
        TP_STRING(0, "run", "RUN_FILE", "compare with the disk reads recorded in a run file",
                  &run_path),
        TP_FLAG(0, "json", "one JSON object instead of text", &json),
    };
    const tp_command cmd = {.name = "iobench",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = 1,
                            .operands = "one PATH"};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    const char *path = argv[first];
    run_reads rr = {0};
    if (run_path && !read_run(run_path, &rr))
        return 2;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        tp_error("iobench: %s: %s", path, strerror(errno));
        return 2;
    }
    bool tty = isatty(STDERR_FILENO);
    const char *target = path;
    tp_dataset_reads dataset, *d = NULL;
    if (S_ISDIR(sb.st_mode)) { /* its own files first: the test file isn't there yet */
        tp_dataset_read(path, NULL, (unsigned long long)size_mb << 20, &dataset,
                        tty ? dataset_progress : NULL);
        d = &dataset;
        if (tty)
            fputs("\r\033[K", stderr);
    }
    if (S_ISDIR(sb.st_mode)) {
        atexit(remove_made_file);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        if (!make_test_file(path, (unsigned long long)size_mb << 20, tty)) {
            remove_made_file();
            return 1;
        }
        target = made_file;
    } else if (!S_ISREG(sb.st_mode)) {
        tp_error("iobench: %s is neither a directory nor a regular file", path);
        return 2;
    }
    io_result r = {0};
    bool ok = measure(target, &r, tty);
    remove_made_file();
    made_file[0] = '\0';
    if (!ok)
        return 1;
    if (json)
        print_json(path, &r, run_path ? &rr : NULL, d);
    else
        print_text(path, &r, run_path ? &rr : NULL, d);
    return 0;
}
