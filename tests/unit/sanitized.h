/* Whether this test binary runs under a sanitizer whose runtime changes what
 * a test may ask of the process (address space, fork while locks are held).
 * GCC says so with __SANITIZE_*__, clang through __has_feature. */
#ifndef TP_TEST_SANITIZED_H
#define TP_TEST_SANITIZED_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TP_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TP_TEST_SANITIZED 1
#endif
#endif
#ifndef TP_TEST_SANITIZED
#define TP_TEST_SANITIZED 0
#endif

#endif
