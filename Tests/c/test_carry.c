/* Carrying for others from C (include/yaok.h, "carrying for others"): the mode and caps,
 * the typed status struct with its size field, and misuse. A message Alice sends to Bob
 * while they are not linked leaves an own carried copy in her store, made on her event
 * thread soon after the send (docs/PROTOCOL.md §12.6), which the status counts; switching carrying off deletes it. Compiled strictly
 * under ASan/UBSan. Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"
#include "wait.h"

#include <string.h>
#include <time.h>


static yaok_carry_status status_of(yaok_node *node) {
    yaok_carry_status s;
    memset(&s, 0xAB, sizeof s); /* every field the library fills must be overwritten */
    s.struct_size = sizeof s;
    CHECK(yaok_node_carry_status(node, &s) == YAOK_OK);
    return s;
}

int main(void) {
    opt_in_to_test_kdf();
    if (yaok_abi_version() != YAOK_ABI_VERSION) return 1;
    char alice_dir[64], bob_dir[64];
    yaok_node *alice = new_node(alice_dir, sizeof alice_dir, "Alice");
    yaok_node *bob = new_node(bob_dir, sizeof bob_dir, "Bob");

    /* Defaults: anyone, 2,000 packets, 32 MiB, nothing held or counted. */
    yaok_carry_status s = status_of(alice);
    CHECK(s.mode == YAOK_CARRY_ANYONE && s.max_packets == 2000 && s.max_bytes == 32u << 20);
    CHECK(s.reserved == 0 && s.packets_held == 0 && s.bytes_held == 0 && s.packets_taken == 0 &&
          s.packets_handed_on == 0 && s.messages_delivered_through_carriers == 0 && s.acks_through_carriers == 0 &&
          s.packets_purged == 0 && s.packets_refused == 0);

    /* A message to Bob, not linked: Alice keeps a carried copy to hand to whoever she meets. */
    yaok_identity *identity = NULL;
    char *card = NULL;
    CHECK(yaok_node_identity(bob, &identity) == YAOK_OK && yaok_identity_card(identity, &card) == YAOK_OK);
    yaok_identity_free(identity);
    yaok_contact *contact = NULL;
    CHECK(yaok_contact_add_v2(alice, card, &contact) == YAOK_OK);
    yaok_string_free(card);
    int64_t bob_id = 0;
    CHECK(yaok_contact_id(contact, &bob_id) == YAOK_OK);
    yaok_contact_free(contact);
    char *json = NULL;
    const char *text = "through strangers";
    CHECK(yaok_message_send(alice, bob_id, (const uint8_t *)text, strlen(text), &json) == YAOK_OK);
    yaok_string_free(json);
    /* The copy is made on the node's event thread soon after the send (PROTOCOL.md §12.6),
       not inside it: wait for it (up to 10 s). */
    for (int i = 0; i < 200; i++) {
        s = status_of(alice);
        if (s.packets_held == 1) break;
        sleep_ms(50);
    }
    CHECK(s.packets_held == 1 && s.bytes_held > 100);

    /* The figures are in diagnostics too. */
    CHECK(yaok_node_diagnostics(alice, &json) == YAOK_OK && strstr(json, "\"carry\":{\"mode\":\"anyone\"") != NULL &&
          strstr(json, "\"packets_held\":1") != NULL);
    yaok_string_free(json);

    /* Contacts only, smaller caps; kept. */
    CHECK(yaok_node_set_carry(alice, YAOK_CARRY_CONTACTS, 100, 1u << 20) == YAOK_OK);
    s = status_of(alice);
    CHECK(s.mode == YAOK_CARRY_CONTACTS && s.max_packets == 100 && s.max_bytes == 1u << 20 && s.packets_held == 1);
    CHECK(yaok_node_set_carry(alice, YAOK_CARRY_ANYONE, 0, 0) == YAOK_OK); /* 0: the defaults */
    s = status_of(alice);
    CHECK(s.mode == YAOK_CARRY_ANYONE && s.max_packets == 2000 && s.max_bytes == 32u << 20);

    /* Off deletes what is carried. */
    CHECK(yaok_node_set_carry(alice, YAOK_CARRY_OFF, 0, 0) == YAOK_OK);
    s = status_of(alice);
    CHECK(s.mode == YAOK_CARRY_OFF && s.packets_held == 0 && s.bytes_held == 0);

    /* Misuse: clear errors, nothing changed. */
    CHECK(yaok_node_set_carry(alice, 3, 0, 0) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_last_error_message() != NULL && strstr(yaok_last_error_message(), "Unknown carry mode 3") != NULL);
    CHECK(yaok_node_set_carry(alice, YAOK_CARRY_ANYONE, 0, 1000) == YAOK_E_INVALID_ARGUMENT); /* under one packet */
    CHECK(yaok_node_set_carry(alice, YAOK_CARRY_ANYONE, 2000000, 0) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_node_set_carry(alice, YAOK_CARRY_ANYONE, 0, UINT64_MAX) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_node_set_carry(NULL, YAOK_CARRY_ANYONE, 0, 0) == YAOK_E_NULL_ARGUMENT);
    CHECK(status_of(alice).mode == YAOK_CARRY_OFF);
    CHECK(yaok_node_carry_status(alice, NULL) == YAOK_E_NULL_ARGUMENT);
    yaok_carry_status small;
    memset(&small, 0, sizeof small);
    small.struct_size = 8; /* shorter than the first three fields */
    CHECK(yaok_node_carry_status(alice, &small) == YAOK_E_INVALID_ARGUMENT);

    /* An older, shorter struct: only the fields that fit are written. */
    struct { yaok_carry_status head; } guard;
    memset(&guard, 0xCD, sizeof guard);
    guard.head.struct_size = 16; /* struct_size, mode, max_packets, reserved */
    CHECK(yaok_node_carry_status(alice, &guard.head) == YAOK_OK && guard.head.mode == YAOK_CARRY_OFF);
    CHECK(guard.head.max_bytes == 0xCDCDCDCDCDCDCDCDull); /* beyond struct_size: untouched */

    /* The setting survives a restart. */
    yaok_node_free(alice);
    alice = NULL;
    CHECK(yaok_node_open(alice_dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &alice) == YAOK_OK);
    CHECK(status_of(alice).mode == YAOK_CARRY_OFF);

    yaok_node_free(alice);
    yaok_node_free(bob);
    remove_dir(alice_dir);
    remove_dir(bob_dir);
    return REPORT();
}
