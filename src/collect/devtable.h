/* devtable.h: per-device counter state shared by the disk, net and
 * InfiniBand collectors.
 *
 * Devices are keyed by name. Each round, the collector marks the devices it
 * sees and feeds their cumulative counters; tp_devtable_update returns the
 * deltas against the previous round. A device missing from a round loses its
 * baseline, so one that vanishes and comes back starts over instead of
 * producing a bogus delta. Entries are allocated when a device first appears,
 * never per sample. */
#ifndef TP_COLLECT_DEVTABLE_H
#define TP_COLLECT_DEVTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TP_DEV_COUNTERS 5
#define TP_DEV_NAME     64

typedef struct tp_dev {
    char name[TP_DEV_NAME];
    bool counted; /* false: seen but excluded (not physical, loopback) */
    bool seen;    /* present in the current round */
    bool has_prev;
    uint64_t prev[TP_DEV_COUNTERS];
    uint64_t prev_ns;
    uint32_t series[TP_DEV_COUNTERS];
    double link_bytes_per_s; /* a network link's speed each way; 0: unknown */
    uint32_t link_series;
} tp_dev;

typedef struct tp_devtable {
    tp_dev *items;
    size_t len, cap;
} tp_devtable;

/* Finds the device, or adds it (*created set) when absent. NULL on OOM. */
tp_dev *tp_devtable_get(tp_devtable *t, const char *name, size_t name_len, bool *created);

/* Starts a round: every device unseen until it is fed again. */
void tp_devtable_begin_round(tp_devtable *t);

/* Feeds a device's counters for this round. Fills delta[] and *dt_ns and
 * returns true when a previous round exists and no counter reset. */
bool tp_devtable_update(tp_dev *d, const uint64_t cur[TP_DEV_COUNTERS], uint64_t now_ns,
                        uint64_t delta[TP_DEV_COUNTERS], uint64_t *dt_ns);

/* Ends a round: devices not seen lose their baseline. */
void tp_devtable_end_round(tp_devtable *t);

void tp_devtable_free(tp_devtable *t);

#include "core/sink.h"

/* A collector's metric names and the label key that names a device. */
typedef struct tp_dev_metrics {
    int count; /* counters used, 1..TP_DEV_COUNTERS */
    const char *names[TP_DEV_COUNTERS];
    double scale[TP_DEV_COUNTERS]; /* counter unit -> metric unit (e.g. 512 per sector) */
    const char *label_key;
    int totals; /* the first `totals` metrics also have a sum over the devices; 0: all do
                   (a disk's busy share doesn't add up) */
    /* a share's most, 0: none (a disk's busy share: 100 %; its io_ticks are
     * whole milliseconds, read up to a sweep after the tick's time, and grew
     * by 52 ms in a 50 ms interval) */
    double most[TP_DEV_COUNTERS];
} tp_dev_metrics;

/* How many of m's metrics have a total over the devices. */
int tp_dev_totals(const tp_dev_metrics *m);

/* Registers the device's series (labels {label_key: name}). */
void tp_dev_register(tp_sink *sink, tp_dev *d, const tp_dev_metrics *m);

/* Gives a network device its link speed (bytes/s each way, > 0), recorded
 * as net_link_speed_bytes_per_s with each of its rates from now on. */
void tp_dev_set_link(tp_sink *sink, tp_dev *d, const tp_dev_metrics *m, double bytes_per_s);

/* Feeds one device's counters and emits its four rates (and its link speed,
 * where known). Adds the deltas to sum[] when they are valid. */
void tp_dev_feed(tp_sink *sink, tp_dev *d, const tp_dev_metrics *m,
                 const uint64_t cur[TP_DEV_COUNTERS], uint64_t now_ns,
                 uint64_t sum[TP_DEV_COUNTERS]);

/* Emits the total rates sum/dt to the given series (no labels), for the
 * metrics that have a total. */
void tp_dev_emit_totals(tp_sink *sink, const uint32_t series[TP_DEV_COUNTERS],
                        const tp_dev_metrics *m, const uint64_t sum[TP_DEV_COUNTERS],
                        uint64_t dt_ns, uint64_t now_ns);
#endif
