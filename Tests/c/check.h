/* The tiny harness the C tests share: CHECK counts passes and failures and reports a
 * failure with the library's last error message; REPORT prints the closing line
 * "N passed, N failed" and gives main's exit status. */
#ifndef YAOK_TEST_CHECK_H
#define YAOK_TEST_CHECK_H

#include <stdio.h>

#include "yaok.h"

static int passed, failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            passed++;                                                                \
        } else {                                                                     \
            failed++;                                                                \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, \
                    __LINE__, #cond,                                                 \
                    yaok_last_error_message() ? yaok_last_error_message() : "none"); \
        }                                                                            \
    } while (0)

#define REPORT() (printf("%d passed, %d failed\n", passed, failed), failed == 0 ? 0 : 1)

#endif
