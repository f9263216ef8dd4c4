/* storage_typical.h: the lecture's typical sequential read throughputs, which
 * iobench and bottleneck compare measured figures with. */
#ifndef TP_ANALYZE_STORAGE_TYPICAL_H
#define TP_ANALYZE_STORAGE_TYPICAL_H

#define TP_TYPICAL_DISK_MB_S 150.0
#define TP_TYPICAL_NVME_MB_S 3000.0

#endif
