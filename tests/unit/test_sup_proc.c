/* Unit tests: src/runtime/sup_proc.c, a background process's pipes drained
 * into capped files and its record (real pipes and files, no root). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/sup_proc.h"
#include "unit.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

static char *tmp_run(void)
{
	char *d = strdup("/tmp/sbx-test-sup-proc-XXXXXX");
	return d && mkdtemp(d) ? d : NULL;
}

static json_t *record(const char *run, const char *id)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/procs/%s/status.json", run, id);
	return json_load_file(p, 0, NULL);
}

static int64_t size_of(const char *run, const char *id, const char *name)
{
	char p[300];
	struct stat st;
	snprintf(p, sizeof(p), "%s/procs/%s/%s", run, id, name);
	return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

TEST(cap_truncates_and_keeps_reading)
{
	_cleanup_free_ char *run = tmp_run();
	_cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(run && ep >= 0);
	CHECK(sup_proc_next_id(run) == 1);
	_cleanup_json_ json_t *argv = json_pack("[s,s]", "sleep", "1");
	sup_proc *p = NULL;
	int wr[2] = {-1, -1};
	CHECK(sup_proc_new(run, ep, 1, argv, 10, 0, &p, wr, NULL) == 0);
	CHECK_STREQ(p->id, "p1");
	sup_proc_started(p, 42);
	_cleanup_json_ json_t *r0 = record(run, "p1");
	CHECK_STREQ(json_str(r0, "state"), "running");
	CHECK(json_int(r0, "pid", 0) == 42);
	/* 25 bytes to stdout, 3 to stderr: 10 kept of stdout, flagged */
	CHECK(write(wr[0], "0123456789abcdefghijklmno", 25) == 25);
	CHECK(write(wr[1], "err", 3) == 3);
	sup_proc_drain(p, p->rd[0]);
	sup_proc_drain(p, p->rd[1]);
	CHECK(size_of(run, "p1", "stdout") == 10 && size_of(run, "p1", "stderr") == 3);
	_cleanup_json_ json_t *r1 = record(run, "p1");
	CHECK(json_bool(r1, "stdout_truncated", false) && !json_bool(r1, "stderr_truncated", true));
	/* more beyond the cap is read and dropped: the pipe never fills */
	static char big[1 << 16];
	for (int i = 0; i < 64; i++) {
		CHECK(write(wr[0], big, sizeof(big)) == (ssize_t)sizeof(big));
		sup_proc_drain(p, p->rd[0]);
	}
	CHECK(size_of(run, "p1", "stdout") == 10);
	safe_close(wr[0]);
	safe_close(wr[1]);
	sup_proc_exited(p, SIGTERM, false, false, NULL); /* a wait status: killed by 15 */
	_cleanup_json_ json_t *r2 = record(run, "p1");
	CHECK_STREQ(json_str(r2, "state"), "exited");
	CHECK(json_is_null(json_object_get(r2, "exit_code")) && json_int(r2, "signal", 0) == 15);
	CHECK_STREQ(json_str(r2, "end_reason"), "exited");
	CHECK(json_int(r2, "stdout_bytes", 0) == 10 && json_int(r2, "stderr_bytes", 0) == 3);
	CHECK(p->rd[0] < 0 && p->rd[1] < 0);
	sup_proc_free(p);
	CHECK(sup_proc_next_id(run) == 2);
	(void)fs_rm_rf(run);
}

TEST(ids_go_on_and_discard_removes)
{
	_cleanup_free_ char *run = tmp_run();
	_cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(run && ep >= 0);
	_cleanup_json_ json_t *argv = json_pack("[s]", "true");
	sup_proc *p = NULL;
	int wr[2];
	CHECK(sup_proc_new(run, ep, 7, argv, 100, 0, &p, wr, NULL) == 0);
	safe_close(wr[0]);
	safe_close(wr[1]);
	CHECK(sup_proc_next_id(run) == 8); /* a restarted supervisor numbers on */
	sup_proc_discard(p);
	sup_proc_free(p);
	CHECK(sup_proc_next_id(run) == 1 && size_of(run, "p7", "stdout") == -1);
	/* a record that already exists is not overwritten */
	char d[300];
	snprintf(d, sizeof(d), "%s/procs/p3", run);
	CHECK(mkdir(d, 0700) == 0);
	CHECK(sup_proc_new(run, ep, 3, argv, 100, 0, &p, wr, NULL) < 0);
	CHECK(sup_proc_new(run, ep, 0, argv, 100, 0, &p, wr, NULL) < 0);
	(void)fs_rm_rf(run);
}

TEST(waiters_get_proc_exit)
{
	_cleanup_free_ char *run = tmp_run();
	_cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(run && ep >= 0);
	_cleanup_json_ json_t *argv = json_pack("[s]", "true");
	sup_proc *p = NULL;
	int wr[2], sp[2];
	CHECK(sup_proc_new(run, ep, 1, argv, 100, 0, &p, wr, NULL) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
	CHECK(sup_proc_add_waiter(p, sp[0]));
	CHECK(sup_proc_drop_waiter(p, sp[0]) && !sup_proc_drop_waiter(p, sp[0]));
	CHECK(sup_proc_add_waiter(p, sp[0]));
	safe_close(wr[0]);
	safe_close(wr[1]);
	sup_proc_exited(p, 0, false, false, NULL);
	_cleanup_json_ json_t *m = NULL;
	CHECK(json_recv(sp[1], &m, NULL, NULL) > 0);
	CHECK_STREQ(json_str(m, "ev"), "proc_exit");
	CHECK_STREQ(json_str(m, "process_id"), "p1");
	char c;
	CHECK(read(sp[1], &c, 1) == 0); /* the waiter's connection is closed */
	safe_close(sp[1]);
	_cleanup_json_ json_t *r = record(run, "p1");
	CHECK(json_int(r, "exit_code", -1) == 0);
	sup_proc_free(p);
	(void)fs_rm_rf(run);
}

/* Beyond SUP_PROC_KEEP records the oldest exited one goes, never a running one. */
TEST(records_are_pruned)
{
	_cleanup_free_ char *run = tmp_run();
	_cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(run && ep >= 0);
	char d[300];
	snprintf(d, sizeof(d), "%s/procs", run);
	CHECK(fs_mkdir_p(d, 0700) == 0);
	for (int i = 1; i <= SUP_PROC_KEEP; i++) {
		snprintf(d, sizeof(d), "%s/procs/p%d", run, i);
		CHECK(mkdir(d, 0700) == 0);
		snprintf(d, sizeof(d), "%s/procs/p%d/status.json", run, i);
		const char *st = i == 1 ? "{\"state\":\"running\"}" : "{\"state\":\"exited\"}";
		CHECK(fs_write_atomic_flags(d, st, strlen(st), 0600, false) == 0);
	}
	_cleanup_json_ json_t *argv = json_pack("[s]", "true");
	sup_proc *p = NULL;
	int wr[2];
	CHECK(sup_proc_new(run, ep, SUP_PROC_KEEP + 1, argv, 100, 0, &p, wr, NULL) == 0);
	safe_close(wr[0]);
	safe_close(wr[1]);
	sup_proc_free(p);
	snprintf(d, sizeof(d), "%s/procs/p1", run);
	CHECK(fs_exists(d)); /* running: kept */
	snprintf(d, sizeof(d), "%s/procs/p2", run);
	CHECK(!fs_exists(d)); /* the oldest exited one */
	snprintf(d, sizeof(d), "%s/procs/p3", run);
	CHECK(fs_exists(d));
	(void)fs_rm_rf(run);
}
