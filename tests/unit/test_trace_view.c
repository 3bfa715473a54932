/* Unit tests: src/trace/trace_read.c (validation, merge), trace_decode.c, trace_model.c, trace_render.c
 * (text, JSON, descriptor tracking, filters), trace_stats.c, trace_chrome.c
 * and trace_norm.c, over streams built by hand here. With
 * SBX_WRITE_CORPUS=1 the streams (valid and malformed) are also written as
 * seeds to tests/fuzz/corpus/trace. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "trace/trace_format.h"
#include "trace/trace_read.h"
#include "trace/trace_sys.h"
#include "trace/trace_view.h"
#include "unit.h"
#include "util/err.h"
#include "util/fs.h"

/* ---- a builder for hand-made streams --------------------------------------------- */

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

static void tb_exec(tb *b, uint64_t t, uint32_t pid, const char *filename, const char *const *argv,
		    bool trunc)
{
	size_t fl = strlen(filename) + 1, al = 0, argc = 0;
	for (const char *const *a = argv; *a; a++, argc++)
		al += strlen(*a) + 1;
	struct trace_exec x = {.h = {.type = TR_EXEC,
				     .len = TRACE_ALIGN(sizeof(x) + fl + al),
				     .pid = pid,
				     .tid = pid,
				     .flags = trunc,
				     .ts_ns = t},
			       .filename_len = fl,
			       .argv_len = al,
			       .argc = argc};
	tb_add(b, &x, sizeof(x));
	tb_add(b, filename, fl);
	for (const char *const *a = argv; *a; a++)
		tb_add(b, *a, strlen(*a) + 1);
	tb_pad(b);
}
#define EXEC(b, t, pid, file, ...) tb_exec(b, t, pid, file, (const char *const[]){__VA_ARGS__, NULL}, false)

static void tb_exit(tb *b, uint64_t t, uint32_t pid, uint32_t tid, int32_t status, bool process)
{
	struct trace_exit x = {
	    .h = {.type = TR_EXIT, .len = sizeof(x), .pid = pid, .tid = tid, .flags = process, .ts_ns = t},
	    .status = status};
	tb_add(b, &x, sizeof(x));
}

static void tb_lost(tb *b, uint64_t t, uint64_t count)
{
	struct trace_lost l = {.h = {.type = TR_LOST, .len = sizeof(l), .ts_ns = t}, .count = count};
	tb_add(b, &l, sizeof(l));
}

static void tb_determ(tb *b, uint64_t t, uint32_t pid, uint32_t tid, uint32_t kind, int32_t nr)
{
	uint64_t value = 42;
	struct trace_determ d = {
	    .h = {.type = TR_DETERM, .len = sizeof(d) + 8, .pid = pid, .tid = tid, .ts_ns = t},
	    .kind = kind,
	    .value_len = 8,
	    .nr = nr};
	tb_add(b, &d, sizeof(d));
	tb_add(b, &value, 8);
}

/* A record of a type this reader does not know. */
static void tb_unknown(tb *b, uint64_t t)
{
	struct trace_rec h = {.type = 99, .len = sizeof(h) + 16, .pid = 1, .tid = 1, .ts_ns = t};
	tb_add(b, &h, sizeof(h));
	tb_add(b, "0123456789abcdef", 16);
}

static void write_seed(const char *name, const tb *b)
{
	const char *w = getenv("SBX_WRITE_CORPUS");
	if (!w || !*w)
		return;
	char p[256];
	snprintf(p, sizeof(p), "tests/fuzz/corpus/trace/%s", name);
	fs_write_atomic(p, b->p, b->len, 0644);
}

/* ---- running the views -------------------------------------------------------------- */

static char last_err[1024];

static char *show(const tb *b, const trace_filter *f)
{
	char *p = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&p, &n);
	sbx_err *e = NULL;
	int r = trace_show(b->p, b->len, f, m, &e);
	fclose(m);
	snprintf(last_err, sizeof(last_err), "%s", r < 0 ? sbx_err_message(e) : "");
	sbx_err_free(e);
	if (r < 0) {
		free(p);
		return NULL;
	}
	return p;
}

static const char *check_err(const tb *b)
{
	sbx_err *e = NULL;
	int r = trace_check(b->p, b->len, NULL, &e);
	snprintf(last_err, sizeof(last_err), "%s", r < 0 ? sbx_err_message(e) : "");
	sbx_err_free(e);
	return r < 0 ? last_err : NULL;
}

/* The stream behind the exact-output test; also a fuzz seed. */
static void demo_stream(tb *b)
{
	tb_header(b);
	EXEC(b, US(5), 2, "/bin/cat", "cat", "/etc/passwd");
	SYS(b, "openat", .pid = 2, .t = US(10), .ret = 3,
	    .a = {(uint64_t)AT_FDCWD, 0x1000, O_RDONLY | O_CLOEXEC}, .s0 = "/etc/passwd");
	SYS(b, "read", .pid = 2, .t = US(20), .ret = 1234, .a = {3, 0x7ffd0000, 4096});
	SYS(b, "write", .pid = 2, .t = US(22), .ret = 1234, .a = {1, 0x5000, 1234});
	SYS(b, "openat", .pid = 2, .t = US(25), .ret = -ENOENT, .a = {(uint64_t)AT_FDCWD, 0x1000, O_RDONLY},
	    .s0 = "/nope");
	SYS(b, "mmap", .pid = 2, .t = US(26), .ret = 0x7f0000000000,
	    .a = {0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0});
	SYS(b, "close", .pid = 2, .t = US(30), .ret = 0, .a = {3});
	tb_fork(b, US(34), 3, 3, 2, 2, false); /* inside the clone: before its exit record */
	SYS(b, "clone", .pid = 2, .t = US(33), .dur = 3000, .ret = 3,
	    .a = {CLONE_CHILD_CLEARTID | CLONE_CHILD_SETTID | SIGCHLD, 0, 0, 0x7f00000a10, 0});
	EXEC(b, US(50), 3, "/bin/true", "true");
	tb_determ(b, US(60), 3, 3, 1, trace_sys_nr("clock_gettime"));
	SYS(b, "clock_gettime", .pid = 3, .t = US(61), .ret = 0, .a = {1, 0x7ffc00}, .flags = TRS_EMULATED);
	tb_determ(b, US(62), 3, 3, 3, -1);
	SYS(b, "exit_group", .pid = 3, .t = US(70), .noret = true);
	tb_exit(b, US(80), 3, 3, 0, true);
	tb_lost(b, US(90), 12);
	tb_fork(b, US(95), 2, 4, 2, 2, true);
	SYS(b, "getpid", .pid = 2, .tid = 4, .t = US(96), .ret = 2);
	SYS(b, "openat", .pid = 2, .t = US(97), .ret = -ENAMETOOLONG,
	    .a = {(uint64_t)AT_FDCWD, 0x1000, O_RDONLY}, .s0 = "/aaaa", .flags = TRS_STR0_TRUNC);
	SYS(b, "openat", .pid = 2, .t = US(98), .ret = -EFAULT, .a = {(uint64_t)AT_FDCWD, 0xdead, O_RDONLY},
	    .flags = TRS_STR0_FAULT);
	SYS(b, "openat", .pid = 2, .t = US(99), .ret = -ENOENT, .a = {(uint64_t)AT_FDCWD, 0x1000, O_RDONLY},
	    .s0 = "a\nb\"c");
	SYS(b, .nr = 999, .pid = 2, .t = US(100), .ret = 0, .a = {1});
	tb_exit(b, US(101), 2, 4, 0, false);
	tb_exit(b, US(110), 2, 2, 0x8b, true); /* SIGSEGV, core dumped */
}

static const char demo_text[] =
    "  0.000005 [2] +++ exec /bin/cat [\"cat\", \"/etc/passwd\"] +++\n"
    "  0.000010 [2] openat(AT_FDCWD, \"/etc/passwd\", O_RDONLY|O_CLOEXEC) = 3 </etc/passwd>\n"
    "  0.000020 [2] read(3</etc/passwd>, 0x7ffd0000, 4096) = 1234\n"
    "  0.000022 [2] write(1, 0x5000, 1234) = 1234\n"
    "  0.000025 [2] openat(AT_FDCWD, \"/nope\", O_RDONLY) = -1 ENOENT (No such file or directory)\n"
    "  0.000026 [2] mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = "
    "0x7f0000000000\n"
    "  0.000030 [2] close(3</etc/passwd>) = 0\n"
    "  0.000034 [2] +++ fork child 3 +++\n"
    "  0.000033 [2] clone(CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, NULL, NULL, 0x7f00000a10, NULL) = "
    "3\n"
    "  0.000050 [3] +++ exec /bin/true [\"true\"] +++\n"
    "  0.000060 [3] ~~~ clock_gettime answered by determinism engine ~~~\n"
    "  0.000061 [3] clock_gettime(1, 0x7ffc00) = 0 (emulated)\n"
    "  0.000062 [3] ~~~ rdtsc answered by determinism engine ~~~\n"
    "  0.000070 [3] exit_group(0) = ?\n"
    "  0.000080 [3] +++ exited 0 +++\n"
    "  0.000090 !!! 12 events lost !!!\n"
    "  0.000095 [2] +++ new thread 4 +++\n"
    "  0.000096 [2:4] getpid() = 2\n"
    "  0.000097 [2] openat(AT_FDCWD, \"/aaaa\"..., O_RDONLY) = -1 ENAMETOOLONG (File name too long)\n"
    "  0.000098 [2] openat(AT_FDCWD, 0xdead, O_RDONLY) = -1 EFAULT (Bad address)\n"
    "  0.000099 [2] openat(AT_FDCWD, \"a\\nb\\\"c\", O_RDONLY) = -1 ENOENT (No such file or directory)\n"
    "  0.000100 [2] syscall_999(0x1, 0, 0, 0, 0, 0) = 0\n"
    "  0.000101 [2:4] +++ thread exited 0 +++\n"
    "  0.000110 [2] +++ killed by SIGSEGV (core dumped) +++\n";

static int count_lines(const char *s)
{
	int n = 0;
	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* ---- reader ------------------------------------------------------------------------ */

TEST(read_valid_and_unknown_skipped)
{
	tb b = {0};
	demo_stream(&b);
	tb_unknown(&b, US(200));
	SYS(&b, "getpid", .pid = 2, .t = US(201), .ret = 2);
	uint64_t n = 0;
	CHECK(trace_check(b.p, b.len, &n, NULL) == 0);
	CHECK(n == 25);
	trace_reader r;
	CHECK(trace_read_init(&r, b.p, b.len, NULL) == 0);
	trace_ev ev;
	int k, seen = 0;
	while ((k = trace_read_next(&r, &ev, NULL)) > 0)
		CHECK(ev.seq == (uint64_t)seen++);
	CHECK(k == 0 && r.n_unknown == 1);
	CHECK(ev.type == TR_SYSCALL && ev.sys.nr == trace_sys_nr("getpid")); /* read past the unknown one */
	/* an unaligned copy reads the same (fixed parts are copied out) */
	uint8_t *odd = malloc(b.len + 1);
	memcpy(odd + 1, b.p, b.len);
	CHECK(trace_check(odd + 1, b.len, &n, NULL) == 0 && n == 25);
	free(odd);
	tb_free(&b);
}

TEST(read_rejects_malformed)
{
	struct {
		const char *name, *want;
		tb b;
	} c[16] = {0};
	int n = 0;
	/* header shapes */
	c[n].name = "short-header", c[n].want = "offset 0: 10 bytes, shorter than the 32-byte header";
	tb_add(&c[n++].b, TRACE_MAGIC "ab", 10);
	c[n].name = "bad-magic", c[n].want = "offset 0: bad magic";
	tb_header(&c[n].b);
	c[n++].b.p[0] = 'X';
	c[n].name = "bad-version", c[n].want = "offset 8: version 2";
	tb_header(&c[n].b);
	c[n++].b.p[8] = 2;
	/* record shapes */
	c[n].name = "short-record", c[n].want = "offset 32: 10 trailing bytes";
	tb_header(&c[n].b);
	tb_add(&c[n++].b, "0123456789", 10);
	struct trace_rec h = {.type = TR_LOST, .len = 16};
	c[n].name = "len-below-header",
	c[n].want = "offset 32: record length 16 is shorter than a record header";
	tb_header(&c[n].b);
	tb_add(&c[n].b, &h, sizeof(h));
	tb_add(&c[n++].b, "01234567", 8);
	c[n].name = "len-not-multiple", c[n].want = "offset 32: record length 36 is not a multiple of 8";
	h = (struct trace_rec){.type = TR_LOST, .len = 36};
	tb_header(&c[n].b);
	tb_add(&c[n].b, &h, sizeof(h));
	tb_add(&c[n++].b, "0123456789abcdef", 16);
	c[n].name = "len-past-end",
	c[n].want = "offset 32: record length 200 runs past the end (40 bytes left)";
	h = (struct trace_rec){.type = TR_LOST, .len = 200};
	tb_header(&c[n].b);
	tb_add(&c[n].b, &h, sizeof(h));
	tb_add(&c[n++].b, "0123456789abcdef", 16);
	c[n].name = "syscall-too-short",
	c[n].want = "record of type 1 has length 32, shorter than its 96-byte minimum";
	h = (struct trace_rec){.type = TR_SYSCALL, .len = 32};
	tb_header(&c[n].b);
	tb_add(&c[n].b, &h, sizeof(h));
	tb_add(&c[n++].b, "01234567", 8);

	struct trace_syscall s = {.h = {.type = TR_SYSCALL, .len = sizeof(s) + 8}, .nr = 2};
	c[n].name = "string-overflow", c[n].want = "offset 32: syscall string lengths overflow the record";
	s.str0_len = 300;
	tb_header(&c[n].b);
	tb_add(&c[n].b, &s, sizeof(s));
	tb_add(&c[n++].b, "/etc/pa\0", 8);
	c[n].name = "string-no-nul", c[n].want = "offset 32: syscall string not NUL-terminated";
	s.str0_len = 4;
	tb_header(&c[n].b);
	tb_add(&c[n].b, &s, sizeof(s));
	tb_add(&c[n++].b, "abcdefgh", 8);
	c[n].name = "string1-no-nul", c[n].want = "syscall string not NUL-terminated";
	s.str0_len = 2, s.str1_len = 6;
	tb_header(&c[n].b);
	tb_add(&c[n].b, &s, sizeof(s));
	tb_add(&c[n++].b, "a\0bcdefg", 8);

	struct trace_exec x = {
	    .h = {.type = TR_EXEC, .len = sizeof(x) + 8}, .filename_len = 3, .argv_len = 5};
	c[n].name = "exec-argv-no-nul", c[n].want = "exec argv not NUL-terminated";
	tb_header(&c[n].b);
	tb_add(&c[n].b, &x, sizeof(x));
	tb_add(&c[n++].b, "/x\0a\0bcd", 8);
	c[n].name = "exec-overflow", c[n].want = "exec string lengths overflow the record";
	x.argv_len = 6;
	tb_header(&c[n].b);
	tb_add(&c[n].b, &x, sizeof(x));
	tb_add(&c[n++].b, "/x\0a\0b\0\0", 8);
	struct trace_determ d = {.h = {.type = TR_DETERM, .len = sizeof(d) + 8}, .kind = 1, .value_len = 9};
	c[n].name = "determ-overflow", c[n].want = "determ value length overflows the record";
	tb_header(&c[n].b);
	tb_add(&c[n].b, &d, sizeof(d));
	tb_add(&c[n++].b, "01234567", 8);
	/* a bad record after good ones: the offset is the bad one's */
	c[n].name = "bad-after-good", c[n].want = "offset 64: record length 28 is not a multiple of 8";
	tb_header(&c[n].b);
	tb_lost(&c[n].b, US(1), 3);
	h = (struct trace_rec){.type = TR_LOST, .len = 28};
	tb_add(&c[n].b, &h, sizeof(h));
	tb_add(&c[n++].b, "01234567", 8);

	for (int i = 0; i < n; i++) {
		const char *m = check_err(&c[i].b);
		if (!m || !strstr(m, c[i].want) || !strstr(m, "malformed trace at offset")) {
			fprintf(stderr, "  %s: got '%s', want '%s'\n", c[i].name, m ? m : "(accepted)",
				c[i].want);
			CHECK(0);
		}
		/* every consumer refuses it too, without crashing */
		char *p = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&p, &len);
		json_t *j = NULL;
		trace_norm *nm = NULL;
		CHECK(trace_show(c[i].b.p, c[i].b.len, NULL, mf, NULL) < 0);
		CHECK(trace_show_json(c[i].b.p, c[i].b.len, NULL, &j, NULL) < 0);
		CHECK(trace_stats(c[i].b.p, c[i].b.len, &j, NULL) < 0);
		CHECK(trace_chrome(c[i].b.p, c[i].b.len, NULL, mf, NULL) < 0);
		CHECK(trace_norm_build(c[i].b.p, c[i].b.len, &nm, NULL) < 0);
		fclose(mf);
		free(p);
		write_seed(c[i].name, &c[i].b);
		tb_free(&c[i].b);
	}
}

TEST(read_stops_after_error)
{
	tb b = {0};
	tb_header(&b);
	tb_lost(&b, US(1), 1);
	struct trace_rec h = {.type = TR_LOST, .len = 20};
	tb_add(&b, &h, sizeof(h));
	tb_add(&b, "01234567", 8);
	tb_lost(&b, US(3), 1);
	trace_reader r;
	trace_ev ev;
	CHECK(trace_read_init(&r, b.p, b.len, NULL) == 0);
	CHECK(trace_read_next(&r, &ev, NULL) == 1);
	CHECK(trace_read_next(&r, &ev, NULL) < 0);
	CHECK(trace_read_next(&r, &ev, NULL) < 0); /* does not resynchronize on garbage */
	/* show prints what came before the bad record, then fails */
	char *p = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&p, &n);
	CHECK(trace_show(b.p, b.len, NULL, m, NULL) < 0);
	fclose(m);
	CHECK(count_lines(p) == 1 && strstr(p, "!!! 1 events lost !!!"));
	free(p);
	tb_free(&b);
}

TEST(read_refuses_foreign_arch)
{
	tb b = {0};
	tb_header_arch(&b, T0, TRACE_ARCH_NATIVE == 0xc000003eu ? 0xc00000b7u : 0xc000003eu);
	tb_lost(&b, US(1), 1);
	CHECK(trace_check(b.p, b.len, NULL, NULL) == 0); /* the stream itself is sound */
	CHECK(!show(&b, NULL) && strstr(last_err, "architecture"));
	tb_free(&b);
}

/* Every prefix and every single-byte corruption of a valid stream: no crash,
 * no read out of bounds (run under ASan by `make asan`), every failure says
 * why. */
TEST(read_survives_corruption)
{
	tb b = {0};
	demo_stream(&b);
	FILE *null = fopen("/dev/null", "w");
	CHECK(null);
	for (size_t cut = 0; cut <= b.len; cut += (cut < 64 ? 1 : 7)) {
		sbx_err *e = NULL;
		if (trace_show(b.p, cut, NULL, null, &e) < 0)
			CHECK(e && sbx_err_message(e)[0]);
		sbx_err_free(e);
	}
	uint8_t *m = malloc(b.len);
	for (size_t i = 32; i < b.len; i++) {
		memcpy(m, b.p, b.len);
		m[i] ^= (uint8_t)(0x5a + i);
		json_t *j = NULL;
		trace_norm *n = NULL;
		trace_show(m, b.len, NULL, null, NULL);
		if (trace_stats(m, b.len, &j, NULL) == 0) {
			trace_stats_print(j, null, NULL);
			json_decref(j);
		}
		trace_chrome(m, b.len, NULL, null, NULL);
		if (trace_norm_build(m, b.len, &n, NULL) == 0) {
			trace_norm_diff d;
			CHECK(trace_norm_compare(n, n, &d, NULL) == 0);
			trace_norm_free(n);
		}
	}
	free(m);
	fclose(null);
	tb_free(&b);
}

/* ---- merge ---------------------------------------------------------------------------- */

TEST(merge_by_time_stable)
{
	tb a = {0}, b = {0};
	tb_header_arch(&a, 100, TRACE_ARCH_NATIVE);
	tb_lost(&a, 10, 1);
	tb_lost(&a, 20, 2);
	tb_lost(&a, 30, 3);
	tb_header_arch(&b, 50, TRACE_ARCH_NATIVE);
	tb_unknown(&b, 5);
	tb_determ(&b, 20, 2, 2, 1, trace_sys_nr("clock_gettime"));
	tb_lost(&b, 25, 4);
	void *out = NULL;
	size_t len = 0;
	CHECK(trace_merge(a.p, a.len, b.p, b.len, &out, &len, NULL) == 0);
	CHECK(len == a.len + b.len - sizeof(struct trace_file_header));
	trace_reader r;
	CHECK(trace_read_init(&r, out, len, NULL) == 0);
	CHECK(r.hdr.start_ns == 50);
	r.keep_unknown = true;
	/* a's record first on equal timestamps; b's unknown record kept */
	const uint64_t want_ts[] = {5, 10, 20, 20, 25, 30};
	const uint16_t want_type[] = {99, TR_LOST, TR_LOST, TR_DETERM, TR_LOST, TR_LOST};
	trace_ev ev;
	for (int i = 0; i < 6; i++) {
		CHECK(trace_read_next(&r, &ev, NULL) == 1);
		CHECK(ev.ts_ns == want_ts[i] && ev.type == want_type[i]);
	}
	CHECK(trace_read_next(&r, &ev, NULL) == 0);
	write_seed("merged", &(tb){.p = out, .len = len});
	free(out);

	/* an unsorted input keeps its own order */
	tb c = {0};
	tb_header(&c);
	tb_lost(&c, 40, 1);
	tb_lost(&c, 15, 2);
	CHECK(trace_merge(a.p, a.len, c.p, c.len, &out, &len, NULL) == 0);
	CHECK(trace_read_init(&r, out, len, NULL) == 0);
	const uint64_t want2[] = {10, 20, 30, 40, 15};
	for (int i = 0; i < 5; i++)
		CHECK(trace_read_next(&r, &ev, NULL) == 1 && ev.ts_ns == want2[i]);
	free(out);

	sbx_err *e = NULL;
	c.p[c.len - 8] = 0; /* still sound */
	c.len -= 4;	    /* now truncated */
	CHECK(trace_merge(a.p, a.len, c.p, c.len, &out, &len, &e) < 0);
	CHECK(strstr(sbx_err_message(e), "second stream: malformed trace at offset 64"));
	sbx_err_free(e);
	e = NULL;
	tb d = {0};
	tb_header_arch(&d, 0, 0x1234);
	CHECK(trace_merge(a.p, a.len, d.p, d.len, &out, &len, &e) < 0);
	CHECK(strstr(sbx_err_message(e), "different architectures"));
	sbx_err_free(e);
	tb_free(&a);
	tb_free(&b);
	tb_free(&c);
	tb_free(&d);
}

/* ---- show ---------------------------------------------------------------------------- */

TEST(show_lines_exact)
{
	tb b = {0};
	demo_stream(&b);
	write_seed("demo", &b);
	char *out = show(&b, NULL);
	CHECK(out);
	if (!streq(out, demo_text))
		fprintf(stderr, "--- got:\n%s--- want:\n%s", out, demo_text);
	CHECK(streq(out, demo_text));
	free(out);
	tb_free(&b);
}

TEST(show_time_format)
{
	char t[32];
	trace_fmt_time(t, T0 + 1500000000ull, T0);
	CHECK_STREQ(t, "1.500000");
	trace_fmt_time(t, T0 - 123000, T0);
	CHECK_STREQ(t, "-0.000123");
	trace_fmt_time(t, T0 + 999, T0);
	CHECK_STREQ(t, "0.000000");
}

/* The descriptor stream: dup, dup2, fcntl, close, close-on-exec, fork, threads, pid reuse. */
static void fd_stream(tb *b)
{
	tb_header(b);
	uint64_t t = 0;
#define AT(x) US(t += 10)
	SYS(b, "openat", .pid = 2, .t = AT(), .ret = 3, .a = {(uint64_t)AT_FDCWD, 1, O_RDONLY | O_DIRECTORY},
	    .s0 = "/data");
	SYS(b, "openat", .pid = 2, .t = AT(), .ret = 4, .a = {3, 1, O_WRONLY | O_CREAT | O_CLOEXEC, 0644},
	    .s0 = "f.txt");
	SYS(b, "dup2", .pid = 2, .t = AT(), .ret = 1, .a = {4, 1});
	SYS(b, "fcntl", .pid = 2, .t = AT(), .ret = 10, .a = {4, F_DUPFD_CLOEXEC, 10});
	SYS(b, "close", .pid = 2, .t = AT(), .ret = 0, .a = {4});
	SYS(b, "close", .pid = 2, .t = AT(), .ret = -EBADF, .a = {77});
	SYS(b, "socket", .pid = 2, .t = AT(), .ret = 4, .a = {AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0});
	SYS(b, "pipe2", .pid = 2, .t = AT(), .ret = 0, .a = {0x7ffc10, O_CLOEXEC});
	SYS(b, "openat", .pid = 2, .t = AT(), .ret = 7, .a = {(uint64_t)AT_FDCWD, 1, O_RDONLY}, .s0 = "rel");
	tb_fork(b, AT(), 3, 3, 2, 2, false);
	SYS(b, "close", .pid = 2, .t = AT(), .ret = -EINTR, .a = {1}); /* released even so */
	SYS(b, "write", .pid = 2, .t = AT(), .ret = 5, .a = {1, 0x1000, 5});
	SYS(b, "write", .pid = 3, .t = AT(), .ret = 5, .a = {1, 0x1000, 5});
	EXEC(b, AT(), 3, "/bin/sh", "sh");
	SYS(b, "write", .pid = 3, .t = AT(), .ret = -EBADF, .a = {10, 0x1000, 5});
	SYS(b, "write", .pid = 3, .t = AT(), .ret = -EBADF, .a = {4, 0x1000, 5});
	SYS(b, "read", .pid = 3, .t = AT(), .ret = 0, .a = {3, 0x1000, 5});
	SYS(b, "fcntl", .pid = 2, .t = AT(), .ret = 0, .a = {3, F_SETFD, FD_CLOEXEC});
	SYS(b, "dup", .pid = 2, .t = AT(), .ret = 5, .a = {3});
	tb_fork(b, AT(), 2, 6, 2, 2, true);
	SYS(b, "read", .pid = 2, .tid = 6, .t = AT(), .ret = 0, .a = {5, 0x1000, 10});
	tb_exit(b, AT(), 3, 3, 0, true);
	tb_fork(b, AT(), 3, 3, 2, 2, false); /* pid 3 reused */
	SYS(b, "read", .pid = 3, .t = AT(), .ret = 0, .a = {5, 0x1000, 10});
	SYS(b, "read", .pid = 3, .t = AT(), .ret = 0, .a = {1, 0x1000, 10});
	SYS(b, "ioctl", .pid = 3, .t = AT(), .ret = 0, .a = {5, FIOCLEX});
	SYS(b, "close_range", .pid = 3, .t = AT(), .ret = 0, .a = {8, ~0u, 0});
	SYS(b, "read", .pid = 3, .t = AT(), .ret = 0, .a = {10, 0x1000, 10});
	SYS(b, "read", .pid = 3, .t = AT(), .ret = 0, .a = {5, 0x1000, 10});
	EXEC(b, AT(), 3, "/bin/ls", "ls");
	SYS(b, "read", .pid = 3, .t = AT(), .ret = 0, .a = {5, 0x1000, 10});
	SYS(b, "read", .pid = 3, .t = AT(), .ret = 0, .a = {3, 0x1000, 10});
	SYS(b, "read", .pid = 3, .t = AT(), .ret = 0, .a = {7, 0x1000, 10});
#undef AT
}

TEST(show_fd_tracking)
{
	tb b = {0};
	fd_stream(&b);
	write_seed("fds", &b);
	char *out = show(&b, NULL);
	CHECK(out);
	static const char *const want[] = {
	    "[2] openat(AT_FDCWD, \"/data\", O_RDONLY|O_DIRECTORY) = 3 </data>\n",
	    "[2] openat(3</data>, \"f.txt\", O_WRONLY|O_CREAT|O_CLOEXEC, 0644) = 4 </data/f.txt>\n",
	    "[2] dup2(4</data/f.txt>, 1) = 1 </data/f.txt>\n",
	    "[2] fcntl(4</data/f.txt>, F_DUPFD_CLOEXEC, 10) = 10 </data/f.txt>\n",
	    "[2] close(4</data/f.txt>) = 0\n",
	    "[2] close(77) = -1 EBADF (Bad file descriptor)\n",
	    "[2] socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, 0) = 4 <socket:[AF_INET,SOCK_STREAM]>\n",
	    "[2] pipe2(0x7ffc10, O_CLOEXEC) = 0\n", /* its descriptors are not in the record */
	    "[2] openat(AT_FDCWD, \"rel\", O_RDONLY) = 7 <rel>\n",
	    "[2] close(1</data/f.txt>) = -1 EINTR (Interrupted system call)\n",
	    "[2] write(1, 0x1000, 5) = 5\n",		  /* the parent closed it ... */
	    "[3] write(1</data/f.txt>, 0x1000, 5) = 5\n", /* ... the child's copy stays */
	    "[3] write(10, 0x1000, 5) = -1 EBADF",	  /* close-on-exec: gone at exec */
	    "[3] write(4, 0x1000, 5) = -1 EBADF",	  /* SOCK_CLOEXEC too */
	    "[3] read(3</data>, 0x1000, 5) = 0\n",	  /* but not the rest */
	    "[2] fcntl(3</data>, F_SETFD, FD_CLOEXEC) = 0\n",
	    "[2] dup(3</data>) = 5 </data>\n",
	    "[2:6] read(5</data>, 0x1000, 10) = 0\n", /* threads share the table */
	    "[3] read(5</data>, 0x1000, 10) = 0\n",   /* the new 3 copied 2's table */
	    "[3] read(1, 0x1000, 10) = 0\n",	      /* which had no 1 any more */
	    "[3] ioctl(5</data>, 0x5451, NULL) = 0\n",
	    "[3] close_range(8, 4294967295, 0) = 0\n",
	    "[3] read(10, 0x1000, 10) = 0\n",	    /* closed by the range */
	    "[3] read(5</data>, 0x1000, 10) = 0\n", /* below it */
	};
	const char *p = out;
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const char *q = strstr(p, want[i]);
		if (!q)
			fprintf(stderr, "  missing (in order): %s\n%s", want[i], out);
		CHECK(q);
		p = q + 1;
	}
	/* the exec drops 5 (FIOCLEX; dup had not copied close-on-exec) and 3 (F_SETFD in the
	 * parent before the fork), keeps 7 */
	CHECK(strstr(p, "[3] read(5, 0x1000, 10) = 0\n"));
	CHECK(strstr(p, "[3] read(3, 0x1000, 10) = 0\n"));
	CHECK(strstr(p, "[3] read(7<rel>, 0x1000, 10) = 0\n"));
	free(out);

	/* the JSON form: fd_paths from before the call (close) and the returned descriptor */
	json_t *j = NULL;
	CHECK(trace_show_json(b.p, b.len, NULL, &j, NULL) == 0);
	json_t *o1 = json_array_get(j, 1), *o4 = json_array_get(j, 4);
	CHECK_STREQ(json_string_value(json_object_get(json_object_get(o1, "fd_paths"), "3")), "/data");
	CHECK_STREQ(json_string_value(json_object_get(json_object_get(o1, "fd_paths"), "4")), "/data/f.txt");
	CHECK_STREQ(json_string_value(json_object_get(o4, "syscall")), "close");
	CHECK_STREQ(json_string_value(json_object_get(json_object_get(o4, "fd_paths"), "4")), "/data/f.txt");
	json_decref(j);
	tb_free(&b);
}

TEST(show_json_fields)
{
	tb b = {0};
	demo_stream(&b);
	json_t *j = NULL;
	CHECK(trace_show_json(b.p, b.len, NULL, &j, NULL) == 0);
	CHECK(json_array_size(j) == 24);
	json_t *x = json_array_get(j, 0), *o = json_array_get(j, 1), *fail = json_array_get(j, 4);
	CHECK_STREQ(json_string_value(json_object_get(x, "type")), "exec");
	CHECK_STREQ(json_string_value(json_array_get(json_object_get(x, "argv"), 1)), "/etc/passwd");
	CHECK(json_integer_value(json_object_get(o, "seq")) == 1 &&
	      json_integer_value(json_object_get(o, "t_ns")) == 10000);
	CHECK(json_integer_value(json_object_get(o, "pid")) == 2 &&
	      json_integer_value(json_object_get(o, "dur_ns")) == 1000);
	CHECK_STREQ(json_string_value(json_object_get(o, "syscall")), "openat");
	CHECK_STREQ(json_string_value(json_array_get(json_object_get(o, "args"), 0)), "AT_FDCWD");
	CHECK_STREQ(json_string_value(json_array_get(json_object_get(o, "args"), 1)), "\"/etc/passwd\"");
	CHECK_STREQ(json_string_value(json_array_get(json_object_get(o, "args"), 2)), "O_RDONLY|O_CLOEXEC");
	CHECK_STREQ(json_string_value(json_array_get(json_object_get(o, "paths"), 0)), "/etc/passwd");
	CHECK(json_integer_value(json_object_get(o, "ret")) == 3 && !json_object_get(o, "errno"));
	CHECK_STREQ(json_string_value(json_object_get(json_object_get(o, "fd_paths"), "3")), "/etc/passwd");
	CHECK_STREQ(json_string_value(json_object_get(fail, "errno")), "ENOENT");
	CHECK(json_integer_value(json_object_get(fail, "ret")) == -ENOENT);
	json_t *v;
	size_t i;
	int kinds = 0;
	json_array_foreach(j, i, v)
	{
		const char *t = json_string_value(json_object_get(v, "type"));
		if (streq(t, "exit") && json_integer_value(json_object_get(v, "pid")) == 3)
			kinds |= 1 * (json_integer_value(json_object_get(v, "exit_code")) == 0);
		if (streq(t, "exit") && json_is_true(json_object_get(v, "core_dumped")))
			kinds |= 2 * streq(json_string_value(json_object_get(v, "signal")), "SIGSEGV");
		if (streq(t, "lost"))
			kinds |= 4 * (json_integer_value(json_object_get(v, "count")) == 12);
		if (streq(t, "determ") && json_integer_value(json_object_get(v, "nr")) >= 0)
			kinds |= 8 * streq(json_string_value(json_object_get(v, "kind")), "clock");
		if (streq(t, "syscall") && json_is_true(json_object_get(v, "emulated")))
			kinds |= 16;
		if (streq(t, "syscall") && json_is_null(json_object_get(v, "ret")))
			kinds |= 32; /* exit_group */
		if (streq(t, "fork") && json_is_true(json_object_get(v, "thread")))
			kinds |= 64 * (json_integer_value(json_object_get(v, "tid")) == 4);
	}
	CHECK(kinds == 127);
	json_decref(j);
	tb_free(&b);
}

TEST(show_filters)
{
	tb b = {0};
	demo_stream(&b);
	/* by pid: the child's records, and its fork (it is the child) */
	uint32_t p3[] = {3};
	char *out = show(&b, &(trace_filter){.pids = p3, .n_pids = 1});
	CHECK(out && !strstr(out, "[2] openat") && strstr(out, "[2] +++ fork child 3 +++"));
	CHECK(strstr(out, "[3] exit_group(0) = ?") && strstr(out, "[3] ~~~ rdtsc"));
	CHECK(count_lines(out) == 7);
	free(out);
	/* by tid */
	uint32_t p4[] = {4};
	out = show(&b, &(trace_filter){.pids = p4, .n_pids = 1});
	CHECK(out && count_lines(out) == 3 && strstr(out, "[2:4] getpid() = 2"));
	free(out);
	/* by syscall: process events and lost notes stay, other calls go */
	const char *calls[] = {"openat", "close", NULL};
	out = show(&b, &(trace_filter){.syscalls = calls});
	CHECK(out && strstr(out, "openat(AT_FDCWD, \"/nope\"") && strstr(out, "close(3</etc/passwd>)"));
	CHECK(!strstr(out, "read(") && !strstr(out, "mmap(") && !strstr(out, "~~~"));
	CHECK(strstr(out, "+++ exec /bin/true") && strstr(out, "!!! 12 events lost !!!"));
	CHECK(count_lines(out) == 6 + 8);
	free(out);
	/* determ records go with the call they answered */
	const char *clock[] = {"clock_gettime", "syscall_999", NULL};
	out = show(&b, &(trace_filter){.syscalls = clock, .pids = p3, .n_pids = 1});
	CHECK(out && strstr(out, "~~~ clock_gettime answered") && strstr(out, "clock_gettime(1, 0x7ffc00)"));
	CHECK(!strstr(out, "rdtsc") && !strstr(out, "syscall_999"));
	free(out);
	out = show(&b, &(trace_filter){.syscalls = clock});
	CHECK(out && strstr(out, "syscall_999("));
	free(out);
	/* both filters at once, and a bad name */
	const char *bad[] = {"read", "opnat", NULL};
	CHECK(!show(&b, &(trace_filter){.syscalls = bad}) && strstr(last_err, "unknown syscall 'opnat'"));
	CHECK(trace_filter_check(&(trace_filter){.syscalls = bad}, NULL) < 0);
	tb_free(&b);
}

/* ---- stats ------------------------------------------------------------------------------- */

static void stats_stream(tb *b)
{
	tb_header(b);
	EXEC(b, US(1), 2, "/bin/sh", "sh", "-c", "x");
	SYS(b, "openat", .pid = 2, .t = US(10), .dur = 2000, .ret = 3, .a = {(uint64_t)AT_FDCWD, 1, O_RDONLY},
	    .s0 = "/etc/passwd");
	SYS(b, "read", .pid = 2, .t = US(13), .ret = 10, .a = {3, 1, 10});
	SYS(b, "read", .pid = 2, .t = US(15), .ret = 0, .a = {3, 1, 10});
	SYS(b, "close", .pid = 2, .t = US(17), .ret = 0, .a = {3});
	SYS(b, "openat", .pid = 2, .t = US(20), .dur = 3000, .ret = 3,
	    .a = {(uint64_t)AT_FDCWD, 1, O_WRONLY | O_CREAT | O_TRUNC, 0644}, .s0 = "/tmp/out");
	SYS(b, "write", .pid = 2, .t = US(24), .ret = 5, .a = {3, 1, 5});
	SYS(b, "close", .pid = 2, .t = US(26), .ret = 0, .a = {3});
	SYS(b, "openat", .pid = 2, .t = US(30), .dur = 5000, .ret = -ENOENT,
	    .a = {(uint64_t)AT_FDCWD, 1, O_RDONLY}, .s0 = "/missing");
	SYS(b, "mkdir", .pid = 2, .t = US(40), .ret = 0, .a = {1, 0755}, .s0 = "/tmp/d");
	SYS(b, "unlink", .pid = 2, .t = US(41), .ret = 0, .s0 = "/tmp/old");
	SYS(b, "unlink", .pid = 2, .t = US(42), .ret = -ENOENT, .s0 = "/tmp/never");
	SYS(b, "unlinkat", .pid = 2, .t = US(43), .ret = 0, .a = {(uint64_t)AT_FDCWD, 1, AT_REMOVEDIR},
	    .s0 = "/tmp/d");
	SYS(b, "rename", .pid = 2, .t = US(44), .ret = 0, .s0 = "/tmp/a", .s1 = "/tmp/b");
	SYS(b, "socket", .pid = 2, .t = US(50), .ret = 4, .a = {AF_INET, SOCK_STREAM});
	SYS(b, "connect", .pid = 2, .t = US(51), .ret = -ECONNREFUSED, .a = {4, 1, 16});
	SYS(b, "socket", .pid = 2, .t = US(52), .ret = 5, .a = {AF_UNIX, SOCK_DGRAM});
	SYS(b, "sendto", .pid = 2, .t = US(53), .ret = 3, .a = {5, 1, 3});
	SYS(b, "write", .pid = 2, .t = US(54), .ret = 3, .a = {5, 1, 3}); /* a socket: not a file written */
	tb_fork(b, US(60), 3, 3, 2, 2, false);
	EXEC(b, US(61), 3, "/bin/true", "true");
	tb_fork(b, US(62), 3, 7, 3, 3, true);
	SYS(b, "exit_group", .pid = 3, .t = US(63), .noret = true, .a = {1});
	tb_exit(b, US(64), 3, 3, 0x100, true);
	tb_lost(b, US(70), 7);
	tb_determ(b, US(71), 2, 2, 1, trace_sys_nr("clock_gettime"));
	tb_determ(b, US(72), 2, 2, 1, trace_sys_nr("clock_gettime"));
	tb_determ(b, US(73), 2, 2, 2, trace_sys_nr("getrandom"));
	tb_exit(b, US(500), 2, 2, SIGKILL, true);
}

static json_t *jpath(json_t *j, const char *a, const char *b)
{
	return json_object_get(json_object_get(j, a), b);
}

TEST(stats_numbers)
{
	tb b = {0};
	stats_stream(&b);
	write_seed("stats", &b);
	json_t *j = NULL;
	sbx_err *e = NULL;
	CHECK(trace_stats(b.p, b.len, &j, &e) == 0);
	CHECK(json_integer_value(json_object_get(j, "records")) == 29);
	CHECK(json_integer_value(json_object_get(j, "lost")) == 7);
	CHECK(json_integer_value(json_object_get(j, "duration_ns")) == 500000);
	json_t *sys = json_object_get(j, "syscalls"), *top = json_array_get(sys, 0);
	CHECK_STREQ(json_string_value(json_object_get(top, "name")), "openat");
	CHECK(json_integer_value(json_object_get(top, "count")) == 3);
	CHECK(json_integer_value(json_object_get(top, "errors")) == 1);
	CHECK(json_integer_value(json_object_get(top, "time_ns")) == 10000);
	CHECK(json_real_value(json_object_get(top, "time_us")) == 10.0);
	/* then by count, ties by name: close 2, read 2, socket 2, unlink 2, write 2 */
	CHECK_STREQ(json_string_value(json_object_get(json_array_get(sys, 1), "name")), "close");
	CHECK_STREQ(json_string_value(json_object_get(json_array_get(sys, 5), "name")), "write");
	CHECK(json_integer_value(json_object_get(json_array_get(sys, 4), "errors")) == 1); /* unlink */

	json_t *files = json_object_get(j, "files");
	char *s = json_dumps(files, JSON_COMPACT);
	CHECK_STREQ(
	    s,
	    "{\"read\":[\"/etc/passwd\"],\"written\":[\"/tmp/out\"],\"created\":[\"/tmp/d\",\"/tmp/out\"],"
	    "\"unlinked\":[\"/tmp/d\",\"/tmp/old\"],\"renamed\":[{\"from\":\"/tmp/a\",\"to\":\"/tmp/b\"}]}");
	free(s);
	json_t *ex = json_object_get(j, "execs");
	CHECK(json_array_size(ex) == 2);
	CHECK_STREQ(json_string_value(json_array_get(json_object_get(json_array_get(ex, 0), "argv"), 2)),
		    "x");
	CHECK(json_integer_value(jpath(j, "processes", "count")) == 2);
	CHECK(json_integer_value(jpath(j, "processes", "threads")) == 1);
	json_t *exits = jpath(j, "processes", "exits");
	CHECK(json_array_size(exits) == 2);
	CHECK(json_integer_value(json_object_get(json_array_get(exits, 0), "exit_code")) == 1);
	CHECK_STREQ(json_string_value(json_object_get(json_array_get(exits, 1), "signal")), "SIGKILL");
	s = json_dumps(json_object_get(j, "network"), JSON_COMPACT);
	CHECK_STREQ(s, "{\"syscalls\":{\"connect\":1,\"sendto\":1,\"socket\":2},\"sockets\":2,"
		       "\"domains\":{\"AF_INET\":1,\"AF_UNIX\":1}}");
	free(s);
	s = json_dumps(json_object_get(j, "determ"), JSON_COMPACT);
	CHECK_STREQ(s, "{\"clock\":2,\"random\":1}");
	free(s);

	char *p = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&p, &n);
	CHECK(trace_stats_print(j, m, NULL) == 0);
	fclose(m);
	CHECK(strstr(p, "records 29, lost events 7, duration 0.000500 s\n"));
	CHECK(strstr(p, "processes 2, threads 1\n  [3] exited 1\n  [2] killed by SIGKILL\n"));
	CHECK(strstr(p, "openat                            3        1         10.000\n"));
	CHECK(strstr(p, "\nfiles written (1)\n  /tmp/out\n"));
	CHECK(strstr(p, "\nfiles renamed (1)\n  /tmp/a -> /tmp/b\n"));
	CHECK(strstr(p, "  [3] /bin/true [\"true\"]\n"));
	CHECK(strstr(p, "network: 2 sockets (AF_INET 1, AF_UNIX 1); connect 1, sendto 1, socket 2\n"));
	CHECK(strstr(p, "determinism engine: clock 2, random 1\n"));
	free(p);
	json_decref(j);
	tb_free(&b);
}

TEST(stats_non_utf8_paths)
{
	tb b = {0};
	tb_header(&b);
	SYS(&b, "unlink", .pid = 2, .t = US(1), .ret = 0, .s0 = "/tmp/\xff\x01");
	json_t *j = NULL;
	CHECK(trace_stats(b.p, b.len, &j, NULL) == 0);
	CHECK_STREQ(json_string_value(json_array_get(jpath(j, "files", "unlinked"), 0)), "/tmp/\\xff\\x01");
	json_decref(j);
	tb_free(&b);
}

/* ---- Chrome export ------------------------------------------------------------------------ */

static json_t *chrome(const tb *b, int *ret)
{
	char *p = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&p, &n);
	*ret = trace_chrome(b->p, b->len, NULL, m, NULL);
	fclose(m);
	json_error_t je;
	json_t *j = json_loadb(p, n, 0, &je);
	if (!j)
		fprintf(stderr, "  %s at line %d\n%s", je.text, je.line, p);
	free(p);
	return j;
}

static json_t *find_event(json_t *evs, const char *ph, const char *name, int pid)
{
	size_t i;
	json_t *v;
	json_array_foreach(evs, i, v)
	{
		if (streq(json_string_value(json_object_get(v, "ph")), ph) &&
		    streq(json_string_value(json_object_get(v, "name")), name) &&
		    (pid < 0 || json_integer_value(json_object_get(v, "pid")) == pid))
			return v;
	}
	return NULL;
}

TEST(chrome_export)
{
	tb b = {0};
	demo_stream(&b);
	SYS(&b, "unlink", .pid = 2, .t = US(120), .ret = 0, .s0 = "caf\xc3\xa9-\xff"); /* non-UTF-8 */
	int r;
	json_t *j = chrome(&b, &r);
	CHECK(r == 0 && j);
	CHECK_STREQ(json_string_value(json_object_get(j, "displayTimeUnit")), "ns");
	json_t *evs = json_object_get(j, "traceEvents");
	json_t *o = find_event(evs, "X", "openat", 2);
	CHECK(o && json_number_value(json_object_get(o, "ts")) == 10.0);
	CHECK(json_number_value(json_object_get(o, "dur")) == 1.0);
	CHECK(json_integer_value(json_object_get(o, "tid")) == 2);
	CHECK_STREQ(json_string_value(json_array_get(jpath(o, "args", "args"), 1)), "\"/etc/passwd\"");
	CHECK_STREQ(json_string_value(jpath(o, "args", "ret")), "3 </etc/passwd>");
	o = find_event(evs, "X", "clone", 2);
	CHECK(o && json_number_value(json_object_get(o, "ts")) == 33.0 &&
	      json_number_value(json_object_get(o, "dur")) == 3.0);
	o = find_event(evs, "X", "exit_group", 3);
	CHECK(o && json_number_value(json_object_get(o, "dur")) == 0.0);
	CHECK_STREQ(json_string_value(jpath(o, "args", "ret")), "?");
	o = find_event(evs, "X", "unlink", 2);
	CHECK(o &&
	      strstr(json_string_value(json_array_get(jpath(o, "args", "args"), 0)), "caf\\xc3\\xa9-\\xff"));
	/* names: pid 3 is "cat" (inherited) until it execs "true" */
	int names = 0;
	size_t i;
	json_t *v;
	json_array_foreach(evs, i, v)
	{
		if (!streq(json_string_value(json_object_get(v, "ph")), "M"))
			continue;
		const char *n = json_string_value(json_object_get(v, "name")),
			   *a = json_string_value(jpath(v, "args", "name"));
		int pid = json_integer_value(json_object_get(v, "pid"));
		names |= (streq(n, "process_name") && pid == 2 && streq(a, "cat")) * 1;
		names |= (streq(n, "process_name") && pid == 3 && streq(a, "cat")) * 2;
		names |= (streq(n, "process_name") && pid == 3 && streq(a, "true")) * 4;
		names |= (streq(n, "thread_name") && json_integer_value(json_object_get(v, "tid")) == 4 &&
			  streq(a, "cat")) *
			 8;
	}
	CHECK(names == 15);
	CHECK(find_event(evs, "i", "fork", 2) && find_event(evs, "i", "exec", 3) &&
	      find_event(evs, "i", "exit", 3));
	CHECK(find_event(evs, "i", "thread", 2));
	o = find_event(evs, "i", "lost", -1);
	CHECK(o && json_integer_value(jpath(o, "args", "count")) == 12);
	CHECK_STREQ(json_string_value(json_object_get(o, "s")), "g");
	o = find_event(evs, "i", "determ", 3);
	CHECK(o && streq(json_string_value(jpath(o, "args", "kind")), "clock"));
	CHECK_STREQ(json_string_value(jpath(o, "args", "syscall")), "clock_gettime");
	o = NULL;
	json_array_foreach(evs, i, v) if (streq(json_string_value(json_object_get(v, "name")), "exit") &&
					  json_integer_value(json_object_get(v, "tid")) == 2) o = v;
	CHECK(o && strstr(json_string_value(jpath(o, "args", "status")), "SIGSEGV"));
	CHECK_STREQ(json_string_value(json_object_get(o, "s")), "p");
	json_decref(j);

	/* a malformed tail: an error, and still a loadable document of what came before */
	b.len -= 4;
	j = chrome(&b, &r);
	CHECK(r < 0 && j && find_event(json_object_get(j, "traceEvents"), "X", "openat", 2));
	json_decref(j);
	tb_free(&b);
}

/* ---- normalized view ---------------------------------------------------------------------- */

typedef struct run_opts {
	uint32_t pid;	   /* base pid */
	uint64_t t;	   /* time offset (µs) */
	const char *path;  /* opened by process 0 */
	int64_t open_ret;  /* its result */
	const char *argv1; /* process 1 execs /bin/<argv1> */
	int32_t status1;   /* process 1's exit status */
	int reads, noise;  /* repeats of read, futex calls */
	bool extra;	   /* a third process */
	bool extra_from_1; /* ... forked by process 1 rather than 0 */
	bool stray_thread; /* records of a thread whose creation was not seen */
	bool extra_call;   /* one more call at the end of process 0 */
	uint64_t lost;
} run_opts;

static void run_stream(tb *b, const run_opts *o)
{
	uint32_t p = o->pid;
	uint64_t t = o->t;
#define AT() US(t += 10)
	tb_header(b);
	EXEC(b, AT(), p, "/bin/sh", "sh", "-c", "run");
	for (int i = 0; i < o->noise; i++)
		SYS(b, "futex", .pid = p, .t = AT(), .ret = -EAGAIN, .a = {0x1000 + i});
	SYS(b, "openat", .pid = p, .t = AT(), .ret = o->open_ret, .a = {(uint64_t)AT_FDCWD, 1, O_RDONLY},
	    .s0 = o->path ? o->path : "/tmp/x");
	for (int i = 0; i < o->reads; i++)
		SYS(b, "read", .pid = p, .t = AT(), .ret = 100 + i * 7, .a = {3, 1, 4096});
	SYS(b, "mmap", .pid = p, .t = AT(), .ret = 0x7f0000000000 + p * 0x1000,
	    .a = {0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1});
	tb_determ(b, AT(), p, p, 1, trace_sys_nr("clock_gettime"));
	tb_fork(b, AT(), p + 1, p + 1, p, p, false);
	SYS(b, "clone", .pid = p, .t = AT(), .ret = p + 1, .a = {SIGCHLD});
	EXEC(b, AT(), p + 1, "/bin/x", o->argv1 ? o->argv1 : "true");
	if (o->extra) {
		uint32_t parent = o->extra_from_1 ? p + 1 : p;
		tb_fork(b, AT(), p + 2, p + 2, parent, parent, false);
		tb_exit(b, AT(), p + 2, p + 2, 0, true);
	}
	tb_exit(b, AT(), p + 1, p + 1, o->status1, true);
	if (o->stray_thread)
		SYS(b, "getpid", .pid = p, .tid = p + 9, .t = AT(), .ret = p);
	SYS(b, "wait4", .pid = p, .t = AT(), .ret = p + 1, .a = {(uint64_t)-1});
	if (o->extra_call)
		SYS(b, "close", .pid = p, .t = AT(), .ret = 0, .a = {1});
	if (o->lost)
		tb_lost(b, AT(), o->lost);
	tb_exit(b, AT(), p, p, 0, true);
#undef AT
}

static trace_norm *norm_of(const run_opts *o)
{
	tb b = {0};
	run_stream(&b, o);
	trace_norm *n = NULL;
	sbx_err *e = NULL;
	if (trace_norm_build(b.p, b.len, &n, &e) < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	sbx_err_free(e);
	tb_free(&b);
	return n;
}

/* Compares run a with run b; returns the diff (caller clears). */
static int compare(const run_opts *a, const run_opts *b, trace_norm_diff *d)
{
	trace_norm *na = norm_of(a), *nb = norm_of(b);
	int r = na && nb ? trace_norm_compare(na, nb, d, NULL) : -1;
	trace_norm_free(na);
	trace_norm_free(nb);
	return r;
}

static const run_opts base = {.pid = 2, .open_ret = 3, .status1 = 0, .reads = 3, .noise = 1};

TEST(norm_match)
{
	/* other pids, times, byte counts, addresses, repeat counts and spinning: the same run */
	run_opts other = base;
	other.pid = 100;
	other.t = 5000;
	other.reads = 9;
	other.noise = 5;
	trace_norm_diff d;
	CHECK(compare(&base, &other, &d) == 0);
	CHECK(d.kind == TRACE_NORM_MATCH && !d.expected && !d.actual && d.process == -1);
	json_t *j = trace_norm_diff_json(&d);
	CHECK(j && json_is_true(json_object_get(j, "match")) && json_is_null(json_object_get(j, "item")));
	json_decref(j);
	trace_norm_diff_clear(&d);

	/* the view itself */
	trace_norm *n = norm_of(&other);
	CHECK(n);
	char *p = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&p, &len);
	CHECK(trace_norm_print(n, m, NULL) == 0);
	fclose(m);
	static const char want[] = "process 0: exited 0\n"
				   "  exec \"/bin/sh\" [\"sh\", \"-c\", \"run\"]\n"
				   "  thread 0\n"
				   "    exec(\"/bin/sh\", [\"sh\", \"-c\", \"run\"])\n"
				   "    openat(\"/tmp/x\") = ok\n"
				   "    read = ok\n"
				   "    mmap = ok\n"
				   "    determ(clock, clock_gettime)\n"
				   "    fork(process 1)\n"
				   "    clone = ok\n"
				   /* wait4 is timing-dependent (trace_sys.c): not an item */
				   "process 1 (parent 0): exited 0\n"
				   "  exec \"/bin/x\" [\"true\"]\n"
				   "  thread 0\n"
				   "    exec(\"/bin/x\", [\"true\"])\n";
	if (!streq(p, want))
		fprintf(stderr, "--- got:\n%s--- want:\n%s", p, want);
	CHECK(streq(p, want));
	free(p);
	trace_norm_free(n);
}

/* Two shells run at once, each forking a child: whichever child appears
 * first in the stream is process 3. swap: the second shell's child first. */
static trace_norm *cousins(bool swap, const char *arg)
{
	tb b = {0};
	uint64_t t = 0;
#define AT() US(t += 10)
	tb_header(&b);
	EXEC(&b, AT(), 2, "/bin/sh", "sh");
	tb_fork(&b, AT(), 3, 3, 2, 2, false);
	tb_fork(&b, AT(), 4, 4, 2, 2, false);
	for (int k = 0; k < 2; k++) {
		bool first = (k == 0) != swap; /* the child of process 3 (exec /bin/a) */
		uint32_t parent = first ? 3 : 4, child = first ? 5 : 6;
		tb_fork(&b, AT(), child, child, parent, parent, false);
		EXEC(&b, AT(), child, first ? "/bin/a" : "/bin/b", first ? arg : "b");
		tb_exit(&b, AT(), child, child, 0, true);
	}
	tb_exit(&b, AT(), 3, 3, 0, true);
	tb_exit(&b, AT(), 4, 4, 0, true);
	tb_exit(&b, AT(), 2, 2, 0, true);
#undef AT
	trace_norm *n = NULL;
	if (trace_norm_build(b.p, b.len, &n, NULL) < 0)
		n = NULL;
	tb_free(&b);
	return n;
}

TEST(norm_same_tree)
{
	/* what a run did, up to the order of siblings (replay's concurrency rule) */
	trace_norm *a = norm_of(&base), *b;
	run_opts o = base;
	o.pid = 100, o.reads = 9, o.path = "/tmp/y"; /* item differences: the same tree */
	b = norm_of(&o);
	CHECK(trace_norm_same_tree(a, b));
	trace_norm_free(b);
	o = base, o.argv1 = "false";
	b = norm_of(&o);
	CHECK(!trace_norm_same_tree(a, b));
	trace_norm_free(b);
	o = base, o.status1 = 0x100;
	b = norm_of(&o);
	CHECK(!trace_norm_same_tree(a, b));
	trace_norm_free(b);
	o = base, o.extra = true;
	b = norm_of(&o);
	CHECK(!trace_norm_same_tree(a, b));
	trace_norm_free(b);
	run_opts e1 = base, e2 = base;
	e1.extra = true, e2.extra = true, e2.extra_from_1 = true; /* another parent */
	trace_norm_free(a);
	a = norm_of(&e1);
	b = norm_of(&e2);
	CHECK(!trace_norm_same_tree(a, b));
	trace_norm_free(a);
	trace_norm_free(b);

	/* cousins numbered the other way round: compare differs, the tree is the same */
	a = cousins(false, "a");
	b = cousins(true, "a");
	CHECK(a && b);
	trace_norm_diff d;
	CHECK(trace_norm_compare(a, b, &d, NULL) == 1);
	trace_norm_diff_clear(&d);
	CHECK(trace_norm_same_tree(a, b));
	trace_norm_free(b);
	b = cousins(true, "a2"); /* and one of them ran something else */
	CHECK(!trace_norm_same_tree(a, b));
	trace_norm_free(a);
	trace_norm_free(b);
}

TEST(norm_divergences)
{
	trace_norm_diff d;
	run_opts o;

	o = base, o.extra = true;
	CHECK(compare(&base, &o, &d) == 1 && d.kind == TRACE_NORM_PROCESSES);
	CHECK_STREQ(d.expected, "2 processes");
	CHECK_STREQ(d.actual, "3 processes");
	trace_norm_diff_clear(&d);

	run_opts a = base;
	a.extra = true, o = base, o.extra = true, o.extra_from_1 = true;
	CHECK(compare(&a, &o, &d) == 1 && d.kind == TRACE_NORM_PARENT && d.process == 2);
	CHECK_STREQ(d.expected, "parent 0");
	CHECK_STREQ(d.actual, "parent 1");
	trace_norm_diff_clear(&d);

	o = base, o.argv1 = "false";
	CHECK(compare(&base, &o, &d) == 1 && d.kind == TRACE_NORM_EXEC && d.process == 1 && d.item == 0);
	CHECK_STREQ(d.expected, "\"/bin/x\" [\"true\"]");
	CHECK_STREQ(d.actual, "\"/bin/x\" [\"false\"]");
	trace_norm_diff_clear(&d);

	o = base, o.status1 = 0x100;
	CHECK(compare(&base, &o, &d) == 1 && d.kind == TRACE_NORM_EXIT && d.process == 1);
	CHECK_STREQ(d.expected, "exited 0");
	CHECK_STREQ(d.actual, "exited 1");
	trace_norm_diff_clear(&d);

	o = base, o.path = "/tmp/y", o.open_ret = -ENOENT;
	CHECK(compare(&base, &o, &d) == 1 && d.kind == TRACE_NORM_ITEM);
	CHECK(d.process == 0 && d.thread == 0 && d.item == 1);
	CHECK_STREQ(d.expected, "openat(\"/tmp/x\") = ok");
	CHECK_STREQ(d.actual, "openat(\"/tmp/y\") = ENOENT");
	json_t *j = trace_norm_diff_json(&d);
	char *s = json_dumps(j, JSON_COMPACT);
	CHECK_STREQ(
	    s, "{\"match\":false,\"kind\":\"item\",\"process\":0,\"thread\":0,\"item\":1,"
	       "\"expected\":\"openat(\\\"/tmp/x\\\") = ok\",\"actual\":\"openat(\\\"/tmp/y\\\") = ENOENT\","
	       "\"lost_a\":0,\"lost_b\":0}");
	free(s);
	json_decref(j);
	trace_norm_diff_clear(&d);

	o = base, o.extra_call = true;
	CHECK(compare(&base, &o, &d) == 1 && d.kind == TRACE_NORM_ITEM && d.item == 7);
	CHECK_STREQ(d.expected, "(end)");
	CHECK_STREQ(d.actual, "close = ok");
	trace_norm_diff_clear(&d);

	o = base, o.stray_thread = true;
	CHECK(compare(&base, &o, &d) == 1 && d.kind == TRACE_NORM_THREADS && d.process == 0);
	CHECK_STREQ(d.expected, "1 threads");
	CHECK_STREQ(d.actual, "2 threads");
	trace_norm_diff_clear(&d);

	/* lost events do not make a difference by themselves, but are reported */
	o = base, o.lost = 5;
	CHECK(compare(&base, &o, &d) == 0 && d.lost_a == 0 && d.lost_b == 5);
	trace_norm_diff_clear(&d);
	CHECK(strcmp(trace_norm_kind_name(TRACE_NORM_THREADS), "threads") == 0);
}

TEST(norm_adopts_early_child)
{
	/* the child's first record comes before its fork record (two CPUs' buffers) */
	tb b = {0};
	tb_header(&b);
	SYS(&b, "getpid", .pid = 2, .t = US(1), .ret = 2);
	SYS(&b, "getpid", .pid = 3, .t = US(2), .ret = 3);
	tb_fork(&b, US(3), 3, 3, 2, 2, false);
	trace_norm *n = NULL;
	CHECK(trace_norm_build(b.p, b.len, &n, NULL) == 0);
	char *p = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&p, &len);
	trace_norm_print(n, m, NULL);
	fclose(m);
	CHECK(strstr(p, "process 1 (parent 0): no exit seen\n  thread 0\n    getpid = ok\n"));
	CHECK(!strstr(p, "process 2"));
	free(p);
	trace_norm_free(n);
	tb_free(&b);
}

/* Seeds for the fuzzer beyond the ones the tests above write. */
TEST(corpus_seeds)
{
	tb b = {0};
	run_opts o = base;
	o.extra = true, o.lost = 3, o.stray_thread = true;
	run_stream(&b, &o);
	/* A seed is only worth writing if it reads back whole: events, then
	 * the end, no error (the fuzzer starts from valid input). */
	trace_reader r;
	trace_ev ev;
	int k, events = 0;
	CHECK(trace_read_init(&r, b.p, b.len, NULL) == 0);
	while ((k = trace_read_next(&r, &ev, NULL)) > 0)
		events++;
	CHECK(k == 0);
	CHECK(events > 3);
	write_seed("norm", &b);
	tb_free(&b);
	tb_header(&b);
	CHECK(trace_read_init(&r, b.p, b.len, NULL) == 0);
	CHECK(trace_read_next(&r, &ev, NULL) == 0);
	write_seed("empty", &b);
	tb_free(&b);
}
