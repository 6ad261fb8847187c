/* Calling into the node from a stream link's send callback (include/yaok.h "Threads": a
 * callback may call other yaok_* functions on the node): two nodes joined in memory by
 * stream links whose send callbacks read the node's state and its open links, and the
 * handle where *out put it, before handing the frame to the other side, in three-byte
 * chunks. The handshakes complete (no deadlock, no callback without its handle). Prints
 * "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

struct side {
    yaok_node *node;
    yaok_link *link;            /* written by yaok_link_open_stream's *out */
    struct side *other;
    pthread_mutex_t mutex;
    int sends, without_handle, state_failures, list_failures;
};

static yaok_status on_send(void *user_data, const uint8_t *frame, size_t len) {
    struct side *s = user_data;
    yaok_node_state st;
    st.struct_size = sizeof st;
    int state_ok = yaok_node_get_state(s->node, &st) == YAOK_OK;
    yaok_link_list *list = NULL;
    size_t count = 0;
    int list_ok = yaok_link_list_new(s->node, &list) == YAOK_OK && yaok_link_list_count(list, &count) == YAOK_OK &&
                  count >= 1;
    yaok_link_list_free(list);
    uint64_t id = 0;
    pthread_mutex_lock(&s->mutex);
    int handle_ok = s->link != NULL && yaok_link_id(s->link, &id) == YAOK_OK;
    s->sends++;
    s->without_handle += !handle_ok;
    s->state_failures += !state_ok;
    s->list_failures += !list_ok;
    pthread_mutex_unlock(&s->mutex);
    pthread_mutex_lock(&s->other->mutex);
    yaok_link *peer = s->other->link;
    pthread_mutex_unlock(&s->other->mutex);
    for (size_t at = 0; peer && at < len; at += 3)
        yaok_link_receive(peer, frame + at, len - at < 3 ? len - at : 3);
    return YAOK_OK;
}

static int authenticated(yaok_link *link) {
    int32_t auth = 0;
    uint32_t peer = 0;
    return yaok_link_peer(link, &auth, &peer) == YAOK_OK && auth == 1;
}

int main(void) {
    opt_in_to_test_kdf();
    char dir_a[64], dir_b[64];
    struct side a = {.mutex = PTHREAD_MUTEX_INITIALIZER}, b = {.mutex = PTHREAD_MUTEX_INITIALIZER};
    a.node = new_node(dir_a, sizeof dir_a, "Erin");
    b.node = new_node(dir_b, sizeof dir_b, "Finn");
    a.other = &b;
    b.other = &a;
    /* The responder first, so the initiator's first frame has somewhere to go. */
    pthread_mutex_lock(&b.mutex);
    CHECK(yaok_link_open_stream(b.node, "mem", YAOK_LINK_RESPONDER, on_send, NULL, &b, NULL, &b.link) == YAOK_OK);
    pthread_mutex_unlock(&b.mutex);
    pthread_mutex_lock(&a.mutex);
    CHECK(yaok_link_open_stream(a.node, "mem", YAOK_LINK_INITIATOR, on_send, NULL, &a, NULL, &a.link) == YAOK_OK);
    pthread_mutex_unlock(&a.mutex);
    int done = 0;
    for (int i = 0; i < 500 && !done; i++) {
        done = authenticated(a.link) && authenticated(b.link);
        if (!done) nanosleep(&(struct timespec){0, 20000000L}, NULL);
    }
    CHECK(done);
    pthread_mutex_lock(&a.mutex);
    CHECK(a.sends > 0 && a.without_handle == 0 && a.state_failures == 0 && a.list_failures == 0);
    pthread_mutex_unlock(&a.mutex);
    pthread_mutex_lock(&b.mutex);
    CHECK(b.sends > 0 && b.without_handle == 0 && b.state_failures == 0 && b.list_failures == 0);
    pthread_mutex_unlock(&b.mutex);
    yaok_link_close(a.link);
    yaok_link_close(b.link);
    yaok_node_free(a.node);
    yaok_node_free(b.node);
    remove_dir(dir_a);
    remove_dir(dir_b);
    return REPORT();
}
