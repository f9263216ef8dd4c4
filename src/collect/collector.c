/* collector.c: what every collector shares (collector.h): saying a source
 * is unavailable. Apart from collectors.c, which makes the collectors, so
 * that they and it call no circle. */
#include "collect/collector.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void tp_collect_unavailable(const tp_collect_env *env, const char *source, const char *path,
                            int err, const char *absent)
{
    char reason[256];
    if (err == ENOENT || err == ENOTDIR)
        snprintf(reason, sizeof reason, "%s", absent);
    else
        snprintf(reason, sizeof reason, "cannot open %s: %s", path, strerror(err));
    tp_sink_unavailable(env->sink, source, reason);
}
