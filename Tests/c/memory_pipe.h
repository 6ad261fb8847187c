/* A memory pipe between two nodes' links for the C tests: each direction is a `pipe_end`
 * whose send callback hands units to the other side's link. Units sent before the other
 * side's link exists (yaok_link_open hands out its first units before it returns) wait in
 * the end until connect_end() names the target. The end also counts what the library did
 * with it (units sent, closed and free callbacks), so tests can check the link's ownership
 * rules. Every field is read and written under the end's mutex. */
#ifndef YAOK_TEST_MEMORY_PIPE_H
#define YAOK_TEST_MEMORY_PIPE_H

#include "check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WAITING 64
struct pipe_end {
    pthread_mutex_t mutex;
    yaok_link *target;
    uint8_t *waiting[MAX_WAITING];
    size_t waiting_len[MAX_WAITING];
    int waiting_count;
    int sent, freed, closed;
    char closed_reason[128];
};

static inline yaok_status on_send(void *user_data, const uint8_t *unit, size_t unit_len) {
    struct pipe_end *end = user_data;
    pthread_mutex_lock(&end->mutex);
    end->sent++;
    if (end->target) {
        /* Only queues on the other node: safe from this (event) thread. */
        yaok_link_receive(end->target, unit, unit_len);
    } else if (end->waiting_count < MAX_WAITING) {
        uint8_t *copy = malloc(unit_len ? unit_len : 1);
        if (copy) {
            memcpy(copy, unit, unit_len);
            end->waiting[end->waiting_count] = copy;
            end->waiting_len[end->waiting_count++] = unit_len;
        }
    }
    pthread_mutex_unlock(&end->mutex);
    return YAOK_OK;
}

static inline void on_closed(void *user_data, const char *reason) {
    struct pipe_end *end = user_data;
    pthread_mutex_lock(&end->mutex);
    end->closed++;
    snprintf(end->closed_reason, sizeof end->closed_reason, "%s", reason);
    pthread_mutex_unlock(&end->mutex);
}

static inline void on_free(void *user_data) {
    struct pipe_end *end = user_data;
    pthread_mutex_lock(&end->mutex);
    end->freed++;
    pthread_mutex_unlock(&end->mutex);
}

/* Names the link units go to, and hands it what waited. */
static inline void connect_end(struct pipe_end *end, yaok_link *target) {
    pthread_mutex_lock(&end->mutex);
    end->target = target;
    for (int i = 0; i < end->waiting_count; i++) {
        CHECK(yaok_link_receive(target, end->waiting[i], end->waiting_len[i]) == YAOK_OK);
        free(end->waiting[i]);
    }
    end->waiting_count = 0;
    pthread_mutex_unlock(&end->mutex);
}

/* Before the target link is closed: nothing is handed to it afterwards. */
static inline void disconnect_end(struct pipe_end *end) {
    pthread_mutex_lock(&end->mutex);
    end->target = NULL;
    pthread_mutex_unlock(&end->mutex);
}

#endif
