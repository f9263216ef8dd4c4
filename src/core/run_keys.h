/* run_keys.h: the names the run file's producers and readers share besides
 * the metrics (core/metric_catalog.h): the label sets of per-device series
 * and the metadata keys. A producer (a collector, record) and its readers
 * (analysis, rendering) use these names, never the bare strings, so that a
 * rename is one change the compiler sees everywhere. docs/run-file.md says
 * what each holds. */
#ifndef TP_CORE_RUN_KEYS_H
#define TP_CORE_RUN_KEYS_H

#include <stddef.h>

/* ---- label sets ---- */

#define TP_LABELS_NONE "{}" /* a series of the whole machine or process */
#define TP_LABEL_GPU   "gpu"
#define TP_LABEL_MIG   "mig"
#define TP_LABEL_PID   "pid"

/* {"pid":"N"}: a traced process's own series (its GPU memory allocator's). */
void tp_labels_pid(char *buf, size_t cap, long pid);
/* {"gpu":"N"}: GPU index's series. */
void tp_labels_gpu(char *buf, size_t cap, int gpu);
/* {"gpu":"N","mig":"K"}: MIG instance k of GPU index's series. */
void tp_labels_gpu_mig(char *buf, size_t cap, int gpu, int mig);

/* ---- metadata keys (table meta; per agent in agent_meta) ---- */

/* the machine: collect/host_info.c, collect/cgroup.c */
#define TP_META_CPU_COUNT                 "cpu_count"
#define TP_META_MEM_TOTAL_BYTES           "mem_total_bytes"
#define TP_META_CGROUP_CPU_LIMIT_CORES    "cgroup_cpu_limit_cores" /* or "none" */
#define TP_META_CGROUP_MEMORY_LIMIT_BYTES "cgroup_memory_limit_bytes"
/* the recording: cmd_record.c */
#define TP_META_START_WALL_NS "start_wall_ns"
#define TP_META_INTERVAL_S    "interval_s"
#define TP_META_STALL_AFTER_S "stall_after_s"
/* TRAINPROF_DEVICE_TIMES=N (2 to 255) in the command's environment: its
 * regions' device times taken on one step in N (trainprof/patches/device.py) */
#define TP_META_DEVICE_TIMES_EVERY "device_times_every"
/* the recorder backed off its own work, over its budget (record/ops_plan.h):
 * "AT_NS STEP SHARE REGIONS_PER_STEP regions|windows", AT_NS since the start */
#define TP_META_BACKOFF     "backoff"
#define TP_META_COMMAND     "command"
#define TP_META_EXIT_STATUS "exit_status"
/* the machine, each agent's (collect/host_info.c, collect/gpu_nvml.c, collect/cgroup.c) */
#define TP_META_HOST           "host"
#define TP_META_AGENT          "agent" /* record --agent, else the host's name */
#define TP_META_KERNEL         "kernel"
#define TP_META_CPU_MODEL      "cpu_model"
#define TP_META_CGROUP_VERSION "cgroup_version"
#define TP_META_DRIVER_VERSION "gpu_driver_version" /* NVML's */
#define TP_META_PCIE_SOURCE    "gpu_pcie_source"    /* where the PCIe figures come from */
/* the recording's own (record/run_meta.c, record/session.c) */
#define TP_META_ARGV                 "argv"
#define TP_META_VERSION              "trainprof_version"
#define TP_META_STATUS               "status" /* "recording", then "finished" */
#define TP_META_START_MONO_NS        "start_mono_ns"
#define TP_META_CLOCK_UNCERTAINTY_NS "clock_uncertainty_ns"
#define TP_META_START_WALL           "start_wall" /* the start, ISO 8601 */
#define TP_META_STACKS_HZ            "stacks_hz"
#define TP_META_OPS                  "ops" /* capture windows "on" or "off" */
#define TP_META_OPS_STEPS            "ops_steps"
#define TP_META_OPS_EVERY_S          "ops_every_s"
#define TP_META_OPS_ON_SLOW          "ops_on_slow"
#define TP_META_RECORDER_PID         "recorder_pid"
#define TP_META_CHILD_PID            "child_pid"
#define TP_META_STOP_SIGNAL          "stop_signal" /* the signal that stopped record */
#define TP_META_STOP_SIGNAL_NS       "stop_signal_ns"
#define TP_META_EXIT_SIGNAL          "exit_signal" /* the signal the command died of */
#define TP_META_DURATION_NS          "duration_ns"
/* timing events the recorder could not keep (memory ran out, or its writer
 * was too far behind), where there were any */
#define TP_META_EVENTS_NOT_RECORDED "events_not_recorded"
#define TP_META_WRITE_FAILED        "write_failed" /* the writer's error, where it stopped */
#define TP_META_WRITE_FAILED_NS     "write_failed_ns"
/* the environment the command ran in: "env." NAME (SLURM_JOB_ID, WORLD_SIZE...) */
#define TP_META_ENV "env."
/* the stored summary, and merges (store/summary_write.c, store/merge.c) */
#define TP_META_SUMMARIZED "summarized" /* "1": summary_* tables */
/* the analysis that made them (its identity: tools/analysis_id.py) */
#define TP_META_SUMMARY_BY                  "summary_by"
#define TP_META_PLOTS                       "plots"         /* "1": the html's plots stored */
#define TP_META_STALLS_STORED               "stalls_stored" /* "1": summary_stall */
#define TP_META_SUMMARY_ONLY                "summary_only"  /* "1": a merge kept no rows */
#define TP_META_MERGED_FROM                 "merged_from"   /* "N files" */
#define TP_META_MERGE_ANCHOR_UNCERTAINTY_NS "merge_anchor_uncertainty_ns"
#define TP_META_ENVELOPES                   "envelopes" /* "1": a fleet's metric envelopes */
/* the facts the training told (lib/facts.h's keys): "fact." KEY */
#define TP_META_FACT "fact."

/* A traced process's end, "proc.PID.<what>": what is one of these (the
 * recorder's, record/process_ends.c), or a process fact (lib/facts.h). */
#define TP_META_PROC_END_NS    "end_ns"   /* when the recorder saw it end */
#define TP_META_PROC_ALIVE_NS  "alive_ns" /* its last sign of life: it ended since */
#define TP_META_PROC_STATUS    "status"   /* "exit N", "signal N" */
#define TP_META_PROC_STEP      "step"
#define TP_META_PROC_PHASE     "phase"
#define TP_META_PROC_STACK     "stack"
#define TP_META_PROC_OOM_KILLS "oom_kills"
/* when it told its exception (the fact's time, ns since the start): no
 * fact can name it (a process's facts are exception.* and process.*) */
#define TP_META_PROC_RAISED_NS "raised_ns"

/* A GPU's own key, "gpu.N.<what>": what is one of these. */
#define TP_META_GPU_MIG       "mig"       /* its MIG instances: "UUID=total bytes,..." */
#define TP_META_GPU_PROCESSES "processes" /* the processes NVML saw on it */
void tp_meta_key_gpu(char *buf, size_t cap, int gpu, const char *what);

#endif
