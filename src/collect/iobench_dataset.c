/* iobench_dataset.c: see iobench_dataset.h. */
#include "collect/iobench_dataset.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "util/grow.h"
#include "util/oom.h"

#define FILES_MAX 200000 /* the walk stops there: a sample of a larger dataset */
#define CHUNK     (1u << 20)

typedef struct file_entry {
    char *path;
    unsigned long long size;
} file_entry;

/* nftw has no context argument: the walk's state, one walk at a time. */
static struct {
    file_entry *v;
    size_t n, cap;
    const char *skip;
} walk;

static int visit(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F || !S_ISREG(sb->st_mode) || sb->st_size == 0 ||
        (walk.skip && strcmp(path, walk.skip) == 0))
        return 0;
    walk.v = tp_grow(walk.v, walk.n, &walk.cap, sizeof *walk.v);
    walk.v[walk.n++] = (file_entry){tp_xstrdup(path), (unsigned long long)sb->st_size};
    return walk.n >= FILES_MAX; /* nonzero stops the walk */
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const file_entry *)a)->path, ((const file_entry *)b)->path);
}

/* Reads path whole, uncached; false when it can't be opened or read. */
static bool read_whole(const char *path, void *buf, bool *direct)
{
    int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
        *direct = false;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return false;
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    }
    ssize_t n;
    while ((n = read(fd, buf, CHUNK)) > 0)
        ;
    if (n < 0 && *direct) { /* O_DIRECT refused a file's tail or alignment: read it cached-out */
        close(fd);
        *direct = false;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return false;
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        while ((n = read(fd, buf, CHUNK)) > 0)
            ;
    }
    close(fd);
    return n == 0;
}

/* One pass over files[order[0..n)]: MB/s and files/s. */
static void pass(const file_entry *files, const size_t *order, size_t n, void *buf, bool *direct,
                 double *mb_s, double *files_s, const char *what,
                 void (*progress)(const char *, double))
{
    for (size_t i = 0; i < n; i++) { /* out of the page cache before the clock starts */
        int fd = open(files[order[i]].path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            close(fd);
        }
    }
    unsigned long long bytes = 0;
    size_t read_ok = 0;
    uint64_t t0 = tp_clock_mono_ns();
    for (size_t i = 0; i < n; i++) {
        if (read_whole(files[order[i]].path, buf, direct)) {
            bytes += files[order[i]].size;
            read_ok++;
        }
        if (progress && i % 64 == 0)
            progress(what, (double)i / (double)n);
    }
    double secs = (double)(tp_clock_mono_ns() - t0) / 1e9;
    *mb_s = secs > 0 ? (double)bytes / 1e6 / secs : 0;
    *files_s = secs > 0 ? (double)read_ok / secs : 0;
}

bool tp_dataset_read(const char *dir, const char *skip, unsigned long long budget,
                     tp_dataset_reads *out, void (*progress)(const char *what, double fraction))
{
    memset(out, 0, sizeof *out);
    memset(&walk, 0, sizeof walk);
    walk.skip = skip;
    nftw(dir, visit, 32, FTW_PHYS);
    out->files_found = walk.n;
    qsort(walk.v, walk.n, sizeof *walk.v, by_path);
    size_t n = 0;
    for (unsigned long long sum = 0; n < walk.n && (n == 0 || sum < budget); n++)
        sum += walk.v[n].size, out->bytes = sum;
    void *buf = NULL;
    size_t *order = n ? tp_xmalloc(n * sizeof *order) : NULL;
    bool ok = n > 0 && posix_memalign(&buf, 4096, CHUNK) == 0;
    if (ok) {
        out->files = n;
        out->mean_file_kib = (double)out->bytes / (double)n / 1024;
        out->direct = true;
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        pass(walk.v, order, n, buf, &out->direct, &out->sorted_mb_s, &out->sorted_files_s,
             "the dataset's files in order", progress);
        unsigned int seed = 12345; /* the same shuffle every time: comparable runs */
        for (size_t i = n; i > 1; i--) {
            size_t j = (size_t)rand_r(&seed) % i, t = order[i - 1];
            order[i - 1] = order[j], order[j] = t;
        }
        pass(walk.v, order, n, buf, &out->direct, &out->random_mb_s, &out->random_files_s,
             "the dataset's files shuffled", progress);
        ok = out->sorted_files_s > 0;
    }
    free(buf);
    free(order);
    for (size_t i = 0; i < walk.n; i++)
        free(walk.v[i].path);
    free(walk.v);
    memset(&walk, 0, sizeof walk);
    return ok;
}
