/* model_facts.h: what the training's model runs in (dtype, device, autocast,
 * the GPU's compute capability, torch.compile) and how its training
 * DataLoader is set, as the auto-instrumentation saw them at the first
 * training forward and the loader's first iteration (lib/facts.h). No I/O:
 * store/model_facts_file.h reads them (from a run's meta, or the file of a
 * `trainprof bottleneck` replay run), analyze/model_case.h judges them. */
#ifndef TP_CORE_MODEL_FACTS_H
#define TP_CORE_MODEL_FACTS_H

typedef struct tp_model_facts {
    char dtype[32];          /* of the first parameter: "float32", "bfloat16", ... ("" unknown) */
    char device[16];         /* its device type: "cuda", "cpu", ... ("" unknown) */
    int cc_major, cc_minor;  /* CUDA compute capability, 0.0 when not on CUDA */
    int autocast;            /* 1 on, 0 off, -1 unknown */
    char autocast_dtype[16]; /* the dtype autocast runs in where on: "bfloat16", ... ("" unknown) */
    int compiled;            /* the model is torch.compile's: 1, 0, -1 unknown */
    /* the training DataLoader's settings; -1 unknown */
    int num_workers, pin_memory, persistent_workers, prefetch_factor, batch_size;
    /* the framework whose loop marked the steps where an adapter says so
     * ("keras"), and the backend it ran on ("torch", "jax", "tensorflow"); "" unknown */
    char framework[16];
    char backend[16];
    /* DDP's gradient all-reduce as the instrumentation found it: "timed",
     * "builtin" (a C++ hook with no Python equivalent: not timed), "left" (DDP
     * left alone: its Python reducer, or a hook refused); "" unknown */
    char ddp_hook[16];
    /* the evaluations (validation passes) that ran with gradients on and the
     * model in training mode (neither model.eval() nor no_grad); -1 unknown */
    int evaluate_training_mode;
    /* 1: the training DataLoader was fetched on another thread than the one
     * that trained (a background prefetcher); -1 unknown */
    int loader_prefetched;
    /* why CUPTI stayed attached after capture windows on a CUDA device (1
     * the environment's TEARDOWN_CUPTI, 2 a CUDA before 12.6); 0 let go or
     * no such window, -1 unknown */
    int ops_cupti_kept;
} tp_model_facts;

#endif
