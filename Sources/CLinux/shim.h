/* Linux headers that Glibc's Swift module does not export: eventfd for the node's event
 * loop wake-ups, and epoll (re-exported here so one import brings both). */
#include <sys/epoll.h>
#include <sys/eventfd.h>
