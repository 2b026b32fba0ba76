/*
 * The controller client against a real TCP peer: a thread of this test
 * listening on 127.0.0.1 that plays one scripted controller per case.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctrl_client.h"
#include "../check.h"

enum script {
	S_ACK_ALL,   /* ACK every request, record the lines */
	S_NACK,      /* NACK with a reason */
	S_SILENT,    /* read, never answer */
	S_GARBAGE,   /* answer with a line of another protocol */
	S_HUGE,      /* answer with a line longer than the client accepts */
	S_CLOSE,     /* close after reading one line */
	S_FUTURE,    /* ACK a seq never sent */
};

struct peer {
	int lfd;
	unsigned short port;
	enum script script;
	char lines[8][512];
	int nlines;
	pthread_t th;
};

static ssize_t read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t r = read(fd, buf + n, 1);
		if (r <= 0)
			return -1;
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return (ssize_t)n;
		}
		n++;
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

static void say(int fd, const char *s)
{
	CHECK(write(fd, s, strlen(s)) == (ssize_t)strlen(s));
}

static void *serve(void *arg)
{
	struct peer *p = arg;
	int fd = accept(p->lfd, NULL, NULL);
	char line[512], reply[600];

	CHECK(fd >= 0);
	while (read_line(fd, line, sizeof(line)) >= 0) {
		unsigned long long seq = 0;
		char *s = strstr(line, " seq=");

		if (p->nlines < 8)
			snprintf(p->lines[p->nlines++], 512, "%s", line);
		if (s)
			seq = strtoull(s + 5, NULL, 10);
		switch (p->script) {
		case S_ACK_ALL:
			snprintf(reply, sizeof(reply), "MRSDN/1 ACK seq=%llu\n",
				 seq);
			say(fd, reply);
			break;
		case S_NACK:
			snprintf(reply, sizeof(reply), "MRSDN/1 NACK seq=%llu "
				 "reason=unknown rank 7\n", seq);
			say(fd, reply);
			break;
		case S_SILENT:
			break;
		case S_GARBAGE:
			say(fd, "HTTP/1.1 400 Bad Request\n");
			break;
		case S_HUGE: {
			static char big[4096];
			memset(big, 'A', sizeof(big) - 1);
			say(fd, "MRSDN/1 ACK seq=");
			say(fd, big);
			break;
		}
		case S_CLOSE:
			close(fd);
			return NULL;
		case S_FUTURE:
			say(fd, "MRSDN/1 ACK seq=99\n");
			break;
		}
	}
	close(fd);
	return NULL;
}

static void peer_start(struct peer *p, enum script s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);

	memset(p, 0, sizeof(*p));
	p->script = s;
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(p->lfd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(p->lfd, 1) == 0);
	CHECK(getsockname(p->lfd, (struct sockaddr *)&sa, &sl) == 0);
	p->port = ntohs(sa.sin_port);
	CHECK(pthread_create(&p->th, NULL, serve, p) == 0);
}

static struct mrail_sdn_ctrl *connect_to(struct peer *p, int timeout_ms)
{
	char addr[64], err[256];
	struct mrail_sdn_ctrl *c;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", p->port);
	CHECK_EQ(mrail_sdn_ctrl_connect(addr, timeout_ms, &c, err,
					 sizeof(err)), 0);
	return c;
}

static void peer_end(struct peer *p, struct mrail_sdn_ctrl *c)
{
	mrail_sdn_ctrl_close(c);
	pthread_join(p->th, NULL);
	close(p->lfd);
}

static const struct mrail_sdn_pair bmtree4[] = { { 0, 2 }, { 0, 1 },
						  { 2, 3 } };

static void test_ack(void)
{
	struct peer p;
	struct mrail_sdn_ctrl *c;
	char want[256];

	peer_start(&p, S_ACK_ALL);
	c = connect_to(&p, 2000);
	CHECK_EQ(mrail_sdn_ctrl_hello(c, "job7", 1, 4, "h1",
				      "eth0/10.0.0.2/02:00:00:00:00:02"), 0);
	/* Without waiting, then a WAIT: the first ACK is skipped over. */
	CHECK_EQ(mrail_sdn_ctrl_pattern(c, "job7", 0, "bcast", 0, bmtree4, 3,
					0), 0);
	uint64_t key = mrail_sdn_ctrl_pattern_key(0, "bcast", bmtree4, 3);
	CHECK_EQ(mrail_sdn_ctrl_wait(c, "job7", key), 0);
	CHECK_EQ(mrail_sdn_ctrl_pattern(c, "job7", 0, "bcast", 0, bmtree4, 3,
					1), 0);
	peer_end(&p, c);

	CHECK_EQ(p.nlines, 4);
	CHECK(strcmp(p.lines[0], "MRSDN/1 HELLO seq=1 job=job7 rank=1 size=4 "
		     "host=h1 rails=eth0/10.0.0.2/02:00:00:00:00:02") == 0);
	/* The key is FNV-1a 64 of the text after it (docs/sdn-controller.md):
	 * this value was computed independently (python, the controller). */
	CHECK(key == 0x21b1ddcb17947673ull);
	snprintf(want, sizeof(want), "MRSDN/1 PATTERN seq=2 job=job7 root=0 "
		 "key=%016" PRIx64 " comm=0 prim=bcast pairs=0-2,0-1,2-3", key);
	CHECK(strcmp(p.lines[1], want) == 0);
	snprintf(want, sizeof(want), "MRSDN/1 WAIT seq=3 job=job7 key=%016"
		 PRIx64, key);
	CHECK(strcmp(p.lines[2], want) == 0);
	CHECK(strncmp(p.lines[3], "MRSDN/1 PATTERN seq=4 ", 22) == 0);
}

static void test_error(enum script s, int want_rc, const char *want_msg)
{
	struct peer p;
	struct mrail_sdn_ctrl *c;
	int rc;

	peer_start(&p, s);
	c = connect_to(&p, 300);
	rc = mrail_sdn_ctrl_hello(c, "j", 0, 2, "h", "eth0/1.2.3.4/aa:bb:cc:dd:ee:ff");
	if (rc != want_rc || !strstr(mrail_sdn_ctrl_error(c), want_msg)) {
		fprintf(stderr, "script %d: rc %d (want %d), error '%s' (want "
			"'%s')\n", s, rc, want_rc, mrail_sdn_ctrl_error(c),
			want_msg);
		exit(1);
	}
	if (s == S_SILENT || s == S_HUGE) /* the peer blocks in read */
		shutdown(p.lfd, SHUT_RDWR);
	peer_end(&p, c);
}

static void test_bad_input(void)
{
	struct mrail_sdn_ctrl *c;
	char err[256];
	struct peer p;

	CHECK_EQ(mrail_sdn_ctrl_connect("nocolon", 100, &c, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "not host:port"));
	CHECK_EQ(mrail_sdn_ctrl_connect("127.0.0.1:http", 100, &c, err,
					 sizeof(err)), -EINVAL);
	CHECK_EQ(mrail_sdn_ctrl_connect("[::1:5", 100, &c, err, sizeof(err)),
		 -EINVAL);
	/* A port nobody listens on (ours, closed). */
	peer_start(&p, S_ACK_ALL);
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", p.port);
	c = connect_to(&p, 1000);
	CHECK_EQ(mrail_sdn_ctrl_hello(c, "has space", 0, 1, "h", "r"), -EINVAL);
	CHECK(strstr(mrail_sdn_ctrl_error(c), "space"));
	CHECK_EQ(mrail_sdn_ctrl_hello(c, "j", 3, 2, "h", "r"), -EINVAL);
	CHECK_EQ(mrail_sdn_ctrl_pattern(c, "j", 0, "bcast", 0, bmtree4, 0, 1),
		 -EINVAL);
	peer_end(&p, c);
	CHECK_EQ(mrail_sdn_ctrl_connect(addr, 1000, &c, err, sizeof(err)),
		 -ECONNREFUSED);
	CHECK(strstr(err, "connect"));
}

static void test_local_rails(void)
{
	char buf[1024], small[4];

	CHECK_EQ(mrail_sdn_ctrl_local_rails(buf, sizeof(buf)), 0);
	/* lo is never listed; other interfaces depend on the machine. */
	CHECK(strncmp(buf, "lo/", 3) != 0 && !strstr(buf, ",lo/"));
	if (buf[0])
		CHECK_EQ(mrail_sdn_ctrl_local_rails(small, sizeof(small)),
			 -ENOSPC);
}

int main(void)
{
	test_ack();
	test_error(S_NACK, -EREMOTEIO, "unknown rank 7");
	test_error(S_SILENT, -ETIMEDOUT, "did not answer request 1");
	test_error(S_GARBAGE, -EPROTO, "not protocol version 1");
	test_error(S_HUGE, -EPROTO, "longer than");
	test_error(S_CLOSE, -ECONNRESET, "closed the connection");
	test_error(S_FUTURE, -EPROTO, "never sent");
	test_bad_input();
	test_local_rails();
	printf("test_ctrl_client: ok\n");
	return 0;
}
