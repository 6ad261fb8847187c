/*
 * controllers: inside the Bluetooth VM, waits for the virtual controllers hci0..hciN-1 that
 * btvirt creates and switches them on through the kernel's management socket (mgmt), then
 * prints one line per controller: "hciI AA:BB:CC:DD:EE:FF".
 *
 *   controllers [-w WAIT_MS] [-a ADV_MASK] N
 *
 * Each controller is made connectable and bondable and powered on; those whose bit is set
 * in ADV_MASK (default 1: hci0 only) also get the advertising setting. Why only one side:
 * the kernel opens an LE connection by scanning for the peer's connectable advertising, and
 * a controller that is itself advertising opens its outgoing connections as peripheral
 * (directed advertising), which only works when the other side is initiating. So the side
 * that listens advertises and the side that connects does not.
 *
 * Why a static C program and not btmgmt: under the VM's instruction emulation each process
 * start of a dynamically linked tool costs a noticeable fraction of a second, and btmgmt
 * prints nothing when its stdin is at end of file and exits 0 when a command fails. This
 * one reads each command's own status and exits non-zero with the reason:
 * 2 usage, 3 the controllers did not appear in time, 4 a command failed, 5 socket error.
 * It needs no BlueZ headers (the few mgmt constants are below, from the kernel's mgmt API).
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
	af_bluetooth = 31, btproto_hci = 1, hci_channel_control = 3,
	no_index = 0xffff,
	op_read_index_list = 0x0003, op_read_info = 0x0004, op_set_powered = 0x0005,
	op_set_connectable = 0x0007, op_set_bondable = 0x0009, op_set_advertising = 0x0029,
	ev_command_complete = 0x0001, ev_command_status = 0x0002,
};

struct hci_address { uint16_t family, device, channel; };

static int control = -1;

static long long milliseconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = v & 0xff; p[1] = v >> 8; }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Sends one mgmt command and waits up to wait_ms for its reply (Command Complete or Command
 * Status with the same opcode and index; events in between are skipped). Returns the mgmt
 * status (0 success) or -1 without a reply; the reply's parameters go to out (out_len in:
 * room, out: bytes copied). */
static int command(uint16_t opcode, uint16_t index, const uint8_t *param, uint16_t param_len,
		   uint8_t *out, size_t *out_len, int wait_ms)
{
	uint8_t packet[1024];
	long long deadline = milliseconds() + wait_ms;

	put16(packet, opcode);
	put16(packet + 2, index);
	put16(packet + 4, param_len);
	if (param_len)
		memcpy(packet + 6, param, param_len);
	if (write(control, packet, 6u + param_len) != 6 + param_len) {
		fprintf(stderr, "controllers: mgmt write: %s\n", strerror(errno));
		return -1;
	}
	while (milliseconds() < deadline) {
		struct pollfd p = { .fd = control, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, (int)(deadline - milliseconds())) <= 0)
			continue;
		n = read(control, packet, sizeof packet);
		/* event(2) index(2) length(2) opcode(2) status(1) parameters... */
		if (n < 9)
			continue;
		if (get16(packet) != ev_command_complete && get16(packet) != ev_command_status)
			continue;
		if (get16(packet + 2) != index || get16(packet + 6) != opcode)
			continue;
		if (out && out_len) {
			size_t have = (size_t)n - 9;
			if (have > *out_len)
				have = *out_len;
			memcpy(out, packet + 9, have);
			*out_len = have;
		}
		return packet[8];
	}
	fprintf(stderr, "controllers: no reply to mgmt opcode 0x%04x on index %u\n", opcode, index);
	return -1;
}

static int switch_on(uint16_t opcode, uint16_t index, const char *what)
{
	const uint8_t on = 1;
	int status = command(opcode, index, &on, 1, NULL, NULL, 10000);

	if (status != 0)
		fprintf(stderr, "controllers: hci%u: %s: %s (mgmt status %d)\n", index, what,
			status < 0 ? "no reply" : "refused", status);
	return status == 0;
}

/* Whether the kernel lists every index 0..n-1 yet. */
static int all_listed(int n)
{
	uint8_t list[512];
	size_t len = sizeof list;
	int found = 0;

	if (command(op_read_index_list, no_index, NULL, 0, list, &len, 5000) != 0 || len < 2)
		return 0;
	for (size_t i = 0; 2 + 2 * i + 1 < len && i < get16(list); i++)
		if (get16(list + 2 + 2 * i) < n)
			found++;
	return found == n;
}

int main(int argc, char **argv)
{
	struct hci_address address = { af_bluetooth, no_index, hci_channel_control };
	int wait_ms = 10000, n, option;
	unsigned long advertising = 1;
	long long deadline;

	while ((option = getopt(argc, argv, "w:a:")) != -1) {
		if (option == 'w')
			wait_ms = atoi(optarg);
		else if (option == 'a')
			advertising = strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	if (optind != argc - 1 || (n = atoi(argv[optind])) < 1 || n > 8) {
		fprintf(stderr, "usage: controllers [-w WAIT_MS] [-a ADV_MASK] N (1..8)\n");
		return 2;
	}
	control = socket(af_bluetooth, SOCK_RAW | SOCK_CLOEXEC, btproto_hci);
	if (control < 0 || bind(control, (struct sockaddr *)&address, sizeof address) < 0) {
		fprintf(stderr, "controllers: mgmt socket: %s\n", strerror(errno));
		return 5;
	}
	deadline = milliseconds() + wait_ms;
	while (!all_listed(n)) {
		if (milliseconds() > deadline) {
			fprintf(stderr, "controllers: hci0..hci%d not all there after %d ms\n", n - 1, wait_ms);
			return 3;
		}
		usleep(50 * 1000);
	}
	for (uint16_t i = 0; i < n; i++) {
		uint8_t info[280];
		size_t len = sizeof info;

		if (!switch_on(op_set_connectable, i, "connectable") || !switch_on(op_set_bondable, i, "bondable") ||
		    (((advertising >> i) & 1) && !switch_on(op_set_advertising, i, "advertising")) ||
		    !switch_on(op_set_powered, i, "power on"))
			return 4;
		if (command(op_read_info, i, NULL, 0, info, &len, 10000) != 0 || len < 6) {
			fprintf(stderr, "controllers: hci%u: cannot read its address\n", i);
			return 4;
		}
		/* The address comes least significant byte first. */
		printf("hci%u %02X:%02X:%02X:%02X:%02X:%02X\n", i, info[5], info[4], info[3], info[2],
		       info[1], info[0]);
	}
	return 0;
}
