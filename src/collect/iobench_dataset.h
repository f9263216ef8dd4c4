/* iobench_dataset.h: `trainprof iobench DIR` reading the dataset's own files
 * under DIR, as a DataLoader does: each file whole, in the order a map-style
 * dataset lists them (sorted paths, as torchvision's ImageFolder does) and
 * in a random order (a shuffled sampler), the page cache kept out of the way
 * as for the other tests. */
#ifndef TP_IOBENCH_DATASET_H
#define TP_IOBENCH_DATASET_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tp_dataset_reads {
    size_t files_found;       /* regular files under DIR (at most the walk's limit) */
    unsigned long long bytes; /* of the files read, each pass */
    size_t files;             /* read in each pass */
    double mean_file_kib;     /* of the files read */
    double sorted_mb_s, sorted_files_s;
    double random_mb_s, random_files_s;
    bool direct; /* every file was read with O_DIRECT */
} tp_dataset_reads;

/* Walks dir (not following links; skip: a path left out, the test file) and
 * reads files, in sorted order, up to budget bytes, then the same files in a
 * random order. False with no files read (out->files_found 0: dir holds no
 * regular file; else every open failed). progress(fraction) on a terminal,
 * NULL for none. */
bool tp_dataset_read(const char *dir, const char *skip, unsigned long long budget,
                     tp_dataset_reads *out, void (*progress)(const char *what, double fraction));

#endif
