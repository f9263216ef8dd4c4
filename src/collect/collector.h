/* collector.h: the interface every metric source implements.
 *
 * A collector is created once per recording by its tp_*_collector_new
 * function. When its source is absent or unreadable the constructor records
 * "unavailable: <reason>" in the sink and returns NULL; that is never fatal.
 * sample() is called from the sampler thread at every tick with the tick's
 * CLOCK_MONOTONIC time; it reads its files (pread, no allocation in steady
 * state) and emits samples. Rates are computed over the real time between two
 * of the collector's own reads, so a late tick yields a correct rate. */
#ifndef TP_COLLECT_COLLECTOR_H
#define TP_COLLECT_COLLECTOR_H

#include <stdint.h>
#include <sys/types.h>

#include "collect/sysroot.h"
#include "core/sink.h"

typedef struct tp_collect_env {
    const tp_sysroot *root;
    tp_sink *sink;
    pid_t target_pid; /* root of the training's process tree; 0 for none */
} tp_collect_env;

typedef struct tp_collector tp_collector;
struct tp_collector {
    const char *name;
    void (*sample)(tp_collector *c, uint64_t now_ns);
    void (*destroy)(tp_collector *c);
};

tp_collector *tp_cpu_collector_new(const tp_collect_env *env);
tp_collector *tp_mem_collector_new(const tp_collect_env *env);
tp_collector *tp_disk_collector_new(const tp_collect_env *env);
tp_collector *tp_net_collector_new(const tp_collect_env *env);
tp_collector *tp_infiniband_collector_new(const tp_collect_env *env);
tp_collector *tp_proc_tree_collector_new(const tp_collect_env *env);
tp_collector *tp_pressure_collector_new(const tp_collect_env *env);
tp_collector *tp_rapl_collector_new(const tp_collect_env *env);
tp_collector *tp_nvml_collector_new(const tp_collect_env *env);

/* Not a sampler: records the cgroup's CPU and memory limits as run metadata
 * (or an unavailable note) once. */
void tp_cgroup_record_limits(const tp_collect_env *env);

/* Records why source is unavailable after opening path failed with error
 * err: `absent` (e.g. "no RAPL on this machine") where the path does not
 * exist (ENOENT, ENOTDIR), else the path and the error itself, so that a
 * recorder out of descriptors (EMFILE) or permissions does not blame the
 * machine. */
void tp_collect_unavailable(const tp_collect_env *env, const char *source, const char *path,
                            int err, const char *absent);

#endif
