/*
 * coc-throughput: raw L2CAP LE credit-based channel throughput between two local controllers,
 * the baseline that `scripts/test-ble --bench` compares the Bluetooth transport against.
 *
 *   coc-throughput [-n COUNT] [-s SIZE] [-p PSM] SERVER_ADDR CLIENT_ADDR
 *
 * A server socket on SERVER_ADDR (LE public address, PSM 0x0080 by default, receive MTU SIZE)
 * accepts one channel; a child process bound to CLIENT_ADDR connects and sends COUNT SDUs of
 * SIZE bytes; the server checks each (length and content) and prints, from the first SDU to
 * the last, "OK: COUNT SDUs x SIZE bytes in T s: R KiB/s". Exit status 1 on any failure.
 * Run it inside scripts/ble-vm/run with the server on the advertising controller:
 *   coc-throughput "$BLE_A_ADDR" "$BLE_B_ADDR"
 * The send buffer is raised: the kernel allocates all of an SDU's PDUs at once against it, so
 * with the default buffer an SDU of 32 KiB or more could never be sent.
 */
#include <bluetooth/bluetooth.h>
#include <bluetooth/l2cap.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* An L2CAP socket bound to an LE public address and a PSM (0: any, for the client). */
static int channel_socket(const char *address, int psm)
{
	struct sockaddr_l2 local = { .l2_family = AF_BLUETOOTH, .l2_psm = htobs(psm),
				     .l2_bdaddr_type = BDADDR_LE_PUBLIC };
	int s = socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP);

	if (s < 0 || str2ba(address, &local.l2_bdaddr) < 0 || bind(s, (struct sockaddr *)&local, sizeof local) < 0) {
		fprintf(stderr, "coc-throughput: socket on %s: %s\n", address, strerror(errno));
		exit(1);
	}
	return s;
}

static void set_mtu(int s, int option, int mtu)
{
	uint16_t value = (uint16_t)mtu;
	if (setsockopt(s, SOL_BLUETOOTH, option, &value, sizeof value) < 0) {
		fprintf(stderr, "coc-throughput: MTU %d: %s\n", mtu, strerror(errno));
		exit(1);
	}
}

static void fill(unsigned char *sdu, int size, int i)
{
	for (int k = 0; k < size; k++)
		sdu[k] = (unsigned char)(i * 7 + k);
}

static int client(const char *server, const char *self, int psm, int count, int size)
{
	struct sockaddr_l2 remote = { .l2_family = AF_BLUETOOTH, .l2_psm = htobs(psm),
				      .l2_bdaddr_type = BDADDR_LE_PUBLIC };
	int s = channel_socket(self, 0), buffer = 4 * 1024 * 1024;
	unsigned char *sdu = malloc(size);

	set_mtu(s, BT_SNDMTU, size);
	set_mtu(s, BT_RCVMTU, size);
	if (setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, sizeof buffer) < 0)
		setsockopt(s, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
	str2ba(server, &remote.l2_bdaddr);
	if (!sdu || connect(s, (struct sockaddr *)&remote, sizeof remote) < 0) {
		fprintf(stderr, "coc-throughput: connect to %s: %s\n", server, strerror(errno));
		return 1;
	}
	for (int i = 0; i < count; i++) {
		fill(sdu, size, i);
		if (send(s, sdu, size, 0) != size) {
			fprintf(stderr, "coc-throughput: send SDU %d: %s\n", i, strerror(errno));
			return 1;
		}
	}
	/* Stay connected until the server has read everything and closes. */
	while (recv(s, sdu, size, 0) > 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	int count = 100, size = 10240, psm = 0x80, option, server, channel, status;
	double first = 0, last = 0;
	unsigned char *sdu, *expected;
	pid_t child;

	while ((option = getopt(argc, argv, "n:s:p:")) != -1) {
		if (option == 'n') count = atoi(optarg);
		else if (option == 's') size = atoi(optarg);
		else if (option == 'p') psm = (int)strtol(optarg, NULL, 0);
		else return 2;
	}
	if (optind != argc - 2 || count < 1 || size < 23 || size > 65535) {
		fprintf(stderr, "usage: coc-throughput [-n COUNT] [-s SIZE 23..65535] [-p PSM] SERVER_ADDR CLIENT_ADDR\n");
		return 2;
	}
	server = channel_socket(argv[optind], psm);
	set_mtu(server, BT_RCVMTU, size);
	if (listen(server, 1) < 0) {
		fprintf(stderr, "coc-throughput: listen: %s\n", strerror(errno));
		return 1;
	}
	child = fork();
	if (child == 0)
		_exit(client(argv[optind], argv[optind + 1], psm, count, size));
	channel = accept(server, NULL, NULL);
	sdu = malloc(size + 1);
	expected = malloc(size);
	if (channel < 0 || !sdu || !expected) {
		fprintf(stderr, "coc-throughput: accept: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < count; i++) {
		ssize_t n = recv(channel, sdu, size + 1, 0);
		if (n != size) {
			fprintf(stderr, "coc-throughput: SDU %d: %zd bytes instead of %d (%s)\n", i, n, size,
				n < 0 ? strerror(errno) : "wrong length");
			return 1;
		}
		fill(expected, size, i);
		if (memcmp(sdu, expected, size) != 0) {
			fprintf(stderr, "coc-throughput: SDU %d arrived changed\n", i);
			return 1;
		}
		last = seconds();
		if (i == 0)
			first = last;
	}
	close(channel);
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1;
	/* From the first SDU to the last: count - 1 SDUs' worth of transfer. */
	printf("OK: %d SDUs x %d bytes in %.3f s: %.1f KiB/s\n", count, size, last - first,
	       count > 1 && last > first ? (count - 1) * (double)size / 1024 / (last - first) : 0.0);
	return 0;
}
