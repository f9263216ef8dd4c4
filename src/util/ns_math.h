/* ns_math.h: arithmetic on nanosecond times read from a run file, which a
 * damaged or crafted file can put anywhere in int64_t: no signed overflow. */
#ifndef TP_UTIL_NS_MATH_H
#define TP_UTIL_NS_MATH_H

#include <stdint.h>

/* to - from, saturated to int64_t's range. */
static inline int64_t tp_ns_sub(int64_t to, int64_t from)
{
    int64_t d;
    if (__builtin_sub_overflow(to, from, &d))
        return to > from ? INT64_MAX : INT64_MIN;
    return d;
}

/* ns saturated to int64 (NaN: 0), the one clamp of both conversions below. */
static inline int64_t tp_ns_clamp(double ns)
{
    if (ns != ns)
        return 0;
    if (ns >= 9.2e18)
        return INT64_MAX;
    if (ns <= -9.2e18)
        return INT64_MIN;
    return (int64_t)ns;
}

/* s seconds in ns, saturated (NaN: 0): for figures read back from a file. */
static inline int64_t tp_ns_of_s(double s) { return tp_ns_clamp(s * 1e9); }

/* s seconds in ns rounded to the nearest, saturated (NaN: 0): a time that
 * was t_ns / 1e9 gives t_ns back, as llround would, with no overflow. */
static inline int64_t tp_ns_round_s(double s)
{
    double ns = s * 1e9;
    return tp_ns_clamp(ns < 0 ? ns - 0.5 : ns + 0.5);
}

/* a + b, saturated. */
static inline int64_t tp_ns_add(int64_t a, int64_t b)
{
    int64_t s;
    if (__builtin_add_overflow(a, b, &s))
        return a > 0 ? INT64_MAX : INT64_MIN;
    return s;
}

#endif
