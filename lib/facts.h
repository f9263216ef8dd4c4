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
