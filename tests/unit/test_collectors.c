/* test_collectors.c: the /proc and /sys collectors against fixture trees
 * (many CPUs, wrapping and resetting counters, vanishing devices, malformed
 * lines); test_collectors_real.c reads this machine's own. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collect/collectors.h"
#include "core/metric_catalog.h"
#include "harness.h"
#include "trainprof.h"

#define SEC 1000000000ULL

static void cpu_stat(const char *root, int cores, unsigned long long busy_extra, int round)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    unsigned long long r = (unsigned long long)round;
    fprintf(f, "cpu  %llu 0 0 %llu 0 0 0 0 0 0\n", r * 50 * (unsigned long long)cores + busy_extra,
            r * 50 * (unsigned long long)cores);
    for (int c = 0; c < cores; c++) {
        /* core c is busy c/(cores-1) of the time in every round after the first */
        unsigned long long busy = r * 100 * (unsigned long long)c / (unsigned long long)(cores - 1);
        fprintf(f, "cpu%d %llu 0 0 %llu 5 0 0 0 0 0\n", c, busy, r * 100 - busy);
    }
    fprintf(f, "intr 12345\nctxt 999\nbtime 1\n");
    fclose(f);
    fx_write(root, "proc/stat", text);
    free(text);
}

static void test_cpu_256_cores(void **state)
{
    (void)state;
    char *root = fx_root();
    cpu_stat(root, 256, 0, 1);
    test_env t;
    test_env_open(&t, root, 0);
    tp_collector *c = tp_cpu_collector_new(&t.env);
    assert_non_null(c);
    c->sample(c, 1 * SEC);
    cpu_stat(root, 256, 0, 2);
    c->sample(c, 2 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    assert_int_equal(cap_series_count(&b, "cpu_util_percent"), 257);
    double v[4];
    assert_int_equal(cap_values(&b, "cpu_util_percent", "{}", v, 4), 1);
    assert_true(fabs(v[0] - 50.0) < 1e-9);
    assert_int_equal(cap_values(&b, "cpu_util_percent", "{\"cpu\":\"255\"}", v, 4), 1);
    assert_true(fabs(v[0] - 100.0) < 1e-9);
    assert_int_equal(cap_values(&b, "cpu_util_percent", "{\"cpu\":\"0\"}", v, 4), 1);
    assert_true(fabs(v[0] - 0.0) < 1e-9);
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

static void test_cpu_malformed_lines(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_write(root, "proc/stat", "cpu  10 0 0 10\ncpu0 garbage\ncpuX 1 2 3 4\ncpu1 1 2\n");
    test_env t;
    test_env_open(&t, root, 0);
    tp_collector *c = tp_cpu_collector_new(&t.env);
    c->sample(c, SEC);
    fx_write(root, "proc/stat", "cpu  20 0 0 20\ncpu0 garbage\ncpuX 1 2 3 4\ncpu1 1 2\n");
    c->sample(c, 2 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v;
    assert_int_equal(cap_values(&b, "cpu_util_percent", "{}", &v, 1), 1);
    assert_true(fabs(v - 50.0) < 1e-9);
    assert_int_equal(cap_series_count(&b, "cpu_util_percent"), 1); /* no bogus cores */
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

/* The steal column (the eighth): the whole machine's share of jiffies the
 * hypervisor gave to others, one series; a kernel without the column (or a
 * line cut short) gives none, and steal stays inside the utilization. */
static void test_cpu_steal(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_write(root, "proc/stat", "cpu  100 0 0 100 0 0 0 0 0 0\ncpu0 100 0 0 100 0 0 0 0 0 0\n");
    test_env t;
    test_env_open(&t, root, 0);
    tp_collector *c = tp_cpu_collector_new(&t.env);
    assert_non_null(c);
    c->sample(c, SEC);
    /* 200 jiffies more: 50 user, 100 idle, 50 stolen */
    fx_write(root, "proc/stat", "cpu  150 0 0 200 0 0 0 50 0 0\ncpu0 150 0 0 200 0 0 0 50 0 0\n");
    c->sample(c, 2 * SEC);
    fx_write(root, "proc/stat", "cpu  160 0 0 210\n"); /* no steal column: no sample */
    c->sample(c, 3 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v[4];
    assert_int_equal(cap_series_count(&b, "cpu_steal_percent"), 1); /* the machine's only */
    assert_int_equal(cap_values(&b, "cpu_steal_percent", "{}", v, 4), 1);
    assert_true(fabs(v[0] - 25.0) < 1e-9);
    assert_int_equal(cap_values(&b, "cpu_util_percent", "{}", v, 4), 1);
    assert_true(fabs(v[0] - 50.0) < 1e-9); /* user and steal: busy */
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

/* An empty /proc/stat and a garbled /proc/meminfo: no series, and the run
 * says so once each (they used to vanish without a word). */
static void test_empty_or_garbled_files_are_said_once(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_write(root, "proc/stat", "");
    fx_write(root, "proc/meminfo", "\x01\x02 garbage\nMemTotal: lots kB\n");
    test_env t;
    test_env_open(&t, root, 0);
    tp_collector *cpu = tp_cpu_collector_new(&t.env), *mem = tp_mem_collector_new(&t.env);
    assert_non_null(cpu);
    assert_non_null(mem);
    for (int i = 1; i <= 3; i++) {
        cpu->sample(cpu, (uint64_t)i * SEC);
        mem->sample(mem, (uint64_t)i * SEC);
    }
    tp_batch b = {0};
    cap_take(t.sink, &b);
    assert_int_equal(b.samples.len, 0);
    assert_int_equal(b.unavailable.len, 2);
    assert_true(cap_unavailable(&b, "cpu", "/proc/stat could not be read or held no cpu line"));
    assert_true(cap_unavailable(&b, "mem", "/proc/meminfo could not be read or held no MemTotal"));
    cpu->destroy(cpu);
    mem->destroy(mem);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

static void disk_stats(const char *root, unsigned long long sda_r, unsigned long long sda_w,
                       bool with_nvme, unsigned long long nvme_r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    /* major minor name reads merged sectors_read ms writes merged sectors_written ... */
    /* a 32-bit kernel's fields wrap independently */
    unsigned long long sda_ws = (sda_w * 8) & 0xffffffffULL;
    /* sda's io_ticks (ms with I/O in flight) follow its reads: +100 in 1 s is 10 % busy */
    fprintf(f, "   8       0 sda %llu 0 %llu 0 %llu 0 %llu 0 0 %llu 0\n", sda_r, sda_r * 8, sda_w,
            sda_ws, sda_r);
    fprintf(f, "   8       1 sda1 %llu 0 %llu 0 %llu 0 %llu 0 0 0 0\n", sda_r, sda_r * 8, sda_w,
            sda_ws);
    fprintf(f, "   7       0 loop0 999999 0 999999 0 0 0 0 0 0 0 0\n");
    fprintf(f, " 253       0 dm-0 %llu 0 %llu 0 0 0 0 0 0 0 0\n", sda_r, sda_r * 8);
    fprintf(f, "   8      16 sdb 1 2\n"); /* truncated line */
    if (with_nvme)
        fprintf(f, " 259       0 nvme0n1 %llu 0 %llu 0 0 0 0 0 0 0 0\n", nvme_r, nvme_r * 8);
    fclose(f);
    fx_write(root, "proc/diskstats", text);
    free(text);
}

static void test_disk_physical_wrap_vanish(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_mkdir(root, "sys/block/sda/device");
    fx_mkdir(root, "sys/block/nvme0n1/device");
    fx_mkdir(root, "sys/block/sdb/device");
    fx_mkdir(root, "sys/block/loop0");
    fx_mkdir(root, "sys/block/dm-0");
    test_env t;
    test_env_open(&t, root, 0);
    disk_stats(root, 1000, 4294967200ULL, true, 500);
    tp_collector *c = tp_disk_collector_new(&t.env);
    assert_non_null(c);
    c->sample(c, 1 * SEC);
    /* sda: +100 reads, writes wrap 32 bits (+196); nvme vanishes */
    disk_stats(root, 1100, 100, false, 0);
    c->sample(c, 2 * SEC);
    /* nvme comes back with reset counters: no sample yet */
    disk_stats(root, 1100, 100, true, 10);
    c->sample(c, 3 * SEC);
    disk_stats(root, 1100, 100, true, 60);
    c->sample(c, 4 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    assert_int_equal(cap_series_count(&b, "disk_read_iops"),
                     3); /* total, sda, nvme0n1; sdb malformed */
    double v[8];
    assert_int_equal(cap_values(&b, "disk_read_iops", "{\"device\":\"sda\"}", v, 8), 3);
    assert_true(fabs(v[0] - 100.0) < 1e-9);
    assert_true(fabs(v[1]) < 1e-9);
    assert_int_equal(cap_values(&b, "disk_write_iops", "{\"device\":\"sda\"}", v, 8), 3);
    assert_true(fabs(v[0] - 196.0) < 1e-9);
    assert_int_equal(cap_values(&b, "disk_read_bytes_per_s", "{\"device\":\"sda\"}", v, 8), 3);
    assert_true(fabs(v[0] - 100.0 * 8 * 512) < 1e-6);
    assert_int_equal(cap_values(&b, "disk_read_iops", "{\"device\":\"nvme0n1\"}", v, 8), 1);
    assert_true(fabs(v[0] - 50.0) < 1e-9);
    assert_int_equal(cap_values(&b, "disk_busy_percent", "{\"device\":\"sda\"}", v, 8), 3);
    assert_true(fabs(v[0] - 10.0) < 1e-9);
    assert_int_equal(cap_series_count(&b, "disk_busy_percent"), 2); /* no total: sda, nvme0n1 */
    assert_int_equal(cap_values(&b, "disk_read_iops", "{\"device\":\"sda1\"}", v, 8), 0);
    assert_int_equal(cap_values(&b, "disk_read_iops", "{\"device\":\"loop0\"}", v, 8), 0);
    assert_int_equal(cap_values(&b, "disk_read_iops", "{\"device\":\"dm-0\"}", v, 8), 0);
    assert_int_equal(cap_values(&b, "disk_read_iops", "{}", v, 8), 3);
    assert_true(fabs(v[0] - 100.0) < 1e-9); /* sda only: nvme vanished */
    assert_true(fabs(v[2] - 50.0) < 1e-9);  /* nvme only */
    for (size_t i = 0; i < b.samples.len; i++)
        assert_true(b.samples.items[i].value >= 0);
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

/* io_ticks are whole milliseconds, read up to a sweep after the tick's time:
 * grown 1,040 ms in a second, the disk was busy all the time, not 104 %; a
 * rate is no share and stays as it came. */
static void test_disk_busy_at_most_all_the_time(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_mkdir(root, "sys/block/sda/device");
    test_env t;
    test_env_open(&t, root, 0);
    disk_stats(root, 1000, 0, false, 0);
    tp_collector *c = tp_disk_collector_new(&t.env);
    assert_non_null(c);
    c->sample(c, 1 * SEC);
    disk_stats(root, 2040, 0, false, 0);
    c->sample(c, 2 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v[2];
    assert_int_equal(cap_values(&b, "disk_busy_percent", "{\"device\":\"sda\"}", v, 2), 1);
    assert_true(v[0] == 100.0);
    assert_int_equal(cap_values(&b, "disk_read_iops", "{\"device\":\"sda\"}", v, 2), 1);
    assert_true(fabs(v[0] - 1040.0) < 1e-9);
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

static void net_dev(const char *root, unsigned long long eth_rx, unsigned long long eth_tx)
{
    fx_printf(root, "proc/net/dev",
              "Inter-|   Receive                                                |  Transmit\n"
              " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets\n"
              "    lo: 99999 10 0 0 0 0 0 0 99999 10 0 0 0 0 0 0\n"
              "  eth0: %llu 10 0 0 0 0 0 0 %llu 10 0 0 0 0 0 0\n"
              "broken: 1 2 3\n",
              eth_rx, eth_tx);
}

static void test_net_loopback_and_wrap(void **state)
{
    (void)state;
    char *root = fx_root();
    test_env t;
    test_env_open(&t, root, 0);
    net_dev(root, 4294967000ULL, 1000);
    fx_write(root, "sys/class/net/eth0/speed", "10000\n"); /* 10 GbE, in Mb/s */
    fx_write(root, "sys/class/net/lo/speed", "-1\n");
    tp_collector *c = tp_net_collector_new(&t.env);
    assert_non_null(c);
    c->sample(c, 1 * SEC);
    net_dev(root, 704, 3000); /* rx wraps by 1000, tx +2000, over 2 s */
    c->sample(c, 3 * SEC);
    net_dev(root, 104, 3000); /* rx reset from a small value: no sample */
    c->sample(c, 4 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v[4];
    assert_int_equal(cap_values(&b, "net_recv_bytes_per_s", "{\"interface\":\"eth0\"}", v, 4), 1);
    assert_true(fabs(v[0] - 500.0) < 1e-9);
    assert_int_equal(cap_values(&b, "net_sent_bytes_per_s", "{\"interface\":\"eth0\"}", v, 4), 1);
    assert_true(fabs(v[0] - 1000.0) < 1e-9);
    assert_int_equal(cap_values(&b, "net_sent_bytes_per_s", "{\"interface\":\"lo\"}", v, 4), 0);
    assert_int_equal(cap_series_count(&b, "net_sent_bytes_per_s"), 2); /* total + eth0 */
    /* the link speed beside each of its rates: 10000 Mb/s = 1.25 GB/s each way */
    assert_int_equal(cap_values(&b, "net_link_speed_bytes_per_s", "{\"interface\":\"eth0\"}", v, 4),
                     1);
    assert_true(fabs(v[0] - 1.25e9) < 1e-3);
    assert_int_equal(cap_series_count(&b, "net_link_speed_bytes_per_s"), 1);
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

static void test_infiniband_ports(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_write(root, "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "1000\n");
    fx_write(root, "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "2000\n");
    fx_write(root, "sys/class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)\n");
    test_env t;
    test_env_open(&t, root, 0);
    tp_collector *c = tp_infiniband_collector_new(&t.env);
    assert_non_null(c);
    c->sample(c, 1 * SEC);
    fx_write(root, "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "1250\n");
    fx_write(root, "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "2500\n");
    c->sample(c, 2 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v;
    assert_int_equal(cap_values(&b, "net_sent_bytes_per_s", "{\"ib_port\":\"mlx5_0/1\"}", &v, 1),
                     1);
    assert_true(fabs(v - 1000.0) < 1e-9); /* 250 words of 4 bytes */
    assert_int_equal(cap_values(&b, "net_recv_bytes_per_s", "{\"ib_port\":\"mlx5_0/1\"}", &v, 1),
                     1);
    assert_true(fabs(v - 2000.0) < 1e-9);
    assert_int_equal(
        cap_values(&b, "net_link_speed_bytes_per_s", "{\"ib_port\":\"mlx5_0/1\"}", &v, 1), 1);
    assert_true(fabs(v - 12.5e9) < 1e-3); /* 100 Gb/s */
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

static void test_meminfo(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_write(root, "proc/meminfo",
             "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n"
             "Buffers:          50 kB\nCached:          60 kB\nSwapTotal:       300 kB\n"
             "SwapFree:        200 kB\n");
    test_env t;
    test_env_open(&t, root, 0);
    tp_collector *c = tp_mem_collector_new(&t.env);
    c->sample(c, SEC);
    /* An old kernel without MemAvailable: free + buffers + cached. */
    fx_write(root, "proc/meminfo",
             "MemTotal:       1000 kB\nMemFree:         100 kB\nBuffers:          50 kB\n"
             "Cached:          60 kB\nbogus line\n");
    c->sample(c, 2 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v[2];
    assert_int_equal(cap_values(&b, "host_mem_used_bytes", "{}", v, 2), 2);
    assert_true(fabs(v[0] - 600.0 * 1024) < 1e-6);
    assert_true(fabs(v[1] - 790.0 * 1024) < 1e-6);
    assert_int_equal(cap_values(&b, "swap_used_bytes", "{}", v, 2), 1);
    assert_true(fabs(v[0] - 100.0 * 1024) < 1e-6);
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

static void test_pressure(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_write(root, "proc/pressure/cpu", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n");
    fx_write(root, "proc/pressure/memory",
             "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
             "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    test_env t;
    test_env_open(&t, root, 0);
    tp_collector *c = tp_pressure_collector_new(&t.env);
    assert_non_null(c);
    c->sample(c, 1 * SEC);
    fx_write(root, "proc/pressure/cpu", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1250000\n");
    fx_write(root, "proc/pressure/memory",
             "some avg10=0.00 avg60=0.00 avg300=0.00 total=2000000\n"
             "full avg10=0.00 avg60=0.00 avg300=0.00 total=100000\n");
    c->sample(c, 2 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v;
    assert_int_equal(cap_values(&b, "pressure_cpu_some_percent", "{}", &v, 1), 1);
    assert_true(fabs(v - 25.0) < 1e-9);
    assert_int_equal(cap_values(&b, "pressure_memory_some_percent", "{}", &v, 1), 1);
    assert_true(fabs(v - 100.0) < 1e-9); /* capped */
    assert_int_equal(cap_values(&b, "pressure_memory_full_percent", "{}", &v, 1), 1);
    assert_true(fabs(v - 10.0) < 1e-9);
    assert_int_equal(cap_values(&b, "pressure_io_some_percent", "{}", &v, 1), 0);
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

static void test_missing_sources_unavailable(void **state)
{
    (void)state;
    char *root = fx_root();
    test_env t;
    test_env_open(&t, root, 0);
    tp_collector_set set;
    tp_collectors_open(&set, &t.env, TP_COLLECT_ALL);
    assert_int_equal(set.len, 0);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    assert_true(cap_unavailable(&b, "cpu", "/proc/stat"));
    assert_true(cap_unavailable(&b, "pressure", "no /proc/pressure"));
    assert_true(cap_unavailable(&b, "rapl", "no /sys/class/powercap"));
    assert_true(cap_unavailable(&b, "infiniband", "no /sys/class/infiniband"));
    assert_true(cap_unavailable(&b, "cgroup", "/proc/self/cgroup"));
    tp_collectors_close(&set);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

/* Out of descriptors (EMFILE), the real host's sources say so instead of
 * blaming the machine ("no RAPL on this machine", "kernel without PSI"). */
static void test_out_of_descriptors_is_said_as_such(void **state)
{
    (void)state;
    test_env t;
    test_env_open(&t, "/", 0);
    struct rlimit saved, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    low = (struct rlimit){256, saved.rlim_max}; /* fill a small table */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[256], n = 0;
    while (n < 256 && (fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
        n++;
    assert_true(n < 256 && errno == EMFILE);
    tp_collector *cpu = tp_cpu_collector_new(&t.env);
    tp_collector *rapl = tp_rapl_collector_new(&t.env);
    tp_collector *psi = tp_pressure_collector_new(&t.env);
    while (n > 0)
        close(fds[--n]);
    setrlimit(RLIMIT_NOFILE, &saved);
    assert_null(cpu);
    assert_null(rapl);
    assert_null(psi);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    assert_true(cap_unavailable(&b, "cpu", "cannot open /proc/stat: Too many open files"));
    assert_true(cap_unavailable(&b, "rapl", "Too many open files"));
    assert_true(cap_unavailable(&b, "pressure", "Too many open files"));
    assert_false(cap_unavailable(&b, "rapl", "no RAPL"));
    tp_batch_free(&b);
    test_env_close(&t);
}

static void test_rapl_wrap_and_domains(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_write(root, "sys/class/powercap/intel-rapl:0/name", "package-0\n");
    fx_write(root, "sys/class/powercap/intel-rapl:0/energy_uj", "999000000\n");
    fx_write(root, "sys/class/powercap/intel-rapl:0/max_energy_range_uj", "1000000000\n");
    fx_write(root, "sys/class/powercap/intel-rapl:0:0/name", "core\n");
    fx_write(root, "sys/class/powercap/intel-rapl:0:0/energy_uj", "5\n");
    fx_write(root, "sys/class/powercap/intel-rapl:0:1/name", "dram\n");
    fx_write(root, "sys/class/powercap/intel-rapl:0:1/energy_uj", "1000000\n");
    fx_write(root, "sys/class/powercap/intel-rapl:0:1/max_energy_range_uj", "1000000000\n");
    test_env t;
    test_env_open(&t, root, 0);
    tp_collector *c = tp_rapl_collector_new(&t.env);
    assert_non_null(c);
    c->sample(c, 1 * SEC);
    /* package wraps: 999 J -> 1000 J (max) -> 4 J: 5 J plus the wrap's 1 uJ */
    fx_write(root, "sys/class/powercap/intel-rapl:0/energy_uj", "3999999\n");
    fx_write(root, "sys/class/powercap/intel-rapl:0:1/energy_uj", "3000000\n");
    c->sample(c, 2 * SEC);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v[2];
    assert_int_equal(cap_values(&b, "cpu_energy_joules", "{\"domain\":\"package-0\"}", v, 2), 2);
    assert_true(fabs(v[0]) < 1e-9);
    assert_true(fabs(v[1] - 5.0) < 1e-6);
    assert_int_equal(cap_values(&b, "cpu_energy_joules", "{\"domain\":\"package-0/dram\"}", v, 2),
                     2);
    assert_true(fabs(v[1] - 2.0) < 1e-6);
    assert_int_equal(cap_series_count(&b, "cpu_energy_joules"), 2); /* core skipped */
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

static void test_cgroup_limits(void **state)
{
    (void)state;
    char *root = fx_root();
    fx_write(root, "proc/self/cgroup", "0::/job/42\n");
    fx_write(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
    fx_write(root, "sys/fs/cgroup/job/42/cpu.max", "200000 100000\n");
    fx_write(root, "sys/fs/cgroup/job/42/memory.max", "1073741824\n");
    test_env t;
    test_env_open(&t, root, 0);
    tp_cgroup_record_limits(&t.env);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    assert_string_equal(cap_meta(&b, "cgroup_version"), "2");
    assert_string_equal(cap_meta(&b, "cgroup_cpu_limit_cores"), "2.000");
    assert_string_equal(cap_meta(&b, "cgroup_memory_limit_bytes"), "1073741824");
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);

    root = fx_root();
    fx_write(root, "proc/self/cgroup", "4:memory:/slurm/job7\n3:cpu,cpuacct:/slurm/job7\n");
    fx_write(root, "sys/fs/cgroup/cpu/slurm/job7/cpu.cfs_quota_us", "-1\n");
    fx_write(root, "sys/fs/cgroup/cpu/slurm/job7/cpu.cfs_period_us", "100000\n");
    fx_write(root, "sys/fs/cgroup/memory/slurm/job7/memory.limit_in_bytes",
             "9223372036854771712\n");
    test_env_open(&t, root, 0);
    tp_cgroup_record_limits(&t.env);
    b = (tp_batch){0};
    cap_take(t.sink, &b);
    assert_string_equal(cap_meta(&b, "cgroup_version"), "1");
    assert_string_equal(cap_meta(&b, "cgroup_cpu_limit_cores"), "none");
    assert_string_equal(cap_meta(&b, "cgroup_memory_limit_bytes"), "none");
    tp_batch_free(&b);
    test_env_close(&t);
    fx_rmtree(root);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_256_cores),
        cmocka_unit_test(test_cpu_malformed_lines),
        cmocka_unit_test(test_cpu_steal),
        cmocka_unit_test(test_disk_physical_wrap_vanish),
        cmocka_unit_test(test_disk_busy_at_most_all_the_time),
        cmocka_unit_test(test_net_loopback_and_wrap),
        cmocka_unit_test(test_infiniband_ports),
        cmocka_unit_test(test_meminfo),
        cmocka_unit_test(test_pressure),
        cmocka_unit_test(test_missing_sources_unavailable),
        cmocka_unit_test(test_out_of_descriptors_is_said_as_such),
        cmocka_unit_test(test_empty_or_garbled_files_are_said_once),
        cmocka_unit_test(test_rapl_wrap_and_domains),
        cmocka_unit_test(test_cgroup_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
