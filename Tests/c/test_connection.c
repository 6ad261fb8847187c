/* Transport connection state and "Internet: Available/Unavailable" (include/yaok.h,
 * "transport connection and internet"), typed, against a real yaok-relay on 127.0.0.1:
 * a wrong pin is DISCONNECTED with YAOK_DISCONNECT_PIN_MISMATCH and a next retry (while the
 * transport itself stays RUNNING), announced by YAOK_EVENT_TRANSPORT_CONNECTION; a relay
 * killed is DISCONNECTED (refused) with a next retry and the internet unavailable, and
 * CONNECTED again once it is back on the same port. No JSON is read. The relay binary:
 * $YAOK_RELAY, else the debug build's (built here if missing). Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"
#include "wait.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


/* ---- a yaok-relay process ---- */

struct relay {
    pid_t pid;
    char address[64];
    char pin[80];
};

static const char *relay_binary(void) {
    const char *env = getenv("YAOK_RELAY");
    if (env && *env) return env;
    static const char *path = ".build/debug/yaok-relay";
    if (access(path, X_OK) != 0 && system("swift build --product yaok-relay >&2") != 0) return NULL;
    return path;
}

/* Starts it on `listen` ("127.0.0.1:0" for any port) and reads its "pin:" and "listening:"
 * lines; 0 on success. */
static int relay_start(struct relay *r, const char *data, const char *listen) {
    const char *binary = relay_binary();
    if (!binary) return -1;
    int fds[2];
    if (pipe(fds) != 0) return -1;
    r->pid = fork();
    if (r->pid < 0) return -1;
    if (r->pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        execl(binary, binary, "--listen", listen, "--data", data, "--self-signed", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *out = fdopen(fds[0], "r");
    char line[512];
    r->address[0] = r->pin[0] = 0;
    while ((!r->address[0] || !r->pin[0]) && fgets(line, sizeof line, out)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "listening: ", 11) == 0) snprintf(r->address, sizeof r->address, "%s", line + 11);
        if (strncmp(line, "pin: ", 5) == 0) snprintf(r->pin, sizeof r->pin, "%s", line + 5);
    }
    /* The rest of its output goes nowhere: a reader thread is not worth it for a test, and
     * the relay logs little. Closing our end would give it SIGPIPE on its next line. */
    return r->address[0] && r->pin[0] ? 0 : -1;
}

static void relay_kill(struct relay *r) {
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
        r->pid = 0;
    }
}

/* ---- events, read typed ---- */

struct seen {
    pthread_mutex_t mutex;
    int pin_mismatch, connected, disconnected, internet_up, internet_down, texts_wrong;
    int64_t retry_at;
};

static void on_event(void *user_data, const yaok_event *event) {
    struct seen *s = user_data;
    pthread_mutex_lock(&s->mutex);
    uint32_t state = 0, reason = 0;
    int64_t retry = 0;
    int32_t available = 0;
    const char *name = NULL;
    if (event->kind == YAOK_EVENT_TRANSPORT_CONNECTION &&
        yaok_event_connection(event, &state, &reason, &retry) == YAOK_OK &&
        yaok_event_transport_name(event, &name) == YAOK_OK && strcmp(name, "relay") == 0) {
        if (state == YAOK_CONNECTIVITY_CONNECTED) s->connected++;
        if (state == YAOK_CONNECTIVITY_DISCONNECTED) s->disconnected++;
        const char *text = NULL;
        if (reason == YAOK_DISCONNECT_PIN_MISMATCH) {
            s->pin_mismatch++;
            /* The reason for a person comes with it. */
            if (yaok_event_text(event, &text) != YAOK_OK || !strstr(text, "pinned key")) s->texts_wrong++;
        }
        if (retry) s->retry_at = retry;
    }
    if (event->kind == YAOK_EVENT_INTERNET_CHANGED && yaok_event_internet(event, &available) == YAOK_OK) {
        if (available) s->internet_up++; else s->internet_down++;
        const char *line = NULL;
        if (yaok_event_text(event, &line) != YAOK_OK ||
            strcmp(line, available ? "Internet: Available" : "Internet: Unavailable") != 0) s->texts_wrong++;
    }
    pthread_mutex_unlock(&s->mutex);
}

static int seen(struct seen *s, const int *counter) {
    pthread_mutex_lock(&s->mutex);
    int n = *counter;
    pthread_mutex_unlock(&s->mutex);
    return n;
}

/* ---- the relay transport's state, from a diagnostics snapshot ---- */

struct relay_state {
    uint32_t transport_state, state, reason;
    int64_t retry;
    char detail[256];
    int32_t internet;
};

static int relay_state(yaok_node *node, struct relay_state *out) {
    yaok_diagnostics *d = NULL;
    if (yaok_diagnostics_new(node, &d) != YAOK_OK) return -1;
    size_t count = 0;
    int found = -1;
    yaok_diagnostics_transport_count(d, &count);
    for (size_t i = 0; i < count; i++) {
        const char *name = NULL, *status = NULL, *detail = NULL;
        uint32_t links = 0;
        if (yaok_diagnostics_transport(d, i, &name, &out->transport_state, &links, &status) != YAOK_OK) continue;
        if (strcmp(name, "relay") != 0) continue;
        if (yaok_diagnostics_transport_connection(d, i, &out->state, &out->reason, &out->retry, &detail) == YAOK_OK) {
            snprintf(out->detail, sizeof out->detail, "%s", detail ? detail : "");
            found = 0;
        }
    }
    int32_t route = 0;
    const char *line = NULL;
    if (yaok_diagnostics_internet(d, &out->internet, &route, &line) != YAOK_OK || !line ||
        strncmp(line, "Internet: ", 10) != 0) found = -1;
    yaok_diagnostics_free(d);
    return found;
}

/* Polls until the relay's connection is `state` (and `reason`, unless UINT32_MAX); 0 when it is. */
static int wait_for(yaok_node *node, uint32_t state, uint32_t reason, struct relay_state *out, int seconds) {
    for (int i = 0; i < seconds * 50; i++) {
        if (relay_state(node, out) == 0 && out->state == state && (reason == UINT32_MAX || out->reason == reason)) return 0;
        sleep_ms(20);
    }
    return -1;
}

static void test_a_wrong_pin_is_disconnected_not_running(void) {
    char relay_dir[64], dir[64];
    make_dir(relay_dir, sizeof relay_dir);
    struct relay relay = {0};
    CHECK(relay_start(&relay, relay_dir, "127.0.0.1:0") == 0);
    yaok_node *node = NULL;
    make_dir(dir, sizeof dir);
    CHECK(yaok_node_open(dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &node) == YAOK_OK);
    struct seen s = {.mutex = PTHREAD_MUTEX_INITIALIZER};
    CHECK(yaok_node_set_event_callback(node, on_event, &s, NULL) == YAOK_OK);
    uint32_t warnings = 0;
    CHECK(yaok_node_setup(node, "Alice", PIN, PIN, &warnings) == YAOK_OK);
    const char *wrong = "abababababababababababababababababababababababababababababababab";
    CHECK(yaok_transport_relay_add(node, relay.address, wrong, NULL) == YAOK_OK);
    CHECK(yaok_transport_set_enabled(node, "relay", 1) == YAOK_OK);

    struct relay_state st = {0};
    CHECK(wait_for(node, YAOK_CONNECTIVITY_DISCONNECTED, YAOK_DISCONNECT_PIN_MISMATCH, &st, 20) == 0);
    CHECK(st.transport_state == YAOK_TRANSPORT_RUNNING);  /* it keeps trying: running, but not connected */
    CHECK(strstr(st.detail, "pinned key") != NULL);
    CHECK(st.retry > 0);
    CHECK(st.internet == 1);  /* a server answered: the network works */
    for (int i = 0; i < 500 && !seen(&s, &s.pin_mismatch); i++) sleep_ms(20);
    CHECK(seen(&s, &s.pin_mismatch) > 0);
    CHECK(seen(&s, &s.connected) == 0);
    CHECK(seen(&s, &s.texts_wrong) == 0);

    yaok_node_free(node);
    remove_dir(dir);
    relay_kill(&relay);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", relay_dir);
    CHECK(system(rm) == 0);
}

static void test_a_relay_killed_and_back(void) {
    char relay_dir[64], a_dir[64], b_dir[64];
    make_dir(relay_dir, sizeof relay_dir);
    struct relay relay = {0};
    CHECK(relay_start(&relay, relay_dir, "127.0.0.1:0") == 0);
    yaok_node *alice = NULL;
    make_dir(a_dir, sizeof a_dir);
    CHECK(yaok_node_open(a_dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &alice) == YAOK_OK);
    struct seen s = {.mutex = PTHREAD_MUTEX_INITIALIZER};
    CHECK(yaok_node_set_event_callback(alice, on_event, &s, NULL) == YAOK_OK);
    uint32_t warnings = 0;
    CHECK(yaok_node_setup(alice, "Alice", PIN, PIN, &warnings) == YAOK_OK);
    /* A relay with no contact idles after one login: give Alice one. */
    yaok_node *bob = new_node(b_dir, sizeof b_dir, "Bob");
    yaok_card *card = NULL;
    char *text = NULL, *json = NULL;
    CHECK(yaok_node_card(bob, &card) == YAOK_OK && yaok_card_text(card, &text) == YAOK_OK);
    CHECK(yaok_contact_add(alice, text, &json) == YAOK_OK);
    yaok_string_free(json);
    yaok_string_free(text);
    yaok_card_free(card);

    CHECK(yaok_transport_relay_add(alice, relay.address, relay.pin, NULL) == YAOK_OK);
    CHECK(yaok_transport_set_enabled(alice, "relay", 1) == YAOK_OK);
    struct relay_state st = {0};
    CHECK(wait_for(alice, YAOK_CONNECTIVITY_CONNECTED, UINT32_MAX, &st, 20) == 0);
    CHECK(st.reason == YAOK_DISCONNECT_NONE && st.retry == 0 && st.internet == 1);
    for (int i = 0; i < 500 && !seen(&s, &s.connected); i++) sleep_ms(20);
    CHECK(seen(&s, &s.connected) == 1);

    relay_kill(&relay);
    CHECK(wait_for(alice, YAOK_CONNECTIVITY_DISCONNECTED, YAOK_DISCONNECT_REFUSED, &st, 30) == 0);
    CHECK(st.retry > 0);
    CHECK(st.internet == 0);
    for (int i = 0; i < 500 && !seen(&s, &s.internet_down); i++) sleep_ms(20);
    CHECK(seen(&s, &s.disconnected) > 0);
    CHECK(seen(&s, &s.internet_down) == 1);

    /* Up before the kill too where the host has no default route: count from here. */
    int up = seen(&s, &s.internet_up);
    CHECK(relay_start(&relay, relay_dir, relay.address) == 0);
    CHECK(wait_for(alice, YAOK_CONNECTIVITY_CONNECTED, UINT32_MAX, &st, 90) == 0);
    for (int i = 0; i < 500 && seen(&s, &s.internet_up) == up; i++) sleep_ms(20);
    CHECK(seen(&s, &s.connected) == 2);
    CHECK(seen(&s, &s.internet_up) == up + 1);
    CHECK(seen(&s, &s.texts_wrong) == 0);

    yaok_node_free(alice);
    yaok_node_free(bob);
    remove_dir(a_dir);
    remove_dir(b_dir);
    relay_kill(&relay);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", relay_dir);
    CHECK(system(rm) == 0);
}

int main(void) {
    opt_in_to_test_kdf();
    signal(SIGPIPE, SIG_IGN);
    test_a_wrong_pin_is_disconnected_not_running();
    test_a_relay_killed_and_back();
    return REPORT();
}
