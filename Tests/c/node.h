/* A set-up node for the C tests: a fresh data directory, opened with the test-only fast KDF
 * (call opt_in_to_test_kdf() first), set up with PIN and unlocked. */
#ifndef YAOK_TEST_NODE_H
#define YAOK_TEST_NODE_H

#include "check.h"
#include "tempdir.h"

static const char *PIN = "135790";

static yaok_node *new_node(char *dir, size_t size, const char *name) {
    make_dir(dir, size);
    yaok_node *node = NULL;
    uint32_t warnings = 0;
    CHECK(yaok_node_open(dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &node) == YAOK_OK && node != NULL);
    CHECK(yaok_node_setup(node, name, PIN, PIN, &warnings) == YAOK_OK);
    return node;
}

#endif
