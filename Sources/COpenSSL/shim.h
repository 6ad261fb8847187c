#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

// OpenSSL spells these as macros (over SSL_ctrl, BIO_set_flags, a uint64_t shift), which
// Swift cannot import or call; each wrapper is the macro, unchanged.

static inline int yaok_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int yaok_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long yaok_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline long yaok_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline int yaok_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
static inline int yaok_SSL_set_app_data(SSL *ssl, void *data) {
    return SSL_set_app_data(ssl, data);
}
static inline void *yaok_SSL_get_app_data(const SSL *ssl) {
    return SSL_get_app_data(ssl);
}

static const uint64_t YAOK_SSL_OP_NO_TICKET = SSL_OP_NO_TICKET;
static const uint64_t YAOK_SSL_OP_NO_COMPRESSION = SSL_OP_NO_COMPRESSION;
static const uint64_t YAOK_SSL_OP_NO_RENEGOTIATION = SSL_OP_NO_RENEGOTIATION;
static const uint64_t YAOK_SSL_OP_IGNORE_UNEXPECTED_EOF = SSL_OP_IGNORE_UNEXPECTED_EOF;

static inline void yaok_BIO_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }
static inline void yaok_BIO_set_retry_write(BIO *bio) { BIO_set_retry_write(bio); }
static inline void yaok_BIO_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }
