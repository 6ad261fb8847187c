/* The node, contacts, messages and security log through the C ABI, as an embedder sees
 * them: compiled with -std=c11 -Wall -Wextra -Werror -pedantic under ASan/UBSan and linked
 * to libyaok.so. Uses YAOK_NODE_OPEN_TEST_FAST_KDF (with the test-only opt-in,
 * YAOK_TEST_INSECURE_KDF=1) so that PIN checks are quick.
 * Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "wait.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *PIN = "135790";


static yaok_node *new_node(char *dir, size_t size) {
    make_dir(dir, size);
    yaok_node *node = NULL;
    CHECK(yaok_node_open(dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &node) == YAOK_OK && node != NULL);
    return node;
}

static void test_arguments(void) {
    yaok_node *node = NULL;
    CHECK(yaok_node_open(NULL, 0, &node) == YAOK_E_NULL_ARGUMENT && node == NULL);
    CHECK(yaok_node_open("/tmp", 0, NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_node_open("/tmp/x", 99, &node) == YAOK_E_INVALID_ARGUMENT && node == NULL);
    CHECK(yaok_node_unlock(NULL, PIN) == YAOK_E_NULL_ARGUMENT);
    /* A handle of the wrong kind is refused, not misread. */
    yaok_identity *id = NULL;
    CHECK(yaok_identity_new("Alice", &id) == YAOK_OK);
    CHECK(yaok_node_lock((yaok_node *)id) == YAOK_E_INVALID_ARGUMENT);
    yaok_identity_free(id);
    yaok_node_free(NULL);
    CHECK(strcmp(yaok_status_str(YAOK_E_WRONG_PLATFORM_KEY), "Incorrect platform key") == 0);
}

static void test_setup_lock_unlock(void) {
    char dir[64];
    yaok_node *node = new_node(dir, sizeof dir);
    uint32_t warnings = 99;
    char *json = NULL;

    CHECK(yaok_node_status(node, &json) == YAOK_OK);
    CHECK(json && strstr(json, "\"initialized\":false") && strstr(json, "\"locked\":true"));
    yaok_string_free(json);
    CHECK(yaok_node_unlock(node, PIN) == YAOK_E_NOT_INITIALIZED);

    /* Every defect of a name is YAOK_E_INVALID_NAME (PROTOCOL.md §1), over 4,096 bytes too. */
    static char long_name[YAOK_MAX_TEXT_BYTES + 2];
    memset(long_name, 'A', sizeof long_name - 1);
    CHECK(yaok_node_setup(node, long_name, PIN, PIN, &warnings) == YAOK_E_INVALID_NAME);
    CHECK(yaok_node_setup(node, "Alice", "12345", "12345", &warnings) == YAOK_E_PIN_TOO_SHORT);
    CHECK(strcmp(yaok_last_error_message(), "PIN must be at least 6 digits") == 0);
    CHECK(yaok_node_setup(node, "Alice", "abc", "abc", &warnings) == YAOK_E_PIN_TOO_SHORT);
    CHECK(strcmp(yaok_last_error_message(), "Passphrase must be at least 6 characters") == 0);
    CHECK(yaok_node_setup(node, "Alice", "abc\tdef", "abc\tdef", &warnings) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_node_setup(node, "Alice", "123456", "654321", &warnings) == YAOK_E_PIN_MISMATCH);
    CHECK(strcmp(yaok_last_error_message(), "PINs do not match") == 0);
    CHECK(warnings == 99); /* outputs untouched on failure */
    CHECK(yaok_node_setup(node, "Alice", PIN, PIN, &warnings) == YAOK_OK && warnings == 0);
    CHECK(yaok_node_setup(node, "Alice", PIN, PIN, &warnings) == YAOK_E_ALREADY_INITIALIZED);

    yaok_identity *me = NULL;
    CHECK(yaok_node_identity(node, &me) == YAOK_OK && me != NULL);
    char *name = NULL;
    CHECK(yaok_identity_name(me, &name) == YAOK_OK && strcmp(name, "Alice") == 0);
    char *card = NULL;
    CHECK(yaok_identity_card(me, &card) == YAOK_OK);
    char *profile = NULL;
    CHECK(yaok_node_profile(node, &profile) == YAOK_OK && profile != NULL);
    CHECK(profile && strstr(profile, "\"name\":\"Alice\"") != NULL);
    /* The profile's card is the node's version 2 card (with today's prekey, PROTOCOL.md
     * §13.4); the bare identity's is version 1, of the same keys. */
    CHECK(profile && strstr(profile, "\"card\":\"yaok:2:") != NULL);
    CHECK(card && strncmp(card, "yaok:1:", 7) == 0);
    yaok_string_free(profile);
    yaok_string_free(card);
    yaok_string_free(name);
    yaok_identity_free(me);

    /* An unlock on an unlocked node, or with input that cannot be a PIN, is refused and not
     * counted. */
    CHECK(yaok_node_unlock(node, "000000") == YAOK_E_ALREADY_UNLOCKED);
    CHECK(yaok_node_unlock(node, PIN) == YAOK_E_ALREADY_UNLOCKED);
    CHECK(yaok_node_lock(node) == YAOK_OK);
    CHECK(yaok_node_unlock(node, "") == YAOK_E_PIN_TOO_SHORT);
    CHECK(yaok_node_unlock(node, "x\n") == YAOK_E_PIN_TOO_SHORT);
    CHECK(yaok_node_status(node, &json) == YAOK_OK);
    CHECK(json && json_int(json, "failed_attempts") == 0);
    /* The vault's costs: the test-only ones here. */
    CHECK(json && strstr(json, "\"vault\":{\"kdf\":\"argon2id13\",\"ops_limit\":1,\"mem_limit\":8192,"
                               "\"meets_production_minimum\":false,\"device_bound\":false}"));
    yaok_string_free(json);
    profile = NULL;
    CHECK(yaok_node_profile(node, &profile) == YAOK_E_LOCKED && profile == NULL);
    me = NULL;
    CHECK(yaok_node_identity(node, &me) == YAOK_E_LOCKED && me == NULL);
    CHECK(yaok_contact_list(node, &json) == YAOK_E_LOCKED);
    CHECK(yaok_node_unlock(node, "000000") == YAOK_E_WRONG_PIN);
    CHECK(strcmp(yaok_last_error_message(), "Incorrect PIN") == 0);
    CHECK(yaok_node_unlock(node, PIN) == YAOK_OK);

    /* Platform key. */
    uint8_t key[YAOK_PLATFORM_KEY_BYTES];
    memset(key, 0x42, sizeof key);
    CHECK(yaok_node_register_platform_key(node, key, 5) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_node_register_platform_key(node, key, sizeof key) == YAOK_OK);
    CHECK(yaok_node_lock(node) == YAOK_OK);
    key[0] ^= 1;
    CHECK(yaok_node_unlock_platform_key(node, key, sizeof key) == YAOK_E_WRONG_PLATFORM_KEY);
    key[0] ^= 1;
    CHECK(yaok_node_unlock_platform_key(node, key, sizeof key) == YAOK_OK);

    /* Lockout: the third wrong PIN locks out for 30 s, and the state survives reopening. */
    CHECK(yaok_node_lock(node) == YAOK_OK);
    CHECK(yaok_node_unlock(node, "111111") == YAOK_E_WRONG_PIN);
    CHECK(yaok_node_unlock(node, "222222") == YAOK_E_WRONG_PIN);
    CHECK(yaok_node_unlock(node, "333333") == YAOK_E_LOCKED_OUT);
    CHECK(strcmp(yaok_last_error_message(), "Too many attempts. Try again in 30 seconds.") == 0);
    yaok_node_free(node);
    node = NULL;
    CHECK(yaok_node_open(dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &node) == YAOK_OK);
    CHECK(yaok_node_unlock(node, PIN) == YAOK_E_LOCKED_OUT);
    CHECK(yaok_node_status(node, &json) == YAOK_OK);
    long long left = json_int(json, "lockout_seconds");
    CHECK(left > 0 && left <= 30);
    yaok_string_free(json);
    /* The platform key still works during a PIN lockout. */
    CHECK(yaok_node_unlock_platform_key(node, key, sizeof key) == YAOK_OK);

    CHECK(yaok_security_events(node, 0, 100, &json) == YAOK_OK);
    CHECK(json && json[0] == '[' && strstr(json, "\"kind\":\"lockout\"") && strstr(json, "\"kind\":\"wrong_pin\""));
    yaok_string_free(json);

    /* Reset needs the confirmation value. */
    CHECK(yaok_node_reset(node, 1) == YAOK_E_CONFIRMATION_REQUIRED);
    CHECK(yaok_node_reset(node, YAOK_RESET_CONFIRM) == YAOK_OK);
    CHECK(yaok_node_status(node, &json) == YAOK_OK);
    CHECK(strstr(json, "\"initialized\":false") != NULL);
    yaok_string_free(json);
    CHECK(yaok_node_setup(node, "Alice", "000000", "000000", &warnings) == YAOK_OK);
    CHECK(warnings == YAOK_WARNING_ALL_ZERO_PIN);
    yaok_node_free(node);
    remove_dir(dir);
}

/* Passphrases and their strength; a vault bound to a device secret. */
static void test_passphrase_and_device_secret(void) {
    uint32_t strength = 99, bits = 99;
    CHECK(yaok_secret_check(NULL, &strength, &bits) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_secret_check("123", &strength, &bits) == YAOK_E_PIN_TOO_SHORT && strength == 99);
    CHECK(yaok_secret_check("\xff\xfe\xfd\xfc\xfb\xfa", &strength, &bits) == YAOK_E_INVALID_UTF8);
    CHECK(yaok_secret_check("135790", &strength, &bits) == YAOK_OK && strength == YAOK_STRENGTH_WEAK && bits == 19);
    CHECK(yaok_secret_check("correct horse battery staple cloud", &strength, &bits) == YAOK_OK &&
          strength == YAOK_STRENGTH_STRONG && bits == 68);

    char dir[64];
    yaok_node *node = new_node(dir, sizeof dir);
    uint8_t secret[YAOK_DEVICE_SECRET_BYTES];
    memset(secret, 0xA5, sizeof secret);
    CHECK(yaok_node_set_device_secret(node, secret, 5) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_node_set_device_secret(node, NULL, 32) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_node_set_device_secret(node, secret, sizeof secret) == YAOK_OK);
    uint32_t warnings = 99;
    const char *phrase = "correct horse battery staple";
    CHECK(yaok_node_setup_v2(node, "Alice", phrase, phrase, &warnings, NULL, &bits) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_node_setup_v2(node, "Alice", phrase, phrase, &warnings, &strength, &bits) == YAOK_OK);
    CHECK(warnings == 0 && strength == YAOK_STRENGTH_FAIR && bits == 55);
    char *json = NULL;
    CHECK(yaok_node_status(node, &json) == YAOK_OK && json && strstr(json, "\"device_bound\":true"));
    yaok_string_free(json);
    yaok_node_free(node);

    /* Reopened: the vault needs the device secret, and neither its absence nor a wrong one
     * counts as a wrong PIN. */
    node = NULL;
    CHECK(yaok_node_open(dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &node) == YAOK_OK);
    CHECK(yaok_node_unlock(node, phrase) == YAOK_E_DEVICE_SECRET_REQUIRED);
    secret[0] ^= 1;
    CHECK(yaok_node_set_device_secret(node, secret, sizeof secret) == YAOK_OK);
    CHECK(yaok_node_unlock(node, phrase) == YAOK_E_WRONG_DEVICE_SECRET);
    secret[0] ^= 1;
    CHECK(yaok_node_set_device_secret(node, secret, sizeof secret) == YAOK_OK);
    CHECK(yaok_node_unlock(node, "correct horse battery stapler") == YAOK_E_WRONG_PIN);
    CHECK(yaok_node_unlock(node, phrase) == YAOK_OK);
    CHECK(yaok_node_set_device_secret(node, NULL, 0) == YAOK_OK);
    CHECK(yaok_node_status(node, &json) == YAOK_OK && json && json_int(json, "failed_attempts") == 0);
    yaok_string_free(json);
    yaok_node_free(node);
    remove_dir(dir);
}

/* Without YAOK_TEST_INSECURE_KDF=1 (read once per process), the test-only flag is refused:
 * checked in a child forked before anything in this process used the library. */
static void test_fast_kdf_needs_the_test_opt_in(void) {
    pid_t child = fork();
    if (child == 0) {
        unsetenv("YAOK_TEST_INSECURE_KDF");
        char dir[64];
        make_dir(dir, sizeof dir);
        yaok_node *node = NULL;
        yaok_status refused = yaok_node_open(dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &node);
        yaok_status plain = yaok_node_open(dir, YAOK_NODE_OPEN_DEFAULT, &node);
        yaok_node_free(node);
        remove_dir(dir);
        _exit(refused == YAOK_E_INVALID_ARGUMENT && plain == YAOK_OK ? 0 : 1);
    }
    int status = -1;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_contacts_and_messages(void) {
    char dir[64];
    yaok_node *node = new_node(dir, sizeof dir);
    uint32_t warnings = 0;
    char *json = NULL;
    CHECK(yaok_node_setup(node, "Alice", PIN, PIN, &warnings) == YAOK_OK);

    yaok_identity *bob = NULL;
    char *card = NULL;
    CHECK(yaok_identity_new("Bob", &bob) == YAOK_OK);
    CHECK(yaok_identity_card(bob, &card) == YAOK_OK);

    CHECK(yaok_contact_preview(node, card, &json) == YAOK_OK);
    CHECK(json && strstr(json, "\"name\":\"Bob\"") && strstr(json, "\"existing_contact_id\":null"));
    CHECK(strstr(json, "\"mixed_scripts\":false") != NULL);
    yaok_string_free(json);
    /* A Latin name with a Cyrillic "A" (U+0410) is flagged; a right-to-left override is refused. */
    yaok_identity *spoof = NULL;
    char *spoof_card = NULL;
    CHECK(yaok_identity_new("\xd0\x90lice", &spoof) == YAOK_OK && yaok_identity_card(spoof, &spoof_card) == YAOK_OK);
    CHECK(yaok_contact_preview(node, spoof_card, &json) == YAOK_OK && strstr(json, "\"mixed_scripts\":true"));
    yaok_string_free(json);
    yaok_string_free(spoof_card);
    yaok_identity_free(spoof);
    /* One's own card: the preview says so, as the add does. */
    yaok_identity *me = NULL;
    char *own = NULL;
    CHECK(yaok_node_identity(node, &me) == YAOK_OK && yaok_identity_card(me, &own) == YAOK_OK);
    json = NULL;
    CHECK(yaok_contact_preview(node, own, &json) == YAOK_E_INVALID_ARGUMENT && json == NULL);
    CHECK(strcmp(yaok_last_error_message(), "This is your own contact card") == 0);
    CHECK(yaok_contact_add(node, own, &json) == YAOK_E_INVALID_ARGUMENT && json == NULL);
    yaok_string_free(own);
    yaok_identity_free(me);
    yaok_identity *hidden = NULL;
    CHECK(yaok_identity_new("Bob\xe2\x80\xae" "evil", &hidden) == YAOK_E_INVALID_NAME && hidden == NULL);
    CHECK(yaok_contact_add(node, card, &json) == YAOK_OK);
    long long bob_id = json_int(json, "id");
    CHECK(bob_id > 0 && strstr(json, "\"verified\":false") && strstr(json, "\"never_connected\""));
    yaok_string_free(json);
    json = NULL;
    CHECK(yaok_contact_add(node, card, &json) == YAOK_E_CONTACT_EXISTS && json == NULL);
    CHECK(strcmp(yaok_last_error_message(), "Bob is already in your contacts") == 0);
    CHECK(yaok_contact_add(node, "not a card", &json) == YAOK_E_INVALID_CARD);
    CHECK(yaok_contact_add(node, "\xff\xfe", &json) == YAOK_E_INVALID_UTF8);
    CHECK(yaok_contact_preview(node, "yaok:1:\xff", &json) == YAOK_E_INVALID_UTF8);
    /* Text inputs are bounded: a 10 MB query is refused at once (it took 1.7 s to scan). */
    size_t huge_len = 10u * 1000u * 1000u;
    char *huge = malloc(huge_len + 1);
    CHECK(huge != NULL);
    memset(huge, 'a', huge_len);
    huge[huge_len] = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(yaok_contact_find(node, huge, &json) == YAOK_E_INVALID_ARGUMENT && json == NULL);
    CHECK(yaok_contact_add(node, huge, &json) == YAOK_E_INVALID_CARD && json == NULL);
    CHECK(yaok_contact_rename(node, 1, huge) == YAOK_E_INVALID_NAME); /* a name: §1, refused at once */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((t1.tv_sec - t0.tv_sec) * 1000.0 + (t1.tv_nsec - t0.tv_nsec) / 1e6 < 200.0);
    huge[YAOK_MAX_TEXT_BYTES] = 0; /* exactly the bound: checked, not refused for its length */
    CHECK(yaok_contact_find(node, huge, &json) == YAOK_E_NOT_FOUND);
    free(huge);

    CHECK(yaok_contact_verify(node, bob_id) == YAOK_OK);
    CHECK(yaok_contact_rename(node, bob_id, "Bobby") == YAOK_OK);
    CHECK(yaok_contact_rename(node, bob_id, "B") == YAOK_E_INVALID_NAME);
    CHECK(yaok_contact_show(node, bob_id, &json) == YAOK_OK);
    CHECK(strstr(json, "\"name\":\"Bobby\"") && strstr(json, "\"verified\":true"));
    yaok_string_free(json);
    CHECK(yaok_contact_find(node, "bobby", &json) == YAOK_OK && json_int(json, "id") == bob_id);
    yaok_string_free(json);
    CHECK(yaok_contact_show(node, 999, &json) == YAOK_E_NOT_FOUND);
    CHECK(yaok_contact_list(node, &json) == YAOK_OK && json[0] == '[' && strstr(json, "Bobby"));
    yaok_string_free(json);

    /* Messages: sent (queued, no link), validation, the outbox, history pages. */
    const char *hello = "hello \xc3\xa9";
    CHECK(yaok_message_send(node, bob_id, (const uint8_t *)hello, strlen(hello), &json) == YAOK_OK);
    CHECK(strstr(json, "\"status\":\"pending\"") && strstr(json, "\"direction\":\"outgoing\""));
    yaok_string_free(json);
    CHECK(yaok_message_send(node, bob_id, (const uint8_t *)"\xff", 1, &json) == YAOK_E_INVALID_UTF8);
    CHECK(yaok_message_send(node, bob_id, NULL, 0, &json) == YAOK_E_EMPTY_MESSAGE);
    CHECK(yaok_message_send(node, bob_id, (const uint8_t *)" \n\t", 3, &json) == YAOK_E_EMPTY_MESSAGE);
    static uint8_t big[YAOK_MAX_MESSAGE_BYTES + 1];
    memset(big, 'x', sizeof big);
    CHECK(yaok_message_send(node, bob_id, big, sizeof big, &json) == YAOK_E_MESSAGE_TOO_LARGE);
    CHECK(strcmp(yaok_last_error_message(), "Message too large (max 10KB)") == 0);
    CHECK(yaok_message_send(node, 999, (const uint8_t *)"x", 1, &json) == YAOK_E_NOT_FOUND);

    for (int i = 1; i <= 4; i++) {
        char text[16];
        snprintf(text, sizeof text, "out%d", i);
        CHECK(yaok_message_send(node, bob_id, (const uint8_t *)text, strlen(text), &json) == YAOK_OK);
        yaok_string_free(json);
    }
    CHECK(yaok_outbox(node, &json) == YAOK_OK && json[0] == '[' && strstr(json, "Will send when connected"));
    yaok_string_free(json);

    CHECK(yaok_message_history(node, bob_id, NULL, 3, &json) == YAOK_OK);
    CHECK(strstr(json, "\"older_cursor\":\"") != NULL);
    /* The newest page of 3 is out2..out4, oldest first. */
    const char *out2 = strstr(json, "out2"), *out4 = strstr(json, "out4");
    CHECK(out2 && out4 && out2 < out4 && !strstr(json, "out1"));
    char cursor[64] = {0};
    const char *c = strstr(json, "\"older_cursor\":\"");
    if (c) sscanf(c + strlen("\"older_cursor\":\""), "%63[^\"]", cursor);
    yaok_string_free(json);
    CHECK(yaok_message_history(node, bob_id, cursor, 100, &json) == YAOK_OK);
    CHECK(strstr(json, "hello") && strstr(json, "out1") && !strstr(json, "out2") &&
          strstr(json, "\"older_cursor\":null"));
    yaok_string_free(json);
    CHECK(yaok_message_history(node, bob_id, "bogus", 10, &json) == YAOK_E_INVALID_ARGUMENT);
    uint64_t count = 9;
    CHECK(yaok_message_mark_read(node, bob_id, &count) == YAOK_OK && count == 0);

    /* Delete keeping messages: history stays, sending is refused. */
    CHECK(yaok_contact_delete(node, bob_id, YAOK_CONTACT_DELETE_KEEP_MESSAGES) == YAOK_OK);
    CHECK(yaok_message_send(node, bob_id, (const uint8_t *)"x", 1, &json) == YAOK_E_NOT_FOUND);
    CHECK(yaok_message_history(node, bob_id, NULL, 100, &json) == YAOK_OK && strstr(json, "out1"));
    yaok_string_free(json);
    /* Re-add and delete with messages: nothing left. */
    CHECK(yaok_contact_add(node, card, &json) == YAOK_OK && json_int(json, "id") == bob_id);
    yaok_string_free(json);
    CHECK(yaok_contact_delete(node, bob_id, YAOK_CONTACT_DELETE_MESSAGES) == YAOK_OK);
    CHECK(yaok_message_history(node, bob_id, NULL, 100, &json) == YAOK_E_NOT_FOUND);

    yaok_string_free(card);
    yaok_identity_free(bob);
    yaok_node_free(node);
    remove_dir(dir);
}

/* ---- callbacks from the event thread ---- */

struct recorder {
    pthread_mutex_t mutex;
    pthread_t main_thread;
    int events;
    int locked_auto;
    int on_main_thread;
    int status_ok_inside; /* a call back into the node from the callback succeeded */
    int freed;
    yaok_node *node;
};

static void on_event(void *user_data, const yaok_event *event) {
    struct recorder *r = user_data;
    int auto_lock = event->kind == YAOK_EVENT_LOCKED && strstr(event->json, "\"auto_lock\"") != NULL;
    char *json = NULL;
    int ok = auto_lock && yaok_node_status(r->node, &json) == YAOK_OK && strstr(json, "\"locked\":true");
    yaok_string_free(json);
    pthread_mutex_lock(&r->mutex);
    r->events++;
    if (pthread_equal(pthread_self(), r->main_thread)) r->on_main_thread++;
    if (auto_lock) r->locked_auto++;
    if (ok) r->status_ok_inside++;
    pthread_mutex_unlock(&r->mutex);
}

static void on_free(void *user_data) {
    struct recorder *r = user_data;
    pthread_mutex_lock(&r->mutex);
    r->freed++;
    pthread_mutex_unlock(&r->mutex);
}

static int read_field(struct recorder *r, const int *field) {
    pthread_mutex_lock(&r->mutex);
    int v = *field;
    pthread_mutex_unlock(&r->mutex);
    return v;
}

static void test_event_callbacks(void) {
    char dir[64];
    yaok_node *node = new_node(dir, sizeof dir);
    struct recorder r = {.main_thread = pthread_self(), .node = node};
    pthread_mutex_init(&r.mutex, NULL);
    struct recorder other = {.main_thread = pthread_self(), .node = node};
    pthread_mutex_init(&other.mutex, NULL);

    /* Replacing a registration frees the old user_data exactly once. */
    CHECK(yaok_node_set_event_callback(node, on_event, &other, on_free) == YAOK_OK);
    CHECK(yaok_node_set_event_callback(node, on_event, &r, on_free) == YAOK_OK);
    for (int i = 0; i < 2000 && read_field(&other, &other.freed) == 0; i++) sleep_ms(5);
    CHECK(read_field(&other, &other.freed) == 1);

    uint32_t warnings = 0;
    CHECK(yaok_node_setup(node, "Alice", PIN, PIN, &warnings) == YAOK_OK);
    CHECK(yaok_node_set_auto_lock(node, YAOK_AUTO_LOCK_NEVER, &warnings) == YAOK_OK);
    CHECK(warnings == YAOK_WARNING_AUTO_LOCK_DISABLED);
    CHECK(yaok_node_set_auto_lock(node, 0, &warnings) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_node_set_auto_lock(node, 50, &warnings) == YAOK_OK && warnings == 0);
    /* Wait (no timing assertion, only a hang guard) for auto-lock's event. */
    for (int i = 0; i < 2000 && read_field(&r, &r.locked_auto) == 0; i++) sleep_ms(5);
    CHECK(read_field(&r, &r.locked_auto) == 1);
    CHECK(read_field(&r, &r.status_ok_inside) == 1);
    CHECK(read_field(&r, &r.events) >= 3); /* unlocked, security events, locked */
    CHECK(read_field(&r, &r.on_main_thread) == 0);
    CHECK(read_field(&r, &r.freed) == 0);

    yaok_node_free(node);
    CHECK(r.freed == 1); /* the registration ended with the node */
    CHECK(other.freed == 1);
    pthread_mutex_destroy(&r.mutex);
    pthread_mutex_destroy(&other.mutex);
    remove_dir(dir);
}

/* Two nodes in one process are independent. */
static void test_two_nodes(void) {
    char dir_a[64], dir_b[64];
    yaok_node *a = new_node(dir_a, sizeof dir_a);
    yaok_node *b = new_node(dir_b, sizeof dir_b);
    uint32_t warnings = 0;
    CHECK(yaok_node_setup(a, "Alice", PIN, PIN, &warnings) == YAOK_OK);
    CHECK(yaok_node_setup(b, "Bob", "975310", "975310", &warnings) == YAOK_OK);
    CHECK(yaok_node_lock(a) == YAOK_OK);
    char *json = NULL;
    CHECK(yaok_contact_list(b, &json) == YAOK_OK && strcmp(json, "[]") == 0);
    yaok_string_free(json);
    yaok_node_free(a);
    yaok_node_free(b);
    remove_dir(dir_a);
    remove_dir(dir_b);
}

int main(void) {
    test_fast_kdf_needs_the_test_opt_in();
    opt_in_to_test_kdf();
    test_arguments();
    test_passphrase_and_device_secret();
    test_setup_lock_unlock();
    test_contacts_and_messages();
    test_event_callbacks();
    test_two_nodes();
    return REPORT();
}
