/* units.h: numbers in units people read (%, GiB, MB/s, W, J). */
#ifndef TP_RENDER_UNITS_H
#define TP_RENDER_UNITS_H

#include <stddef.h>

/* Formats v, measured in the run file's unit (see tp_unit_name), for humans:
 * "45.1 %", "3.21 GiB", "120.5 MB/s", "300.0 W". NaN gives "-". */
void tp_format_value(char *buf, size_t cap, const char *unit, double v);

/* Formats a duration in seconds: "850 ms", "12.4 s", "3 min 05 s", "2 h 10 min". */
void tp_format_duration(char *buf, size_t cap, double seconds);

/* A source file's path as people read it in a profile: its last two
 * components ("torchvision/transforms.py"); the path itself when shorter. */
const char *tp_short_path(const char *path);

/* A place in the source as people read it: "data/decode.py:12", or
 * "data/decode.py" where the line is not known (0: a frame read while it
 * changed). */
#define TP_PLACE_MAX 512 /* room for a place: a short path and its line */
void tp_format_place(char *buf, size_t cap, const char *file, int line);

#endif
