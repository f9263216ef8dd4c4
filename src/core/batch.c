/* batch.c: emptying and freeing a batch. */
#include "core/batch.h"

#include <stdlib.h>
#include <string.h>

void tp_batch_clear(tp_batch *b)
{
    for (size_t i = 0; i < b->series.len; i++) {
        free(b->series.items[i].metric);
        free(b->series.items[i].labels);
    }
    for (size_t i = 0; i < b->unavailable.len; i++) {
        free(b->unavailable.items[i].key);
        free(b->unavailable.items[i].value);
    }
    for (size_t i = 0; i < b->meta.len; i++) {
        free(b->meta.items[i].key);
        free(b->meta.items[i].value);
    }
    for (size_t i = 0; i < b->names.len; i++)
        free(b->names.items[i].text);
    for (size_t i = 0; i < b->frames.len; i++)
        free(b->frames.items[i].text);
    for (size_t i = 0; i < b->ops_windows.len; i++)
        tp_ops_window_free(b->ops_windows.items[i]);
    b->ops_windows.len = 0;
    b->series.len = b->samples.len = b->unavailable.len = b->meta.len = b->gpus.len = 0;
    b->threads.len = b->names.len = b->intervals.len = b->marks.len = b->device_spans.len = 0;
    b->frames.len = b->stack_nodes.len = b->stacks.len = 0;
}

void tp_batch_free(tp_batch *b)
{
    tp_batch_clear(b);
    free(b->series.items);
    free(b->samples.items);
    free(b->unavailable.items);
    free(b->meta.items);
    free(b->gpus.items);
    free(b->threads.items);
    free(b->names.items);
    free(b->intervals.items);
    free(b->marks.items);
    free(b->device_spans.items);
    free(b->frames.items);
    free(b->stack_nodes.items);
    free(b->stacks.items);
    free(b->ops_windows.items);
    memset(b, 0, sizeof *b);
}
