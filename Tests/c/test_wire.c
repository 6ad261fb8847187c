/* The wire (interoperability) section as a C embedder uses it: decode a packet, frame it,
 * split it into fragments, against docs/PROTOCOL.md's wire vectors, with the protocol's
 * error statuses and untouched outputs on failure. Prints "N passed, N failed". */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS, MAP_NORESERVE */
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* wire-routed-message */
static const uint8_t message[] = {
    0x01, 0x01, 0x07, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
    0xcc, 0xdd, 0xee, 0xff, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, 0x27, 0x60, 0x5d, 0x0d, 0x40,
    0xda, 0x0e, 0x59, 0x62, 0x51, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef};

static void test_decode(void) {
    char *json = NULL;
    CHECK(yaok_packet_decode(message, sizeof message, &json) == YAOK_OK && json != NULL);
    CHECK(json != NULL &&
          strcmp(json,
                 "{\"version\":1,\"type\":\"message\",\"hop_limit\":7,"
                 "\"message_id\":\"00112233445566778899aabbccddeeff\",\"created_ms\":1700000000000,"
                 "\"lifetime_min\":10080,\"expires_ms\":1700604800000,\"routing_tag\":\"5d0d40da0e596251\","
                 "\"authenticated\":\"010100112233445566778899aabbccddeeff018bcfe5680027605d0d40da0e5962510004\","
                 "\"payload\":\"deadbeef\"}") == 0);
    yaok_string_free(json);

    static const uint8_t handshake[] = {0x01, 0x03, 0x00, 0x03, 0x01, 0x02, 0x03};
    json = NULL;
    CHECK(yaok_packet_decode(handshake, sizeof handshake, &json) == YAOK_OK);
    CHECK(json != NULL && strcmp(json, "{\"version\":1,\"type\":\"handshake\",\"payload\":\"010203\"}") == 0);
    yaok_string_free(json);
}

static void test_decode_errors(void) {
    static const uint8_t version2[] = {0x02, 0x01, 0x07, 0x00};
    static const uint8_t type6[] = {0x01, 0x06, 0x07, 0x00, 0x11};
    static const uint8_t trailing[] = {0x01, 0x03, 0x00, 0x01, 0x01, 0xff};
    char *json = NULL;
    CHECK(yaok_packet_decode(version2, sizeof version2, &json) == YAOK_E_UNSUPPORTED_VERSION && json == NULL);
    CHECK(strstr(yaok_last_error_message(), "Unsupported protocol version 2") != NULL);
    CHECK(yaok_packet_decode(type6, sizeof type6, &json) == YAOK_E_UNKNOWN_PACKET_TYPE && json == NULL);
    CHECK(strcmp(yaok_last_error_message(), "Unknown packet type 0x06") == 0);
    CHECK(yaok_packet_decode(trailing, sizeof trailing, &json) == YAOK_E_MALFORMED_PACKET && json == NULL);
    CHECK(strstr(yaok_last_error_message(), "payload length 1 but 2 bytes follow") != NULL);
    CHECK(yaok_packet_decode(NULL, 0, &json) == YAOK_E_MALFORMED_PACKET && json == NULL);
    CHECK(yaok_packet_decode(message, sizeof message - 1, &json) == YAOK_E_MALFORMED_PACKET && json == NULL);
    CHECK(yaok_packet_decode(NULL, 4, &json) == YAOK_E_NULL_ARGUMENT && json == NULL);
    /* §4.1's order: the version, then the type, before the 17,408-byte limit. */
    uint8_t *big = calloc(17409, 1);
    CHECK(big != NULL);
    if (big != NULL) {
        big[0] = 0x02;
        CHECK(yaok_packet_decode(big, 17409, &json) == YAOK_E_UNSUPPORTED_VERSION && json == NULL);
        big[0] = 0x01;
        big[1] = 0x06;
        CHECK(yaok_packet_decode(big, 17409, &json) == YAOK_E_UNKNOWN_PACKET_TYPE && json == NULL);
        big[1] = 0x03;
        CHECK(yaok_packet_decode(big, 17409, &json) == YAOK_E_MALFORMED_PACKET && json == NULL);
        CHECK(strstr(yaok_last_error_message(), "17409 bytes exceeds the maximum 17408") != NULL);
        free(big);
    }
    CHECK(yaok_packet_decode(message, sizeof message, NULL) == YAOK_E_NULL_ARGUMENT);
}

static void test_frame(void) {
    uint8_t *frame = NULL;
    size_t frame_len = 0;
    CHECK(yaok_frame_encode(message, sizeof message, &frame, &frame_len) == YAOK_OK);
    CHECK(frame != NULL && frame_len == sizeof message + 2 && frame[0] == 0x00 && frame[1] == 0x29 &&
          memcmp(frame + 2, message, sizeof message) == 0);
    yaok_bytes_free(frame, frame_len);

    frame = NULL;
    frame_len = 0;
    CHECK(yaok_frame_encode(NULL, 0, &frame, &frame_len) == YAOK_E_INVALID_ARGUMENT && frame == NULL);
    uint8_t *big = calloc(17409, 1);
    CHECK(big != NULL);
    if (big != NULL) {
        CHECK(yaok_frame_encode(big, 17409, &frame, &frame_len) == YAOK_E_FRAME_TOO_LARGE && frame == NULL);
        free(big);
    }
    CHECK(yaok_frame_encode(message, sizeof message, NULL, &frame_len) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_frame_encode(message, sizeof message, &frame, NULL) == YAOK_E_NULL_ARGUMENT && frame == NULL);
}

static void test_split(void) {
    char *json = NULL;
    CHECK(yaok_fragment_split(message, sizeof message, YAOK_LINK_MIN_MTU, 0x1234, &json) == YAOK_OK);
    /* wire-fragmentation */
    CHECK(json != NULL && strcmp(json,
                                 "[\"0104123400000004010107001122334455667788\","
                                 "\"010412340001000499aabbccddeeff018bcfe568\","
                                 "\"01041234000200040027605d0d40da0e59625100\","
                                 "\"010412340003000404deadbeef\"]") == 0);
    yaok_string_free(json);

    json = NULL;
    CHECK(yaok_fragment_split(message, sizeof message, 1500, 0, &json) == YAOK_OK);
    CHECK(json != NULL && strncmp(json, "[\"010107", 8) == 0 && strchr(json, ',') == NULL);
    yaok_string_free(json);

    json = NULL;
    CHECK(yaok_fragment_split(message, sizeof message, YAOK_LINK_MIN_MTU - 1, 0, &json) ==
              YAOK_E_INVALID_ARGUMENT && json == NULL);
    CHECK(yaok_fragment_split(NULL, 0, YAOK_LINK_MIN_MTU, 0, &json) == YAOK_E_INVALID_ARGUMENT && json == NULL);
    CHECK(yaok_fragment_split(message, sizeof message, YAOK_LINK_MIN_MTU, 0, NULL) == YAOK_E_NULL_ARGUMENT);
}

/* An oversized buffer is refused from its first two bytes, not copied whole first (a
 * 100 MiB buffer used to cost 111 MB): only the first page of a 1 GiB reservation is
 * readable, so a decoder that reads past it crashes here. */
static void test_decode_huge_buffer_is_not_copied(void) {
    const size_t size = (size_t)1 << 30;
    uint8_t *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(p != MAP_FAILED);
    if (p == MAP_FAILED) return;
    CHECK(mprotect(p, 4096, PROT_READ | PROT_WRITE) == 0);
    char *json = NULL;
    p[0] = 0x01;
    p[1] = 0x01;
    CHECK(yaok_packet_decode(p, size, &json) == YAOK_E_MALFORMED_PACKET && json == NULL);
    CHECK(strstr(yaok_last_error_message(), "1073741824 bytes exceeds the maximum 17408") != NULL);
    p[0] = 0x02;
    CHECK(yaok_packet_decode(p, size, &json) == YAOK_E_UNSUPPORTED_VERSION && json == NULL);
    /* Framing and splitting refuse it by its length alone, as before, but without the copy. */
    uint8_t *frame = NULL;
    size_t frame_len = 0;
    CHECK(yaok_frame_encode(p, size, &frame, &frame_len) == YAOK_E_FRAME_TOO_LARGE && frame == NULL);
    CHECK(strstr(yaok_last_error_message(), "Frame of 1073741824 bytes exceeds the maximum 17408") != NULL);
    CHECK(yaok_fragment_split(p, size, 185, 0, &json) == YAOK_E_INVALID_ARGUMENT && json == NULL);
    CHECK(strstr(yaok_last_error_message(), "Packet length 1073741824 is outside 1...17408") != NULL);
    munmap(p, size);
}

int main(void) {
    test_decode();
    test_decode_errors();
    test_decode_huge_buffer_is_not_copied();
    test_frame();
    test_split();
    return REPORT();
}
