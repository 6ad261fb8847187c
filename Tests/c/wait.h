/* Helpers the C tests that wait for the node's event thread share: a sleep, and reading
 * one integer out of a flat JSON object (a test helper, not a parser). Needs
 * _POSIX_C_SOURCE 200809L (nanosleep) before the first include. Inline, so that a test
 * that uses one of them only compiles cleanly under -Werror. */
#ifndef YAOK_TEST_WAIT_H
#define YAOK_TEST_WAIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The integer after "key": in `json`, or -999 when the key is absent. */
static inline long long json_int(const char *json, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *p = strstr(json, pattern);
    return p ? strtoll(p + strlen(pattern), NULL, 10) : -999;
}

#endif
