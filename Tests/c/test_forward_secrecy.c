/* Forward secrecy per contact from C (include/yaok.h, "forward secrecy"; docs/PROTOCOL.md
 * §13): Alice's first message to Bob (added by his identity's version 1 card) goes to his
 * long-term key (NOT_YET, counted once); Carol's, by his node's version 2 card, to his
 * prekey (PREKEY, with yaok_contact_prekey_exposure);
 * after it is delivered over a memory link, Bob's ack has announced a receiver key and
 * Alice's state is ON, with the count unchanged. Then misuse: NULL outputs, an unknown
 * contact, a locked node. Compiled strictly under ASan/UBSan. Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"
#include "memory_pipe.h"
#include "wait.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int64_t add(yaok_node *a, yaok_node *b) {
    yaok_identity *identity = NULL;
    char *card = NULL;
    CHECK(yaok_node_identity(b, &identity) == YAOK_OK && yaok_identity_card(identity, &card) == YAOK_OK);
    yaok_identity_free(identity);
    yaok_contact *contact = NULL;
    CHECK(yaok_contact_add_v2(a, card, &contact) == YAOK_OK);
    yaok_string_free(card);
    int64_t id = 0;
    CHECK(yaok_contact_id(contact, &id) == YAOK_OK);
    yaok_contact_free(contact);
    return id;
}

int main(void) {
    opt_in_to_test_kdf();
    if (yaok_abi_version() != YAOK_ABI_VERSION) return 1;
    char alice_dir[64], bob_dir[64];
    yaok_node *alice = new_node(alice_dir, sizeof alice_dir, "Alice");
    yaok_node *bob = new_node(bob_dir, sizeof bob_dir, "Bob");
    int64_t bob_id = add(alice, bob);
    int64_t alice_id = add(bob, alice);

    /* Nothing heard from Bob yet: not yet, nothing sealed, no keys. */
    uint32_t state = 99, keys = 99;
    uint64_t seals = 99;
    CHECK(yaok_contact_forward_secrecy(alice, bob_id, &state, &seals, &keys) == YAOK_OK);
    CHECK(state == YAOK_FORWARD_SECRECY_NOT_YET && seals == 0 && keys == 0);

    /* The first message goes to Bob's long-term key: said, and counted. */
    char *json = NULL;
    const char *text = "first";
    CHECK(yaok_message_send(alice, bob_id, (const uint8_t *)text, strlen(text), &json) == YAOK_OK);
    yaok_string_free(json);
    CHECK(yaok_contact_forward_secrecy(alice, bob_id, &state, &seals, &keys) == YAOK_OK);
    CHECK(state == YAOK_FORWARD_SECRECY_NOT_YET && seals == 1);

    /* Linked: delivered, and Bob's ack announces his receiver key. */
    struct pipe_end to_bob = {.target = NULL}, to_alice = {.target = NULL};
    pthread_mutex_init(&to_bob.mutex, NULL);
    pthread_mutex_init(&to_alice.mutex, NULL);
    yaok_link *a_link = NULL, *b_link = NULL;
    CHECK(yaok_link_open(bob, "memory", YAOK_LINK_RESPONDER, 1024, on_send, NULL, &to_alice, NULL, &b_link) == YAOK_OK);
    CHECK(yaok_link_open(alice, "memory", YAOK_LINK_INITIATOR, 1024, on_send, NULL, &to_bob, NULL, &a_link) == YAOK_OK);
    connect_end(&to_alice, a_link);
    connect_end(&to_bob, b_link);
    for (int i = 0; i < 1000; i++) {
        CHECK(yaok_contact_forward_secrecy(alice, bob_id, &state, &seals, &keys) == YAOK_OK);
        if (state == YAOK_FORWARD_SECRECY_ON) break;
        sleep_ms(10);
    }
    /* Alice holds no receiver key for Bob yet: she mints one to announce in her next packet. */
    CHECK(state == YAOK_FORWARD_SECRECY_ON && seals == 1 && keys == 0);
    /* Bob minted the one he announced; Alice has announced nothing to him yet. */
    CHECK(yaok_contact_forward_secrecy(bob, alice_id, &state, &seals, &keys) == YAOK_OK);
    CHECK(state == YAOK_FORWARD_SECRECY_NOT_YET && seals == 0 && keys == 1);

    /* The same in diagnostics (docs/ABI.md, "contacts[].forward_secrecy"). */
    CHECK(yaok_node_diagnostics(alice, &json) == YAOK_OK);
    CHECK(json && strstr(json, "\"forward_secrecy\":{\"state\":\"on\"") != NULL &&
          json_int(json, "long_term_seals") == 1 && json_int(json, "receiver_keys") == 0);
    yaok_string_free(json);

    /* A version 2 card (yaok_node_card): Carol's first messages to Bob go to his prekey,
     * stated as PREKEY with the time its exposure ends (PROTOCOL.md §13.4). */
    char carol_dir[64];
    yaok_node *carol = new_node(carol_dir, sizeof carol_dir, "Carol");
    yaok_card *bob_card = NULL;
    char *bob_text = NULL;
    CHECK(yaok_node_card(bob, &bob_card) == YAOK_OK && yaok_card_text(bob_card, &bob_text) == YAOK_OK);
    CHECK(bob_text && strncmp(bob_text, "yaok:2:", 7) == 0);
    yaok_contact *contact = NULL;
    CHECK(yaok_contact_add_v2(carol, bob_text, &contact) == YAOK_OK);
    int64_t bob_at_carol = 0;
    CHECK(yaok_contact_id(contact, &bob_at_carol) == YAOK_OK);
    yaok_contact_free(contact);
    yaok_string_free(bob_text);
    yaok_card_free(bob_card);
    CHECK(yaok_message_send(carol, bob_at_carol, (const uint8_t *)text, strlen(text), &json) == YAOK_OK);
    yaok_string_free(json);
    CHECK(yaok_contact_forward_secrecy(carol, bob_at_carol, &state, &seals, &keys) == YAOK_OK);
    CHECK(state == YAOK_FORWARD_SECRECY_PREKEY && seals == 0);
    int64_t until = -1;
    CHECK(yaok_contact_prekey_exposure(carol, bob_at_carol, &until) == YAOK_OK && until > 23LL * 86400000);
    CHECK(yaok_contact_prekey_exposure(alice, bob_id, &until) == YAOK_OK && until == 0);  /* ON: no prekey */
    CHECK(yaok_contact_prekey_exposure(carol, bob_at_carol, NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_contact_prekey_exposure(carol, 999, &until) == YAOK_E_NOT_FOUND);
    yaok_node_free(carol);
    remove_dir(carol_dir);

    /* Misuse: every output required; an unknown contact; a locked node. */
    CHECK(yaok_contact_forward_secrecy(alice, bob_id, NULL, &seals, &keys) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_contact_forward_secrecy(alice, bob_id, &state, NULL, &keys) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_contact_forward_secrecy(alice, bob_id, &state, &seals, NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_contact_forward_secrecy(NULL, bob_id, &state, &seals, &keys) == YAOK_E_NULL_ARGUMENT);
    state = 99;
    CHECK(yaok_contact_forward_secrecy(alice, 999, &state, &seals, &keys) == YAOK_E_NOT_FOUND && state == 99);
    CHECK(yaok_node_lock(alice) == YAOK_OK);
    CHECK(yaok_contact_forward_secrecy(alice, bob_id, &state, &seals, &keys) == YAOK_E_LOCKED);

    disconnect_end(&to_alice);
    disconnect_end(&to_bob);
    yaok_link_close(a_link);
    yaok_link_close(b_link);
    yaok_node_free(alice);
    yaok_node_free(bob);
    for (int i = 0; i < to_bob.waiting_count; i++) free(to_bob.waiting[i]);
    for (int i = 0; i < to_alice.waiting_count; i++) free(to_alice.waiting[i]);
    pthread_mutex_destroy(&to_bob.mutex);
    pthread_mutex_destroy(&to_alice.mutex);
    remove_dir(alice_dir);
    remove_dir(bob_dir);
    return REPORT();
}
