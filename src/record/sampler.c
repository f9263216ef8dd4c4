/* sampler.c: ticking the collectors on a fixed cadence. */
#include "record/sampler.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "util/log.h"
#include "util/thread.h"

static struct timespec to_timespec(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    return ts;
}

static void *sampler_main(void *arg)
{
    tp_sampler *s = arg;
    tp_collectors_open(&s->set, &s->env, s->scope);
    uint64_t next = tp_clock_mono_ns();
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        pthread_mutex_unlock(&s->lock);
        uint64_t now = tp_clock_mono_ns();
        tp_collectors_sample(&s->set, now);
        s->ticks++;
        next += s->interval_ns;
        now = tp_clock_mono_ns();
        if (next <= now) /* fell behind: skip the missed ticks */
            next = now + s->interval_ns;
        struct timespec deadline = to_timespec(next);
        pthread_mutex_lock(&s->lock);
        while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &deadline) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&s->lock);
    tp_collectors_close(&s->set);
    return NULL;
}

bool tp_sampler_start(tp_sampler *s, const tp_collect_env *env, tp_collector_scope scope,
                      uint64_t interval_ns)
{
    s->stop = false;
    s->ticks = 0;
    s->env = *env;
    s->scope = scope;
    s->interval_ns = interval_ns;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    /* the default stack: collectors call vendors' libraries (NVML) */
    s->started = tp_thread_start(&s->thread, sampler_main, s, 0);
    if (!s->started) {
        int saved = errno;
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->wake);
        errno = saved;
    }
    return s->started;
}

void tp_sampler_stop(tp_sampler *s)
{
    if (!s->started)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
    s->started = false;
}
