/* The memory functions (include/yaok.h, "memory"): yaok_bytes_free keeps the length it
 * allocated and never trusts the caller's, so a wrong length cannot make the wipe run past
 * the buffer; yaok_string_free and yaok_bytes_free ignore NULL, a second free of the same
 * pointer and pointers the library never returned. Under ASan any overrun, double free or
 * invalid free aborts the test, and LeakSanitizer fails it if a buffer was not freed.
 * Compiled with -std=c11 -Wall -Wextra -Werror -pedantic under ASan/UBSan.
 * Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void seal_something(uint8_t **sealed, size_t *sealed_len) {
    yaok_identity *alice = NULL;
    yaok_card *card = NULL;
    char *text = NULL;
    const uint8_t id[YAOK_MESSAGE_ID_BYTES] = {1};
    CHECK(yaok_identity_new("Alice", &alice) == YAOK_OK);
    CHECK(yaok_identity_card(alice, &text) == YAOK_OK);
    CHECK(yaok_card_decode(text, &card) == YAOK_OK);
    CHECK(yaok_envelope_seal(alice, card, (const uint8_t *)"hello", 5, id, 1, sealed, sealed_len) == YAOK_OK);
    yaok_string_free(text);
    yaok_card_free(card);
    yaok_identity_free(alice);
}

/* Lengths larger, smaller or zero: the buffer is wiped and freed exactly once, whole. */
static void test_bytes_free_ignores_a_wrong_length(void) {
    size_t wrong[] = {1u << 20, 0, 1, SIZE_MAX};
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
        uint8_t *sealed = NULL;
        size_t sealed_len = 0;
        seal_something(&sealed, &sealed_len);
        CHECK(sealed != NULL && sealed_len > 100);
        yaok_bytes_free(sealed, wrong[i]); /* an overrun, or a leak, would fail under ASan */
    }
}

/* A second free of the same pointer is a no-op, for strings and for bytes. */
static void test_double_free_is_a_no_op(void) {
    yaok_identity *alice = NULL;
    char *name = NULL;
    CHECK(yaok_identity_new("Alice", &alice) == YAOK_OK);
    CHECK(yaok_identity_name(alice, &name) == YAOK_OK && strcmp(name, "Alice") == 0);
    yaok_string_free(name);
    yaok_string_free(name);
    yaok_identity_free(alice);

    uint8_t *sealed = NULL;
    size_t sealed_len = 0;
    seal_something(&sealed, &sealed_len);
    yaok_bytes_free(sealed, sealed_len);
    yaok_bytes_free(sealed, sealed_len);
}

/* Pointers the library did not return — heap, stack, a string given to the bytes free —
 * are left alone: nothing is written to them and nothing is freed. */
static void test_foreign_pointers_are_ignored(void) {
    char *heap = malloc(16);
    CHECK(heap != NULL);
    if (!heap) return;
    memcpy(heap, "do not touch me", 16);
    yaok_string_free(heap);
    yaok_bytes_free((uint8_t *)heap, 16);
    CHECK(memcmp(heap, "do not touch me", 16) == 0);
    free(heap); /* still ours: ASan reports a double free if the library had freed it */

    uint8_t stack[32];
    memset(stack, 0xab, sizeof stack);
    yaok_bytes_free(stack, sizeof stack);
    yaok_string_free((char *)stack);
    CHECK(stack[0] == 0xab && stack[31] == 0xab);

    yaok_string_free(NULL);
    yaok_bytes_free(NULL, 0);
    yaok_bytes_free(NULL, 99);
}

/* Either free function releases either kind of buffer, whole: the library knows its size. */
static void test_crossed_free_functions(void) {
    yaok_identity *alice = NULL;
    char *name = NULL;
    CHECK(yaok_identity_new("Alice", &alice) == YAOK_OK);
    CHECK(yaok_identity_name(alice, &name) == YAOK_OK);
    yaok_bytes_free((uint8_t *)name, 0);
    yaok_identity_free(alice);

    uint8_t *sealed = NULL;
    size_t sealed_len = 0;
    seal_something(&sealed, &sealed_len);
    yaok_string_free((char *)sealed);
}

int main(void) {
    test_bytes_free_ignores_a_wrong_length();
    test_double_free_is_a_no_op();
    test_foreign_pointers_are_ignored();
    test_crossed_free_functions();
    return REPORT();
}
