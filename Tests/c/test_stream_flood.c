/* A hostile peer over a stream link (yaok_link_open_stream): 12 MiB of 3-byte frames in one
 * yaok_link_receive (an app that reads large buffers) must cost bounded memory. The library
 * deframes the input a slice at a time and stops once the node refuses a unit (the link is
 * closed for flooding); it used to deframe all of it first, 4 Mi unit arrays at once, which
 * raised the peak memory by 236 MB. The bound checked, 96 MB above the peak before the call,
 * leaves room for the copy of the input and the sanitizers. Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"

#include <stdlib.h>
#include <sys/resource.h>

static yaok_status quiet_send(void *user_data, const uint8_t *frame, size_t len) {
    (void)user_data, (void)frame, (void)len;
    return YAOK_OK;
}

static long peak_kb(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_maxrss;
}

int main(void) {
    opt_in_to_test_kdf();
    char dir[64];
    yaok_node *node = new_node(dir, sizeof dir, "Ivan");
    yaok_link *link = NULL;
    CHECK(yaok_link_open_stream(node, "tcp", YAOK_LINK_RESPONDER, quiet_send, NULL, NULL, NULL, &link) == YAOK_OK);
    size_t len = (size_t)3 << 22;
    uint8_t *flood = malloc(len);
    CHECK(flood != NULL);
    if (!flood) return REPORT();
    for (size_t i = 0; i < len; i += 3) {
        flood[i] = 0;
        flood[i + 1] = 1;
        flood[i + 2] = 0x55;
    }
    long before = peak_kb();
    /* Refused: the link sent faster than the node processes, and is closed. */
    CHECK(yaok_link_receive(link, flood, len) == YAOK_E_LINK_FAILED);
    long grown = peak_kb() - before;
    printf("peak memory grew by %ld KB\n", grown);
    CHECK(grown < 96 * 1024);
    free(flood);
    yaok_link_close(link);
    yaok_node_free(node);
    remove_dir(dir);
    return REPORT();
}
