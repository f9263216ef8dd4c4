/* writer.c: batched, transactional writes into the run file. */
#include "store/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/metric_catalog.h"
#include "store/ops_write.h"
#include "store/schema.h"

enum {
    ST_META,
    ST_SERIES,
    ST_SAMPLE,
    ST_UNAVAILABLE,
    ST_GPU,
    ST_THREAD,
    ST_NAME,
    ST_REGION,
    ST_MARK,
    ST_DEVICE,
    ST_THREAD_CUDA,
    ST_THREAD_DEVICE,
    ST_FRAME,
    ST_STACK_NODE,
    ST_STACK_SAMPLE,
    ST_N
};

static const char *const statements[ST_N] = {
    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
    "INSERT OR IGNORE INTO series (id, agent_id, metric_id, labels)"
    " VALUES (?, 1, (SELECT id FROM metric WHERE name = ?), ?)",
    "INSERT OR IGNORE INTO sample (series_id, t_ns, value) VALUES (?, ?, ?)",
    "INSERT INTO unavailable (agent_id, source, reason) VALUES (1, ?, ?)",
    "INSERT OR REPLACE INTO gpu (agent_id, gpu_index, name, uuid, mem_total_bytes, energy_source)"
    " VALUES (1, ?, ?, ?, ?, ?)",
    "INSERT OR REPLACE INTO thread (id, agent_id, pid, tid, rank, local_rank, world_size, name,"
    " dropped_events) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?)",
    "INSERT OR IGNORE INTO name (id, text) VALUES (?, ?)",
    "INSERT INTO region (thread_id, name_id, depth, start_ns, end_ns) VALUES (?, ?, ?, ?, ?)",
    "INSERT INTO mark (thread_id, kind, t_ns, value) VALUES (?, ?, ?, ?)",
    "INSERT INTO device_time (thread_id, name_id, start_ns, device_ns) VALUES (?, ?, ?, ?)",
    "INSERT OR REPLACE INTO thread_cuda (thread_id, visible_devices) VALUES (?, ?)",
    "INSERT OR REPLACE INTO thread_device (thread_id, uuid) VALUES (?, ?)",
    "INSERT OR IGNORE INTO frame (id, function, file) VALUES (?, ?, ?)",
    "INSERT OR IGNORE INTO stack_node (id, parent, frame_id, line) VALUES (?, ?, ?, ?)",
    /* a run still growing comes again under its row id: the row is replaced */
    "INSERT OR REPLACE INTO stack_sample (rowid, thread_id, tid, t_ns, phase_id, state, node_id,"
    " count, span_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

struct tp_writer {
    int lock_fd; /* the run file, held with an exclusive flock while it is written */
    sqlite3 *db;
    sqlite3_stmt *st[ST_N];
    char error[256]; /* SQLite's message for the last failed batch */
};

/* Removes a previous run file and its WAL companions (--force), unless a
 * live recorder holds it (its writer's flock): false then, nothing removed.
 * The file is unlinked while this process holds its lock, so that a
 * recorder that made it since the check is never the one removed. */
static bool remove_run_file(const char *path)
{
    char side[4200];
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        close(fd);
        return false;
    }
    unlink(path);
    if (fd >= 0)
        close(fd);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    return true;
}

/* Makes path, exclusively and not through a link, already held (flock):
 * made under a name of its own beside it, locked, then linked into place,
 * so that no other recorder ever finds it unlocked (between an open and a
 * flock, a second `record --force` once removed a first's new file). Where
 * the file system has no hard links, made in place and locked at once. The
 * descriptor, or -1 with errno (EEXIST: path is there). */
static int create_locked(const char *path)
{
    char tmp[4200];
    int fd = -1;
    for (int i = 0; i < 8 && fd < 0; i++) {
        int n = snprintf(tmp, sizeof tmp, "%s.%ld-%d.new", path, (long)getpid(), i);
        if (n < 0 || (size_t)n >= sizeof tmp)
            break;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd >= 0) {
        flock(fd, LOCK_EX | LOCK_NB);
        int made = link(tmp, path), why = errno;
        unlink(tmp);
        if (made == 0)
            return fd;
        close(fd);
        if (why != EPERM && why != ENOTSUP && why != EOPNOTSUPP && why != EMLINK && why != EXDEV) {
            errno = why;
            return -1;
        }
    }
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0)
        flock(fd, LOCK_EX | LOCK_NB);
    return fd;
}

static void close_writer(tp_writer *w)
{
    for (int i = 0; i < ST_N; i++)
        sqlite3_finalize(w->st[i]);
    sqlite3_close(w->db);
    if (w->lock_fd >= 0)
        close(w->lock_fd); /* the lock goes with it */
    free(w);
}

/* Whether a live recorder holds path (its writer's flock): such a file is
 * never replaced, --force or not. */
static bool being_recorded(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

/* Whether path names the file open as fd (no one swapped it since). */
static bool same_file(const char *path, int fd)
{
    struct stat a, b;
    return lstat(path, &a) == 0 && fstat(fd, &b) == 0 && S_ISREG(a.st_mode) &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Whether SQLite's companions of a file at path (-wal, -shm, -journal) are
 * absent: left beside it (or planted), SQLite would take them for the new
 * file's own, or refuse a link with no word why. False, said in err. */
static bool no_companions(const char *path, char *err, size_t cap)
{
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof sides / sizeof *sides; i++) {
        char side[4200];
        struct stat side_sb;
        snprintf(side, sizeof side, "%s%s", path, sides[i]);
        if (lstat(side, &side_sb) == 0) {
            snprintf(err, cap,
                     "cannot write %s: %s is already there (%s), which SQLite would take for "
                     "the new file's own: remove it, or use --force",
                     path, side, S_ISLNK(side_sb.st_mode) ? "a symbolic link" : "a file");
            return false;
        }
    }
    return true;
}

/* The run's one agent: this machine, named agent or by its host name. */
static int insert_agent(sqlite3 *db, const char *agent)
{
    sqlite3_stmt *a;
    int rc =
        sqlite3_prepare_v2(db, "INSERT INTO agent (id, name, host) VALUES (1, ?, ?)", -1, &a, NULL);
    if (rc == SQLITE_OK) {
        char host[256] = "unknown";
        gethostname(host, sizeof host - 1);
        sqlite3_bind_text(a, 1, agent && *agent ? agent : host, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(a, 2, host, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(a) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_finalize(a);
    }
    return rc;
}

tp_writer *tp_writer_create(const char *path, bool force, const char *agent, char *err, size_t cap)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(err, cap, "%s is a directory, not a run file path", path);
        return NULL;
    }
    if (being_recorded(path) || (force && !remove_run_file(path))) {
        snprintf(err, cap,
                 "%s is being recorded right now by another trainprof record: it is not "
                 "replaced, --force or not",
                 path);
        return NULL;
    }
    if (!no_companions(path, err, cap))
        return NULL;
    /* made here, exclusively and not through a link, and held (flock) from
     * the moment it is there while it is written; SQLite opens it by name,
     * refusing links, and the name must still be this file afterwards */
    int fd = create_locked(path);
    if (fd < 0) {
        if (errno == EEXIST)
            snprintf(err, cap, "%s already exists (use --force to overwrite it)", path);
        else
            snprintf(err, cap, "cannot create %s: %s", path, strerror(errno));
        return NULL;
    }
    tp_writer *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, cap, "cannot initialise run file %s: out of memory", path);
        close(fd);
        unlink(path);
        return NULL;
    }
    w->lock_fd = fd;
    /* one thread at a time uses a writer (the recorder's main thread, then its
     * writer thread, then the main thread once it is joined): no mutex of
     * SQLite's around every call, which took a quarter of the writer
     * thread's time under a flood of regions */
    int rc = sqlite3_open_v2(
        path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK && !same_file(path, fd)) {
        snprintf(err, cap, "%s was replaced while it was being created: not written", path);
        close_writer(w);
        return NULL;
    }
    if (rc == SQLITE_OK)
        rc = tp_exec(w->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    if (rc == SQLITE_OK)
        rc = tp_schema_create(w->db);
    for (int i = 0; rc == SQLITE_OK && i < ST_N; i++)
        rc = sqlite3_prepare_v3(w->db, statements[i], -1, SQLITE_PREPARE_PERSISTENT, &w->st[i],
                                NULL);
    if (rc == SQLITE_OK)
        rc = insert_agent(w->db, agent);
    if (rc != SQLITE_OK) {
        /* the handle's message where it has one; "not an error" is none */
        const char *why = w->db && sqlite3_errcode(w->db) != SQLITE_OK ? sqlite3_errmsg(w->db)
                                                                       : sqlite3_errstr(rc);
        snprintf(err, cap, "cannot initialise run file %s: %s", path,
                 (rc & 0xff) == SQLITE_NOMEM ? "out of memory" : why);
        close_writer(w);
        unlink(path);
        return NULL;
    }
    return w;
}

/* Steps a bound statement and resets it; returns an SQLite code. */
static int run(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int write_pairs(sqlite3_stmt *st, const tp_text_pair *pairs, size_t n)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        sqlite3_bind_text(st, 1, pairs[i].key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, pairs[i].value, -1, SQLITE_STATIC);
        rc = run(st);
    }
    return rc;
}

/* Threads, names, regions, marks and device times from the timing-event drain. */
static int write_timings(tp_writer *w, const tp_batch *b)
{
    int rc = SQLITE_OK;
    sqlite3_stmt *st = w->st[ST_THREAD];
    for (size_t i = 0; rc == SQLITE_OK && i < b->threads.len; i++) {
        const tp_thread_info *t = &b->threads.items[i];
        sqlite3_bind_int64(st, 1, t->id);
        sqlite3_bind_int(st, 2, t->pid);
        sqlite3_bind_int(st, 3, t->tid);
        sqlite3_bind_int(st, 4, t->rank);
        sqlite3_bind_int(st, 5, t->local_rank);
        sqlite3_bind_int(st, 6, t->world_size);
        sqlite3_bind_text(st, 7, t->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)t->dropped);
        rc = run(st);
        if (rc == SQLITE_OK && t->cuda_visible_set) {
            sqlite3_stmt *cuda = w->st[ST_THREAD_CUDA];
            sqlite3_bind_int64(cuda, 1, t->id);
            sqlite3_bind_text(cuda, 2, t->cuda_visible, -1, SQLITE_STATIC);
            rc = run(cuda);
        }
        if (rc == SQLITE_OK && t->device_uuid[0]) {
            sqlite3_stmt *dev = w->st[ST_THREAD_DEVICE];
            sqlite3_bind_int64(dev, 1, t->id);
            sqlite3_bind_text(dev, 2, t->device_uuid, -1, SQLITE_STATIC);
            rc = run(dev);
        }
    }
    st = w->st[ST_NAME];
    for (size_t i = 0; rc == SQLITE_OK && i < b->names.len; i++) {
        sqlite3_bind_int64(st, 1, b->names.items[i].id);
        sqlite3_bind_text(st, 2, b->names.items[i].text, -1, SQLITE_STATIC);
        rc = run(st);
    }
    st = w->st[ST_REGION];
    for (size_t i = 0; rc == SQLITE_OK && i < b->intervals.len; i++) {
        const tp_interval *iv = &b->intervals.items[i];
        sqlite3_bind_int64(st, 1, iv->thread);
        sqlite3_bind_int64(st, 2, iv->name);
        sqlite3_bind_int64(st, 3, iv->depth);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)iv->start_ns);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)iv->end_ns);
        rc = run(st);
    }
    st = w->st[ST_MARK];
    for (size_t i = 0; rc == SQLITE_OK && i < b->marks.len; i++) {
        const tp_mark *m = &b->marks.items[i];
        sqlite3_bind_int64(st, 1, m->thread);
        sqlite3_bind_int(st, 2, (int)m->kind); /* the number (schema 7) */
        sqlite3_bind_int64(st, 3, (sqlite3_int64)m->t_ns);
        sqlite3_bind_int64(st, 4, m->value);
        rc = run(st);
    }
    st = w->st[ST_DEVICE];
    for (size_t i = 0; rc == SQLITE_OK && i < b->device_spans.len; i++) {
        const tp_device_span *d = &b->device_spans.items[i];
        sqlite3_bind_int64(st, 1, d->thread);
        sqlite3_bind_int64(st, 2, d->name);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)d->start_ns);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)d->device_ns);
        rc = run(st);
    }
    return rc;
}

/* Frames, stack nodes and stack samples from the stack samplers' rings. */
static int write_stacks(tp_writer *w, const tp_batch *b)
{
    int rc = SQLITE_OK;
    sqlite3_stmt *st = w->st[ST_FRAME];
    for (size_t i = 0; rc == SQLITE_OK && i < b->frames.len; i++) {
        const char *text = b->frames.items[i].text, *nl = strchr(text, '\n');
        sqlite3_bind_int64(st, 1, b->frames.items[i].id);
        sqlite3_bind_text(st, 2, text, nl ? (int)(nl - text) : -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, nl ? nl + 1 : "", -1, SQLITE_STATIC);
        rc = run(st);
    }
    st = w->st[ST_STACK_NODE];
    for (size_t i = 0; rc == SQLITE_OK && i < b->stack_nodes.len; i++) {
        const tp_stack_node *n = &b->stack_nodes.items[i];
        sqlite3_bind_int64(st, 1, n->id);
        sqlite3_bind_int64(st, 2, n->parent);
        sqlite3_bind_int64(st, 3, n->frame);
        sqlite3_bind_int(st, 4, n->line);
        rc = run(st);
    }
    st = w->st[ST_STACK_SAMPLE];
    for (size_t i = 0; rc == SQLITE_OK && i < b->stacks.len; i++) {
        const tp_stack_sample *x = &b->stacks.items[i];
        if (x->row && x->row <= INT64_MAX)
            sqlite3_bind_int64(st, 1, (sqlite3_int64)x->row);
        else
            sqlite3_bind_null(st, 1);
        sqlite3_bind_int64(st, 2, x->thread);
        sqlite3_bind_int(st, 3, x->tid);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)x->t_ns);
        sqlite3_bind_int64(st, 5, x->phase);
        sqlite3_bind_int(st, 6, (int)x->state);
        sqlite3_bind_int64(st, 7, x->node);
        sqlite3_bind_int64(st, 8, x->count);
        sqlite3_bind_int64(st, 9, (sqlite3_int64)x->span_ns);
        rc = run(st);
    }
    return rc;
}

static int write_batch(tp_writer *w, const tp_batch *b)
{
    int rc = write_pairs(w->st[ST_META], b->meta.items, b->meta.len);
    if (rc == SQLITE_OK)
        rc = write_pairs(w->st[ST_UNAVAILABLE], b->unavailable.items, b->unavailable.len);
    sqlite3_stmt *st = w->st[ST_SERIES];
    for (size_t i = 0; rc == SQLITE_OK && i < b->series.len; i++) {
        sqlite3_bind_int64(st, 1, b->series.items[i].id);
        sqlite3_bind_text(st, 2, b->series.items[i].metric, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, b->series.items[i].labels, -1, SQLITE_STATIC);
        rc = run(st);
    }
    st = w->st[ST_GPU];
    for (size_t i = 0; rc == SQLITE_OK && i < b->gpus.len; i++) {
        const tp_gpu_info *g = &b->gpus.items[i];
        sqlite3_bind_int(st, 1, g->index);
        sqlite3_bind_text(st, 2, g->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, g->uuid, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)g->mem_total_bytes);
        sqlite3_bind_text(st, 5, g->energy_source, -1, SQLITE_STATIC);
        rc = run(st);
    }
    rc = rc == SQLITE_OK ? write_timings(w, b) : rc;
    rc = rc == SQLITE_OK ? write_stacks(w, b) : rc;
    rc = rc == SQLITE_OK ? tp_ops_write(w->db, b) : rc;
    st = w->st[ST_SAMPLE];
    for (size_t i = 0; rc == SQLITE_OK && i < b->samples.len; i++) {
        const tp_sample *s = &b->samples.items[i];
        sqlite3_bind_int64(st, 1, s->series);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)s->t_ns);
        sqlite3_bind_double(st, 3, s->value);
        rc = run(st);
    }
    return rc;
}

bool tp_writer_apply(tp_writer *w, const tp_batch *batch, char *err, size_t cap)
{
    int rc = tp_exec(w->db, "BEGIN");
    if (rc == SQLITE_OK)
        rc = write_batch(w, batch);
    if (rc == SQLITE_OK)
        rc = tp_exec(w->db, "COMMIT");
    if (rc != SQLITE_OK) {
        snprintf(w->error, sizeof w->error, "%s", sqlite3_errmsg(w->db));
        snprintf(err, cap, "writing the run file failed: %s", w->error);
        tp_exec(w->db, "ROLLBACK");
        return false;
    }
    return true;
}

const char *tp_writer_error(const tp_writer *w) { return w->error; }

/* Runs statement which with two texts, in its own transaction. */
static bool put_pair(tp_writer *w, int which, const char *key, const char *value)
{
    sqlite3_stmt *st = w->st[which];
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    return run(st) == SQLITE_OK;
}

bool tp_writer_meta(tp_writer *w, const char *key, const char *value)
{
    return put_pair(w, ST_META, key, value);
}

bool tp_writer_metas(tp_writer *w, const char *const *keys, const char *const *values, size_t n)
{
    int rc = tp_exec(w->db, "BEGIN");
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++)
        rc = put_pair(w, ST_META, keys[i], values[i]) ? SQLITE_OK : SQLITE_ERROR;
    if (rc == SQLITE_OK)
        rc = tp_exec(w->db, "COMMIT");
    if (rc != SQLITE_OK)
        tp_exec(w->db, "ROLLBACK");
    return rc == SQLITE_OK;
}

bool tp_writer_unavailable(tp_writer *w, const char *source, const char *reason)
{
    return put_pair(w, ST_UNAVAILABLE, source, reason);
}

/* db's file out of WAL mode: its WAL checkpointed into it, then the switch
 * to a rollback journal, which SQLite makes only where no other connection
 * has the file open. SQLITE_OK once out, SQLITE_BUSY (or _LOCKED) while
 * another connection holds the file, another code where the switch failed
 * for another reason (a full disk). */
static int leave_wal(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    tp_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=DELETE", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        rc = sqlite3_stricmp((const char *)sqlite3_column_text(st, 0), "delete") == 0 ? SQLITE_OK
                                                                                      : SQLITE_BUSY;
    sqlite3_finalize(st);
    return rc;
}

bool tp_writer_finish(tp_writer *w)
{
    if (!w)
        return true;
    int rc = leave_wal(w->db);
    for (int waited = 0; ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) &&
                         waited < TP_WRITER_LET_GO_WAIT_MS;
         waited += 50) {
        sqlite3_sleep(50);
        rc = leave_wal(w->db);
    }
    close_writer(w);
    return rc == SQLITE_OK;
}
