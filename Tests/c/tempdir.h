/* Fresh data directories for the C tests: make_dir creates one under /tmp, remove_dir
 * deletes it and everything in it. */
#ifndef YAOK_TEST_TEMPDIR_H
#define YAOK_TEST_TEMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

static void make_dir(char *path, size_t size) {
    snprintf(path, size, "/tmp/yaok-c-XXXXXX");
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        exit(1);
    }
}

/* Everything in it (the database, its WAL, the directory lock, whatever a later version
 * keeps there: the node writes files only, no subdirectories), then the directory. */
static void remove_dir(const char *path) {
    DIR *dir = opendir(path);
    if (dir) {
        struct dirent *entry;
        char file[1024];
        while ((entry = readdir(dir)) != NULL) {
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
            snprintf(file, sizeof file, "%s/%s", path, entry->d_name);
            unlink(file);
        }
        closedir(dir);
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
