/* Embedding Ya OK core from C: two identities exchange contact cards (the QR payloads) and
 * one sends the other an end-to-end encrypted message.
 *
 *   scripts/build-lib
 *   cc -std=c11 -Iinclude examples/c/seal_and_open.c -Lbuild/lib -lyaok \
 *      -Wl,-rpath,$PWD/build/lib -o build/seal_and_open && build/seal_and_open
 */
#include "yaok.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the failure and exits: enough error handling for an example. */
static void check(yaok_status status, const char *what) {
    if (status == YAOK_OK) return;
    const char *detail = yaok_last_error_message();
    fprintf(stderr, "%s failed: %s (%s)\n", what, yaok_status_str(status), detail ? detail : "");
    exit(1);
}

int main(void) {
    if (yaok_abi_version() != YAOK_ABI_VERSION) {
        fprintf(stderr, "libyaok ABI %u, built for %d\n", yaok_abi_version(), YAOK_ABI_VERSION);
        return 1;
    }

    yaok_identity *alice = NULL, *bob = NULL;
    check(yaok_identity_new("Alice", &alice), "create Alice");
    check(yaok_identity_new("Bob", &bob), "create Bob");

    /* Each shows a QR code with their card; the other scans it and sees a preview. */
    char *alice_text = NULL, *bob_text = NULL;
    check(yaok_identity_card(alice, &alice_text), "Alice's card");
    check(yaok_identity_card(bob, &bob_text), "Bob's card");
    yaok_card *alice_card = NULL, *bob_card = NULL;
    check(yaok_card_decode(bob_text, &bob_card), "scan Bob's card");
    check(yaok_card_decode(alice_text, &alice_card), "scan Alice's card");
    char *name = NULL, *fingerprint = NULL;
    check(yaok_card_name(bob_card, &name), "card name");
    check(yaok_card_fingerprint(bob_card, YAOK_FINGERPRINT_GROUPED, &fingerprint), "fingerprint");
    printf("Alice scanned %s, fingerprint %s\n", name, fingerprint);

    /* The message ID and time travel in the packet header; the envelope binds them. */
    const uint8_t message_id[YAOK_MESSAGE_ID_BYTES] = {0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const uint64_t now_ms = 1763769600000u;
    const char *text = "Meet at the library at 6";
    uint8_t *sealed = NULL;
    size_t sealed_len = 0;
    check(yaok_envelope_seal(alice, bob_card, (const uint8_t *)text, strlen(text), message_id, now_ms,
                             &sealed, &sealed_len),
          "seal");
    printf("Sealed %zu bytes of text into %zu bytes\n", strlen(text), sealed_len);

    const yaok_card *contacts[] = {alice_card};
    uint8_t *body = NULL;
    size_t body_len = 0, sender = 0;
    check(yaok_envelope_open(bob, contacts, 1, sealed, sealed_len, message_id, now_ms, &body, &body_len,
                             &sender),
          "open");
    printf("Bob read from contact #%zu: %.*s\n", sender, (int)body_len, (const char *)body);

    yaok_bytes_free(body, body_len);
    yaok_bytes_free(sealed, sealed_len);
    yaok_string_free(name);
    yaok_string_free(fingerprint);
    yaok_string_free(alice_text);
    yaok_string_free(bob_text);
    yaok_card_free(alice_card);
    yaok_card_free(bob_card);
    yaok_identity_free(alice);
    yaok_identity_free(bob);
    return 0;
}
