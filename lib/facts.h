/* facts.h: what the training script does, as the instrumentation sees it
 * (the model's dtype and device, autocast, torch.compile, the training
 * DataLoader's settings), told to the recorder once each, so that the
 * advice fits the run: nothing the script already does, nothing GPU-only
 * on a CPU run.
 *
 * A fact is "key=value": the key of [a-z0-9_.] (1 to TP_FACT_KEY_MAX), the
 * value of printable ASCII (at most TP_FACT_TEXT_MAX in all). The recorder
 * checks both, and stores the fact in the run's meta as "fact.KEY" (the
 * prefix keeps a traced process from writing the recorder's own keys); a
 * later fact of the same key replaces it. docs/run-file.md lists them. */
#ifndef TP_LIB_FACTS_H
#define TP_LIB_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define TP_FACT_KEY_MAX  48
#define TP_FACT_TEXT_MAX 256
/* The one fact of a process rather than the run: the CUDA UUID of the GPU it
 * drives, stored as its thread's (table thread_device), so that each rank
 * maps to its own GPU. */
#define TP_FACT_DEVICE "cuda.device"
/* A process's stack sampler could not read its memory (a seccomp filter,
 * lib/self_read.h): the value says why, in words the same in every process,
 * and the recorder keeps it as an unavailable source, once. */
#define TP_FACT_STACKS_UNAVAILABLE "stacks.unavailable"
#define TP_UNAVAILABLE_STACKS      "Python stacks"

/* The keys the instrumentation sends (the Python package's; docs/run-file.md
 * says what each holds). The sender refuses any other (tp_fact_key_known)
 * and the run file's readers name them (meta "fact." KEY, or proc.PID.KEY
 * for a process's own): a key renamed on one side only fails the build or
 * the tests, never loses the fact quietly. The recorder takes any
 * well-formed key (a traced process is not trusted to use these). */
#define TP_FACT_TORCH_VERSION             "torch.version"
#define TP_FACT_TORCH_CUDA                "torch.cuda"
#define TP_FACT_MODEL_DTYPE               "model.dtype"
#define TP_FACT_MODEL_DEVICE              "model.device"
#define TP_FACT_MODEL_COMPILED            "model.compiled"
#define TP_FACT_MODEL_CAPABILITY          "model.capability"
#define TP_FACT_MODEL_AUTOCAST            "model.autocast"
#define TP_FACT_MODEL_AUTOCAST_DTYPE      "model.autocast_dtype"
#define TP_FACT_LOADER_NUM_WORKERS        "loader.num_workers"
#define TP_FACT_LOADER_PIN_MEMORY         "loader.pin_memory"
#define TP_FACT_LOADER_PERSISTENT_WORKERS "loader.persistent_workers"
#define TP_FACT_LOADER_PREFETCH_FACTOR    "loader.prefetch_factor"
#define TP_FACT_LOADER_BATCH_SIZE         "loader.batch_size"
/* 1: the training DataLoader is fetched on another thread than the one that
 * trains (a background prefetcher): updates mark the steps, no epochs */
#define TP_FACT_LOADER_PREFETCHED "loader.prefetched"
/* why CUPTI stayed attached after the capture windows on a CUDA device
 * (python/trainprof/runtime/ops.py release_cupti): 1 TEARDOWN_CUPTI set to
 * other than 1 in the environment, 2 a CUDA before 12.6; absent where it was
 * let go, or no window ran on CUDA */
#define TP_FACT_OPS_CUPTI_KEPT    "ops.cupti_kept"
#define TP_FACT_FRAMEWORK         "framework"
#define TP_FACT_FRAMEWORK_BACKEND "framework.backend"
#define TP_FACT_DDP_HOOK          "ddp.hook"
/* the evaluations (another loader's passes between the training's) that ran
 * with gradients on and the model in training mode, so far */
#define TP_FACT_EVALUATE_TRAINING_MODE "evaluate.training_mode"
#define TP_FACT_EXCEPTION_TYPE         "exception.type"
#define TP_FACT_EXCEPTION_MESSAGE      "exception.message"
#define TP_FACT_EXCEPTION_WHERE        "exception.where"
#define TP_FACT_PROCESS_EXIT           "process.exit"
/* an out-of-memory of the GPU's allocator: what it tried to allocate and
 * what the device had free then, bytes (from PyTorch's message) */
#define TP_FACT_EXCEPTION_OOM_TRIED "exception.oom_tried_bytes"
#define TP_FACT_EXCEPTION_OOM_FREE  "exception.oom_free_bytes"
/* PYTORCH_CUDA_ALLOC_CONF as the training had it ("" unset), once the
 * model is seen on a GPU */
#define TP_FACT_CUDA_ALLOC_CONF "cuda.alloc_conf"
/* the tracking runs the script opened (record --log-to logs into them once
 * the training ended; python/trainprof/trackers/identify.py), and the
 * interpreter that ran it, which has the trackers' libraries */
#define TP_FACT_TRACKER_PYTHON          "tracker.python"
#define TP_FACT_TRACKER_MLFLOW_RUN_ID   "tracker.mlflow.run_id"
#define TP_FACT_TRACKER_MLFLOW_URI      "tracker.mlflow.uri"
#define TP_FACT_TRACKER_WANDB_RUN_ID    "tracker.wandb.run_id"
#define TP_FACT_TRACKER_WANDB_PROJECT   "tracker.wandb.project"
#define TP_FACT_TRACKER_WANDB_ENTITY    "tracker.wandb.entity"
#define TP_FACT_TRACKER_WANDB_DIR       "tracker.wandb.dir"
#define TP_FACT_TRACKER_WANDB_MODE      "tracker.wandb.mode"
#define TP_FACT_TRACKER_TENSORBOARD_DIR "tracker.tensorboard.log_dir"

/* Whether key (key_len bytes, not terminated) is one of the catalogue's. */
static inline bool tp_fact_key_known(const char *key, size_t key_len)
{
    static const char *const known[] = {TP_FACT_DEVICE,
                                        TP_FACT_STACKS_UNAVAILABLE,
                                        TP_FACT_TORCH_VERSION,
                                        TP_FACT_TORCH_CUDA,
                                        TP_FACT_MODEL_DTYPE,
                                        TP_FACT_MODEL_DEVICE,
                                        TP_FACT_MODEL_COMPILED,
                                        TP_FACT_MODEL_CAPABILITY,
                                        TP_FACT_MODEL_AUTOCAST,
                                        TP_FACT_MODEL_AUTOCAST_DTYPE,
                                        TP_FACT_LOADER_NUM_WORKERS,
                                        TP_FACT_LOADER_PIN_MEMORY,
                                        TP_FACT_LOADER_PERSISTENT_WORKERS,
                                        TP_FACT_LOADER_PREFETCH_FACTOR,
                                        TP_FACT_LOADER_BATCH_SIZE,
                                        TP_FACT_LOADER_PREFETCHED,
                                        TP_FACT_OPS_CUPTI_KEPT,
                                        TP_FACT_FRAMEWORK,
                                        TP_FACT_FRAMEWORK_BACKEND,
                                        TP_FACT_DDP_HOOK,
                                        TP_FACT_EVALUATE_TRAINING_MODE,
                                        TP_FACT_EXCEPTION_TYPE,
                                        TP_FACT_EXCEPTION_MESSAGE,
                                        TP_FACT_EXCEPTION_WHERE,
                                        TP_FACT_PROCESS_EXIT,
                                        TP_FACT_EXCEPTION_OOM_TRIED,
                                        TP_FACT_EXCEPTION_OOM_FREE,
                                        TP_FACT_CUDA_ALLOC_CONF,
                                        TP_FACT_TRACKER_PYTHON,
                                        TP_FACT_TRACKER_MLFLOW_RUN_ID,
                                        TP_FACT_TRACKER_MLFLOW_URI,
                                        TP_FACT_TRACKER_WANDB_RUN_ID,
                                        TP_FACT_TRACKER_WANDB_PROJECT,
                                        TP_FACT_TRACKER_WANDB_ENTITY,
                                        TP_FACT_TRACKER_WANDB_DIR,
                                        TP_FACT_TRACKER_WANDB_MODE,
                                        TP_FACT_TRACKER_TENSORBOARD_DIR};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strlen(known[i]) == key_len && memcmp(known[i], key, key_len) == 0)
            return true;
    return false;
}

/* Facts of a process's end (exception.type, exception.message,
 * exception.where; process.exit=python once the interpreter shut down
 * normally): the recorder stores them under the process's pid, as meta
 * proc.PID.KEY, beside the end it saw (docs/run-file.md). */
static inline bool tp_fact_of_process(const char *key, size_t key_len)
{
    return (key_len > 10 && memcmp(key, "exception.", 10) == 0) ||
           (key_len > 8 && memcmp(key, "process.", 8) == 0);
}

/* Sends one fact through the calling thread's ring (attached on first use).
 * False when there is no recorder, the ring is full, or text is longer than
 * TP_FACT_TEXT_MAX (nothing sent). Not for the hot path: once per fact. */
bool tp_fact_send(const char *text, size_t len);

/* Whether text (len bytes) is a well-formed fact; its key's length into
 * *key_len. The recorder's check, shared with the sender (inline: the
 * recorder links none of the sender's code). */
static inline bool tp_fact_valid(const char *text, size_t len, size_t *key_len)
{
    if (len > TP_FACT_TEXT_MAX)
        return false;
    size_t k = 0;
    for (; k < len && text[k] != '='; k++) {
        char c = text[k];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
            return false;
    }
    if (k == 0 || k > TP_FACT_KEY_MAX || k == len)
        return false;
    for (size_t i = k + 1; i < len; i++)
        if (text[i] < 0x20 || text[i] > 0x7e)
            return false;
    *key_len = k;
    return true;
}

#endif
