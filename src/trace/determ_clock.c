/* The virtual clock and the file-time mapping of determinism mode. Pure: no
 * I/O; the engine (ptrace_engine.c) feeds it what the command asks and what
 * the kernel answered. Why the clock ticks on every read: a clock that stands
 * still breaks programs that wait for time to pass (timeouts computed from
 * two reads, "elapsed > 0" checks), and a fixed increment keeps the values a
 * pure function of the call order. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "trace/ptrace_engine.h"

int determ_clock_kind(int64_t clockid)
{
	clockid = (int32_t)clockid; /* clockid_t is an int: the kernel looks at the low 32 bits */
	if (clockid < 0)
		/* Encoded cpu clocks of another process or thread: (~pid << 3) | (perthread << 2) | which,
		 * which < 3. which == 3 is a dynamic (fd) clock: PTP hardware, not ours. */
		return (clockid & 3) == 3 ? DETERM_CLK_NONE : DETERM_CLK_CPU;
	switch (clockid) {
	case 0:	 /* REALTIME */
	case 5:	 /* REALTIME_COARSE */
	case 8:	 /* REALTIME_ALARM */
	case 11: /* TAI: the kernel's TAI offset is 0 unless NTP set it, so it reads as REALTIME */
		return DETERM_CLK_REAL;
	case 1: /* MONOTONIC */
	case 4: /* MONOTONIC_RAW */
	case 6: /* MONOTONIC_COARSE */
	case 7: /* BOOTTIME: nothing is suspended under a virtual clock */
	case 9: /* BOOTTIME_ALARM */
		return DETERM_CLK_MONO;
	case 2: /* PROCESS_CPUTIME_ID */
	case 3: /* THREAD_CPUTIME_ID */
		return DETERM_CLK_CPU;
	default:
		return DETERM_CLK_NONE; /* 10 and >= 12 are invalid: the kernel says EINVAL */
	}
}

uint64_t determ_clock_peek(const determ_clock *c, int kind)
{
	switch (kind) {
	case DETERM_CLK_REAL:
		return c->epoch_ns + c->vt;
	case DETERM_CLK_MONO:
		return DETERM_MONO_BASE_NS + c->vt;
	default:
		/* CPU time: every process "used" all the virtual time there was. Not
		 * realistic, but monotonic and a function of the call order only. */
		return c->vt;
	}
}

uint64_t determ_clock_read(determ_clock *c, int kind)
{
	c->vt += DETERM_TICK_NS;
	return determ_clock_peek(c, kind);
}

uint64_t determ_clock_res(int64_t clockid)
{
	clockid = (int32_t)clockid;
	return clockid == 5 || clockid == 6 ? DETERM_COARSE_RES_NS : 1;
}

uint64_t determ_clock_tsc(determ_clock *c)
{
	return determ_clock_read(c, DETERM_CLK_MONO); /* 1 tick per ns */
}

void determ_clock_advance_to(determ_clock *c, int kind, uint64_t target)
{
	uint64_t now = determ_clock_peek(c, kind);
	if (target > now)
		c->vt += target - now;
}

void determ_rusage(struct rusage *ru, uint64_t cpu_ns)
{
	memset(ru, 0, sizeof(*ru));
	ru->ru_utime.tv_sec = (time_t)(cpu_ns / 1000000000ULL);
	ru->ru_utime.tv_usec = (suseconds_t)((cpu_ns % 1000000000ULL) / 1000ULL);
}

int determ_tsc_insn(const uint8_t *code, size_t n, bool *rdtscp)
{
	if (n >= 2 && code[0] == 0x0f && code[1] == 0x31) {
		*rdtscp = false;
		return 2;
	}
	if (n >= 3 && code[0] == 0x0f && code[1] == 0x01 && code[2] == 0xf9) {
		*rdtscp = true;
		return 3;
	}
	return 0;
}

/* ---- file times ---- */

struct determ_time_ent {
	uint64_t dev, ino, ver;
	int64_t t, v;
	bool used;
};

static uint64_t time_hash(uint64_t dev, uint64_t ino, uint64_t ver, int64_t t)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ULL ^ ino) + ver * 0xd6e8feb86659fd93ULL;
	h ^= (uint64_t)t + 0x632be59bd9b4e019ULL + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 29);
}

static struct determ_time_ent *time_slot(struct determ_time_ent *ents, size_t cap, uint64_t dev, uint64_t ino,
					 uint64_t ver, int64_t t)
{
	for (size_t i = time_hash(dev, ino, ver, t) & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!ents[i].used ||
		    (ents[i].dev == dev && ents[i].ino == ino && ents[i].ver == ver && ents[i].t == t))
			return &ents[i];
}

int64_t determ_time_squeeze(int64_t t, int64_t epoch)
{
	int64_t low = epoch - DETERM_SQUEEZE_NS;
	if (t <= low)
		return t;
	/* Linear map of (low, INT64_MAX] onto (low, epoch]: monotonic, so make's
	 * "newer than" answers stay right for anything a second or more apart
	 * (a real second becomes ~10 us), and a function of t and the epoch only. */
	__int128 span = (__int128)INT64_MAX - low;
	return low + (int64_t)(((__int128)(t - low) * DETERM_SQUEEZE_NS) / span);
}

static bool timemap_grow(determ_timemap *m)
{
	if (m->n * 2 < m->cap)
		return true;
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	struct determ_time_ent *n = calloc(ncap, sizeof(*n));
	if (!n)
		return false;
	for (size_t i = 0; i < m->cap; i++)
		if (m->ents[i].used)
			*time_slot(n, ncap, m->ents[i].dev, m->ents[i].ino, m->ents[i].ver, m->ents[i].t) =
			    m->ents[i];
	free(m->ents);
	m->ents = n;
	m->cap = ncap;
	return true;
}

int determ_time_map_set(determ_timemap *m, const determ_clock *c, uint64_t dev, uint64_t ino,
			const uint64_t *ver, int64_t *t, int n)
{
	int64_t v = 0;
	bool have_v = false;
	int changed = 0;
	for (int i = 0; i < n; i++) {
		int64_t r = t[i];
		if (r >= m->real_start) {
			if (!timemap_grow(m))
				continue; /* out of memory: the real time leaks through, nothing breaks */
			uint64_t w = ver ? ver[i] : 0;
			struct determ_time_ent *s = time_slot(m->ents, m->cap, dev, ino, w, r);
			if (!s->used) {
				/* One new virtual time for all the new times of this result:
				 * whether atime and mtime of a new file fell into one clock tick
				 * or two is timing, and must not show. The observer's clock
				 * as it stands, not advanced: whether a real time is new (a
				 * file written twice within one kernel tick or across two) is
				 * timing too, and must not move any clock. */
				if (!have_v)
					v = (int64_t)determ_clock_peek(c, DETERM_CLK_REAL), have_v = true;
				*s = (struct determ_time_ent){dev, ino, w, r, v, true};
				m->n++;
			}
			t[i] = s->v;
		} else if ((int64_t)c->epoch_ns < m->real_start + DETERM_EPOCH_SLACK_NS)
			t[i] = determ_time_squeeze(r, (int64_t)c->epoch_ns);
		changed += t[i] != r;
	}
	return changed;
}

int64_t determ_time_map(determ_timemap *m, const determ_clock *c, uint64_t dev, uint64_t ino, int64_t t,
			bool *changed)
{
	*changed = determ_time_map_set(m, c, dev, ino, NULL, &t, 1) > 0;
	return t;
}

void determ_timemap_free(determ_timemap *m)
{
	free(m->ents);
	m->ents = NULL;
	m->n = m->cap = 0;
}
