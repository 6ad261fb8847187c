/* Linux headers that Glibc's Swift module does not export: eventfd for the node's event
 * loop wake-ups, and epoll (re-exported here so one import brings both). */
#include <sys/epoll.h>
#include <sys/eventfd.h>
/* malloc_trim and mallinfo2 (the relay gives freed heap back; its tests count heap bytes). */
#include <malloc.h>
