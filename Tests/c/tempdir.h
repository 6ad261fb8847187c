/* Fresh data directories for the C tests: make_dir creates one under /tmp, remove_dir
 * deletes it with the node's database files. */
#ifndef YAOK_TEST_TEMPDIR_H
#define YAOK_TEST_TEMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void make_dir(char *path, size_t size) {
    snprintf(path, size, "/tmp/yaok-c-XXXXXX");
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void remove_dir(const char *path) {
    const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
    char file[512];
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        snprintf(file, sizeof file, "%s/yaok.db%s", path, suffixes[i]);
        unlink(file);
    }
    rmdir(path);
}

/* The test-only opt-in that YAOK_NODE_OPEN_TEST_FAST_KDF needs. The library reads it once,
 * at its first use: call this first thing in main. */
static void opt_in_to_test_kdf(void) {
    if (setenv("YAOK_TEST_INSECURE_KDF", "1", 1) != 0) {
        perror("setenv");
        exit(1);
    }
}

#endif
