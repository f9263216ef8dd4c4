/* trainprof.h: the one public C header of libtrainprof.
 *
 * Mark the phases of a training program; `trainprof record` collects them:
 *
 *     static tp_site load = TP_SITE("load_batch");
 *     tp_region_begin(&load); ...; tp_region_end(&load);
 *     { TP_SCOPE("forward"); ... }      // ends at the closing brace (GCC, Clang)
 *     tp_step(); tp_epoch(3);
 *
 * Every call is safe from any thread at any time. Outside `trainprof record`
 * each costs a thread-local check and returns. Under it, an event is a clock
 * read and a store into the thread's own shared-memory ring: no lock, no
 * allocation, no system call; a full ring drops the event and counts it. */
#ifndef TRAINPROF_H
#define TRAINPROF_H

#include <stdint.h>

#define TRAINPROF_VERSION_MAJOR 0
#define TRAINPROF_VERSION_MINOR 1
#define TRAINPROF_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* The standard phases' region names, as the PyTorch instrumentation times
 * them and the report knows them: use them for regions of the same meaning. */
#define TP_PHASE_DATALOADER_NEXT    "dataloader_next"    /* waiting for the next batch */
#define TP_PHASE_TO_DEVICE          "to_device"          /* host-to-device copies */
#define TP_PHASE_TRAIN_BATCH        "train_batch"        /* the training computation of a batch */
#define TP_PHASE_FORWARD            "forward"            /* inside train_batch */
#define TP_PHASE_LOSS               "loss"               /* inside train_batch: a loss module */
#define TP_PHASE_BACKWARD           "backward"           /* inside train_batch */
#define TP_PHASE_OPTIMIZER_STEP     "optimizer_step"     /* inside train_batch */
#define TP_PHASE_STEP_LR_SCHEDULERS "step_lr_schedulers" /* learning-rate schedulers' steps */
#define TP_PHASE_FROM_DEVICE        "from_device"        /* device-to-host copies */
#define TP_PHASE_REDUCE_METRICS     "reduce_metrics"     /* communication, DDP's all-reduce */
#define TP_PHASE_EVALUATE           "evaluate"           /* a pause: evaluation */
#define TP_PHASE_SANITY_CHECK       "sanity_check"       /* a pause: Lightning's sanity check */
#define TP_PHASE_CHECKPOINT         "checkpoint"         /* a pause: saving a checkpoint */
#define TP_PHASE_COMPILE            "compile"            /* a pause: torch.compile compiling */

/* CLOCK_MONOTONIC in nanoseconds: the same clock in every process of a host. */
uint64_t tp_clock_now_ns(void);

/* A call site: a name and the id libtrainprof gives it on first use. Make it
 * static (TP_SITE) so that the id is looked up once. */
typedef struct tp_site {
    const char *name;
    uint32_t id;
} tp_site;

#define TP_SITE(name_literal) \
    {                         \
        (name_literal), 0     \
    }

void tp_region_begin(tp_site *site);
void tp_region_end(tp_site *site);

/* The same by name id, for language bindings that intern names themselves. */
uint32_t tp_name_intern(const char *name);
void tp_begin(uint32_t name_id);
void tp_end(uint32_t name_id);

/* Whether this thread runs the binding's own work now (on: 1) or the code
 * it wraps (0), for its process's stack sampler: a sample taken in that
 * work counts as trainprof's cost, where no frame of the binding's could
 * say so (a wrapper written in C). Returns what it was, for the caller to
 * set back: `int was = tp_own_work(1); ... tp_own_work(was);`. A store
 * into this thread's ring; nothing, and 0, on a thread without one. */
int tp_own_work(int on);

/* A region that has already happened, from start_ns to end_ns (both from
 * tp_clock_now_ns), on this thread: for times measured by a callback, e.g.
 * when a communication future completes. Ignored when end_ns < start_ns. */
void tp_span(uint32_t name_id, uint64_t start_ns, uint64_t end_ns);

/* The device (GPU) time of a region this thread began at host_start_ns (from
 * tp_clock_now_ns), measured by the caller once the device has done the work:
 * e.g. the elapsed time between CUDA events recorded on the region's stream at
 * its begin and end, read when the end event has completed (never with a
 * synchronize the program would not have had). The report shows it beside
 * the region's host time. */
void tp_device_time(uint32_t name_id, uint64_t host_start_ns, uint64_t device_ns);

/* An explicit step boundary, and the start of epoch `epoch`. */
void tp_step(void);
void tp_epoch(int64_t epoch);
/* A step boundary this thread learnt of late: at t_ns (from tp_clock_now_ns),
 * before events it has sent since. For loops that can tell only afterwards
 * whether a batch began a step (micro-batches fetched before any work). */
void tp_step_at(uint64_t t_ns);
/* The step open on this thread ended at t_ns (from tp_clock_now_ns), and
 * what follows, up to the next step boundary, is no step: e.g. an evaluation
 * pass in the middle of an epoch. */
void tp_step_end_at(uint64_t t_ns);
/* Epoch `epoch` began at t_ns (from tp_clock_now_ns), learnt late: e.g. once
 * a pass over the training data has shown it is one (not a peek at its first
 * batch). */
void tp_epoch_at(int64_t epoch, uint64_t t_ns);
/* A batch of n samples (0 when its size is unknown) belongs to the current
 * step: call it once per batch, each micro-batch of gradient accumulation
 * included. Gives samples/s, and batches (micro-batches) per step. */
void tp_samples(int64_t n);

/* The figures of tp_device_memory, as the training's GPU memory allocator
 * keeps them (PyTorch's caching allocator: torch.cuda.memory_stats): bytes
 * allocated and reserved now, the peaks of both, the device's capacity, and
 * how many times the allocator freed its cache to retry an allocation and
 * gave up (out of memory), both since the process began. */
enum tp_device_memory_figure {
    TP_DEVMEM_ALLOCATED,
    TP_DEVMEM_RESERVED,
    TP_DEVMEM_PEAK_ALLOCATED,
    TP_DEVMEM_PEAK_RESERVED,
    TP_DEVMEM_CAPACITY,
    TP_DEVMEM_ALLOC_RETRIES,
    TP_DEVMEM_OOMS,
    TP_DEVMEM_FIGURES
};
/* This thread's GPU memory now, figures[TP_DEVMEM_*] (a negative one:
 * unknown, left out): call it at a step boundary, where what is allocated
 * holds the weights, gradients and optimizer state but no batch's
 * activations. One clock read and TP_DEVMEM_FIGURES slots; never blocks. */
void tp_device_memory(const int64_t figures[TP_DEVMEM_FIGURES]);

/* Names this thread in the recording (15 characters kept); call it before the
 * thread's first event, e.g. "DL worker 3". */
void tp_set_thread_name(const char *name);

/* This process's rank, local rank and world size, for launchers that export
 * none of RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK (mp.spawn,
 * Lightning's): they apply to every thread of the process, those that already
 * sent events included, and to its later forks. A negative local rank or
 * world size stands for the environment's (LOCAL_RANK, WORLD_SIZE and their
 * Slurm, Open MPI and PMI companions; -1 where it names none). The Python
 * face calls it once torch.distributed has its process group. */
void tp_set_rank(int32_t rank, int32_t local_rank, int32_t world_size);

/* True when events from this thread reach a recorder. */
int tp_active(void);
/* Events this thread dropped because its ring was full. */
uint64_t tp_dropped(void);

#if defined(__GNUC__) || defined(__clang__)
static inline void tp_scope_end_(tp_site **site) { tp_region_end(*site); }
#define TP_CONCAT_(a, b) a##b
#define TP_CONCAT(a, b)  TP_CONCAT_(a, b)
/* Opens a region that ends when the enclosing block does (the variable is
 * read only by its cleanup, which clang's -Wunused-variable does not count). */
#define TP_SCOPE(name_literal)                                                                \
    static tp_site TP_CONCAT(tp_site_, __LINE__) = TP_SITE(name_literal);                     \
    tp_site *TP_CONCAT(tp_scope_, __LINE__) __attribute__((cleanup(tp_scope_end_), unused)) = \
        (tp_region_begin(&TP_CONCAT(tp_site_, __LINE__)), &TP_CONCAT(tp_site_, __LINE__))
#endif

#ifdef __cplusplus
}
#endif
#endif
