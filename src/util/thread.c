/* thread.c: starting the recorder's own threads. */
#include "util/thread.h"

#include <errno.h>
#include <malloc.h>
#include <sys/resource.h>

bool tp_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, size_t stack_bytes)
{
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc == 0 && stack_bytes)
        rc = pthread_attr_setstacksize(&attr, stack_bytes);
    if (rc == 0)
        rc = pthread_create(thread, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    errno = rc;
    return rc == 0;
}

bool tp_threads_share_one_heap_under_address_limit(void)
{
#ifdef M_ARENA_MAX
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY)
        return false;
    return mallopt(M_ARENA_MAX, 1) == 1;
#else
    return false;
#endif
}
