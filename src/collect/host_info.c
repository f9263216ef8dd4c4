/* host_info.c: what the run file says about the machine and the job, once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/host_info.h"
#include "util/text_parse.h"
#include "core/run_keys.h"

/* Environment variables that say where a process sits in a distributed job
 * or which devices it may use. */
static const char *const job_env[] = {
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NTASKS",
    "SLURM_NODEID",
    "SLURM_JOB_NODELIST",
    "SLURM_CPUS_PER_TASK",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "OMP_NUM_THREADS",
    "PYTORCH_CUDA_ALLOC_CONF",
};

static void cpu_model(const tp_sysroot *root, char *out, size_t cap)
{
    tp_procfile pf;
    snprintf(out, cap, "unknown");
    if (!tp_procfile_open(&pf, root, "/proc/cpuinfo"))
        return;
    if (tp_procfile_read(&pf)) {
        const char *p = pf.buf, *end = p + pf.len;
        for (; p < end; p = tp_next_line(p, end)) {
            const char *line_end = tp_next_line(p, end);
            bool x86 = line_end - p > 10 && memcmp(p, "model name", 10) == 0;
            bool other =
                line_end - p > 8 && (memcmp(p, "Hardware", 8) == 0 || memcmp(p, "uarch", 5) == 0);
            const char *colon = memchr(p, ':', (size_t)(line_end - p));
            if ((x86 || other) && colon) {
                const char *v = tp_skip_blanks(colon + 1, line_end);
                size_t len = (size_t)(line_end - v);
                while (len && (v[len - 1] == '\n' || v[len - 1] == ' '))
                    len--;
                tp_word_copy(out, cap, v, len);
                break;
            }
        }
    }
    tp_procfile_close(&pf);
}

void tp_host_info_record(const tp_collect_env *env, const char *agent)
{
    char buf[512];
    tp_sink *sink = env->sink;
    if (gethostname(buf, sizeof buf) != 0)
        snprintf(buf, sizeof buf, "unknown");
    buf[sizeof buf - 1] = '\0';
    tp_sink_meta(sink, TP_META_HOST, buf);
    tp_sink_meta(sink, TP_META_AGENT, agent && *agent ? agent : buf);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(buf, sizeof buf, "%s %s %s", u.sysname, u.release, u.machine);
        tp_sink_meta(sink, TP_META_KERNEL, buf);
    }
    cpu_model(env->root, buf, sizeof buf);
    tp_sink_meta(sink, TP_META_CPU_MODEL, buf);
    snprintf(buf, sizeof buf, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    tp_sink_meta(sink, TP_META_CPU_COUNT, buf);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    snprintf(buf, sizeof buf, "%lld", (long long)pages * (long long)page);
    tp_sink_meta(sink, TP_META_MEM_TOTAL_BYTES, buf);
    for (size_t i = 0; i < sizeof job_env / sizeof job_env[0]; i++) {
        const char *v = getenv(job_env[i]);
        if (v) {
            snprintf(buf, sizeof buf, "env.%s", job_env[i]);
            tp_sink_meta(sink, buf, v);
        }
    }
}
