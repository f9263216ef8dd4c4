/* inputs.h: what a reading command (report, html, export) reads from its
 * RUN_FILE operands: one run file as it is, or several, one per node of a
 * job, merged (store/merge.h) into a temporary file first. */
#ifndef TP_STORE_INPUTS_H
#define TP_STORE_INPUTS_H

#include <stdbool.h>
#include <stddef.h>

/* The run file a command reads from its RUN_FILE arguments: the one file
 * itself, or several merged (refused as tp_merge_runs refuses them, without
 * force; summary_only and plots as in tp_merge_options, for readers of the
 * stored summary only) into a temporary file in a private directory of
 * $TMPDIR (else /tmp), with a progress line on a terminal. in->path is what
 * to open; tp_inputs_done removes the temporary file. False with a one-line
 * reason (prefixed by who) otherwise. */
typedef struct tp_inputs {
    const char *path;
    char temp[4200];     /* empty when no temporary file was made */
    char temp_dir[4096]; /* the private directory that holds it */
    char display[4200];  /* the inputs as given, "a.db + b.db" */
} tp_inputs;

bool tp_inputs_open(tp_inputs *in, const char *who, char *const *paths, size_t n, bool summary_only,
                    bool plots, char *err, size_t cap);
void tp_inputs_done(tp_inputs *in);

/* Gives an opened merged temporary the name of its inputs (run->path shows
 * in reports and messages). */
struct tp_run;
void tp_inputs_name_run(const tp_inputs *in, struct tp_run *run);

#endif
