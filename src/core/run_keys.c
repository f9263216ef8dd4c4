/* run_keys.c: see run_keys.h. */
#include "core/run_keys.h"

#include <stdio.h>

void tp_labels_gpu(char *buf, size_t cap, int gpu)
{
    snprintf(buf, cap, "{\"" TP_LABEL_GPU "\":\"%d\"}", gpu);
}

void tp_labels_pid(char *buf, size_t cap, long pid)
{
    snprintf(buf, cap, "{\"" TP_LABEL_PID "\":\"%ld\"}", pid);
}

void tp_labels_gpu_mig(char *buf, size_t cap, int gpu, int mig)
{
    snprintf(buf, cap, "{\"" TP_LABEL_GPU "\":\"%d\",\"" TP_LABEL_MIG "\":\"%d\"}", gpu, mig);
}

void tp_meta_key_gpu(char *buf, size_t cap, int gpu, const char *what)
{
    snprintf(buf, cap, "gpu.%d.%s", gpu, what);
}
