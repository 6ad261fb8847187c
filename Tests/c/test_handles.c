/* Handles that are not (or no longer) live handles of the right type: a freed handle, a
 * double free, a handle of another type given to a _free function, a pointer the library
 * never made. The header promises an error (or, for _free, a no-op), never a crash.
 * Compiled with -std=c11 -Wall -Wextra -Werror -pedantic under ASan/UBSan.
 * Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A freed handle is refused, and a second free is a no-op. */
static void test_freed_handle(void) {
    yaok_identity *alice = NULL;
    CHECK(yaok_identity_new("Alice", &alice) == YAOK_OK && alice != NULL);
    yaok_identity *stale = alice;
    yaok_identity_free(alice);

    char *out = (char *)"untouched";
    CHECK(yaok_identity_name(stale, &out) == YAOK_E_INVALID_ARGUMENT);
    CHECK(strcmp(out, "untouched") == 0);
    CHECK(yaok_last_error_message() && strstr(yaok_last_error_message(), "identity") != NULL);
    yaok_identity_free(stale); /* double free: no-op */

    yaok_card *card = NULL;
    char *text = NULL;
    CHECK(yaok_identity_new("Bob", &alice) == YAOK_OK);
    CHECK(yaok_identity_card(alice, &text) == YAOK_OK);
    CHECK(yaok_card_decode(text, &card) == YAOK_OK);
    yaok_string_free(text);
    yaok_card *stale_card = card;
    yaok_card_free(card);
    yaok_card_free(stale_card);
    uint8_t *sealed = (uint8_t *)"x";
    size_t sealed_len = 42;
    const uint8_t id[YAOK_MESSAGE_ID_BYTES] = {0};
    CHECK(yaok_envelope_seal(alice, stale_card, (const uint8_t *)"hi", 2, id, 1, &sealed,
                             &sealed_len) == YAOK_E_INVALID_ARGUMENT);
    CHECK(sealed_len == 42);
    yaok_identity_free(alice);
}

/* A pointer the library never returned, cast to a handle type, is refused. */
static void test_foreign_pointer(void) {
    long words[8] = {0x1234, 0x5678, -1, 0, 7, 8, 9, 10};
    yaok_identity *fake = (yaok_identity *)(void *)words;
    char *out = NULL;
    CHECK(yaok_identity_name(fake, &out) == YAOK_E_INVALID_ARGUMENT && out == NULL);
    CHECK(yaok_card_name((const yaok_card *)(void *)words, &out) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_node_lock((yaok_node *)(void *)words) == YAOK_E_INVALID_ARGUMENT);
    yaok_identity_free(fake); /* not a handle: no-op */
    yaok_card_free((yaok_card *)(void *)words);
    yaok_node_free((yaok_node *)(void *)words);
    CHECK(words[0] == 0x1234 && words[2] == -1);
}

/* Each _free frees only its own type; given another type it changes nothing. */
static void test_free_of_wrong_type(void) {
    char dir[64];
    make_dir(dir, sizeof dir);
    yaok_node *node = NULL;
    yaok_identity *alice = NULL;
    CHECK(yaok_node_open(dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &node) == YAOK_OK);
    CHECK(yaok_identity_new("Alice", &alice) == YAOK_OK);

    yaok_identity_free((yaok_identity *)(void *)node);
    yaok_card_free((yaok_card *)(void *)alice);
    yaok_node_free((yaok_node *)(void *)alice);

    char *json = NULL, *name = NULL;
    CHECK(yaok_node_status(node, &json) == YAOK_OK && json != NULL);
    CHECK(yaok_identity_name(alice, &name) == YAOK_OK && strcmp(name, "Alice") == 0);
    yaok_string_free(json);
    yaok_string_free(name);

    yaok_node *stale = node;
    yaok_node_free(node);
    CHECK(yaok_node_lock(stale) == YAOK_E_INVALID_ARGUMENT);
    yaok_node_free(stale); /* double free: no-op */
    yaok_identity_free(alice);
    remove_dir(dir);
}

int main(void) {
    opt_in_to_test_kdf();
    test_freed_handle();
    test_foreign_pointer();
    test_free_of_wrong_type();
    return REPORT();
}
