/* output_name.h: expanding the run file name given to `record -o`.
 *
 * %h becomes the host name, %r the node rank (SLURM_NODEID, NODE_RANK or
 * GROUP_RANK from the environment, else 0), %p the recorder's pid and %% a
 * percent sign, so that one command line on every node of a job writes one
 * file per node: `-o runs/run-%h.db`. */
#ifndef TP_RECORD_OUTPUT_NAME_H
#define TP_RECORD_OUTPUT_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* False, with the reason in err, for an unknown %-sequence or a name too long.
 * hint (hintcap bytes) gets why the name may already be taken by another
 * recorder of the same job: %r with no node rank in the environment (0 on
 * every node), or %h without %r or %p (one name for every recording on the
 * host); empty otherwise. */
bool tp_output_name_expand(const char *pattern, char *out, size_t cap, char *err, size_t errcap,
                           char *hint, size_t hintcap);

#endif
