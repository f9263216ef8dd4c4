/* names.c: interning region names. */
#include "names.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "name_index.h"
#include "ring.h"

#define OTHER_NAME "(other)"

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char **names; /* names[id - 1] */
static uint32_t count, cap;
static tp_name_index index_;

static void lock_for_fork(void) { pthread_mutex_lock(&names_lock); }
static void unlock_after_fork(void) { pthread_mutex_unlock(&names_lock); }

/* A fork() while another thread interns a name must not leave the child a
 * lock nobody would release (channel.c says how that once hung a daemon):
 * the handlers are there before any thread can hold the lock. */
__attribute__((constructor)) static void register_fork_handlers(void)
{
    pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}

static const char *text_of(const void *owner, uint32_t id)
{
    (void)owner;
    return names[id - 1];
}

/* text's id, added if new; 0 on no memory. Caller holds names_lock. */
static uint32_t intern_locked(const char *text)
{
    uint32_t id = tp_name_index_find(&index_, text, text_of, NULL);
    if (id)
        return id;
    if (count == cap) {
        uint32_t ncap = cap ? cap * 2 : 64;
        char **n = realloc(names, ncap * sizeof *n);
        if (!n)
            return 0;
        names = n;
        cap = ncap;
    }
    char *copy = strdup(text);
    if (!copy || !tp_name_index_reserve(&index_, count, text_of, NULL)) {
        free(copy);
        return 0;
    }
    names[count++] = copy;
    *tp_name_index_slot(&index_, text, text_of, NULL) = count;
    return count;
}

uint32_t tp_names_intern(const char *name)
{
    char text[TP_NAME_MAX + 1];
    if (!name)
        name = "";
    size_t len = strnlen(name, TP_NAME_MAX);
    while (name[len] && len > 0 && ((unsigned char)name[len] & 0xc0) == 0x80)
        len--; /* cut before the character TP_NAME_MAX would split */
    memcpy(text, name, len);
    text[len] = '\0';
    pthread_mutex_lock(&names_lock);
    uint32_t id = tp_name_index_find(&index_, text, text_of, NULL);
    if (!id) /* a process that makes names without end: those past the bound are one */
        id = intern_locked(count < TP_NAMES_MAX - 1 ? text : OTHER_NAME);
    pthread_mutex_unlock(&names_lock);
    return id;
}

int tp_names_copy(uint32_t id, char *out, int cap_out)
{
    int len = -1;
    pthread_mutex_lock(&names_lock);
    if (id >= 1 && id <= count) {
        len = (int)strlen(names[id - 1]);
        if (len >= cap_out)
            len = cap_out - 1;
        memcpy(out, names[id - 1], (size_t)len);
        out[len] = '\0';
    }
    pthread_mutex_unlock(&names_lock);
    return len;
}
