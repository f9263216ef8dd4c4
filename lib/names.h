/* names.h: the process-wide table of region names and their ids.
 *
 * Ids are small integers from 1, assigned on first use of a name and stable
 * for the process's life; names are found by hash. Interning takes a mutex:
 * it is the cold path (once per name, or once per call site through
 * tp_site). A process gets at most TP_NAMES_MAX ids: once TP_NAMES_MAX - 1
 * names are taken, every new one is "(other)". */
#ifndef TP_LIB_NAMES_H
#define TP_LIB_NAMES_H

#include <stdint.h>

/* The id of name (cut to TP_NAME_MAX bytes, on a UTF-8 character
 * boundary), assigning one if new; 0 only when memory runs out. */
uint32_t tp_names_intern(const char *name);

/* Copies the text of id into out (NUL-terminated); returns its length, or
 * -1 for an unknown id. */
int tp_names_copy(uint32_t id, char *out, int cap);

#endif
