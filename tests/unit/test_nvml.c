/* test_nvml.c: the NVML collector against the fake libnvidia-ml built by the
 * tests (full and old-driver variants, unsupported readings, init failure,
 * a lost GPU, a missing library, slow PCIe reads kept off the tick, the PCIe
 * counters and their wraps, clock event reasons, the power limit, GPM, MIG,
 * the processes on a GPU, an energy counter that starts again). The fake's
 * readings are fake_nvml.h's. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fake_nvml/fake_nvml.h"
#include "harness.h"
#include "trainprof.h"

#define MS       1000000ULL
#define GIB      (1024.0 * 1024 * 1024)
#define RESERVED (512.0 * 1024 * 1024) /* the fake driver's own reserve */

static const char *lib_path(const char *var)
{
    const char *p = getenv(var);
    if (!p)
        fail_msg("%s is not set (run the tests through meson test)", var);
    return p;
}

static void clear_fake_env(void)
{
    unsetenv("FAKE_NVML_GPUS");
    unsetenv("FAKE_NVML_INIT_FAIL");
    unsetenv("FAKE_NVML_NOT_SUPPORTED");
    unsetenv("FAKE_NVML_LOST_AFTER");
    unsetenv("FAKE_NVML_LOST_CODE");
    unsetenv("FAKE_NVML_COUNT_FAIL");
    unsetenv("FAKE_NVML_ENERGY_RESET_S");
    unsetenv("FAKE_NVML_MIG");
    unsetenv("FAKE_NVML_PIDS");
    unsetenv("FAKE_NVML_PCIE_32BIT");
    setenv("FAKE_NVML_PCIE_DELAY_MS", "1", 1);
}

/* Opens the collector on the given fake, ticks it n times 50 ms apart. */
static void run_ticks(const char *lib, int n, tp_batch *b)
{
    setenv("TRAINPROF_NVML_LIB", lib, 1);
    test_env t;
    test_env_open(&t, "/", 0);
    tp_collector *c = tp_nvml_collector_new(&t.env);
    for (int i = 0; c && i < n; i++) {
        c->sample(c, tp_clock_now_ns());
        usleep(50000);
    }
    if (c)
        c->destroy(c);
    cap_take(t.sink, b);
    test_env_close(&t);
}

static void test_full_fake(void **state)
{
    (void)state;
    clear_fake_env();
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 4, &b);
    assert_int_equal(b.gpus.len, 2);
    assert_string_equal(b.gpus.items[1].name, "Fake GPU 1");
    assert_string_equal(b.gpus.items[0].uuid, "GPU-fake-0000");
    assert_string_equal(b.gpus.items[0].energy_source, "counter");
    assert_true(b.gpus.items[0].mem_total_bytes == 80ULL << 30);
    assert_string_equal(cap_meta(&b, "gpu_driver_version"), "999.99-fake");
    double v[8];
    assert_int_equal(cap_values(&b, "gpu_util_percent", "{\"gpu\":\"1\"}", v, 8), 4);
    assert_true(v[3] == 60.0);
    assert_int_equal(cap_values(&b, "gpu_mem_used_bytes", "{\"gpu\":\"1\"}", v, 8), 4);
    assert_true(v[0] == 2 * GIB);
    assert_int_equal(cap_values(&b, "gpu_mem_free_bytes", "{\"gpu\":\"0\"}", v, 8), 4);
    assert_true(v[0] == 79 * GIB - RESERVED); /* v2: the driver's reserve is neither */
    assert_int_equal(cap_values(&b, "gpu_power_watts", "{\"gpu\":\"1\"}", v, 8), 4);
    assert_true(v[0] == 310.0);
    assert_int_equal(cap_values(&b, "gpu_temp_celsius", "{\"gpu\":\"0\"}", v, 8), 4);
    assert_true(v[0] == 60.0);
    assert_int_equal(cap_values(&b, "gpu_sm_clock_mhz", "{\"gpu\":\"0\"}", v, 8), 4);
    assert_true(v[0] == 1980.0);
    /* energy since start: 300 W over ~150 ms between the first and last tick */
    assert_int_equal(cap_values(&b, "gpu_energy_joules", "{\"gpu\":\"0\"}", v, 8), 4);
    assert_true(v[3] > v[0] && v[3] > 300 * 0.14 && v[3] < 300 * 1.0);
    assert_int_equal(cap_series_count(&b, "gpu_pcie_tx_bytes_per_s"), 2);
    assert_int_equal(b.unavailable.len, 0);
    tp_batch_free(&b);
}

static void test_old_driver_integrates_power(void **state)
{
    (void)state;
    clear_fake_env();
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_OLD_LIB"), 3, &b);
    assert_int_equal(b.gpus.len, 2);
    assert_string_equal(b.gpus.items[0].energy_source, "power_integral");
    double v[4];
    assert_int_equal(cap_values(&b, "gpu_energy_joules", "{\"gpu\":\"0\"}", v, 4), 3);
    assert_true(v[0] == 0.0);
    /* constant 300 W over two gaps of ~50 ms (sleep plus the tick itself) */
    assert_true(v[2] > 300 * 0.099 && v[2] < 300 * 0.5);
    /* no nvmlDeviceGetMemoryInfo_v2: v1's `used`, the driver's reserve in it */
    assert_int_equal(cap_values(&b, "gpu_mem_used_bytes", "{\"gpu\":\"0\"}", v, 4), 3);
    assert_true(v[0] == 1 * GIB + RESERVED);
    tp_batch_free(&b);
}

/* Ticks 100 ms apart whose tick time is stale by 0, 90, 0, 90 ms (a sweep
 * held up before it reached the GPUs): each energy sample carries its read's
 * own time, so the counter grows by 300 W times the stamps' spacing, for the
 * counter and for the power integral alike. Stamped with the tick's time,
 * the slope read 300 W x 100 / 10 ms, then x 100 / 190 ms. */
static void energy_slopes(const char *lib, double *slope_min, double *slope_max)
{
    setenv("TRAINPROF_NVML_LIB", lib, 1);
    test_env t;
    test_env_open(&t, "/", 0);
    tp_collector *c = tp_nvml_collector_new(&t.env);
    assert_non_null(c);
    for (int i = 0; i < 4; i++) {
        c->sample(c, tp_clock_now_ns() - (i % 2 ? 90000000u : 0));
        usleep(100000);
    }
    c->destroy(c);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    test_env_close(&t);
    double v[4];
    uint64_t ts[4];
    assert_int_equal(cap_values(&b, "gpu_energy_joules", "{\"gpu\":\"0\"}", v, 4), 4);
    assert_int_equal(cap_times(&b, "gpu_energy_joules", "{\"gpu\":\"0\"}", ts, 4), 4);
    *slope_min = INFINITY;
    *slope_max = -INFINITY;
    for (int i = 1; i < 4; i++) {
        assert_true(ts[i] > ts[i - 1]);
        double w = (v[i] - v[i - 1]) / ((double)(ts[i] - ts[i - 1]) / 1e9);
        *slope_min = fmin(*slope_min, w);
        *slope_max = fmax(*slope_max, w);
    }
    tp_batch_free(&b);
}

static void test_energy_stamped_with_its_read(void **state)
{
    (void)state;
    clear_fake_env();
    double lo, hi;
    energy_slopes(lib_path("FAKE_NVML_LIB"), &lo, &hi);
    assert_true(lo > 300 * 0.9 && hi < 300 * 1.1);
    energy_slopes(lib_path("FAKE_NVML_OLD_LIB"), &lo, &hi);
    assert_true(lo > 300 * 0.9 && hi < 300 * 1.1);
}

static void test_not_supported_readings(void **state)
{
    (void)state;
    clear_fake_env();
    setenv("FAKE_NVML_NOT_SUPPORTED",
           "nvmlDeviceGetTemperature,nvmlDeviceGetPcieThroughput,nvmlDeviceGetFieldValues", 1);
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 2, &b);
    assert_true(cap_unavailable(&b, "nvml gpu0", "gpu_temp_celsius: Not Supported"));
    assert_true(cap_unavailable(&b, "nvml gpu1", "gpu_pcie_rx_bytes_per_s: Not Supported"));
    assert_int_equal(cap_series_count(&b, "gpu_temp_celsius"), 0);
    assert_int_equal(cap_series_count(&b, "gpu_util_percent"), 2);
    tp_batch_free(&b);
}

static void test_init_failure_and_missing_library(void **state)
{
    (void)state;
    clear_fake_env();
    setenv("FAKE_NVML_INIT_FAIL", "1", 1);
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 1, &b);
    assert_true(cap_unavailable(&b, "nvml", "NVML init failed: Driver Not Loaded"));
    assert_int_equal(b.series.len, 0);
    tp_batch_free(&b);
    clear_fake_env();
    b = (tp_batch){0};
    run_ticks("/nonexistent/libnvidia-ml.so.1", 1, &b);
    assert_true(cap_unavailable(&b, "nvml", "cannot load /nonexistent/libnvidia-ml.so.1"));
    tp_batch_free(&b);
    b = (tp_batch){0};
    setenv("FAKE_NVML_GPUS", "0", 1);
    run_ticks(lib_path("FAKE_NVML_LIB"), 1, &b);
    assert_true(cap_unavailable(&b, "nvml", "no GPUs"));
    tp_batch_free(&b);
}

static void test_lost_gpu_stops_sampling(void **state)
{
    (void)state;
    clear_fake_env();
    setenv("FAKE_NVML_LOST_AFTER", "4", 1);
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 6, &b);
    assert_true(cap_unavailable(&b, "nvml gpu1", "GPU is lost"));
    double v[8];
    assert_int_equal(cap_values(&b, "gpu_util_percent", "{\"gpu\":\"0\"}", v, 8), 6);
    assert_true(cap_values(&b, "gpu_util_percent", "{\"gpu\":\"1\"}", v, 8) < 6);
    size_t lost_notes = 0;
    for (size_t i = 0; i < b.unavailable.len; i++)
        lost_notes += strstr(b.unavailable.items[i].value, "lost") != NULL;
    assert_int_equal(lost_notes, 1); /* said once */
    tp_batch_free(&b);
}

static void test_pcie_off_the_tick(void **state)
{
    (void)state;
    clear_fake_env();
    setenv("FAKE_NVML_PCIE_DELAY_MS", "100", 1);
    setenv("FAKE_NVML_NOT_SUPPORTED", "nvmlDeviceGetFieldValues", 1); /* no counters: spot */
    const char *lib = lib_path("FAKE_NVML_LIB");
    setenv("TRAINPROF_NVML_LIB", lib, 1);
    void *h = dlopen(lib, RTLD_NOW);
    assert_non_null(h);
    void (*watch)(pid_t);
    int (*calls)(int);
    *(void **)&watch = dlsym(h, "fake_nvml_watch_thread");
    *(void **)&calls = dlsym(h, "fake_nvml_pcie_calls");
    test_env t;
    test_env_open(&t, "/", 0);
    tp_collector *c = tp_nvml_collector_new(&t.env);
    assert_non_null(c);
    watch(gettid());
    for (int i = 0; i < 30 && calls(1) == 0; i++) {
        c->sample(c, tp_clock_now_ns());
        usleep(50000);
    }
    assert_int_equal(calls(0), 0); /* the ticking thread never read PCIe */
    assert_true(calls(1) > 0);     /* the helper thread did */
    c->destroy(c);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v[64];
    size_t n = cap_values(&b, "gpu_pcie_rx_bytes_per_s", "{\"gpu\":\"1\"}", v, 64);
    assert_true(n >= 1);
    assert_true(v[0] == 4000.0 * 1024);
    tp_batch_free(&b);
    test_env_close(&t);
    dlclose(h);
}

/* The PCIe series from the counters: bytes over the counters' own
 * timestamps, once a second, across 32-bit wraps (GPU 1 receives 4 GB/s:
 * its 32-bit counter wraps every 1.07 s, read every 50 ms). */
static void check_pcie_counters(bool narrow)
{
    clear_fake_env();
    if (narrow)
        setenv("FAKE_NVML_PCIE_32BIT", "1", 1);
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 50, &b); /* 2.5 s */
    assert_string_equal(cap_meta(&b, "gpu_pcie_source"), "counter");
    double v[8];
    size_t n = cap_values(&b, "gpu_pcie_rx_bytes_per_s", "{\"gpu\":\"1\"}", v, 8);
    assert_true(n >= 1);
    for (size_t i = 0; i < n; i++)
        assert_true(fabs(v[i] / FAKE_PCIE_RX_BYTES_PER_S(1) - 1) < 0.05);
    n = cap_values(&b, "gpu_pcie_tx_bytes_per_s", "{\"gpu\":\"0\"}", v, 8);
    assert_true(n >= 1 && fabs(v[0] / FAKE_PCIE_TX_BYTES_PER_S(0) - 1) < 0.05);
    tp_batch_free(&b);
}

static void test_pcie_counters(void **state)
{
    (void)state;
    check_pcie_counters(false);
    check_pcie_counters(true);
}

static void test_reasons_limit_gpm(void **state)
{
    (void)state;
    clear_fake_env();
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 50, &b);
    double v[64];
    assert_true(cap_values(&b, "gpu_clock_event_reasons", "{\"gpu\":\"1\"}", v, 64) >= 40);
    assert_true(v[0] == (double)FAKE_CLOCK_REASONS(1));
    assert_true(cap_values(&b, "gpu_power_limit_watts", "{\"gpu\":\"0\"}", v, 64) >= 40);
    assert_true(v[0] == FAKE_POWER_LIMIT_MW / 1000.0);
    /* GPM: a metric needs two samples a second apart */
    assert_true(cap_values(&b, "gpu_sm_active_percent", "{\"gpu\":\"1\"}", v, 64) >= 1);
    assert_true(v[0] == FAKE_GPM_SM_ACTIVE(1));
    assert_true(cap_values(&b, "gpu_tensor_active_percent", "{\"gpu\":\"0\"}", v, 64) >= 1);
    assert_true(v[0] == FAKE_GPM_TENSOR_ACTIVE);
    tp_batch_free(&b);
    /* an old driver has none of them, and says so */
    b = (tp_batch){0};
    run_ticks(lib_path("FAKE_NVML_OLD_LIB"), 2, &b);
    assert_int_equal(cap_series_count(&b, "gpu_clock_event_reasons"), 0);
    assert_true(cap_unavailable(&b, "nvml gpu0", "GPM"));
    assert_string_equal(cap_meta(&b, "gpu_pcie_source"), "spot");
    tp_batch_free(&b);
}

static void test_mig_and_processes(void **state)
{
    (void)state;
    clear_fake_env();
    setenv("FAKE_NVML_MIG", "1", 1);
    setenv("FAKE_NVML_PIDS", "123,456", 1);
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 30, &b);
    assert_true(cap_unavailable(&b, "nvml", "gpu_util_percent: unavailable: MIG"));
    assert_int_equal(cap_series_count(&b, "gpu_util_percent"), 1); /* GPU 1's only */
    assert_string_equal(cap_meta(&b, "gpu.0.mig"),
                        "MIG-fake-0000-0=10737418240,MIG-fake-0000-1=10737418240");
    assert_string_equal(cap_meta(&b, "gpu.0.processes"), "123,456");
    assert_null(cap_meta(&b, "gpu.1.processes"));
    tp_batch_free(&b);
}

/* nvmlDeviceGetCount failing after a good nvmlInit: shut down all the same. */
static void test_count_failure_shuts_down(void **state)
{
    (void)state;
    clear_fake_env();
    setenv("FAKE_NVML_COUNT_FAIL", "1", 1);
    void *h = dlopen(lib_path("FAKE_NVML_LIB"), RTLD_NOW); /* kept open: its counters survive */
    int (*balance)(void);
    *(void **)&balance = dlsym(h, "fake_nvml_init_balance");
    int before = balance();
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 1, &b);
    assert_true(cap_unavailable(&b, "nvml", "could not count the GPUs"));
    assert_int_equal(balance(), before); /* every init shut down */
    tp_batch_free(&b);
    dlclose(h);
}

/* Any code after which no call can succeed ends a GPU's sampling, not only
 * GPU_IS_LOST: the driver gone (9) too. */
static void test_fatal_codes_stop_sampling(void **state)
{
    (void)state;
    clear_fake_env();
    setenv("FAKE_NVML_LOST_AFTER", "4", 1);
    setenv("FAKE_NVML_LOST_CODE", "9", 1);
    void *h = dlopen(lib_path("FAKE_NVML_LIB"), RTLD_NOW); /* kept open: its counters survive */
    int (*after)(void);
    *(void **)&after = dlsym(h, "fake_nvml_calls_after_lost");
    int before = after();
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 40, &b);
    assert_true(cap_unavailable(&b, "nvml gpu1", "Driver Not Loaded; sampling stopped"));
    /* the tick's own readings of that round, and no more (40 ticks, 2 s of
     * the slow thread's rounds) */
    assert_true(after() - before < 16);
    tp_batch_free(&b);
    dlclose(h);
}

/* The energy counter starting again from 0 (a driver reload) mid-run: the
 * run's energy goes on from where it was. */
static void test_energy_counter_restart(void **state)
{
    (void)state;
    clear_fake_env();
    setenv("FAKE_NVML_ENERGY_RESET_S", "0.5", 1);
    tp_batch b = {0};
    run_ticks(lib_path("FAKE_NVML_LIB"), 20, &b); /* ~1 s */
    double v[32];
    size_t n = cap_values(&b, "gpu_energy_joules", "{\"gpu\":\"0\"}", v, 32);
    assert_true(n >= 18);
    for (size_t i = 1; i < n; i++)
        assert_true(v[i] >= v[i - 1]);
    /* 300 W over ~1 s, less the one tick lost at the restart */
    assert_true(v[n - 1] > 300 * 0.8 && v[n - 1] < 300 * 1.3);
    tp_batch_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_fake),
        cmocka_unit_test(test_old_driver_integrates_power),
        cmocka_unit_test(test_energy_stamped_with_its_read),
        cmocka_unit_test(test_not_supported_readings),
        cmocka_unit_test(test_init_failure_and_missing_library),
        cmocka_unit_test(test_lost_gpu_stops_sampling),
        cmocka_unit_test(test_pcie_off_the_tick),
        cmocka_unit_test(test_pcie_counters),
        cmocka_unit_test(test_reasons_limit_gpm),
        cmocka_unit_test(test_mig_and_processes),
        cmocka_unit_test(test_count_failure_shuts_down),
        cmocka_unit_test(test_fatal_codes_stop_sampling),
        cmocka_unit_test(test_energy_counter_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
