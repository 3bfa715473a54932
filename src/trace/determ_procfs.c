/* The virtual content of the procfs files that tell time, randomness or
 * host load (contract: determ_procfs.h). Pure: the engine (determ_notif.c)
 * resolves the path, then serves what this computes. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "trace/determ_procfs.h"

#define NS_PER_TICK 10000000ULL /* USER_HZ 100, as times() and /proc report CPU time */

static const struct {
	const char *name; /* the last component */
	const char *path;
	bool sysctl;
} kinds[DETERM_PROCFS_N] = {
    [DETERM_PROCFS_UPTIME] = {"uptime", "/proc/uptime", false},
    [DETERM_PROCFS_LOADAVG] = {"loadavg", "/proc/loadavg", false},
    [DETERM_PROCFS_STAT] = {"stat", "/proc/stat", false},
    [DETERM_PROCFS_UUID] = {"uuid", "/proc/sys/kernel/random/uuid", true},
    [DETERM_PROCFS_BOOT_ID] = {"boot_id", "/proc/sys/kernel/random/boot_id", true},
};

/* A process directory's name: a pid, "self" or "thread-self". */
static bool is_pid_dir(const char *s, size_t n)
{
	if ((n == 4 && memcmp(s, "self", 4) == 0) || (n == 11 && memcmp(s, "thread-self", 11) == 0))
		return true;
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

int determ_procfs_candidate(const char *path)
{
	const char *slash = strrchr(path, '/'), *last = slash ? slash + 1 : path;
	int kind = DETERM_PROCFS_NONE;
	for (int k = 1; k < DETERM_PROCFS_N; k++)
		if (kinds[k].name && strcmp(last, kinds[k].name) == 0)
			kind = k;
	if (kind != DETERM_PROCFS_STAT || !slash)
		return kind;
	/* the component before "stat" */
	const char *end = slash;
	while (end > path && end[-1] == '/')
		end--;
	const char *start = end;
	while (start > path && start[-1] != '/')
		start--;
	return is_pid_dir(start, (size_t)(end - start)) ? DETERM_PROCFS_PID_STAT : kind;
}

const char *determ_procfs_path(int kind)
{
	return kind > 0 && kind < DETERM_PROCFS_N ? kinds[kind].path : NULL;
}

bool determ_procfs_is_sysctl(int kind)
{
	return kind > 0 && kind < DETERM_PROCFS_N && kinds[kind].sysctl;
}

void determ_procfs_uuid(const uint8_t r[16], char out[38])
{
	uint8_t b[16];
	memcpy(b, r, sizeof(b));
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* variant 10 (RFC 4122) */
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[b[i] >> 4];
		out[o++] = hex[b[i] & 15];
	}
	out[o++] = '\n';
	out[o] = 0;
}

/* seconds.centiseconds, truncated, as the kernel prints a timespec */
static int put_centis(char *buf, size_t cap, uint64_t ns)
{
	return snprintf(buf, cap, "%" PRIu64 ".%02" PRIu64, (uint64_t)(ns / 1000000000ULL),
			(uint64_t)((ns % 1000000000ULL) / NS_PER_TICK));
}

static size_t done(int n, size_t cap)
{
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static size_t uptime_content(const determ_procfs_src *s, char *buf, size_t cap)
{
	char up[48], idle[48];
	put_centis(up, sizeof(up), determ_clock_peek(s->clk, DETERM_CLK_MONO));
	put_centis(idle, sizeof(idle), DETERM_MONO_BASE_NS);
	return done(snprintf(buf, cap, "%s %s\n", up, idle), cap);
}

static size_t stat_content(const determ_procfs_src *s, char *buf, size_t cap)
{
	/* user + idle = uptime, in ticks; the CPU clocks read t as the command's CPU time */
	uint64_t user = determ_clock_peek(s->clk, DETERM_CLK_CPU) / NS_PER_TICK,
		 idle = DETERM_MONO_BASE_NS / NS_PER_TICK;
	/* realtime - boottime: (epoch + t) - (base + t) */
	uint64_t epoch = s->clk->epoch_ns,
		 btime = epoch > DETERM_MONO_BASE_NS ? (epoch - DETERM_MONO_BASE_NS) / 1000000000ULL : 0;
	return done(snprintf(buf, cap,
			     "cpu  %" PRIu64 " 0 0 %" PRIu64 " 0 0 0 0 0 0\n"
			     "cpu0 %" PRIu64 " 0 0 %" PRIu64 " 0 0 0 0 0 0\n"
			     "intr 0\n"
			     "ctxt 0\n"
			     "btime %" PRIu64 "\n"
			     "processes 1\n"
			     "procs_running 1\n"
			     "procs_blocked 0\n"
			     "softirq 0 0 0 0 0 0 0 0 0 0 0\n",
			     user, idle, user, idle, btime),
		    cap);
}

static size_t uuid_content(const determ_procfs_src *s, uint64_t stream, char *buf, size_t cap)
{
	uint8_t r[16];
	char u[38];
	if (cap < sizeof(u))
		return 0;
	determ_rng_read(s->rng, stream, 0, r, sizeof(r));
	determ_procfs_uuid(r, u);
	memcpy(buf, u, sizeof(u));
	return sizeof(u) - 1;
}

size_t determ_procfs_content(int kind, const determ_procfs_src *s, char *buf, size_t cap)
{
	switch (kind) {
	case DETERM_PROCFS_UPTIME:
		return uptime_content(s, buf, cap);
	case DETERM_PROCFS_LOADAVG:
		return done(snprintf(buf, cap, "0.00 0.00 0.00 1/1 1\n"), cap);
	case DETERM_PROCFS_STAT:
		return stat_content(s, buf, cap);
	case DETERM_PROCFS_UUID:
		return uuid_content(s, determ_stream(s->proc_id, DETERM_STREAM_PROC_UUID, s->uuid_index), buf,
				    cap);
	case DETERM_PROCFS_BOOT_ID:
		return uuid_content(s, determ_stream(0, DETERM_STREAM_BOOT_ID, 0), buf, cap);
	default:
		return 0;
	}
}

size_t determ_procfs_pid_stat(const char *real, size_t len, const determ_pid_stat *s, char *buf, size_t cap)
{
	/* comm ends at the last ')': it may hold spaces and parentheses itself */
	const char *close = NULL;
	for (size_t i = 0; i < len; i++)
		if (real[i] == ')')
			close = real + i;
	if (!close || close + 2 > real + len || close[1] != ' ' || len >= cap)
		return 0;
	size_t head = (size_t)(close + 1 - real), o = head;
	memcpy(buf, real, head);
	const char *p = close + 1, *end = real + len;
	int field = 2; /* comm */
	while (p < end && *p == ' ') {
		const char *v = ++p;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
		field++;
		uint64_t x = 0;
		bool set = true;
		switch (field) {
		case 14:
			x = s->cpu_ns / NS_PER_TICK;
			break;
		case 16:
			x = s->child_ns / NS_PER_TICK;
			break;
		case 22:
			x = (DETERM_MONO_BASE_NS + s->start_ns) / NS_PER_TICK;
			break;
		case 10:
		case 11:
		case 12:
		case 13:
		case 15:
		case 17:
		case 24:
		case 39:
		case 42:
		case 43:
		case 44:
			break;
		default:
			set = false;
		}
		const char *str = v;
		int slen = (int)(p - v);
		if (field == 3 && s->running)
			str = "R", slen = 1;
		int n = set ? snprintf(buf + o, cap - o, " %" PRIu64, x)
			    : snprintf(buf + o, cap - o, " %.*s", slen, str);
		if (n < 0 || (size_t)n >= cap - o)
			return 0;
		o += (size_t)n;
	}
	if (field < 44 || p >= end || *p != '\n' || o + 2 > cap)
		return 0; /* not a stat line (44 fields since Linux 2.6.24) */
	buf[o++] = '\n';
	buf[o] = 0;
	return o;
}

void determ_sysinfo_virtual(struct sysinfo *si, const determ_clock *c)
{
	uint64_t up = determ_clock_peek(c, DETERM_CLK_MONO);
	si->uptime = (long)(up / 1000000000ULL + (up % 1000000000ULL ? 1 : 0));
	si->loads[0] = si->loads[1] = si->loads[2] = 0;
	si->procs = 1;
}
