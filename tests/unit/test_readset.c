/* Unit tests: src/trace/readset.c, the read set derived from a hand-made
 * event stream (events in -> paths read out). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>

#include "trace/readset.h"
#include "trace/trace_format.h"
#include "trace/trace_sys.h"
#include "unit.h"
#include "util/err.h"

typedef struct tb {
	uint8_t *p;
	size_t len, cap;
} tb;

static void tb_add(tb *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	if (n)
		memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void tb_pad(tb *b)
{
	while (b->len % 8)
		tb_add(b, "", 1);
}

static void tb_free(tb *b)
{
	free(b->p);
	*b = (tb){0};
}

#define T0 1000000000ull
#define US(n) (T0 + (uint64_t)(n)*1000ull)

static void tb_header_arch(tb *b, uint64_t start, uint32_t arch)
{
	struct trace_file_header h = {
	    .version = TRACE_VERSION, .arch = arch, .start_ns = start, .recorder = TRACE_REC_BPF};
	memcpy(h.magic, TRACE_MAGIC, 8);
	tb_add(b, &h, sizeof(h));
}

static void tb_header(tb *b)
{
	tb_header_arch(b, T0, TRACE_ARCH_NATIVE);
}

typedef struct sysrec {
	const char *name; /* or nr */
	int32_t nr;
	uint32_t pid, tid; /* tid 0: = pid */
	uint64_t t, dur;   /* entry time; exit = t + dur (default 1 µs) */
	int64_t ret;
	bool noret;
	uint64_t a[6];
	const char *s0, *s1;
	uint32_t flags;
} sysrec;

static void tb_sys(tb *b, const sysrec *s)
{
	size_t l0 = s->s0 ? strlen(s->s0) + 1 : 0, l1 = s->s1 ? strlen(s->s1) + 1 : 0;
	struct trace_syscall r = {0};
	uint64_t dur = s->dur ? s->dur : 1000;
	r.h = (struct trace_rec){.type = TR_SYSCALL,
				 .len = TRACE_ALIGN(sizeof(r) + l0 + l1),
				 .pid = s->pid,
				 .tid = s->tid ? s->tid : s->pid,
				 .flags = s->flags | (s->noret ? 0 : TRS_HAS_RET),
				 .ts_ns = s->noret ? s->t : s->t + dur};
	r.nr = s->name ? trace_sys_nr(s->name) : s->nr;
	if (r.nr < 0)
		abort(); /* a typo in a test */
	r.str0_len = l0;
	r.str1_len = l1;
	r.ret = s->ret;
	memcpy(r.args, s->a, sizeof(r.args));
	r.enter_ns = s->t;
	tb_add(b, &r, sizeof(r));
	tb_add(b, s->s0, l0);
	tb_add(b, s->s1, l1);
	tb_pad(b);
}
#define SYS(b, ...) tb_sys(b, &(sysrec){__VA_ARGS__})
static void tb_fork(tb *b, uint64_t t, uint32_t pid, uint32_t tid, uint32_t ppid, uint32_t ptid, bool thread)
{
	struct trace_fork f = {
	    .h = {.type = TR_FORK, .len = sizeof(f), .pid = pid, .tid = tid, .flags = thread, .ts_ns = t},
	    .parent_pid = ppid,
	    .parent_tid = ptid};
	tb_add(b, &f, sizeof(f));
}

static const readset_item *find(const readset *rs, const char *path, uint8_t kind)
{
	for (size_t i = 0; i < rs->n; i++)
		if (strcmp(rs->v[i].path, path) == 0 && rs->v[i].kind == kind)
			return &rs->v[i];
	return NULL;
}

static bool written(const readset *rs, const char *path)
{
	for (size_t i = 0; i < rs->n_written; i++)
		if (strcmp(rs->written[i], path) == 0)
			return true;
	return false;
}

#define AT_CWD ((uint64_t)(int64_t)AT_FDCWD)

/* A command (pid 10, started by the engine, pid 9) in /work. */
static void stream(tb *b)
{
	tb_header(b);
	tb_fork(b, US(1), 10, 10, 9, 9, false);
	SYS(b, .name = "execve", .pid = 10, .t = US(2), .ret = 0, .s0 = "/usr/bin/python3");
	/* 2: read-only open of a volume file, relative to the cwd */
	SYS(b, .name = "openat", .pid = 10, .t = US(3), .ret = 3, .a = {AT_CWD, 0, O_RDONLY},
	    .s0 = "data.csv");
	/* 3: a directory, then a dirfd-relative open under it */
	SYS(b, .name = "openat", .pid = 10, .t = US(4), .ret = 4, .a = {AT_CWD, 0, O_RDONLY | O_DIRECTORY},
	    .s0 = "/work/conf");
	SYS(b, .name = "openat", .pid = 10, .t = US(5), .ret = 5, .a = {4, 0, O_RDONLY}, .s0 = "./a.ini");
	/* 5: a listing of the directory */
	SYS(b, .name = "getdents64", .pid = 10, .t = US(6), .ret = 48, .a = {4});
	/* 6: a write-only open is not a read */
	SYS(b, .name = "openat", .pid = 10, .t = US(7), .ret = 6,
	    .a = {AT_CWD, 0, O_WRONLY | O_CREAT | O_TRUNC}, .s0 = "/work/out.txt");
	/* 7: and reading it back afterwards is reading the run's own output */
	SYS(b, .name = "openat", .pid = 10, .t = US(8), .ret = 7, .a = {AT_CWD, 0, O_RDONLY},
	    .s0 = "/work/out.txt");
	/* 8: a failed open: the file's absence is an input */
	SYS(b, .name = "openat", .pid = 10, .t = US(9), .ret = -ENOENT, .a = {AT_CWD, 0, O_RDONLY},
	    .s0 = "/work/missing.json");
	/* 9: EACCES: nothing read, no input */
	SYS(b, .name = "openat", .pid = 10, .t = US(10), .ret = -EACCES, .a = {AT_CWD, 0, O_RDONLY},
	    .s0 = "/etc/shadow");
	/* 10: ENOENT, then created by the run: an output, not an input */
	SYS(b, .name = "openat", .pid = 10, .t = US(11), .ret = -ENOENT, .a = {AT_CWD, 0, O_RDONLY},
	    .s0 = "/work/cache.db");
	SYS(b, .name = "openat", .pid = 10, .t = US(12), .ret = 8,
	    .a = {AT_CWD, 0, O_WRONLY | O_CREAT | O_EXCL}, .s0 = "/work/cache.db");
	/* 12: O_PATH, /proc: not inputs */
	SYS(b, .name = "openat", .pid = 10, .t = US(13), .ret = 9, .a = {AT_CWD, 0, O_PATH},
	    .s0 = "/etc/hosts");
	SYS(b, .name = "openat", .pid = 10, .t = US(14), .ret = 10, .a = {AT_CWD, 0, O_RDONLY},
	    .s0 = "/proc/self/maps");
	/* 14: a child changes directory and execs a relative path */
	tb_fork(b, US(15), 11, 11, 10, 10, false);
	SYS(b, .name = "chdir", .pid = 11, .t = US(16), .ret = 0, .s0 = "/opt/tool");
	SYS(b, .name = "execve", .pid = 11, .t = US(17), .ret = -ENOENT, .s0 = "bin/nope");
	SYS(b, .name = "execve", .pid = 11, .t = US(18), .ret = 0, .s0 = "bin/run");
	/* 18: the parent's cwd is still /work; a second read of data.csv adds nothing */
	SYS(b, .name = "open", .pid = 10, .t = US(19), .ret = 11, .a = {0, O_RDONLY}, .s0 = "data.csv");
	/* 19: a truncated path is left out */
	SYS(b, .name = "openat", .pid = 10, .t = US(20), .ret = 12, .a = {AT_CWD, 0, O_RDONLY},
	    .s0 = "/work/long", .flags = TRS_STR0_TRUNC);
}

TEST(readset_derive_stream)
{
	tb b = {0};
	stream(&b);
	readset rs = {0};
	sbx_err *e = NULL;
	int r = readset_derive(b.p, b.len, "/work", &rs, &e);
	if (e)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	sbx_err_free(e);
	tb_free(&b);
	CHECK(r == 0);
	const readset_item *it;
	CHECK((it = find(&rs, "/usr/bin/python3", READSET_FILE)) && !it->absent && it->index == 1 &&
	      it->pid == 10);
	CHECK((it = find(&rs, "/work/data.csv", READSET_FILE)) && !it->absent && it->index == 2);
	CHECK((it = find(&rs, "/work/conf", READSET_FILE)) && it->index == 3);
	CHECK((it = find(&rs, "/work/conf/a.ini", READSET_FILE)) && it->index == 4);
	CHECK((it = find(&rs, "/work/conf", READSET_DIR)) && it->index == 5);
	CHECK(!find(&rs, "/work/out.txt", READSET_FILE));
	CHECK(written(&rs, "/work/out.txt") && written(&rs, "/work/cache.db"));
	CHECK((it = find(&rs, "/work/missing.json", READSET_FILE)) && it->absent && it->index == 8);
	CHECK(!find(&rs, "/etc/shadow", READSET_FILE));
	CHECK(!find(&rs, "/work/cache.db", READSET_FILE));
	CHECK(!find(&rs, "/etc/hosts", READSET_FILE));
	CHECK(!find(&rs, "/proc/self/maps", READSET_FILE));
	CHECK((it = find(&rs, "/opt/tool/bin/nope", READSET_FILE)) && it->absent && it->pid == 11);
	CHECK((it = find(&rs, "/opt/tool/bin/run", READSET_FILE)) && !it->absent && it->pid == 11);
	CHECK(!find(&rs, "/opt/tool/data.csv", READSET_FILE));
	CHECK(!find(&rs, "/work/long", READSET_FILE));
	CHECK(rs.n == 8);
	readset_free(&rs);
}

TEST(readset_unknown_cwd_drops_relative)
{
	tb b = {0};
	tb_header(&b);
	tb_fork(&b, US(1), 10, 10, 9, 9, false);
	SYS(&b, .name = "openat", .pid = 10, .t = US(3), .ret = 3, .a = {AT_CWD, 0, O_RDONLY},
	    .s0 = "rel.txt");
	SYS(&b, .name = "openat", .pid = 10, .t = US(4), .ret = 4, .a = {AT_CWD, 0, O_RDWR}, .s0 = "//a/./b");
	readset rs = {0};
	CHECK(readset_derive(b.p, b.len, NULL, &rs, NULL) == 0);
	tb_free(&b);
	CHECK(rs.n == 1);
	CHECK_STREQ(rs.v[0].path, "/a/b");
	CHECK(rs.n_written == 1); /* O_RDWR: read and possibly written */
	readset_free(&rs);
}

TEST(readset_malformed_stream)
{
	tb b = {0};
	tb_header(&b);
	tb_add(&b, "\x01\x00\x05\x00", 4); /* a record with a bad length */
	tb_pad(&b);
	readset rs = {0};
	sbx_err *e = NULL;
	CHECK(readset_derive(b.p, b.len, "/", &rs, &e) < 0);
	CHECK(e != NULL);
	sbx_err_free(e);
	tb_free(&b);
}
