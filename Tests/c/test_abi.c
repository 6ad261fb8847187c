/* Compiled with -std=c11 -Wall -Wextra -Werror -pedantic against include/yaok.h and linked
 * to libyaok.so: the C ABI as an embedder sees it. Prints "N passed, N failed". */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void test_versions(void) {
    CHECK(yaok_abi_version() == YAOK_ABI_VERSION);
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", YAOK_VERSION_MAJOR, YAOK_VERSION_MINOR,
             YAOK_VERSION_PATCH);
    CHECK(strcmp(yaok_version_string(), expected) == 0);
    CHECK(strcmp(yaok_status_str(YAOK_OK), "OK") == 0);
    CHECK(strcmp(yaok_status_str(YAOK_E_INVALID_CARD), "Invalid Ya OK QR code") == 0);
    CHECK(strcmp(yaok_status_str(-12345), "Unknown status") == 0);
}

static void test_null_and_bad_arguments(void) {
    yaok_identity *id = NULL;
    CHECK(yaok_identity_new(NULL, &id) == YAOK_E_NULL_ARGUMENT && id == NULL);
    CHECK(strstr(yaok_last_error_message(), "name") != NULL);
    CHECK(yaok_identity_new("Alice", NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_identity_new("A", &id) == YAOK_E_INVALID_NAME && id == NULL);
    CHECK(strcmp(yaok_last_error_message(), "Name must be 2-50 characters") == 0);
    CHECK(yaok_identity_new("\xff\xfe", &id) == YAOK_E_INVALID_UTF8);
    char *s = NULL;
    CHECK(yaok_identity_name(NULL, &s) == YAOK_E_NULL_ARGUMENT && s == NULL);
    yaok_identity_free(NULL);
    yaok_card_free(NULL);
    yaok_string_free(NULL);
    yaok_bytes_free(NULL, 0);
}

static void test_identity_and_card(void) {
    yaok_identity *alice = NULL;
    CHECK(yaok_identity_new("  Alice 🔒  ", &alice) == YAOK_OK && alice != NULL);
    char *name = NULL, *uid = NULL, *fp = NULL, *grouped = NULL, *shortfp = NULL, *text = NULL;
    CHECK(yaok_identity_name(alice, &name) == YAOK_OK && strcmp(name, "Alice 🔒") == 0);
    CHECK(yaok_identity_user_id(alice, &uid) == YAOK_OK && strlen(uid) == 32);
    CHECK(yaok_identity_fingerprint(alice, YAOK_FINGERPRINT_HEX, &fp) == YAOK_OK && strlen(fp) == 64);
    CHECK(yaok_identity_fingerprint(alice, YAOK_FINGERPRINT_GROUPED, &grouped) == YAOK_OK &&
          strlen(grouped) == 79);
    CHECK(yaok_identity_fingerprint(alice, YAOK_FINGERPRINT_SHORT, &shortfp) == YAOK_OK &&
          strlen(shortfp) == 6 && strncmp(fp, shortfp, 6) == 0);
    char *bad = NULL;
    CHECK(yaok_identity_fingerprint(alice, 99, &bad) == YAOK_E_INVALID_ARGUMENT && bad == NULL);
    CHECK(yaok_identity_card(alice, &text) == YAOK_OK && strncmp(text, "yaok:1:", 7) == 0);

    yaok_card *card = NULL;
    CHECK(yaok_card_decode(text, &card) == YAOK_OK && card != NULL);
    char *card_name = NULL, *card_fp = NULL;
    CHECK(yaok_card_name(card, &card_name) == YAOK_OK && strcmp(card_name, name) == 0);
    CHECK(yaok_card_fingerprint(card, YAOK_FINGERPRINT_HEX, &card_fp) == YAOK_OK &&
          strcmp(card_fp, fp) == 0);
    /* A card handle is not an identity handle. */
    char *wrong = NULL;
    CHECK(yaok_identity_name((const yaok_identity *)(const void *)card, &wrong) ==
          YAOK_E_INVALID_ARGUMENT);

    /* Corrupt one character of the card: the signature no longer verifies. */
    size_t n = strlen(text);
    text[n - 3] = text[n - 3] == 'A' ? 'B' : 'A';
    yaok_card *broken = NULL;
    CHECK(yaok_card_decode(text, &broken) == YAOK_E_INVALID_CARD && broken == NULL);
    CHECK(strncmp(yaok_last_error_message(), "Invalid Ya OK QR code: bad signature", 36) == 0);
    CHECK(yaok_card_decode("https://example.com/not-a-card", &broken) == YAOK_E_INVALID_CARD);
    /* Not UTF-8: the header's convention, as for every text argument. */
    CHECK(yaok_card_decode("yaok:1:\xff\xfe", &broken) == YAOK_E_INVALID_UTF8 && broken == NULL);
    /* Over YAOK_MAX_TEXT_BYTES: refused before decoding, as every defect of a card is. */
    static char long_text[YAOK_MAX_TEXT_BYTES + 2];
    memset(long_text, ' ', sizeof long_text - 1);
    CHECK(yaok_card_decode(long_text, &broken) == YAOK_E_INVALID_CARD && broken == NULL);
    /* A name over 4,096 bytes is refused at once, and as every defect of a name is
     * (PROTOCOL.md §1): YAOK_E_INVALID_NAME, not the text bound's INVALID_ARGUMENT. */
    yaok_identity *long_name = NULL;
    CHECK(yaok_identity_new(long_text, &long_name) == YAOK_E_INVALID_NAME && long_name == NULL);
    CHECK(strcmp(yaok_last_error_message(), "Name must be 2-50 characters") == 0);
    static const uint8_t zeros[YAOK_IDENTITY_SECRET_BYTES] = {0};
    CHECK(yaok_identity_restore(long_text, zeros, sizeof zeros, &long_name) == YAOK_E_INVALID_NAME &&
          long_name == NULL);

    yaok_string_free(name);
    yaok_string_free(uid);
    yaok_string_free(fp);
    yaok_string_free(grouped);
    yaok_string_free(shortfp);
    yaok_string_free(text);
    yaok_string_free(card_name);
    yaok_string_free(card_fp);
    yaok_card_free(card);
    yaok_identity_free(alice);
}

static yaok_card *card_of(const yaok_identity *id) {
    char *text = NULL;
    yaok_card *card = NULL;
    if (yaok_identity_card(id, &text) != YAOK_OK) return NULL;
    if (yaok_card_decode(text, &card) != YAOK_OK) card = NULL;
    yaok_string_free(text);
    return card;
}

static void test_envelope(void) {
    yaok_identity *alice = NULL, *bob = NULL, *eve = NULL;
    CHECK(yaok_identity_new("Alice", &alice) == YAOK_OK);
    CHECK(yaok_identity_new("Bob", &bob) == YAOK_OK);
    CHECK(yaok_identity_new("Eve", &eve) == YAOK_OK);
    yaok_card *alice_card = card_of(alice), *bob_card = card_of(bob), *eve_card = card_of(eve);
    CHECK(alice_card && bob_card && eve_card);

    const uint8_t id[YAOK_MESSAGE_ID_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const char *msg = "Hello, Bob!";
    uint8_t *sealed = NULL;
    size_t sealed_len = 0;
    CHECK(yaok_envelope_seal(alice, bob_card, (const uint8_t *)msg, strlen(msg), id, 1700000000000,
                             &sealed, &sealed_len) == YAOK_OK);

    const yaok_card *contacts[] = {eve_card, alice_card};
    uint8_t *body = NULL;
    size_t body_len = 0, index = 99;
    /* Times are signed milliseconds since 1970: a negative one is refused. */
    uint8_t *neg = NULL; size_t neg_len = 0;
    CHECK(yaok_envelope_seal(alice, bob_card, (const uint8_t *)msg, strlen(msg), id, -1, &neg, &neg_len) == YAOK_E_INVALID_ARGUMENT && neg == NULL);
    /* 0 to 2^48-1, a packet's `created` (PROTOCOL.md §3): the largest works, one more is refused
     * when sealing and when opening. */
    const int64_t max_time = ((int64_t)1 << 48) - 1;
    CHECK(yaok_envelope_seal(alice, bob_card, (const uint8_t *)msg, strlen(msg), id, max_time, &neg, &neg_len) == YAOK_OK);
    CHECK(yaok_envelope_open(bob, contacts, 2, neg, neg_len, id, max_time, &body, &body_len, &index) == YAOK_OK);
    yaok_bytes_free(body, body_len);
    body = NULL;
    CHECK(yaok_envelope_open(bob, contacts, 2, neg, neg_len, id, max_time + 1, &body, &body_len, &index) ==
              YAOK_E_INVALID_ARGUMENT && body == NULL);
    yaok_bytes_free(neg, neg_len);
    neg = NULL;
    CHECK(yaok_envelope_seal(alice, bob_card, (const uint8_t *)msg, strlen(msg), id, max_time + 1, &neg, &neg_len) == YAOK_E_INVALID_ARGUMENT && neg == NULL);
    CHECK(yaok_envelope_seal(alice, bob_card, (const uint8_t *)msg, strlen(msg), id, INT64_MAX, &neg, &neg_len) == YAOK_E_INVALID_ARGUMENT && neg == NULL);
    CHECK(yaok_envelope_open(bob, contacts, 2, sealed, sealed_len, id, 1700000000000, &body,
                             &body_len, &index) == YAOK_OK);
    CHECK(body_len == strlen(msg) && memcmp(body, msg, body_len) == 0 && index == 1);
    yaok_bytes_free(body, body_len);

    body = NULL;
    CHECK(yaok_envelope_open(eve, contacts, 2, sealed, sealed_len, id, 1700000000000, &body,
                             &body_len, &index) == YAOK_E_NOT_FOR_ME && body == NULL);
    CHECK(yaok_envelope_open(bob, contacts, 1, sealed, sealed_len, id, 1700000000000, &body,
                             &body_len, &index) == YAOK_E_UNKNOWN_SENDER);
    CHECK(yaok_envelope_open(bob, contacts, 2, sealed, sealed_len, id, 1700000000001u, &body,
                             &body_len, &index) == YAOK_E_TAMPERED);
    sealed[sealed_len - 1] ^= 1;
    CHECK(yaok_envelope_open(bob, contacts, 2, sealed, sealed_len, id, 1700000000000, &body,
                             &body_len, &index) == YAOK_E_TAMPERED);
    CHECK(yaok_envelope_open(bob, contacts, 2, sealed, 10, id, 1700000000000, &body, &body_len,
                             &index) == YAOK_E_MALFORMED_ENVELOPE);
    yaok_bytes_free(sealed, sealed_len);

    /* Two identities with one encryption key (only its owner can make both cards): the
     * sender is ambiguous and refused; the same card listed twice is not. */
    uint8_t secrets_a[YAOK_IDENTITY_SECRET_BYTES], secrets_b[YAOK_IDENTITY_SECRET_BYTES];
    for (size_t i = 0; i < sizeof secrets_a; i++) {
        secrets_a[i] = (uint8_t)(i + 1);
        secrets_b[i] = (uint8_t)(i < 32 ? i + 1 : 200 - i);
    }
    yaok_identity *twin_a = NULL, *twin_b = NULL;
    CHECK(yaok_identity_restore("Twin", secrets_a, sizeof secrets_a, &twin_a) == YAOK_OK);
    CHECK(yaok_identity_restore("Twin", secrets_b, sizeof secrets_b, &twin_b) == YAOK_OK);
    /* The order the header writes down: the secrets' length before the name's rules. */
    yaok_identity *refused = NULL;
    CHECK(yaok_identity_restore("x", secrets_a, 3, &refused) == YAOK_E_INVALID_ARGUMENT && refused == NULL);
    CHECK(yaok_identity_restore("x", secrets_a, sizeof secrets_a, &refused) == YAOK_E_INVALID_NAME && refused == NULL);
    CHECK(yaok_identity_restore("Twin", NULL, sizeof secrets_a, &refused) == YAOK_E_NULL_ARGUMENT && refused == NULL);
    yaok_card *twin_a_card = card_of(twin_a), *twin_b_card = card_of(twin_b);
    CHECK(twin_a_card && twin_b_card);
    sealed = NULL;
    CHECK(yaok_envelope_seal(twin_a, bob_card, (const uint8_t *)msg, strlen(msg), id, 1700000000000u,
                             &sealed, &sealed_len) == YAOK_OK);
    const yaok_card *twins[] = {eve_card, twin_a_card, twin_b_card};
    body = NULL;
    CHECK(yaok_envelope_open(bob, twins, 3, sealed, sealed_len, id, 1700000000000u, &body, &body_len,
                             &index) == YAOK_E_INVALID_ARGUMENT && body == NULL);
    CHECK(strstr(yaok_last_error_message(), "ambiguous") != NULL);
    const yaok_card *same_twice[] = {twin_a_card, twin_a_card};
    CHECK(yaok_envelope_open(bob, same_twice, 2, sealed, sealed_len, id, 1700000000000u, &body,
                             &body_len, &index) == YAOK_OK && index == 0);
    yaok_bytes_free(body, body_len);
    yaok_bytes_free(sealed, sealed_len);
    yaok_card_free(twin_a_card);
    yaok_card_free(twin_b_card);
    yaok_identity_free(twin_a);
    yaok_identity_free(twin_b);

    static uint8_t big[YAOK_MAX_MESSAGE_BYTES + 1];
    sealed = NULL;
    CHECK(yaok_envelope_seal(alice, bob_card, big, sizeof big, id, 1, &sealed, &sealed_len) ==
              YAOK_E_MESSAGE_TOO_LARGE &&
          sealed == NULL);
    CHECK(strcmp(yaok_last_error_message(), "Message too large (max 10KB)") == 0);
    CHECK(yaok_envelope_seal(alice, bob_card, NULL, 0, id, 1, &sealed, &sealed_len) ==
          YAOK_E_EMPTY_MESSAGE);
    CHECK(yaok_envelope_seal(alice, bob_card, big, YAOK_MAX_MESSAGE_BYTES, id, 1, &sealed,
                             &sealed_len) == YAOK_OK);
    yaok_bytes_free(sealed, sealed_len);

    yaok_card_free(alice_card);
    yaok_card_free(bob_card);
    yaok_card_free(eve_card);
    yaok_identity_free(alice);
    yaok_identity_free(bob);
    yaok_identity_free(eve);
}

int main(void) {
    test_versions();
    test_null_and_bad_arguments();
    test_identity_and_card();
    test_envelope();
    return REPORT();
}
