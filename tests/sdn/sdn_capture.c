/*
 * sdn_capture IFACE: an AF_PACKET capture of the frames arriving on IFACE
 * (before tc ingress, so tags are seen as they travelled), until SIGTERM or
 * SIGINT; then one line per class on stdout:
 *   tcp tag PRIM COMM SRC DST frames N bytes B   TCP payload bytes under a tag
 *   tcp plain frames N bytes B                   TCP payload bytes without
 *   icmp tagged N plain M                        ICMP frames
 *   dropped N                                    frames the socket lost
 * For tests/sdn/test_sdn_bpf.sh (tcpdump is not installed).
 */
#include "mpi-binding/sdn/sdn_tag.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXCLS 64

static volatile sig_atomic_t stop;
static void on_sig(int s) { (void)s; stop = 1; }

struct cls {
	struct mrail_sdn_ctx c;
	unsigned long long frames, bytes;
};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sdn_capture IFACE\n");
		return 2;
	}
	unsigned ifindex = if_nametoindex(argv[1]);
	if (!ifindex) {
		fprintf(stderr, "sdn_capture: no interface %s\n", argv[1]);
		return 1;
	}
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("sdn_capture: AF_PACKET socket");
		return 1;
	}
	struct sockaddr_ll ll = {.sll_family = AF_PACKET,
				 .sll_protocol = htons(ETH_P_ALL),
				 .sll_ifindex = (int)ifindex};
	if (bind(fd, (struct sockaddr *)&ll, sizeof ll)) {
		perror("sdn_capture: bind");
		return 1;
	}
	/* Room for bursts: a drop would look like missing bytes. */
	int rcvbuf = 64 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	/* The interface's own address is never a tag, even when, being
	 * locally administered (veth), it has a tag's shape. */
	struct ifreq ifr;
	unsigned char own[6] = {0};
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", argv[1]);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(own, ifr.ifr_hwaddr.sa_data, 6);
	signal(SIGTERM, on_sig);
	signal(SIGINT, on_sig);
	printf("capturing %s\n", argv[1]);
	fflush(stdout);

	static struct cls cls[MAXCLS];
	int ncls = 0;
	unsigned long long plain_frames = 0, plain_bytes = 0, icmp_tag = 0,
			   icmp_plain = 0;
	static unsigned char buf[70000];
	for (;;) {
		/* After the signal: what is queued still counts. */
		int draining = stop;
		struct pollfd p = {fd, POLLIN, 0};
		if (!draining && poll(&p, 1, 100) <= 0)
			continue;
		struct sockaddr_ll from;
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(fd, buf, sizeof buf,
				     MSG_TRUNC | (draining ? MSG_DONTWAIT : 0),
				     (struct sockaddr *)&from, &fl);
		if (n < 0 && draining)
			break;
		if (n < (ssize_t)(14 + sizeof(struct iphdr)) ||
		    from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if (n > (ssize_t)sizeof buf)
			n = sizeof buf; /* GRO frames: headers are in front */
		if (buf[12] != 0x08 || buf[13] != 0x00)
			continue;
		/* Copies: the IP header sits 14 bytes in, not aligned. */
		struct iphdr iph;
		memcpy(&iph, buf + 14, sizeof iph);
		const struct iphdr *ip = &iph;
		struct mrail_sdn_ctx c;
		int tagged = memcmp(buf, own, 6) != 0 &&
			     mrail_sdn_tag_decode(buf, &c) == 0;
		if (ip->protocol == IPPROTO_ICMP) {
			if (tagged)
				icmp_tag++;
			else
				icmp_plain++;
			continue;
		}
		if (ip->protocol != IPPROTO_TCP)
			continue;
		size_t ihl = ip->ihl * 4u;
		if ((size_t)n < 14 + ihl + sizeof(struct tcphdr))
			continue;
		struct tcphdr tch;
		memcpy(&tch, buf + 14 + ihl, sizeof tch);
		const struct tcphdr *th = &tch;
		long payload = (long)ntohs(ip->tot_len) - (long)ihl -
			       th->doff * 4;
		if (payload <= 0)
			continue;
		if (!tagged) {
			plain_frames++;
			plain_bytes += (unsigned long long)payload;
			continue;
		}
		int i = 0;
		while (i < ncls && memcmp(&cls[i].c, &c, sizeof c))
			i++;
		if (i == ncls) {
			if (ncls == MAXCLS)
				continue;
			cls[ncls++].c = c;
		}
		cls[i].frames++;
		cls[i].bytes += (unsigned long long)payload;
	}
	for (int i = 0; i < ncls; i++)
		printf("tcp tag %s %u %u %u frames %llu bytes %llu\n",
		       mrail_sdn_prim_name(cls[i].c.prim), cls[i].c.comm,
		       cls[i].c.src, cls[i].c.dst, cls[i].frames, cls[i].bytes);
	printf("tcp plain frames %llu bytes %llu\n", plain_frames, plain_bytes);
	printf("icmp tagged %llu plain %llu\n", icmp_tag, icmp_plain);
	struct tpacket_stats ps;
	socklen_t pl = sizeof ps;
	if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &ps, &pl) == 0)
		printf("dropped %u\n", ps.tp_drops);
	return 0;
}
