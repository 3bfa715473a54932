/* Decoding trace records for display (trace_view.h): names, strings,
 * flags, the process and descriptor model, and the text and JSON forms of
 * `sbx trace show`. The helpers here are shared with stats, Chrome export
 * and the normalized view. */
#include "trace/trace_view.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "trace/trace_sys.h"
#include "util/err.h"
#include "util/json.h"

#define PATH_CAP 4096  /* a tracked path longer than this is cut (joins can nest without bound) */
#define CL_ALWAYS (-2) /* anonymous-descriptor makers that always set close-on-exec */

/* glibc defines O_LARGEFILE as 0 on 64-bit; the kernel's bit is this. */
#if defined(__x86_64__)
#define KO_LARGEFILE 0100000
#elif defined(__aarch64__)
#define KO_LARGEFILE 0400000
#else
#error "traces are recorded on x86_64 and arm64 only"
#endif

/* ---- names ------------------------------------------------------------------ */

const char *trace_determ_kind_name(uint32_t kind)
{
	static const char *const names[] = {NULL,    "clock",	  "random", "rdtsc",
					    "uname", "stat time", "getcpu", "concurrency"};
	return kind < ARRAY_SIZE(names) ? names[kind] : NULL;
}

const char *trace_errno_name(int e)
{
	/* Kernel-internal values a tracer can see on syscall exit. */
	static const char *const restart[] = {"ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND",
					      "ENOIOCTLCMD", "ERESTART_RESTARTBLOCK"};
	if (e >= 512 && e < 512 + (int)ARRAY_SIZE(restart))
		return restart[e - 512];
	return e > 0 ? strerrorname_np(e) : NULL;
}

bool trace_ret_is_err(int64_t ret)
{
	return ret < 0 && ret >= -4095;
}

const char *trace_sys_label(int32_t nr, char buf[24])
{
	const char *n = trace_sys_name(nr);
	if (n)
		return n;
	snprintf(buf, 24, "syscall_%" PRId32, nr);
	return buf;
}

void trace_fmt_time(char out[32], uint64_t ts, uint64_t start)
{
	uint64_t a = ts >= start ? ts - start : start - ts;
	snprintf(out, 32, "%s%" PRIu64 ".%06" PRIu64, ts >= start ? "" : "-", a / 1000000000,
		 a % 1000000000 / 1000);
}

uint64_t trace_ev_start(const trace_ev *ev)
{
	return ev->type == TR_SYSCALL && ev->sys.enter_ns ? ev->sys.enter_ns : ev->ts_ns;
}

static void sb_signal(trace_sbuf *b, int64_t sig)
{
	const char *n = sig > 0 && sig < 32 ? sigabbrev_np((int)sig) : NULL;
	if (n)
		trace_sb_addf(b, "SIG%s", n);
	else if (sig >= 32 && sig <= 64)
		trace_sb_addf(b, "SIGRT_%" PRId64, sig - 32); /* kernel numbering: glibc's SIGRTMIN is 34 */
	else
		trace_sb_addf(b, "%" PRId64, sig);
}

/* ---- strings ----------------------------------------------------------------- */

static void sb_grow(trace_sbuf *b, size_t more)
{
	if (b->oom || b->len + more + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

void trace_sb_add(trace_sbuf *b, const char *s, size_t n)
{
	sb_grow(b, n);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void trace_sb_addf(trace_sbuf *b, const char *fmt, ...)
{
	char small[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		trace_sb_add(b, small, n);
		return;
	}
	sb_grow(b, n);
	if (b->oom)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

void trace_sb_esc(trace_sbuf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		switch (c) {
		case '\n':
			trace_sb_lit(b, "\\n");
			break;
		case '\t':
			trace_sb_lit(b, "\\t");
			break;
		case '\r':
			trace_sb_lit(b, "\\r");
			break;
		case '"':
		case '\\':
			trace_sb_lit(b, "\\");
			trace_sb_add(b, (const char *)&c, 1);
			break;
		default:
			if (c < 0x20 || c >= 0x7f)
				trace_sb_addf(b, "\\x%02x", c);
			else
				trace_sb_add(b, (const char *)&c, 1);
		}
	}
}

void trace_sb_reset(trace_sbuf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = 0;
}

void trace_sb_free(trace_sbuf *b)
{
	free(b->p);
	*b = (trace_sbuf){0};
}

const char *trace_sb_str(const trace_sbuf *b)
{
	return b->p && !b->oom ? b->p : "";
}

void trace_sb_status(trace_sbuf *b, int32_t status)
{
	int sig = status & 0x7f;
	if (sig == 0)
		trace_sb_addf(b, "exited %d", (status >> 8) & 0xff);
	else if (sig != 0x7f) {
		trace_sb_lit(b, "killed by ");
		sb_signal(b, sig);
		if (status & 0x80)
			trace_sb_lit(b, " (core dumped)");
	} else
		trace_sb_addf(b, "status 0x%x", (unsigned)status);
}

void trace_sb_argv(trace_sbuf *b, const trace_ev *ev)
{
	trace_sb_lit(b, "[");
	const char *p = ev->exec.argv, *end = p + ev->exec.argv_len;
	for (bool first = true; p < end; first = false) {
		size_t n = strlen(p); /* the reader made sure the last string ends in a NUL */
		if (!first)
			trace_sb_lit(b, ", ");
		trace_sb_lit(b, "\"");
		trace_sb_esc(b, p, n);
		trace_sb_lit(b, "\"");
		p += n + 1;
	}
	trace_sb_lit(b, "]");
	if (ev->flags & 1)
		trace_sb_lit(b, "...");
}

json_t *trace_json_str(const char *s)
{
	json_t *j = json_string(s);
	if (j)
		return j;
	/* Not UTF-8 (paths are bytes): escape, so distinct paths stay distinct. */
	trace_sbuf b = {0};
	trace_sb_esc(&b, s, strlen(s));
	j = b.oom ? NULL : json_string(trace_sb_str(&b));
	trace_sb_free(&b);
	return j;
}

/* ---- maps ---------------------------------------------------------------------- */

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int map_grow(trace_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	trace_map n = {.keys = calloc(cap, sizeof(uint64_t)),
		       .vals = calloc(cap, sizeof(void *)),
		       .used = calloc(cap, 1),
		       .cap = cap,
		       .n = m->n};
	if (!n.keys || !n.vals || !n.used) {
		free(n.keys);
		free(n.vals);
		free(n.used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = hash64(m->keys[i]) & (cap - 1);
		while (n.used[j])
			j = (j + 1) & (cap - 1);
		n.used[j] = 1;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	free(m->used);
	*m = n;
	return 0;
}

void **trace_map_slot(trace_map *m, uint64_t key)
{
	if ((m->n + 1) * 2 > m->cap && map_grow(m) < 0)
		return NULL;
	size_t j = hash64(key) & (m->cap - 1);
	while (m->used[j]) {
		if (m->keys[j] == key)
			return &m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	m->used[j] = 1;
	m->keys[j] = key;
	m->vals[j] = NULL;
	m->n++;
	return &m->vals[j];
}

void *trace_map_get(const trace_map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t j = hash64(key) & (m->cap - 1);
	while (m->used[j]) {
		if (m->keys[j] == key)
			return m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

void trace_map_free(trace_map *m, void (*free_val)(void *))
{
	for (size_t i = 0; free_val && i < m->cap; i++)
		if (m->used[i])
			free_val(m->vals[i]);
	free(m->keys);
	free(m->vals);
	free(m->used);
	*m = (trace_map){0};
}

static int smap_grow(trace_smap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	char **keys = calloc(cap, sizeof(char *));
	void **vals = calloc(cap, sizeof(void *));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = hash_str(m->keys[i]) & (cap - 1);
		while (keys[j])
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

/* The index of key's entry, inserted when absent; -1 on ENOMEM. */
static ssize_t smap_find(trace_smap *m, const char *key)
{
	if ((m->n + 1) * 2 > m->cap && smap_grow(m) < 0)
		return -1;
	size_t j = hash_str(key) & (m->cap - 1);
	while (m->keys[j]) {
		if (streq(m->keys[j], key))
			return j;
		j = (j + 1) & (m->cap - 1);
	}
	if (!(m->keys[j] = strdup(key)))
		return -1;
	m->vals[j] = NULL;
	m->n++;
	return j;
}

void **trace_smap_slot(trace_smap *m, const char *key)
{
	ssize_t j = smap_find(m, key);
	return j < 0 ? NULL : &m->vals[j];
}

const char *trace_smap_intern(trace_smap *m, const char *key)
{
	ssize_t j = smap_find(m, key);
	return j < 0 ? NULL : m->keys[j];
}

void trace_smap_free(trace_smap *m, void (*free_val)(void *))
{
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		free(m->keys[i]);
		if (free_val)
			free_val(m->vals[i]);
	}
	free(m->keys);
	free(m->vals);
	*m = (trace_smap){0};
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **trace_smap_sorted(const trace_smap *m)
{
	const char **v = malloc((m->n + 1) * sizeof(char *));
	if (!v)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			v[k++] = m->keys[i];
	qsort(v, k, sizeof(char *), cmp_strp);
	v[k] = NULL;
	return v;
}

/* ---- flags ---------------------------------------------------------------------- */

typedef struct flag {
	uint64_t v;
	const char *n;
} flag;

/* Multi-bit flags come before the single bits they contain (O_SYNC holds
 * O_DSYNC, O_TMPFILE holds O_DIRECTORY). */
static const flag open_flags[] = {
    {O_CREAT, "O_CREAT"},
    {O_EXCL, "O_EXCL"},
    {O_NOCTTY, "O_NOCTTY"},
    {O_TRUNC, "O_TRUNC"},
    {O_APPEND, "O_APPEND"},
    {O_NONBLOCK, "O_NONBLOCK"},
    {O_SYNC, "O_SYNC"},
    {O_DSYNC, "O_DSYNC"},
    {O_ASYNC, "O_ASYNC"},
    {O_DIRECT, "O_DIRECT"},
    {KO_LARGEFILE, "O_LARGEFILE"},
    {O_TMPFILE, "O_TMPFILE"},
    {O_DIRECTORY, "O_DIRECTORY"},
    {O_NOFOLLOW, "O_NOFOLLOW"},
    {O_NOATIME, "O_NOATIME"},
    {O_CLOEXEC, "O_CLOEXEC"},
    {O_PATH, "O_PATH"},
};
static const flag prot_flags[] = {
    {PROT_READ, "PROT_READ"},		{PROT_WRITE, "PROT_WRITE"},	{PROT_EXEC, "PROT_EXEC"},
    {PROT_GROWSDOWN, "PROT_GROWSDOWN"}, {PROT_GROWSUP, "PROT_GROWSUP"},
};
static const flag map_flags[] = {
    {MAP_FIXED, "MAP_FIXED"},		{MAP_ANONYMOUS, "MAP_ANONYMOUS"},
#ifdef MAP_32BIT
    {MAP_32BIT, "MAP_32BIT"},
#endif
    {MAP_GROWSDOWN, "MAP_GROWSDOWN"},	{MAP_DENYWRITE, "MAP_DENYWRITE"},
    {MAP_EXECUTABLE, "MAP_EXECUTABLE"}, {MAP_LOCKED, "MAP_LOCKED"},
    {MAP_NORESERVE, "MAP_NORESERVE"},	{MAP_POPULATE, "MAP_POPULATE"},
    {MAP_NONBLOCK, "MAP_NONBLOCK"},	{MAP_STACK, "MAP_STACK"},
    {MAP_HUGETLB, "MAP_HUGETLB"},	{0x80000, "MAP_SYNC"},
    {0x100000, "MAP_FIXED_NOREPLACE"},
};
#define NS_FLAGS                                                                                             \
	{CLONE_NEWNS, "CLONE_NEWNS"}, {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}, {CLONE_NEWUTS, "CLONE_NEWUTS"},  \
	    {CLONE_NEWIPC, "CLONE_NEWIPC"}, {CLONE_NEWUSER, "CLONE_NEWUSER"},                                \
	    {CLONE_NEWPID, "CLONE_NEWPID"},                                                                  \
	{                                                                                                    \
		CLONE_NEWNET, "CLONE_NEWNET"                                                                 \
	}
static const flag clone_flags[] = {
    {CLONE_VM, "CLONE_VM"},
    {CLONE_FS, "CLONE_FS"},
    {CLONE_FILES, "CLONE_FILES"},
    {CLONE_SIGHAND, "CLONE_SIGHAND"},
    {CLONE_PIDFD, "CLONE_PIDFD"},
    {CLONE_PTRACE, "CLONE_PTRACE"},
    {CLONE_VFORK, "CLONE_VFORK"},
    {CLONE_PARENT, "CLONE_PARENT"},
    {CLONE_THREAD, "CLONE_THREAD"},
    {CLONE_SYSVSEM, "CLONE_SYSVSEM"},
    {CLONE_SETTLS, "CLONE_SETTLS"},
    {CLONE_PARENT_SETTID, "CLONE_PARENT_SETTID"},
    {CLONE_CHILD_CLEARTID, "CLONE_CHILD_CLEARTID"},
    {CLONE_DETACHED, "CLONE_DETACHED"},
    {CLONE_UNTRACED, "CLONE_UNTRACED"},
    {CLONE_CHILD_SETTID, "CLONE_CHILD_SETTID"},
    {CLONE_IO, "CLONE_IO"},
    NS_FLAGS,
};
static const flag unshare_flags[] = {
    {CLONE_FILES, "CLONE_FILES"},     {CLONE_FS, "CLONE_FS"},
    {CLONE_SYSVSEM, "CLONE_SYSVSEM"}, {CLONE_VM, "CLONE_VM"},
    {CLONE_SIGHAND, "CLONE_SIGHAND"}, {CLONE_THREAD, "CLONE_THREAD"},
    {0x80, "CLONE_NEWTIME"},	      NS_FLAGS,
};
static const flag at_flags[] = {
    {AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"},
    {AT_SYMLINK_FOLLOW, "AT_SYMLINK_FOLLOW"},
    {AT_NO_AUTOMOUNT, "AT_NO_AUTOMOUNT"},
    {AT_EMPTY_PATH, "AT_EMPTY_PATH"},
    {0x2000, "AT_STATX_FORCE_SYNC"},
    {0x4000, "AT_STATX_DONT_SYNC"},
    {0x8000, "AT_RECURSIVE"},
};
static const flag at_remove[] = {{AT_REMOVEDIR, "AT_REMOVEDIR"}};
static const flag at_eaccess[] = {{AT_EACCESS, "AT_EACCESS"},
				  {AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"},
				  {AT_EMPTY_PATH, "AT_EMPTY_PATH"}};
static const flag access_flags[] = {{R_OK, "R_OK"}, {W_OK, "W_OK"}, {X_OK, "X_OK"}};
static const flag sock_flags[] = {{SOCK_NONBLOCK, "SOCK_NONBLOCK"}, {SOCK_CLOEXEC, "SOCK_CLOEXEC"}};
static const flag fd_flags[] = {{FD_CLOEXEC, "FD_CLOEXEC"}};

/* Exact values. */
static const flag whence_names[] = {{SEEK_SET, "SEEK_SET"},
				    {SEEK_CUR, "SEEK_CUR"},
				    {SEEK_END, "SEEK_END"},
				    {SEEK_DATA, "SEEK_DATA"},
				    {SEEK_HOLE, "SEEK_HOLE"}};
static const flag af_names[] = {
    {AF_UNSPEC, "AF_UNSPEC"},	    {AF_UNIX, "AF_UNIX"},	{AF_INET, "AF_INET"},
    {AF_INET6, "AF_INET6"},	    {AF_NETLINK, "AF_NETLINK"}, {AF_PACKET, "AF_PACKET"},
    {AF_BLUETOOTH, "AF_BLUETOOTH"}, {AF_ALG, "AF_ALG"},		{AF_VSOCK, "AF_VSOCK"}};
static const flag socktype_names[] = {
    {SOCK_STREAM, "SOCK_STREAM"}, {SOCK_DGRAM, "SOCK_DGRAM"},	      {SOCK_RAW, "SOCK_RAW"},
    {SOCK_RDM, "SOCK_RDM"},	  {SOCK_SEQPACKET, "SOCK_SEQPACKET"}, {SOCK_DCCP, "SOCK_DCCP"},
    {SOCK_PACKET, "SOCK_PACKET"}};
static const flag fcntl_names[] = {
    {F_DUPFD, "F_DUPFD"},	    {F_GETFD, "F_GETFD"},	    {F_SETFD, "F_SETFD"},
    {F_GETFL, "F_GETFL"},	    {F_SETFL, "F_SETFL"},	    {F_GETLK, "F_GETLK"},
    {F_SETLK, "F_SETLK"},	    {F_SETLKW, "F_SETLKW"},	    {F_SETOWN, "F_SETOWN"},
    {F_GETOWN, "F_GETOWN"},	    {F_SETSIG, "F_SETSIG"},	    {F_GETSIG, "F_GETSIG"},
    {F_SETOWN_EX, "F_SETOWN_EX"},   {F_GETOWN_EX, "F_GETOWN_EX"},   {F_OFD_GETLK, "F_OFD_GETLK"},
    {F_OFD_SETLK, "F_OFD_SETLK"},   {F_OFD_SETLKW, "F_OFD_SETLKW"}, {F_SETLEASE, "F_SETLEASE"},
    {F_GETLEASE, "F_GETLEASE"},	    {F_NOTIFY, "F_NOTIFY"},	    {F_DUPFD_CLOEXEC, "F_DUPFD_CLOEXEC"},
    {F_SETPIPE_SZ, "F_SETPIPE_SZ"}, {F_GETPIPE_SZ, "F_GETPIPE_SZ"}, {F_ADD_SEALS, "F_ADD_SEALS"},
    {F_GET_SEALS, "F_GET_SEALS"},
};
static const flag how_names[] = {
    {SIG_BLOCK, "SIG_BLOCK"}, {SIG_UNBLOCK, "SIG_UNBLOCK"}, {SIG_SETMASK, "SIG_SETMASK"}};

static void sb_flags(trace_sbuf *b, uint64_t v, const flag *t, size_t n, bool first)
{
	for (size_t i = 0; i < n; i++) {
		if (!t[i].v || (v & t[i].v) != t[i].v)
			continue;
		if (!first)
			trace_sb_lit(b, "|");
		trace_sb_addf(b, "%s", t[i].n);
		v &= ~t[i].v;
		first = false;
	}
	if (v)
		trace_sb_addf(b, "%s%#" PRIx64, first ? "" : "|", v);
	else if (first)
		trace_sb_lit(b, "0");
}

static void sb_enum(trace_sbuf *b, int64_t v, const flag *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((int64_t)t[i].v == v) {
			trace_sb_addf(b, "%s", t[i].n);
			return;
		}
	trace_sb_addf(b, "%" PRId64, v);
}

static void sb_open_flags(trace_sbuf *b, uint64_t v)
{
	v &= 0xffffffffu;
	static const char *const acc[] = {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"};
	trace_sb_addf(b, "%s", acc[v & O_ACCMODE]);
	sb_flags(b, v & ~(uint64_t)O_ACCMODE, open_flags, ARRAY_SIZE(open_flags), false);
}

/* ---- the syscall table ------------------------------------------------------------- */

/* What a call does to the descriptor table. */
enum {
	OP_NONE,
	OP_OPEN,	   /* path (string 0) relative to cwd, flags arg 1 */
	OP_OPENAT,	   /* dirfd arg 0, path (string 0), flags arg 2 */
	OP_OPENAT2,	   /* flags inside struct open_how (not captured) */
	OP_CREAT,	   /* O_CREAT|O_WRONLY|O_TRUNC */
	OP_OPEN_TREE,	   /* like openat, OPEN_TREE_CLOEXEC = O_CLOEXEC in arg 2 */
	OP_OPEN_BY_HANDLE, /* the file behind a handle: path unknown */
	OP_DUP,
	OP_DUP2,
	OP_DUP3,
	OP_FCNTL,
	OP_CLOSE,
	OP_CLOSE_RANGE,
	OP_SOCKET,
	OP_ACCEPT,
	OP_ANON,  /* label; close-on-exec from cl_arg & cl_mask */
	OP_MEMFD, /* "memfd:" + name */
	OP_IOCTL, /* FIOCLEX / FIONCLEX */
};

/* Argument letters: d int, l long, u unsigned, x pointer/hex, s string, f fd,
 * X plain hex (0 is "0", not NULL), o open flags, F flags without access mode, m mode, a access mode, P prot,
 * M mmap flags, c clone flags, U unshare flags, C fcntl cmd (decodes the
 * next argument), A AT_* flags, R AT_REMOVEDIR, E faccessat2 flags, w
 * whence, S signal, h sigprocmask how, k address family, t socket type, T
 * socket flags. Which arguments are strings and descriptors is taken from
 * trace_sys.h; the letters add the rest. Unlisted calls print six X args. */
typedef struct sys_info {
	const char *name, *sig;
	uint8_t op;
	int8_t cl_arg;
	uint32_t cl_mask;
	const char *label;
} sys_info;

#define G(n, s)                                                                                              \
	{                                                                                                    \
		n, s, OP_NONE, -1, 0, NULL                                                                   \
	}
#define O(n, s, op)                                                                                          \
	{                                                                                                    \
		n, s, op, -1, 0, NULL                                                                        \
	}
#define AN(n, s, label, arg, mask)                                                                           \
	{                                                                                                    \
		n, s, OP_ANON, arg, mask, label                                                              \
	}
static const sys_info infos[] = {
    G("read", "fxu"),
    G("write", "fxu"),
    O("open", "som", OP_OPEN),
    O("close", "f", OP_CLOSE),
    G("stat", "sx"),
    G("fstat", "fx"),
    G("lstat", "sx"),
    G("poll", "xud"),
    G("lseek", "flw"),
    G("mmap", "xuPMfX"),
    G("mprotect", "xuP"),
    G("munmap", "xu"),
    G("brk", "x"),
    G("rt_sigaction", "Sxxu"),
    G("rt_sigprocmask", "hxxu"),
    G("rt_sigreturn", ""),
    O("ioctl", "fxx", OP_IOCTL),
    G("pread64", "fxul"),
    G("pwrite64", "fxul"),
    G("readv", "fxd"),
    G("writev", "fxd"),
    G("access", "sa"),
    G("pipe", "x"),
    G("select", "dxxxx"),
    G("sched_yield", ""),
    G("mremap", "xuuxx"),
    G("msync", "xux"),
    G("mincore", "xux"),
    G("madvise", "xud"),
    O("dup", "f", OP_DUP),
    O("dup2", "ff", OP_DUP2),
    G("pause", ""),
    G("nanosleep", "xx"),
    G("getitimer", "dx"),
    G("alarm", "u"),
    G("setitimer", "dxx"),
    G("getpid", ""),
    G("sendfile", "ffxu"),
    O("socket", "ktd", OP_SOCKET),
    G("connect", "fxd"),
    O("accept", "fxx", OP_ACCEPT),
    G("sendto", "fxuxxd"),
    G("recvfrom", "fxuxxx"),
    G("sendmsg", "fxx"),
    G("recvmsg", "fxx"),
    G("shutdown", "fd"),
    G("bind", "fxd"),
    G("listen", "fd"),
    G("getsockname", "fxx"),
    G("getpeername", "fxx"),
    G("socketpair", "ktdx"),
    G("setsockopt", "fddxd"),
    G("getsockopt", "fddxx"),
    G("clone", "cxxxx"),
    G("fork", ""),
    G("vfork", ""),
    G("execve", "sxx"),
    G("exit", "d"),
    G("wait4", "dxdx"),
    G("kill", "dS"),
    G("uname", "x"),
    O("fcntl", "fCx", OP_FCNTL),
    G("flock", "fd"),
    G("fsync", "f"),
    G("fdatasync", "f"),
    G("truncate", "sl"),
    G("ftruncate", "fl"),
    G("getdents", "fxu"),
    G("getcwd", "xu"),
    G("chdir", "s"),
    G("fchdir", "f"),
    G("rename", "ss"),
    G("mkdir", "sm"),
    G("rmdir", "s"),
    O("creat", "sm", OP_CREAT),
    G("link", "ss"),
    G("unlink", "s"),
    G("symlink", "ss"),
    G("readlink", "sxu"),
    G("chmod", "sm"),
    G("fchmod", "fm"),
    G("chown", "sdd"),
    G("fchown", "fdd"),
    G("lchown", "sdd"),
    G("umask", "m"),
    G("gettimeofday", "xx"),
    G("getrlimit", "dx"),
    G("getrusage", "dx"),
    G("sysinfo", "x"),
    G("times", "x"),
    G("ptrace", "ddxx"),
    G("getuid", ""),
    G("getgid", ""),
    G("setuid", "d"),
    G("setgid", "d"),
    G("geteuid", ""),
    G("getegid", ""),
    G("setpgid", "dd"),
    G("getppid", ""),
    G("getpgrp", ""),
    G("setsid", ""),
    G("setreuid", "dd"),
    G("setregid", "dd"),
    G("getgroups", "dx"),
    G("setgroups", "dx"),
    G("setresuid", "ddd"),
    G("getresuid", "xxx"),
    G("setresgid", "ddd"),
    G("getresgid", "xxx"),
    G("getpgid", "d"),
    G("getsid", "d"),
    G("setfsuid", "d"),
    G("setfsgid", "d"),
    G("capget", "xx"),
    G("capset", "xx"),
    G("rt_sigpending", "xu"),
    G("rt_sigtimedwait", "xxxu"),
    G("rt_sigqueueinfo", "dSx"),
    G("rt_sigsuspend", "xu"),
    G("sigaltstack", "xx"),
    G("utime", "sx"),
    G("mknod", "smu"),
    G("personality", "x"),
    G("statfs", "sx"),
    G("fstatfs", "fx"),
    G("getpriority", "dd"),
    G("setpriority", "ddd"),
    G("sched_setparam", "dx"),
    G("sched_getparam", "dx"),
    G("sched_setscheduler", "ddx"),
    G("sched_getscheduler", "d"),
    G("mlock", "xu"),
    G("munlock", "xu"),
    G("mlockall", "x"),
    G("munlockall", ""),
    G("prctl", "dxxxx"),
    G("arch_prctl", "dx"),
    G("setrlimit", "dx"),
    G("chroot", "s"),
    G("sync", ""),
    G("acct", "s"),
    G("settimeofday", "xx"),
    G("mount", "ssxxx"),
    G("umount2", "sd"),
    G("swapon", "sd"),
    G("swapoff", "s"),
    G("reboot", "xxxx"),
    G("sethostname", "su"),
    G("setdomainname", "su"),
    G("gettid", ""),
    G("readahead", "flu"),
    G("setxattr", "ssxud"),
    G("lsetxattr", "ssxud"),
    G("fsetxattr", "fsxud"),
    G("getxattr", "ssxu"),
    G("lgetxattr", "ssxu"),
    G("fgetxattr", "fsxu"),
    G("listxattr", "sxu"),
    G("llistxattr", "sxu"),
    G("flistxattr", "fxu"),
    G("removexattr", "ss"),
    G("lremovexattr", "ss"),
    G("fremovexattr", "fs"),
    G("tkill", "dS"),
    G("time", "x"),
    G("futex", "xduxxu"),
    G("sched_setaffinity", "dux"),
    G("sched_getaffinity", "dux"),
    AN("epoll_create", "d", "anon_inode:[eventpoll]", -1, 0),
    G("getdents64", "fxu"),
    G("set_tid_address", "x"),
    G("restart_syscall", ""),
    G("fadvise64", "flld"),
    G("timer_create", "dxx"),
    G("timer_settime", "ddxx"),
    G("timer_gettime", "dx"),
    G("timer_getoverrun", "d"),
    G("timer_delete", "d"),
    G("clock_settime", "dx"),
    G("clock_gettime", "dx"),
    G("clock_getres", "dx"),
    G("clock_nanosleep", "ddxx"),
    G("exit_group", "d"),
    G("epoll_wait", "fxdd"),
    G("epoll_ctl", "fdfx"),
    G("tgkill", "ddS"),
    G("utimes", "sx"),
    G("waitid", "ddxdx"),
    AN("inotify_init", "", "anon_inode:inotify", -1, 0),
    G("inotify_add_watch", "fsx"),
    G("inotify_rm_watch", "fd"),
    O("openat", "fsom", OP_OPENAT),
    G("mkdirat", "fsm"),
    G("mknodat", "fsmu"),
    G("fchownat", "fsddA"),
    G("futimesat", "fsx"),
    G("newfstatat", "fsxA"),
    G("unlinkat", "fsR"),
    G("renameat", "fsfs"),
    G("linkat", "fsfsA"),
    G("symlinkat", "sfs"),
    G("readlinkat", "fsxu"),
    G("fchmodat", "fsm"),
    G("faccessat", "fsa"),
    G("pselect6", "dxxxxx"),
    G("ppoll", "xuxxu"),
    G("unshare", "U"),
    G("set_robust_list", "xu"),
    G("get_robust_list", "dxx"),
    G("splice", "fxfxux"),
    G("tee", "ffux"),
    G("sync_file_range", "fllx"),
    G("vmsplice", "fxux"),
    G("utimensat", "fsxA"),
    G("epoll_pwait", "fxddxu"),
    AN("signalfd", "fxu", "anon_inode:[signalfd]", -1, 0),
    AN("timerfd_create", "dF", "anon_inode:[timerfd]", 1, O_CLOEXEC),
    AN("eventfd", "u", "anon_inode:[eventfd]", -1, 0),
    G("fallocate", "fdll"),
    G("timerfd_settime", "fdxx"),
    G("timerfd_gettime", "fx"),
    O("accept4", "fxxT", OP_ACCEPT),
    AN("signalfd4", "fxuF", "anon_inode:[signalfd]", 3, O_CLOEXEC),
    AN("eventfd2", "uF", "anon_inode:[eventfd]", 1, O_CLOEXEC),
    AN("epoll_create1", "F", "anon_inode:[eventpoll]", 0, O_CLOEXEC),
    O("dup3", "ffF", OP_DUP3),
    G("pipe2", "xF"),
    AN("inotify_init1", "F", "anon_inode:inotify", 0, O_CLOEXEC),
    G("preadv", "fxduu"),
    G("pwritev", "fxduu"),
    G("rt_tgsigqueueinfo", "ddSx"),
    AN("perf_event_open", "xddfx", "anon_inode:[perf_event]", 4, 8 /* PERF_FLAG_FD_CLOEXEC */),
    G("recvmmsg", "fxuxx"),
    AN("fanotify_init", "xx", "anon_inode:[fanotify]", 0, 1 /* FAN_CLOEXEC */),
    G("fanotify_mark", "fxxfx"),
    G("prlimit64", "ddxx"),
    G("name_to_handle_at", "fsxxA"),
    O("open_by_handle_at", "fxo", OP_OPEN_BY_HANDLE),
    G("syncfs", "f"),
    G("sendmmsg", "fxuu"),
    G("setns", "fU"),
    G("getcpu", "xxx"),
    G("process_vm_readv", "dxuxux"),
    G("process_vm_writev", "dxuxux"),
    G("kcmp", "dddxx"),
    G("finit_module", "fsd"),
    G("sched_setattr", "dxu"),
    G("sched_getattr", "dxuu"),
    G("renameat2", "fsfsx"),
    G("seccomp", "dxx"),
    G("getrandom", "xux"),
    {"memfd_create", "sx", OP_MEMFD, 1, 1 /* MFD_CLOEXEC */, NULL},
    G("bpf", "dxu"),
    G("execveat", "fsxxA"),
    AN("userfaultfd", "F", "anon_inode:[userfaultfd]", 0, O_CLOEXEC),
    G("membarrier", "dxd"),
    G("mlock2", "xux"),
    G("copy_file_range", "fxfxux"),
    G("preadv2", "fxduux"),
    G("pwritev2", "fxduux"),
    G("pkey_mprotect", "xuPd"),
    G("pkey_alloc", "xx"),
    G("pkey_free", "d"),
    G("statx", "fsAxx"),
    G("rseq", "xuxx"),
    G("pidfd_send_signal", "fSxx"),
    AN("io_uring_setup", "ux", "anon_inode:[io_uring]", CL_ALWAYS, 0),
    G("io_uring_enter", "fuuxxu"),
    G("io_uring_register", "fuxu"),
    {"open_tree", "fsx", OP_OPEN_TREE, -1, 0, NULL},
    G("move_mount", "fsfsx"),
    AN("fsopen", "sx", "anon_inode:[fscontext]", 1, 1 /* FSOPEN_CLOEXEC */),
    G("fsconfig", "fdxxd"),
    AN("fsmount", "fxx", "anon_inode:[fsmount]", 1, 1 /* FSMOUNT_CLOEXEC */),
    AN("fspick", "fsx", "anon_inode:[fscontext]", 2, 1 /* FSPICK_CLOEXEC */),
    AN("pidfd_open", "dx", "anon_inode:[pidfd]", CL_ALWAYS, 0),
    G("clone3", "xu"),
    O("close_range", "uuX", OP_CLOSE_RANGE),
    O("openat2", "fsxu", OP_OPENAT2),
    G("pidfd_getfd", "fdx"),
    G("faccessat2", "fsaE"),
    G("process_madvise", "fxuxx"),
    G("epoll_pwait2", "fxdxxu"),
    G("mount_setattr", "fsxxu"),
    AN("landlock_create_ruleset", "xux", "anon_inode:landlock-ruleset", CL_ALWAYS, 0),
    G("landlock_add_rule", "fdxx"),
    G("landlock_restrict_self", "fx"),
    AN("memfd_secret", "F", "anon_inode:[secretmem]", 0, O_CLOEXEC),
    G("process_mrelease", "fx"),
    G("futex_waitv", "xuxxd"),
    G("cachestat", "fxxx"),
    G("fchmodat2", "fsmA"),
};

static struct {
	pthread_once_t once;
	const sys_info *info[TRACE_NR_MAX];
} tab = {.once = PTHREAD_ONCE_INIT};

static void tab_init(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(infos); i++) {
		int nr = trace_sys_nr(infos[i].name);
		if (nr >= 0 && nr < TRACE_NR_MAX)
			tab.info[nr] = &infos[i];
	}
}

static const sys_info *info_of(int32_t nr)
{
	if (nr < 0 || nr >= TRACE_NR_MAX)
		return NULL;
	pthread_once(&tab.once, tab_init);
	return tab.info[nr];
}

/* The argument index of the k-th string argument, or -1. */
static int str_arg_index(int32_t nr, int k)
{
	uint8_t m = trace_sys_str_args(nr);
	for (int i = 0; i < 6; i++)
		if (m & (1u << i) && k-- == 0)
			return i;
	return -1;
}

/* ---- the process and descriptor model ------------------------------------------------ */

static void proc_free(void *v)
{
	trace_proc *p = v;
	if (!p)
		return;
	for (size_t i = 0; i < p->n_fds; i++)
		free(p->fds[i].path);
	free(p->fds);
	free(p->name);
	free(p);
}

int trace_check_arch(const struct trace_file_header *h, sbx_err **err)
{
	if (h->arch != TRACE_ARCH_NATIVE)
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "trace recorded on architecture 0x%x, this host is 0x%x: syscall numbers differ", h->arch,
		    TRACE_ARCH_NATIVE);
	return 0;
}

int trace_state_init(trace_state *st, const struct trace_file_header *h, sbx_err **err)
{
	*st = (trace_state){.hdr = *h};
	return trace_check_arch(h, err);
}

void trace_state_free(trace_state *st)
{
	trace_map_free(&st->procs, proc_free);
}

trace_proc *trace_state_proc(const trace_state *st, uint32_t pid)
{
	return trace_map_get(&st->procs, pid);
}

static trace_proc *proc_get(trace_state *st, uint32_t pid)
{
	void **slot = trace_map_slot(&st->procs, pid);
	if (!slot)
		return NULL;
	if (!*slot) {
		trace_proc *p = calloc(1, sizeof(*p));
		if (!p)
			return NULL; /* the NULL value left behind reads as absent */
		p->pid = pid;
		*slot = p;
		st->n_procs++;
	}
	return *slot;
}

static size_t fd_pos(const trace_proc *p, int32_t fd, bool *found)
{
	size_t lo = 0, hi = p->n_fds;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->fds[mid].fd < fd)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < p->n_fds && p->fds[lo].fd == fd;
	return lo;
}

static trace_fd *fd_find(const trace_proc *p, int64_t fd)
{
	if (!p || fd < 0 || fd > INT32_MAX)
		return NULL;
	bool found;
	size_t i = fd_pos(p, (int32_t)fd, &found);
	return found ? &p->fds[i] : NULL;
}

const trace_fd *trace_state_fd(const trace_state *st, uint32_t pid, int64_t fd)
{
	return fd_find(trace_state_proc(st, pid), fd);
}

static int fd_put(trace_proc *p, int64_t fd, uint8_t kind, bool cloexec, const char *path)
{
	if (fd < 0 || fd > INT32_MAX)
		return 0;
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	bool found;
	size_t i = fd_pos(p, (int32_t)fd, &found);
	if (found) {
		free(p->fds[i].path);
	} else {
		if (p->n_fds == p->cap_fds) {
			size_t cap = p->cap_fds ? p->cap_fds * 2 : 8;
			trace_fd *n = realloc(p->fds, cap * sizeof(*n));
			if (!n) {
				free(copy);
				return -ENOMEM;
			}
			p->fds = n;
			p->cap_fds = cap;
		}
		memmove(p->fds + i + 1, p->fds + i, (p->n_fds - i) * sizeof(*p->fds));
		p->n_fds++;
	}
	p->fds[i] = (trace_fd){.fd = (int32_t)fd, .kind = kind, .cloexec = cloexec, .path = copy};
	return 0;
}

static void fd_del_range(trace_proc *p, uint64_t first, uint64_t last)
{
	size_t o = 0;
	for (size_t i = 0; i < p->n_fds; i++) {
		if ((uint64_t)p->fds[i].fd >= first && (uint64_t)p->fds[i].fd <= last)
			free(p->fds[i].path);
		else
			p->fds[o++] = p->fds[i];
	}
	p->n_fds = o;
}

static int fd_copy(trace_proc *to, const trace_proc *from)
{
	for (size_t i = 0; i < from->n_fds; i++) {
		const trace_fd *f = &from->fds[i];
		bool found;
		fd_pos(to, f->fd, &found);
		if (!found && fd_put(to, f->fd, f->kind, f->cloexec, f->path) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* dirfd's path joined with path, into out (capped). */
static void join_path(const trace_state *st, uint32_t pid, bool have_dirfd, int64_t dirfd, const char *path,
		      trace_sbuf *out)
{
	const trace_fd *d = NULL;
	if (path[0] != '/' && have_dirfd && (int32_t)dirfd != AT_FDCWD)
		d = trace_state_fd(st, pid, (int32_t)dirfd);
	if (d && d->kind == TRACE_FD_FILE) {
		size_t n = strlen(d->path);
		trace_sb_add(out, d->path, n);
		if (*path) {
			if (!n || d->path[n - 1] != '/')
				trace_sb_lit(out, "/");
			trace_sb_add(out, path, strlen(path));
		}
	} else
		trace_sb_add(out, path, strlen(path));
	if (out->len > PATH_CAP && !out->oom) {
		out->len = PATH_CAP;
		memcpy(out->p + PATH_CAP - 3, "...", 4);
	}
}

bool trace_state_arg_path(const trace_state *st, const trace_ev *ev, int k, trace_sbuf *out)
{
	if (ev->type != TR_SYSCALL || k < 0 || k > 1 || !ev->sys.str[k])
		return false;
	int i = str_arg_index(ev->sys.nr, k);
	if (i < 0)
		return false;
	bool have_dirfd = i > 0 && (trace_sys_fd_args(ev->sys.nr) & (1u << (i - 1)));
	join_path(st, ev->pid, have_dirfd, have_dirfd ? (int64_t)ev->sys.args[i - 1] : 0, ev->sys.str[k],
		  out);
	if (ev->flags & (k ? TRS_STR1_TRUNC : TRS_STR0_TRUNC))
		trace_sb_lit(out, "...");
	return true;
}

/* The path a successful open-like call's new descriptor refers to. */
static int set_opened(trace_state *st, trace_proc *p, const trace_ev *ev, bool cloexec)
{
	trace_sbuf b = {0};
	if (!trace_state_arg_path(st, ev, 0, &b))
		trace_sb_lit(&b, "?");
	int r = b.oom ? -ENOMEM : fd_put(p, ev->sys.ret, TRACE_FD_FILE, cloexec, trace_sb_str(&b));
	trace_sb_free(&b);
	return r;
}

static int dup_fd(trace_proc *p, int64_t from, int64_t to, bool cloexec)
{
	const trace_fd *f = fd_find(p, from);
	if (!f) {
		/* the source is unknown: so is the copy (it may replace a known one) */
		if (to >= 0 && to <= INT32_MAX)
			fd_del_range(p, (uint64_t)to, (uint64_t)to);
		return 0;
	}
	if (from == to)
		return 0;
	uint8_t kind = f->kind;
	_cleanup_free_ char *path = strdup(f->path); /* fd_set may move the array f points into */
	if (!path)
		return -ENOMEM;
	return fd_put(p, to, kind, cloexec, path);
}

static int apply_sys(trace_state *st, const trace_ev *ev)
{
	const sys_info *si = info_of(ev->sys.nr);
	if (!si || si->op == OP_NONE)
		return 0;
	trace_proc *p = proc_get(st, ev->pid);
	if (!p)
		return -ENOMEM;
	bool has = ev->flags & TRS_HAS_RET;
	int64_t ret = ev->sys.ret;
	const uint64_t *a = ev->sys.args;
	/* close releases the descriptor even when it reports an error (EINTR,
	 * EIO); only EBADF means there was none. */
	if (si->op == OP_CLOSE) {
		if ((!has || ret != -EBADF) && (int32_t)a[0] >= 0)
			fd_del_range(p, (uint32_t)(int32_t)a[0], (uint32_t)(int32_t)a[0]);
		return 0;
	}
	if (!has || ret < 0)
		return 0;
	switch (si->op) {
	case OP_OPEN:
	case OP_OPENAT:
	case OP_OPEN_TREE: {
		uint64_t fl = si->op == OP_OPEN ? a[1] : a[2];
		return set_opened(st, p, ev, fl & O_CLOEXEC);
	}
	case OP_OPENAT2:
	case OP_CREAT:
		return set_opened(st, p, ev, false);
	case OP_OPEN_BY_HANDLE:
		return fd_put(p, ret, TRACE_FD_FILE, a[2] & O_CLOEXEC, "(file handle)");
	case OP_DUP:
	case OP_DUP2:
		return dup_fd(p, (int32_t)a[0], ret, false);
	case OP_DUP3:
		return dup_fd(p, (int32_t)a[0], ret, a[2] & O_CLOEXEC);
	case OP_FCNTL: {
		int cmd = (int)a[1];
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			return dup_fd(p, (int32_t)a[0], ret, cmd == F_DUPFD_CLOEXEC);
		trace_fd *f = cmd == F_SETFD ? fd_find(p, (int32_t)a[0]) : NULL;
		if (f)
			f->cloexec = a[2] & FD_CLOEXEC;
		return 0;
	}
	case OP_IOCTL: {
		trace_fd *f = fd_find(p, (int32_t)a[0]);
		if (f && ((uint32_t)a[1] == FIOCLEX || (uint32_t)a[1] == FIONCLEX))
			f->cloexec = (uint32_t)a[1] == FIOCLEX;
		return 0;
	}
	case OP_CLOSE_RANGE: {
		uint64_t first = (uint32_t)a[0], last = (uint32_t)a[1];
		if (a[2] & 4 /* CLOSE_RANGE_CLOEXEC */) {
			for (size_t i = 0; i < p->n_fds; i++)
				if ((uint64_t)p->fds[i].fd >= first && (uint64_t)p->fds[i].fd <= last)
					p->fds[i].cloexec = true;
		} else if (first <= last)
			fd_del_range(p, first, last);
		return 0;
	}
	case OP_SOCKET: {
		trace_sbuf b = {0};
		trace_sb_lit(&b, "socket:[");
		sb_enum(&b, (int32_t)a[0], af_names, ARRAY_SIZE(af_names));
		trace_sb_lit(&b, ",");
		sb_enum(&b, (int32_t)a[1] & 0xf, socktype_names, ARRAY_SIZE(socktype_names));
		trace_sb_lit(&b, "]");
		int r =
		    b.oom ? -ENOMEM : fd_put(p, ret, TRACE_FD_SOCKET, a[1] & SOCK_CLOEXEC, trace_sb_str(&b));
		trace_sb_free(&b);
		return r;
	}
	case OP_ACCEPT: {
		const trace_fd *l = trace_state_fd(st, ev->pid, (int32_t)a[0]);
		bool cl = streq(si->name, "accept4") && (a[3] & SOCK_CLOEXEC);
		if (!l)
			return fd_put(p, ret, TRACE_FD_SOCKET, cl, "socket:[accepted]");
		_cleanup_free_ char *path = strdup(l->path);
		return path ? fd_put(p, ret, TRACE_FD_SOCKET, cl, path) : -ENOMEM;
	}
	case OP_ANON: {
		if (streq(si->name, "signalfd4") && (int32_t)a[0] != -1)
			return 0; /* signalfd4 on an existing descriptor updates it */
		bool cl = si->cl_arg == CL_ALWAYS || (si->cl_arg >= 0 && (a[si->cl_arg] & si->cl_mask));
		return fd_put(p, ret, TRACE_FD_OTHER, cl, si->label);
	}
	case OP_MEMFD: {
		trace_sbuf b = {0};
		trace_sb_lit(&b, "memfd:");
		if (ev->sys.str[0])
			trace_sb_add(&b, ev->sys.str[0], strlen(ev->sys.str[0]));
		int r =
		    b.oom ? -ENOMEM : fd_put(p, ret, TRACE_FD_OTHER, a[1] & si->cl_mask, trace_sb_str(&b));
		trace_sb_free(&b);
		return r;
	}
	}
	return 0;
}

static int apply_fork(trace_state *st, const trace_ev *ev)
{
	if (ev->flags & 1) { /* a thread: shares its process's table */
		st->n_threads++;
		return proc_get(st, ev->pid) ? 0 : -ENOMEM;
	}
	trace_proc *parent = proc_get(st, ev->fork.parent_pid);
	if (!parent)
		return -ENOMEM;
	trace_proc *old = trace_state_proc(st, ev->pid);
	if (old && old != parent && !old->forked && !old->exited) {
		/* Seen before its fork record (records of several CPUs): adopt it. */
		old->forked = true;
		if (!old->name && parent->name && !(old->name = strdup(parent->name)))
			return -ENOMEM;
		return fd_copy(old, parent);
	}
	trace_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = ev->pid;
	p->forked = true;
	if ((parent->name && !(p->name = strdup(parent->name))) || fd_copy(p, parent) < 0) {
		proc_free(p);
		return -ENOMEM;
	}
	void **slot = trace_map_slot(&st->procs, ev->pid);
	if (!slot) {
		proc_free(p);
		return -ENOMEM;
	}
	proc_free(*slot); /* a reused pid (or a fork of itself in a hostile stream): after the copy */
	*slot = p;
	st->n_procs++;
	return 0;
}

static int apply_exec(trace_state *st, const trace_ev *ev)
{
	trace_proc *p = proc_get(st, ev->pid);
	if (!p)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < p->n_fds; i++) {
		if (p->fds[i].cloexec)
			free(p->fds[i].path);
		else
			p->fds[o++] = p->fds[i];
	}
	p->n_fds = o;
	const char *name = ev->exec.argv_len && ev->exec.argv[0] ? ev->exec.argv : ev->exec.filename;
	if (name) {
		char *n = strdup(name);
		if (!n)
			return -ENOMEM;
		free(p->name);
		p->name = n;
	}
	p->exited = false;
	return 0;
}

int trace_state_apply(trace_state *st, const trace_ev *ev)
{
	switch (ev->type) {
	case TR_SYSCALL:
		return apply_sys(st, ev);
	case TR_FORK:
		return apply_fork(st, ev);
	case TR_EXEC:
		return apply_exec(st, ev);
	case TR_EXIT:
		if (ev->flags & 1) {
			trace_proc *p = proc_get(st, ev->pid);
			if (!p)
				return -ENOMEM;
			p->exited = true;
			fd_del_range(p, 0, UINT64_MAX); /* all closed by the kernel */
		}
		return 0;
	case TR_DETERM:
		return proc_get(st, ev->pid) ? 0 : -ENOMEM;
	default:
		return 0;
	}
}

/* ---- decoding a syscall ----------------------------------------------------------------- */

static void sb_hex(trace_sbuf *b, uint64_t v)
{
	if (v)
		trace_sb_addf(b, "%#" PRIx64, v);
	else
		trace_sb_lit(b, "NULL");
}

static void sb_fd(trace_sbuf *b, const trace_state *st, uint32_t pid, uint64_t v)
{
	int32_t fd = (int32_t)v;
	if (fd == AT_FDCWD) {
		trace_sb_lit(b, "AT_FDCWD");
		return;
	}
	trace_sb_addf(b, "%" PRId32, fd);
	const trace_fd *f = trace_state_fd(st, pid, fd);
	if (f) {
		trace_sb_lit(b, "<");
		trace_sb_esc(b, f->path, strlen(f->path));
		trace_sb_lit(b, ">");
	}
}

static void sb_str_arg(trace_sbuf *b, const trace_ev *ev, int k, uint64_t ptr)
{
	uint32_t fault = k ? TRS_STR1_FAULT : TRS_STR0_FAULT, trunc = k ? TRS_STR1_TRUNC : TRS_STR0_TRUNC;
	const char *s = ev->sys.str[k];
	if (!s || (ev->flags & fault)) {
		sb_hex(b, ptr);
		return;
	}
	trace_sb_lit(b, "\"");
	trace_sb_esc(b, s, strlen(s));
	trace_sb_lit(b, "\"");
	if (ev->flags & trunc)
		trace_sb_lit(b, "...");
}

/* One non-string, non-descriptor argument by its letter. */
static void sb_arg(trace_sbuf *b, char c, uint64_t v)
{
	switch (c) {
	case 'd':
		trace_sb_addf(b, "%" PRId32, (int32_t)v);
		break;
	case 'l':
		trace_sb_addf(b, "%" PRId64, (int64_t)v);
		break;
	case 'u':
		trace_sb_addf(b, "%" PRIu64, v);
		break;
	case 'o':
		sb_open_flags(b, v);
		break;
	case 'F':
		sb_flags(b, v & 0xffffffffu, open_flags, ARRAY_SIZE(open_flags), true);
		break;
	case 'm':
		trace_sb_addf(b, "%#03o", (unsigned)(v & 07777777));
		break;
	case 'a':
		if ((v & 7) == F_OK)
			trace_sb_lit(b, "F_OK");
		else
			sb_flags(b, v & 0xffffffffu, access_flags, ARRAY_SIZE(access_flags), true);
		break;
	case 'P':
		if (!v)
			trace_sb_lit(b, "PROT_NONE");
		else
			sb_flags(b, v, prot_flags, ARRAY_SIZE(prot_flags), true);
		break;
	case 'M': {
		static const char *const types[] = {"0", "MAP_SHARED", "MAP_PRIVATE", "MAP_SHARED_VALIDATE"};
		uint64_t t = v & 0xf;
		if (t < 4)
			trace_sb_addf(b, "%s", types[t]);
		else
			trace_sb_addf(b, "%#" PRIx64, t);
		if (v & ~(uint64_t)0xf) {
			trace_sb_lit(b, "|");
			sb_flags(b, v & ~(uint64_t)0xf, map_flags, ARRAY_SIZE(map_flags), true);
		}
		break;
	}
	case 'c': {
		/* clone(): the low byte is the exit signal, not a flag */
		uint64_t fl = v & ~(uint64_t)0xff, sig = v & 0xff;
		if (fl || !sig)
			sb_flags(b, fl, clone_flags, ARRAY_SIZE(clone_flags), true);
		if (sig) {
			if (fl)
				trace_sb_lit(b, "|");
			sb_signal(b, sig);
		}
		break;
	}
	case 'U':
		sb_flags(b, v & 0xffffffffu, unshare_flags, ARRAY_SIZE(unshare_flags), true);
		break;
	case 'A':
		sb_flags(b, v & 0xffffffffu, at_flags, ARRAY_SIZE(at_flags), true);
		break;
	case 'R':
		sb_flags(b, v & 0xffffffffu, at_remove, ARRAY_SIZE(at_remove), true);
		break;
	case 'E':
		sb_flags(b, v & 0xffffffffu, at_eaccess, ARRAY_SIZE(at_eaccess), true);
		break;
	case 'w':
		sb_enum(b, (int32_t)v, whence_names, ARRAY_SIZE(whence_names));
		break;
	case 'S':
		sb_signal(b, (int32_t)v);
		break;
	case 'h':
		sb_enum(b, (int32_t)v, how_names, ARRAY_SIZE(how_names));
		break;
	case 'k':
		sb_enum(b, (int32_t)v, af_names, ARRAY_SIZE(af_names));
		break;
	case 't':
		sb_enum(b, (int32_t)v & 0xf, socktype_names, ARRAY_SIZE(socktype_names));
		if (v & ~(uint64_t)0xf & 0xffffffffu) {
			trace_sb_lit(b, "|");
			sb_flags(b, v & ~(uint64_t)0xf & 0xffffffffu, sock_flags, ARRAY_SIZE(sock_flags),
				 true);
		}
		break;
	case 'T':
		sb_flags(b, v & 0xffffffffu, sock_flags, ARRAY_SIZE(sock_flags), true);
		break;
	case 'X':
		trace_sb_addf(b, "%#" PRIx64, v);
		break;
	case 'C':
		sb_enum(b, (int32_t)v, fcntl_names, ARRAY_SIZE(fcntl_names));
		break;
	default:
		sb_hex(b, v);
	}
}

static void dec_reset(trace_dec *d)
{
	for (int i = 0; i < 6; i++) {
		trace_sb_reset(&d->arg[i]);
		trace_sb_reset(&d->fdpath[i]);
		d->fdknown[i] = false;
	}
	trace_sb_reset(&d->ret);
	d->nargs = 0;
	d->ret_fd = -1;
	d->err = false;
}

void trace_dec_args(trace_dec *d, const trace_state *st, const trace_ev *ev)
{
	dec_reset(d);
	int32_t nr = ev->sys.nr;
	d->name = trace_sys_label(nr, d->namebuf);
	const sys_info *si = info_of(nr);
	uint8_t sm = trace_sys_str_args(nr), fm = trace_sys_fd_args(nr);
	int n = si ? (int)strlen(si->sig) : 6;
	for (int i = n; i < 6; i++)
		if ((sm | fm) & (1u << i))
			n = i + 1; /* never hide a captured string */
	int k = 0;
	for (int i = 0; i < n && i < 6; i++) {
		trace_sbuf *b = &d->arg[i];
		uint64_t v = ev->sys.args[i];
		char c = si && i < (int)strlen(si->sig) ? si->sig[i] : 'X';
		if (sm & (1u << i)) {
			if (k < 2)
				sb_str_arg(b, ev, k, v);
			else
				sb_hex(b, v);
			k++;
		} else if ((fm & (1u << i)) || c == 'f') {
			sb_fd(b, st, ev->pid, v);
			const trace_fd *f =
			    (int32_t)v == AT_FDCWD ? NULL : trace_state_fd(st, ev->pid, (int32_t)v);
			if (f) {
				trace_sb_add(&d->fdpath[i], f->path, strlen(f->path));
				d->fdknown[i] = true;
			}
		} else if (c == 'C' && i + 1 < 6) {
			/* fcntl: the third argument's meaning follows the command */
			int cmd = (int32_t)v;
			sb_arg(b, 'C', v);
			uint64_t v2 = ev->sys.args[i + 1];
			trace_sbuf *b2 = &d->arg[i + 1];
			i++;
			if (cmd == F_GETFD || cmd == F_GETFL || cmd == F_GETOWN || cmd == F_GETSIG ||
			    cmd == F_GETLEASE || cmd == F_GETPIPE_SZ || cmd == F_GET_SEALS) {
				n = i; /* no third argument */
				break;
			}
			if (cmd == F_SETFD)
				sb_flags(b2, v2 & 0xffffffffu, fd_flags, ARRAY_SIZE(fd_flags), true);
			else if (cmd == F_SETFL)
				sb_open_flags(b2, v2);
			else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC || cmd == F_SETOWN ||
				 cmd == F_SETSIG || cmd == F_SETPIPE_SZ || cmd == F_NOTIFY ||
				 cmd == F_SETLEASE || cmd == F_ADD_SEALS)
				sb_arg(b2, 'd', v2);
			else
				sb_hex(b2, v2);
		} else
			sb_arg(b, c, v);
	}
	d->nargs = n < 6 ? n : 6;
	/* The mode of open/openat matters only when a file may be created (strace
	 * leaves it out otherwise; the register holds whatever was there). */
	if (si && (si->op == OP_OPEN || si->op == OP_OPENAT)) {
		int fi = si->op == OP_OPEN ? 1 : 2;
		uint64_t fl = ev->sys.args[fi];
		if (!(fl & O_CREAT) && (fl & O_TMPFILE) != O_TMPFILE && d->nargs > fi + 1)
			d->nargs = fi + 1;
	}
}

static bool returns_fd(const sys_info *si, const trace_ev *ev)
{
	if (!si)
		return false;
	switch (si->op) {
	case OP_NONE:
	case OP_CLOSE:
	case OP_CLOSE_RANGE:
	case OP_IOCTL:
		return false;
	case OP_FCNTL:
		return (int)ev->sys.args[1] == F_DUPFD || (int)ev->sys.args[1] == F_DUPFD_CLOEXEC;
	default:
		return true;
	}
}

void trace_dec_ret(trace_dec *d, const trace_state *st, const trace_ev *ev)
{
	trace_sb_reset(&d->ret);
	d->ret_fd = -1;
	d->err = false;
	if (!(ev->flags & TRS_HAS_RET)) {
		trace_sb_lit(&d->ret, "?");
		return;
	}
	int64_t r = ev->sys.ret;
	if (trace_ret_is_err(r)) {
		d->err = true;
		int e = (int)-r;
		const char *name = trace_errno_name(e), *desc = e < 512 ? strerrordesc_np(e) : NULL;
		if (name)
			trace_sb_addf(&d->ret, "-1 %s", name);
		else
			trace_sb_addf(&d->ret, "-1 errno %d", e);
		if (desc)
			trace_sb_addf(&d->ret, " (%s)", desc);
		return;
	}
	if (trace_sys_returns_addr(ev->sys.nr)) {
		trace_sb_addf(&d->ret, "%#" PRIx64, (uint64_t)r);
		return;
	}
	trace_sb_addf(&d->ret, "%" PRId64, r);
	if (r >= 0 && returns_fd(info_of(ev->sys.nr), ev)) {
		d->ret_fd = r;
		const trace_fd *f = trace_state_fd(st, ev->pid, r);
		if (f) {
			trace_sb_lit(&d->ret, " <");
			trace_sb_esc(&d->ret, f->path, strlen(f->path));
			trace_sb_lit(&d->ret, ">");
		}
	}
}

bool trace_dec_oom(const trace_dec *d)
{
	for (int i = 0; i < 6; i++)
		if (d->arg[i].oom || d->fdpath[i].oom)
			return true;
	return d->ret.oom;
}

void trace_dec_free(trace_dec *d)
{
	for (int i = 0; i < 6; i++) {
		trace_sb_free(&d->arg[i]);
		trace_sb_free(&d->fdpath[i]);
	}
	trace_sb_free(&d->ret);
}

/* ---- filters ------------------------------------------------------------------------------- */

/* "openat" or "syscall_N"; -1 (and false) if neither. */
static bool filter_nr(const char *name, int32_t *ret)
{
	int nr = trace_sys_nr(name);
	if (nr >= 0) {
		*ret = nr;
		return true;
	}
	if (strncmp(name, "syscall_", 8) != 0 || !name[8])
		return false;
	char *end;
	errno = 0;
	long v = strtol(name + 8, &end, 10);
	if (*end || errno || v < INT32_MIN || v > INT32_MAX)
		return false;
	*ret = (int32_t)v;
	return true;
}

int trace_filter_check(const trace_filter *f, sbx_err **err)
{
	for (const char *const *s = f && f->syscalls ? f->syscalls : NULL; s && *s; s++) {
		int32_t nr;
		if (!filter_nr(*s, &nr))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown syscall '%s'", *s);
	}
	return 0;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

int trace_fmatch_init(trace_fmatch *m, const trace_filter *f, sbx_err **err)
{
	*m = (trace_fmatch){.f = f, .all_sys = !f || !f->syscalls};
	int r = trace_filter_check(f, err);
	if (r < 0 || m->all_sys)
		return r;
	size_t n = 0;
	while (f->syscalls[n])
		n++;
	m->nrs = calloc(n + 1, sizeof(int32_t));
	if (!m->nrs)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		filter_nr(f->syscalls[i], &m->nrs[m->n_nrs++]);
	qsort(m->nrs, m->n_nrs, sizeof(int32_t), cmp_i32);
	return 0;
}

static bool pid_listed(const trace_filter *f, uint32_t id)
{
	for (size_t i = 0; i < f->n_pids; i++)
		if (f->pids[i] == id)
			return true;
	return false;
}

bool trace_fmatch_keep(const trace_fmatch *m, const trace_ev *ev)
{
	const trace_filter *f = m->f;
	if (f && f->pids && f->n_pids) {
		bool hit = pid_listed(f, ev->pid) || pid_listed(f, ev->tid);
		if (ev->type == TR_FORK)
			hit = hit || pid_listed(f, ev->fork.parent_pid) || pid_listed(f, ev->fork.parent_tid);
		if (!hit)
			return false;
	}
	if (m->all_sys || (ev->type != TR_SYSCALL && ev->type != TR_DETERM))
		return true;
	int32_t nr = ev->type == TR_SYSCALL ? ev->sys.nr : ev->determ.nr;
	return bsearch(&nr, m->nrs, m->n_nrs, sizeof(int32_t), cmp_i32) != NULL;
}

void trace_fmatch_free(trace_fmatch *m)
{
	free(m->nrs);
	m->nrs = NULL;
}

/* ---- show: text ------------------------------------------------------------------------------ */

static void sb_ids(trace_sbuf *b, uint32_t pid, uint32_t tid)
{
	if (pid == tid)
		trace_sb_addf(b, "[%" PRIu32 "] ", pid);
	else
		trace_sb_addf(b, "[%" PRIu32 ":%" PRIu32 "] ", pid, tid);
}

static const char *determ_label(const trace_ev *ev, char buf[24])
{
	const char *n = ev->determ.nr >= 0 ? trace_sys_name(ev->determ.nr) : NULL;
	if (n)
		return n;
	n = trace_determ_kind_name(ev->determ.kind);
	if (n)
		return n;
	snprintf(buf, 24, "kind %" PRIu32, ev->determ.kind);
	return buf;
}

/* The line for a record (the state already updated by it; d decoded). */
static void show_line(trace_sbuf *b, const trace_state *st, const trace_dec *d, const trace_ev *ev)
{
	char t[32];
	trace_fmt_time(t, trace_ev_start(ev), st->hdr.start_ns);
	trace_sb_addf(b, "%10s ", t);
	switch (ev->type) {
	case TR_SYSCALL:
		sb_ids(b, ev->pid, ev->tid);
		trace_sb_addf(b, "%s(", d->name);
		for (int i = 0; i < d->nargs; i++) {
			if (i)
				trace_sb_lit(b, ", ");
			trace_sb_addf(b, "%s", trace_sb_str(&d->arg[i]));
		}
		trace_sb_addf(b, ") = %s", trace_sb_str(&d->ret));
		if (ev->flags & TRS_EMULATED)
			trace_sb_lit(b, " (emulated)");
		break;
	case TR_FORK:
		sb_ids(b, ev->fork.parent_pid, ev->fork.parent_tid);
		if (ev->flags & 1)
			trace_sb_addf(b, "+++ new thread %" PRIu32 " +++", ev->tid);
		else
			trace_sb_addf(b, "+++ fork child %" PRIu32 " +++", ev->pid);
		break;
	case TR_EXEC:
		sb_ids(b, ev->pid, ev->tid);
		trace_sb_lit(b, "+++ exec ");
		if (ev->exec.filename)
			trace_sb_esc(b, ev->exec.filename, strlen(ev->exec.filename));
		else
			trace_sb_lit(b, "?");
		trace_sb_lit(b, " ");
		trace_sb_argv(b, ev);
		trace_sb_lit(b, " +++");
		break;
	case TR_EXIT:
		sb_ids(b, ev->pid, ev->tid);
		trace_sb_addf(b, "+++ %s", ev->flags & 1 ? "" : "thread ");
		trace_sb_status(b, ev->exit.status);
		trace_sb_lit(b, " +++");
		break;
	case TR_LOST:
		trace_sb_addf(b, "!!! %" PRIu64 " events lost !!!", ev->lost.count);
		break;
	case TR_DETERM: {
		char buf[24];
		sb_ids(b, ev->pid, ev->tid);
		trace_sb_addf(b, "~~~ %s answered by determinism engine ~~~", determ_label(ev, buf));
		break;
	}
	}
	trace_sb_lit(b, "\n");
}

/* The walk shared by the text and JSON forms. */
typedef int (*show_fn)(void *ud, const trace_state *st, const trace_dec *d, const trace_ev *ev,
		       sbx_err **err);

static int walk(const void *buf, size_t len, const trace_filter *f, show_fn fn, void *ud, sbx_err **err)
{
	trace_reader r;
	int k = trace_read_init(&r, buf, len, err);
	if (k < 0)
		return k;
	_cleanup_(trace_state_free) trace_state st = {0};
	if ((k = trace_state_init(&st, &r.hdr, err)) < 0)
		return k;
	_cleanup_(trace_fmatch_free) trace_fmatch m = {0};
	if ((k = trace_fmatch_init(&m, f, err)) < 0)
		return k;
	_cleanup_(trace_dec_free) trace_dec d = {0};
	trace_ev ev;
	while ((k = trace_read_next(&r, &ev, err)) > 0) {
		bool keep = trace_fmatch_keep(&m, &ev);
		if (keep && ev.type == TR_SYSCALL)
			trace_dec_args(&d, &st, &ev);
		if (trace_state_apply(&st, &ev) < 0)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
		if (!keep)
			continue;
		if (ev.type == TR_SYSCALL) {
			trace_dec_ret(&d, &st, &ev);
			if (trace_dec_oom(&d))
				return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
		}
		if ((k = fn(ud, &st, &d, &ev, err)) < 0)
			return k;
	}
	return k;
}

typedef struct show_out {
	trace_sbuf b;
	FILE *f;
} show_out;

static int show_text(void *ud, const trace_state *st, const trace_dec *d, const trace_ev *ev, sbx_err **err)
{
	show_out *o = ud;
	trace_sbuf *b = &o->b;
	FILE *out = o->f;
	trace_sb_reset(b);
	show_line(b, st, d, ev);
	if (b->oom)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	if (fwrite(b->p, 1, b->len, out) != b->len)
		return err_errno(err, "write trace text");
	return 0;
}

int trace_show(const void *buf, size_t len, const trace_filter *f, FILE *out, sbx_err **err)
{
	show_out o = {.f = out};
	int k = walk(buf, len, f, show_text, &o, err);
	trace_sb_free(&o.b);
	if (fflush(out) != 0 && k >= 0)
		return err_errno(err, "write trace text");
	return k < 0 ? k : 0;
}

/* ---- show: JSON ------------------------------------------------------------------------------------ */

static int jset(json_t *o, const char *k, json_t *v)
{
	return v ? json_object_set_new(o, k, v) : -1;
}

static json_t *json_rel_ns(uint64_t ts, uint64_t start)
{
	if (ts >= start)
		return json_integer(ts - start > INT64_MAX ? INT64_MAX : (json_int_t)(ts - start));
	return json_integer(start - ts > INT64_MAX ? INT64_MIN : -(json_int_t)(start - ts));
}

json_t *trace_json_argv(const trace_ev *ev)
{
	json_t *a = json_array();
	const char *p = ev->exec.argv, *end = p + ev->exec.argv_len;
	while (a && p < end) {
		if (json_array_append_new(a, trace_json_str(p)) < 0) {
			json_decref(a);
			return NULL;
		}
		p += strlen(p) + 1;
	}
	return a;
}

json_t *trace_json_exit(const trace_ev *ev)
{
	json_t *o = json_object();
	int32_t s = ev->exit.status;
	int sig = s & 0x7f;
	if (!o || jset(o, "status", json_integer(s)) < 0 ||
	    jset(o, "process", json_boolean(ev->flags & 1)) < 0)
		goto fail;
	if (sig == 0) {
		if (jset(o, "exit_code", json_integer((s >> 8) & 0xff)) < 0)
			goto fail;
	} else if (sig != 0x7f) {
		trace_sbuf b = {0};
		sb_signal(&b, sig);
		int r = b.oom ? -1 : jset(o, "signal", json_string(trace_sb_str(&b)));
		trace_sb_free(&b);
		if (r < 0 || jset(o, "core_dumped", json_boolean(s & 0x80)) < 0)
			goto fail;
	}
	return o;
fail:
	json_decref(o);
	return NULL;
}

/* Fills o with the type-specific fields of a record. */
static int json_fields(json_t *o, const trace_state *st, const trace_dec *d, const trace_ev *ev)
{
	switch (ev->type) {
	case TR_SYSCALL: {
		json_t *args = json_array(), *paths = json_array(), *fdp = json_object();
		if (jset(o, "syscall", json_string(d->name)) < 0 ||
		    jset(o, "nr", json_integer(ev->sys.nr)) < 0 || jset(o, "args", args) < 0 ||
		    jset(o, "paths", paths) < 0 || jset(o, "fd_paths", fdp) < 0)
			return -1;
		for (int i = 0; i < d->nargs; i++)
			if (json_array_append_new(args, json_string(trace_sb_str(&d->arg[i]))) < 0)
				return -1;
		for (int k = 0; k < 2; k++)
			if (ev->sys.str[k] && !(ev->flags & (k ? TRS_STR1_FAULT : TRS_STR0_FAULT)) &&
			    json_array_append_new(paths, trace_json_str(ev->sys.str[k])) < 0)
				return -1;
		for (int i = 0; i < d->nargs; i++) {
			char key[16];
			snprintf(key, sizeof(key), "%" PRId32, (int32_t)ev->sys.args[i]);
			if (d->fdknown[i] && jset(fdp, key, trace_json_str(trace_sb_str(&d->fdpath[i]))) < 0)
				return -1;
		}
		if (d->ret_fd >= 0) {
			const trace_fd *f = trace_state_fd(st, ev->pid, d->ret_fd);
			char key[24];
			snprintf(key, sizeof(key), "%" PRId64, d->ret_fd);
			if (f && jset(fdp, key, trace_json_str(f->path)) < 0)
				return -1;
		}
		bool has = ev->flags & TRS_HAS_RET;
		if (jset(o, "ret", has ? json_integer(ev->sys.ret) : json_null()) < 0)
			return -1;
		if (has && d->err) {
			const char *n = trace_errno_name((int)-ev->sys.ret);
			if (jset(o, "errno", n ? json_string(n) : json_integer(-ev->sys.ret)) < 0)
				return -1;
		}
		if (has && ev->sys.enter_ns && ev->ts_ns >= ev->sys.enter_ns &&
		    jset(o, "dur_ns",
			 json_integer((json_int_t)((ev->ts_ns - ev->sys.enter_ns) & INT64_MAX))) < 0)
			return -1;
		if ((ev->flags & TRS_EMULATED) && jset(o, "emulated", json_true()) < 0)
			return -1;
		return 0;
	}
	case TR_FORK:
		return jset(o, "parent_pid", json_integer(ev->fork.parent_pid)) < 0 ||
			       jset(o, "parent_tid", json_integer(ev->fork.parent_tid)) < 0 ||
			       jset(o, "thread", json_boolean(ev->flags & 1)) < 0
			   ? -1
			   : 0;
	case TR_EXEC:
		return jset(o, "filename",
			    ev->exec.filename ? trace_json_str(ev->exec.filename) : json_null()) < 0 ||
			       jset(o, "argv", trace_json_argv(ev)) < 0 ||
			       jset(o, "argv_truncated", json_boolean(ev->flags & 1)) < 0
			   ? -1
			   : 0;
	case TR_EXIT: {
		json_t *x = trace_json_exit(ev);
		int r = x ? json_object_update(o, x) : -1;
		json_decref(x);
		return r;
	}
	case TR_LOST:
		return jset(o, "count", json_integer((json_int_t)(ev->lost.count & INT64_MAX)));
	case TR_DETERM: {
		const char *kn = trace_determ_kind_name(ev->determ.kind), *sn = trace_sys_name(ev->determ.nr);
		/* The value the program was given, in hex (its layout per kind is in
		 * trace_format.h). */
		char hex[2 * TRACE_DETERM_MAX_VALUE + 1];
		size_t vl = ev->determ.value_len < TRACE_DETERM_MAX_VALUE ? ev->determ.value_len : TRACE_DETERM_MAX_VALUE;
		for (size_t i = 0; i < vl; i++)
			snprintf(hex + 2 * i, 3, "%02x", ev->determ.value[i]);
		hex[2 * vl] = 0;
		return jset(o, "kind", kn ? json_string(kn) : json_integer(ev->determ.kind)) < 0 ||
			       jset(o, "syscall", sn ? json_string(sn) : json_null()) < 0 ||
			       jset(o, "nr", json_integer(ev->determ.nr)) < 0 || jset(o, "value", json_string(hex)) < 0
			   ? -1
			   : 0;
	}
	}
	return 0;
}

static const char *type_name(uint16_t t)
{
	static const char *const names[] = {NULL, "syscall", "fork", "exec", "exit", "lost", "determ"};
	return t < ARRAY_SIZE(names) ? names[t] : NULL;
}

static int show_json_one(void *ud, const trace_state *st, const trace_dec *d, const trace_ev *ev,
			 sbx_err **err)
{
	json_t *arr = ud;
	json_t *o = json_object();
	if (!o || json_array_append_new(arr, o) < 0 ||
	    jset(o, "seq", json_integer((json_int_t)ev->seq)) < 0 ||
	    jset(o, "t_ns", json_rel_ns(trace_ev_start(ev), st->hdr.start_ns)) < 0 ||
	    jset(o, "pid", json_integer(ev->pid)) < 0 || jset(o, "tid", json_integer(ev->tid)) < 0 ||
	    jset(o, "type", json_string(type_name(ev->type))) < 0 || json_fields(o, st, d, ev) < 0)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	return 0;
}

int trace_show_json(const void *buf, size_t len, const trace_filter *f, json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *arr = json_array();
	if (!arr)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	int k = walk(buf, len, f, show_json_one, arr, err);
	if (k < 0)
		return k;
	*ret = TAKE_PTR(arr);
	return 0;
}
