/* The kernel's Bluetooth socket interface, as much of it as the BLE transport uses: the same
 * names, values and layouts as include/net/bluetooth/{bluetooth,l2cap,hci}.h and BlueZ's
 * <bluetooth/*.h> (a stable kernel ABI). Declared here without including any system header:
 * a module whose header includes <sys/socket.h> (BlueZ's headers do) owns those declarations
 * in a whole-module (release) build, and the YaOKTransports files that import only Glibc
 * then lose SOCK_STREAM, MSG_NOSIGNAL & co. AF_BLUETOOTH comes from Glibc. */
#ifndef YAOK_CBLUETOOTH_SHIM_H
#define YAOK_CBLUETOOTH_SHIM_H

#define BTPROTO_L2CAP 0
#define BTPROTO_HCI 1

#define SOL_BLUETOOTH 274
#define BT_SNDMTU 12
#define BT_RCVMTU 13

#define HCI_CHANNEL_CONTROL 3

typedef struct {
    unsigned char b[6];
} __attribute__((packed)) bdaddr_t;

struct sockaddr_l2 {
    unsigned short l2_family;      /* sa_family_t */
    unsigned short l2_psm;         /* little-endian */
    bdaddr_t l2_bdaddr;            /* little-endian */
    unsigned short l2_cid;
    unsigned char l2_bdaddr_type;  /* BDADDR_LE_PUBLIC 1, BDADDR_LE_RANDOM 2 */
};

struct sockaddr_hci {
    unsigned short hci_family;     /* sa_family_t */
    unsigned short hci_dev;
    unsigned short hci_channel;
};

/* sendmmsg(2): several messages (here SDUs, each whole or not at all) in one system call,
 * so that a channel's queued SDUs leave together. A GNU extension that Glibc's Swift module
 * does not declare; declared here under its own name, bound to the C library's symbol with
 * an asm label (so it can never clash with <sys/socket.h>'s prototype), and with the
 * kernel's struct mmsghdr spelled out (this header includes no system header, see above):
 * yaok_msghdr is struct msghdr of LP64 Linux (socklen_t is unsigned int, size_t unsigned
 * long), followed by msg_len, the bytes the kernel took of that message. */
struct yaok_msghdr {
    void *msg_name;
    unsigned int msg_namelen;
    void *msg_iov;                 /* struct iovec * */
    unsigned long msg_iovlen;
    void *msg_control;
    unsigned long msg_controllen;
    int msg_flags;
};

struct yaok_mmsghdr {
    struct yaok_msghdr msg_hdr;
    unsigned int msg_len;
};

_Static_assert(sizeof(void *) != 8 || sizeof(struct yaok_mmsghdr) == 64, "struct mmsghdr is 64 bytes on LP64 Linux");

int yaok_sendmmsg(int fd, struct yaok_mmsghdr *messages, unsigned int count, int flags) __asm__("sendmmsg");

#endif
