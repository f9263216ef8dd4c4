/* stack_own.h: trainprof's own frames out of the stacks it shows. The
 * auto-instrumentation's wrappers (a DataLoader's __iter__, backward, the
 * workers' loop) sit between the user's frames in every sampled stack; the
 * report, html, the folded and the Chrome exports show the user's code, so
 * each of our frames is taken for the frame above it (the user's: the call
 * our wrapper stands in for). Node ids stay as they are: a sample, a count
 * or a stall that names one of our nodes names, through it, that frame. */
#ifndef TP_ANALYZE_STACK_OWN_H
#define TP_ANALYZE_STACK_OWN_H

#include <stdbool.h>
#include <stddef.h>

#include "store/reader_stacks.h"

/* Whether a frame's file is one of trainprof's Python package's modules:
 * trainprof/torch.py, parquet.py or a private _*.py, or any module of its
 * subpackages (trainprof/patches/loop.py, trainprof/frameworks/keras.py). */
bool tp_stack_file_ours(const char *file);

/* Makes each node whose frame is ours (and has a frame of the user's above
 * it) a copy of that frame's node: same frame, line and parent; the nodes
 * below it then hang from that frame. */
void tp_stack_tree_hide_own(tp_stack_tree *t);

/* The run's stack tree (store/reader_stacks.h) with our frames hidden. */
bool tp_stack_tree_load(tp_run *run, tp_stack_tree *out, char *err, size_t cap);

#endif
