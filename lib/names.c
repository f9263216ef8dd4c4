/* names.c: interning region names. */
#include "names.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char **names; /* names[id - 1] */
static uint32_t count, cap;

uint32_t tp_names_intern(const char *name)
{
    char text[TP_NAME_MAX + 1];
    size_t len = strnlen(name ? name : "", TP_NAME_MAX);
    memcpy(text, name ? name : "", len);
    text[len] = '\0';
    pthread_mutex_lock(&names_lock);
    uint32_t id = 0;
    for (uint32_t i = 0; i < count && !id; i++)
        if (strcmp(names[i], text) == 0)
            id = i + 1;
    if (!id) {
        if (count == cap) {
            uint32_t ncap = cap ? cap * 2 : 64;
            char **n = realloc(names, ncap * sizeof *n);
            if (n) {
                names = n;
                cap = ncap;
            }
        }
        char *copy = count < cap ? strdup(text) : NULL;
        if (copy) {
            names[count++] = copy;
            id = count;
        }
    }
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
