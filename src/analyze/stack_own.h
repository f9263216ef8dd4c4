/* stack_own.h: trainprof's own frames out of the stacks it shows. The
 * auto-instrumentation's wrappers (a DataLoader's __iter__, backward, the
 * workers' loop) sit between the user's frames in every sampled stack; the
 * report, html, the folded and the Chrome exports show the user's code, so
 * each of our frames is taken for the frame above it (the user's: the call
 * our wrapper stands in for), and so is what our own work calls (the CUDA
 * events of device times, the profiler of a capture window). Node ids stay
 * as they are: a sample, a count or a stall that names one of our nodes
 * names, through it, that frame. */
#ifndef TP_ANALYZE_STACK_OWN_H
#define TP_ANALYZE_STACK_OWN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/own_facts.h"
#include "store/reader_stacks.h"

/* Whether a frame's file is one of trainprof's Python package's modules:
 * trainprof/torch.py, parquet.py or a private _*.py, or any module of its
 * subpackages (trainprof/patches/loop.py, trainprof/frameworks/keras.py). */
bool tp_stack_file_ours(const char *file);

/* Whether a frame's file is the Python standard library's: a module frozen
 * into the interpreter ("<frozen os>"), or one under an interpreter's
 * lib/pythonX.Y/ but not in its site-packages or dist-packages (a library's,
 * installed there). */
bool tp_stack_file_stdlib(const char *file);

/* The node a sample whose innermost node is node is told by: the innermost
 * of its frames outside the standard library (the user's or a library's
 * code, whose call into the standard library it was in: the line that
 * called queue.get, not threading's wait), or node itself where node is
 * outside it or every frame is in it. */
uint32_t tp_stack_outside_stdlib(const tp_stack_tree *t, uint32_t node);

/* Whether a frame of ours works for trainprof itself (device times, capture
 * windows, the run's facts), so that what it calls is our work too: file is
 * one of those modules and function none of their wrappers of a user's call. */
bool tp_stack_frame_works_for_us(const char *file, const char *function);

/* For each node id of t, a raw tree (its own frames not hidden), into
 * out[id] (room for t->n + 1): whose work a sample whose innermost frame
 * is that node is. A wrapper of ours innermost is the user's where its
 * region wraps a C call of the user's (to_device, from_device: the sample
 * waits in the callee), which the caller tells by the sample's phase. */
void tp_stack_own_work(const tp_stack_tree *t, unsigned char *out);

/* Makes each node whose frame is ours, or that such a working frame of ours
 * called (directly or not), a copy of the nearest user's node above it (when
 * there is one): same frame, line and parent; the nodes below it then hang
 * from that frame. A user's frame a wrapper of ours calls stays the user's. */
void tp_stack_tree_hide_own(tp_stack_tree *t);

/* The run's stack tree (store/reader_stacks.h) with our frames hidden. */
bool tp_stack_tree_load(tp_run *run, tp_stack_tree *out, char *err, size_t cap);

#endif
