/* package_python.h: the Python that runs trainprof's package for the C
 * commands that hand work to it (export --format parquet, record
 * --log-to). */
#ifndef TP_UTIL_PACKAGE_PYTHON_H
#define TP_UTIL_PACKAGE_PYTHON_H

#include <stdbool.h>
#include <stddef.h>

/* This program's own path (/proc/self/exe) into out, for the children that
 * call it back; false (errno set) where it can't be read or is longer than
 * cap. */
bool tp_self_path(char *out, size_t cap);

/* Whether python runs and imports module (its output silenced). */
bool tp_python_imports(const char *python, const char *module);

/* The Python to run module with, into out: TRAINPROF_PYTHON where set;
 * else the first of the python3 beside this program (a virtual
 * environment's, where pip installed it), the source tree's .venv beside
 * its build folder, and python3 on the PATH that imports it. False, with
 * those tried in tried (", "-separated), where none does. */
bool tp_package_python(const char *module, char *out, size_t cap, char *tried, size_t tcap);

#endif
