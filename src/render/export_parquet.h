/* export_parquet.h: `trainprof export --format parquet`: the run files as
 * Parquet through Apache Arrow, in the Python package (trainprof.parquet),
 * which every user of trainprof has: no Parquet encoder of our own. */
#ifndef TP_EXPORT_PARQUET_H
#define TP_EXPORT_PARQUET_H

#include <stdbool.h>
#include <stddef.h>

/* Writes the n run files' tables under out_dir (refused where it holds
 * files, unless force) with the Python of TRAINPROF_PYTHON, else the first
 * that imports trainprof of: the python3 beside this program (a virtual
 * environment's), the source tree's .venv beside its build folder, python3
 * on the PATH; where none does, says which were tried and what to install.
 * The exit status: 0, or 2 with one line said. */
int tp_export_parquet(const char *out_dir, char *const *paths, size_t n, bool force);

#endif
