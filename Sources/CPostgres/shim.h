/* libpq, PostgreSQL's client library (Debian: libpq-dev), for the relay's shared store. */
#include <libpq-fe.h>
