/* kernel_names.h: a GPU kernel's name as a reader can take it in. CUPTI
 * gives some names mangled (_ZN17cutlass__5x_cudnn6KernelI...) and most as
 * whole C++ signatures ("void at::native::(anonymous namespace)::
 * max_pool_backward_nhwc<float>(int, ...)"), far wider than a table's
 * column. */
#ifndef TP_RENDER_KERNEL_NAMES_H
#define TP_RENDER_KERNEL_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/ops_facts.h"

/* name demangled (the C++ runtime's __cxa_demangle, where the program has
 * it; a name that is not mangled or does not demangle is kept as it is)
 * into out. */
void tp_kernel_demangled(char *out, size_t cap, const char *name);

/* The demangled name shortened: without its return type, its parameter
 * list and "(anonymous namespace)::", and (brief) without its template
 * arguments too ("at::native::max_pool_backward_nhwc"); then, past width
 * characters (counted in UTF-8 characters: the name is a file's, escaped
 * by whoever writes it), cut in the middle with "..." so that its start
 * and its end both show. */
void tp_kernel_short(char *out, size_t cap, const char *name, bool brief, size_t width);

/* The names of rows[0..n) (each a kernel's raw name) as shown in one
 * table: brief where that tells them apart from the others shown, else with
 * their template arguments; out[i] receives rows[i]'s, cap bytes each. */
void tp_kernel_column(char (*out)[160], const char *const *rows, size_t n, size_t width);

/* The first most (at most 16) kernels of rank in f (by device time, most
 * first) into rows, with their names for one table in column (width as
 * tp_kernel_column's); how many. */
size_t tp_rank_kernels(const tp_ops_facts *f, int rank, size_t most, const tp_kernel_fact **rows,
                       char (*column)[160], size_t width);

#endif
