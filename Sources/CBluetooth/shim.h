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

#endif
