/* SPDX-License-Identifier: MIT */
/*
 * The XDP link's refusals, each with its errno and the sentence a user
 * sees through xr_link_open: bad arguments, no such interface, a link of
 * another kind asked for XDP details, and (as root) the same open after
 * dropping to an unprivileged user; and (as root, on a veth of a network
 * namespace of its own) a link opened again the moment the last one
 * closed. Traffic is tests/net/xdp_link.sh's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "xroce/link.h"

static void expect_open(const char *ifname, const char *addr, int want_errno, const char *want_msg)
{
	struct xr_link_spec s = { .kind = "xdp", .addr = addr, .ifname = ifname };
	char msg[256];

	errno = 0;
	assert_null(xr_link_open(&s, msg, sizeof(msg)));
	assert_int_equal(errno, want_errno);
	if (!strstr(msg, want_msg))
		fail_msg("message '%s' lacks '%s'", msg, want_msg);
}

/* 1. Arguments the link refuses before touching the system. */
static void bad_arguments(void **state)
{
	struct xr_link_xdp_opts bad_mode = { .mode = (enum xr_xdp_mode)7 };
	char longname[64];

	(void)state;
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	errno = 0;
	assert_null(xr_link_xdp(NULL, "10.0.0.1", NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(xr_link_xdp("lo", NULL, NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(xr_link_xdp(longname, "10.0.0.1", NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(xr_link_xdp("lo", "not-an-address", NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(xr_link_xdp("lo", "10.0.0.1", &bad_mode));
	assert_int_equal(errno, EINVAL);
	expect_open(NULL, "10.0.0.1", EINVAL, "needs an interface (--ifname)");
	expect_open("lo", "999.1.2.3", EINVAL, "bad link settings");
}

/* 2. No such interface. */
static void no_interface(void **state)
{
	(void)state;
	errno = 0;
	assert_null(xr_link_xdp("nosuchif0", "10.0.0.1", NULL));
	assert_int_equal(errno, ENODEV);
	expect_open("nosuchif0", "10.0.0.1", ENODEV, "no interface named 'nosuchif0'");
}

/* 3. XDP details of a link that is not one. */
static void info_of_other_link(void **state)
{
	struct xr_link *a, *b;
	struct xr_link_xdp_info i;

	(void)state;
	assert_int_equal(xr_link_xdp_info(NULL, &i), -ENOTSUP);
	assert_int_equal(xr_link_mem_pair(&a, &b, 0), 0);
	assert_int_equal(xr_link_xdp_info(a, &i), -ENOTSUP);
	xr_link_close(a);
	xr_link_close(b);
}

/* 4. Without privileges (root drops to nobody in a child, which loses
 * every capability): EPERM and a sentence naming what is missing. */
static void no_privileges(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	if (geteuid() != 0)
		skip();   /* already unprivileged: the open must say so */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct xr_link_spec s = { .kind = "xdp", .addr = "10.0.0.1", .ifname = "lo" };
		char msg[256];
		if (setgid(65534) || setuid(65534))
			_exit(2);
		errno = 0;
		if (xr_link_open(&s, msg, sizeof(msg)) || errno != EPERM || !strstr(msg, "needs CAP_NET_ADMIN"))
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* 5. Closed and opened again at once, as a program run twice in a row
 * does: the kernel lets go of a closed AF_XDP socket's queue a little
 * later (deferred work), and a bind meanwhile is told EBUSY. The link
 * waits for the queue rather than refusing. */
static void reopened_at_once(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	if (geteuid() != 0)
		skip();   /* namespaces and XDP need root */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The namespace, and the veth in it, go with this child. */
		if (unshare(CLONE_NEWNET) ||
		    system("ip link add xa type veth peer name xb && ip link set xa up && ip link set xb up"))
			_exit(2);
		for (int i = 0; i < 20; i++) {
			struct xr_link_xdp_opts o = { .quiet = true };
			struct xr_link *l = xr_link_xdp("xa", "10.0.0.1", &o);
			if (!l) {
				fprintf(stderr, "open %d: %s\n", i, strerror(errno));
				_exit(1);
			}
			xr_link_close(l);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_arguments),
		cmocka_unit_test(no_interface),
		cmocka_unit_test(info_of_other_link),
		cmocka_unit_test(no_privileges),
		cmocka_unit_test(reopened_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
