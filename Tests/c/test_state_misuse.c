/* The transport-state calls of issue 21 §3 and a link's life past its node, against a careless
 * or hostile caller: NULL out-pointers, an event that is not live (a copy, or one made up),
 * a handle of another kind, a freed one, an index of SIZE_MAX; outputs untouched on every
 * failure; a diagnostics snapshot taken inside the event callback, and one read after its
 * node is freed; and a link whose node is freed first: closed ("The node is closing"),
 * refused with YAOK_E_CLOSED, still freed by yaok_link_close (under ASan: no use after free,
 * no leak). Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---- events: the getters inside a callback, on events of other kinds ---- */

struct seen {
    pthread_mutex_t mutex;
    yaok_node *node;
    int other_kinds, wrong_answers, snapshots_in_callback;
    yaok_event copy; /* an event kept past its callback: no longer live */
};

static void on_event(void *user_data, const yaok_event *event) {
    struct seen *s = user_data;
    uint32_t state = 77, reason = 77;
    int64_t retry = 77;
    int32_t available = 77;
    int wrong = 0;
    if (event->kind != YAOK_EVENT_TRANSPORT_CONNECTION) {
        wrong += yaok_event_connection(event, &state, &reason, &retry) != YAOK_E_NOT_FOUND;
        wrong += state != 77 || reason != 77 || retry != 77;
    } else {
        wrong += yaok_event_connection(event, NULL, &reason, &retry) != YAOK_E_NULL_ARGUMENT;
        wrong += yaok_event_connection(event, &state, NULL, &retry) != YAOK_E_NULL_ARGUMENT;
        wrong += yaok_event_connection(event, &state, &reason, NULL) != YAOK_E_NULL_ARGUMENT;
        wrong += state != 77 || reason != 77 || retry != 77;
        /* Back into the node from its own callback: a diagnostics snapshot agrees. */
        yaok_diagnostics *d = NULL;
        const char *detail = NULL;
        int got = yaok_diagnostics_new(s->node, &d) == YAOK_OK &&
                  yaok_diagnostics_transport_connection(d, 0, &state, &reason, &retry, &detail) == YAOK_OK;
        yaok_diagnostics_free(d);
        wrong += !got;
        pthread_mutex_lock(&s->mutex);
        s->snapshots_in_callback += got;
        pthread_mutex_unlock(&s->mutex);
    }
    if (event->kind != YAOK_EVENT_INTERNET_CHANGED) {
        wrong += yaok_event_internet(event, &available) != YAOK_E_NOT_FOUND;
        wrong += available != 77;
    }
    wrong += yaok_event_internet(event, NULL) != YAOK_E_NULL_ARGUMENT;
    pthread_mutex_lock(&s->mutex);
    s->other_kinds++;
    s->wrong_answers += wrong;
    s->copy = *event;
    pthread_mutex_unlock(&s->mutex);
}

/* ---- links ---- */

struct end {
    pthread_mutex_t mutex;
    int closed, freed;
    char reason[96];
};

static yaok_status on_send(void *user_data, const uint8_t *unit, size_t len) {
    (void)user_data, (void)unit, (void)len;
    return YAOK_OK;
}

static void on_closed(void *user_data, const char *reason) {
    struct end *e = user_data;
    pthread_mutex_lock(&e->mutex);
    e->closed++;
    snprintf(e->reason, sizeof e->reason, "%s", reason);
    pthread_mutex_unlock(&e->mutex);
}

static void on_free(void *user_data) {
    struct end *e = user_data;
    pthread_mutex_lock(&e->mutex);
    e->freed++;
    pthread_mutex_unlock(&e->mutex);
}

int main(void) {
    opt_in_to_test_kdf();
    char dir[64];
    yaok_node *node = new_node(dir, sizeof dir, "Gale");
    struct seen s = {.mutex = PTHREAD_MUTEX_INITIALIZER, .node = node};
    CHECK(yaok_node_set_event_callback(node, on_event, &s, NULL) == YAOK_OK);
    /* The LAN on loopback: starting it emits TRANSPORT_CHANGED and _CONNECTION (connected). */
    CHECK(yaok_transport_lan_add(node, "127.0.0.1", 0, YAOK_LAN_NO_DISCOVERY, NULL, 0) == YAOK_OK);
    CHECK(yaok_transport_set_enabled(node, "lan", 1) == YAOK_OK);

    /* Events, outside any callback: NULL, a made-up one, and a copy of a delivered one. */
    uint32_t state = 77, reason = 77;
    int64_t retry = 77;
    int32_t available = 77, route = 77;
    CHECK(yaok_event_connection(NULL, &state, &reason, &retry) == YAOK_E_NULL_ARGUMENT);
    yaok_event fake = {YAOK_EVENT_TRANSPORT_CONNECTION, "{\"name\":\"relay\",\"state\":\"connected\"}"};
    CHECK(yaok_event_connection(&fake, &state, &reason, &retry) == YAOK_E_INVALID_ARGUMENT);
    fake.kind = YAOK_EVENT_INTERNET_CHANGED;
    CHECK(yaok_event_internet(&fake, &available) == YAOK_E_INVALID_ARGUMENT);
    CHECK(state == 77 && reason == 77 && retry == 77 && available == 77);

    /* Diagnostics: misuse, then a snapshot that outlives its node. */
    yaok_diagnostics *d = NULL;
    CHECK(yaok_diagnostics_new(node, &d) == YAOK_OK && d != NULL);
    const char *detail = (const char *)&fake, *line = (const char *)&fake;
    CHECK(yaok_diagnostics_transport_connection(d, SIZE_MAX, &state, &reason, &retry, &detail) == YAOK_E_NOT_FOUND);
    CHECK(yaok_diagnostics_transport_connection(d, 1, &state, &reason, &retry, &detail) == YAOK_E_NOT_FOUND);
    CHECK(yaok_diagnostics_transport_connection(d, 0, &state, &reason, &retry, NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_diagnostics_transport_connection(d, 0, NULL, &reason, &retry, &detail) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_diagnostics_internet(d, &available, NULL, &line) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_diagnostics_internet(d, &available, &route, NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(state == 77 && reason == 77 && retry == 77 && available == 77 && route == 77);
    CHECK(detail == (const char *)&fake && line == (const char *)&fake);
    /* A handle of another kind is refused, not misread. */
    yaok_card *card = NULL;
    CHECK(yaok_node_card(node, &card) == YAOK_OK);
    CHECK(yaok_diagnostics_internet((yaok_diagnostics *)(void *)card, &available, &route, &line) ==
          YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_diagnostics_transport_connection((yaok_diagnostics *)(void *)card, 0, &state, &reason, &retry,
                                                &detail) == YAOK_E_INVALID_ARGUMENT);
    yaok_card_free(card);

    /* A link whose node goes first. */
    struct end end = {.mutex = PTHREAD_MUTEX_INITIALIZER};
    yaok_link *link = NULL;
    CHECK(yaok_link_open_stream(node, "pipe", YAOK_LINK_INITIATOR, on_send, on_closed, &end, on_free, &link) ==
          YAOK_OK);
    uint64_t link_id = 0, again = 0;
    CHECK(yaok_link_id(link, &link_id) == YAOK_OK);

    /* The connection event's callback has run (events still queued at yaok_node_free are
     * dropped). */
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&s.mutex);
        int done = s.snapshots_in_callback > 0;
        pthread_mutex_unlock(&s.mutex);
        if (done) break;
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
    }
    yaok_node_free(node);
    CHECK(end.closed == 1 && strcmp(end.reason, "The node is closing") == 0 && end.freed == 1);
    CHECK(yaok_link_id(link, &again) == YAOK_OK && again == link_id);
    int32_t authenticated = 77;
    uint32_t peer = 77;
    CHECK(yaok_link_peer(link, &authenticated, &peer) == YAOK_E_CLOSED && authenticated == 77 && peer == 77);
    CHECK(yaok_link_receive(link, (const uint8_t *)"\0\3abc", 5) == YAOK_E_CLOSED);
    yaok_link_close(link);
    CHECK(end.freed == 1);
    CHECK(yaok_link_id(link, &again) == YAOK_E_INVALID_ARGUMENT);

    /* The snapshot needs no node; a freed one is refused. */
    CHECK(yaok_diagnostics_transport_connection(d, 0, &state, &reason, &retry, &detail) == YAOK_OK);
    CHECK(state == YAOK_CONNECTIVITY_CONNECTED && reason == YAOK_DISCONNECT_NONE && retry == 0 && detail == NULL);
    CHECK(yaok_diagnostics_internet(d, &available, &route, &line) == YAOK_OK);
    CHECK(strcmp(line, available ? "Internet: Available" : "Internet: Unavailable") == 0);
    yaok_diagnostics_free(d);
    yaok_diagnostics_free(d);
    CHECK(yaok_diagnostics_internet(d, &available, &route, &line) == YAOK_E_INVALID_ARGUMENT);

    /* The events seen, of every kind, answered the getters rightly; a kept copy is dead. */
    CHECK(s.other_kinds > 0 && s.wrong_answers == 0 && s.snapshots_in_callback > 0);
    CHECK(yaok_event_connection(&s.copy, &state, &reason, &retry) == YAOK_E_INVALID_ARGUMENT);
    remove_dir(dir);
    return REPORT();
}
