/* The container's cgroup at the spec's cgroupsPath, in every mounted
 * hierarchy (v2, and each v1 controller on v1 and hybrid hosts), so that the
 * shim finds the container's pid in the groups it reads stats and OOM events
 * from. sbx's own cgroup module (src/runtime/cgroup.c) manages sbx/<id>
 * groups; this one manages an engine-chosen path and reuses its mountinfo
 * parsing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runc/runc.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

#define MAX_HIER 24

typedef struct hier {
	char mnt[512];
	bool v2;
	bool cpuset;
	bool freezer;
	bool memory, pids, cpu, blkio, cpuacct;
} hier;

/* Mounted cgroup hierarchies, from /proc/self/mountinfo (roots other than
 * "/" are skipped: a bind-mounted subtree is not ours to populate). */
static size_t hiers(hier *h)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	size_t n = 0;
	char *line = NULL;
	size_t cap = 0;
	while (n < MAX_HIER && getline(&line, &cap, f) > 0) {
		char root[512], mnt[512];
		if (sscanf(line, "%*s %*s %*s %511s %511s", root, mnt) != 2 || !streq(root, "/"))
			continue;
		char *sep = strstr(line, " - ");
		if (!sep)
			continue;
		char fstype[32], src[64], opts[512];
		if (sscanf(sep + 3, "%31s %63s %511s", fstype, src, opts) != 3)
			continue;
		hier x = {0};
		if (streq(fstype, "cgroup2"))
			x.v2 = true;
		else if (!streq(fstype, "cgroup"))
			continue;
		snprintf(x.mnt, sizeof(x.mnt), "%s", mnt);
		if (!x.v2) {
			char *save = NULL;
			for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
				x.cpuset |= streq(o, "cpuset");
				x.freezer |= streq(o, "freezer");
				x.memory |= streq(o, "memory");
				x.pids |= streq(o, "pids");
				x.cpu |= streq(o, "cpu");
				x.blkio |= streq(o, "blkio");
				x.cpuacct |= streq(o, "cpuacct");
			}
		}
		bool dup = false;
		for (size_t i = 0; i < n; i++)
			dup |= streq(h[i].mnt, x.mnt);
		if (!dup)
			h[n++] = x;
	}
	free(line);
	fclose(f);
	return n;
}

static int write_file(const char *dir, const char *file, const char *val)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, val, strlen(val));
	int e = w < 0 ? -errno : 0;
	close(fd);
	return e;
}

static bool file_exists(const char *dir, const char *file)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return access(p, F_OK) == 0;
}

/* mkdir -p below the mount, copying cpuset.cpus/mems down each new level
 * (a v1 cpuset group starts empty and refuses members). */
static int mkdir_below(const hier *h, const char *path)
{
	char p[4200];
	if (snprintf(p, sizeof(p), "%s", h->mnt) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	size_t base = strlen(p);
	const char *c = path;
	while (*c) {
		while (*c == '/')
			c++;
		if (!*c)
			break;
		const char *e = strchrnul(c, '/');
		if (base + (size_t)(e - c) + 2 >= sizeof(p))
			return -ENAMETOOLONG;
		char parent[4200];
		memcpy(parent, p, base + 1);
		p[base++] = '/';
		memcpy(p + base, c, (size_t)(e - c));
		base += (size_t)(e - c);
		p[base] = 0;
		if (mkdir(p, 0755) == 0) {
			if (h->cpuset) {
				static const char *const f[] = {"cpuset.cpus", "cpuset.mems"};
				for (size_t i = 0; i < 2; i++) {
					_cleanup_free_ char *v = NULL;
					char src[4300];
					snprintf(src, sizeof(src), "%s/%s", parent, f[i]);
					if (fs_read_file(src, 4096, &v, NULL) == 0)
						(void)write_file(p, f[i], v);
				}
			}
		} else if (errno != EEXIST) {
			return -errno;
		}
		c = e;
	}
	return 0;
}

static void dir_of(const hier *h, const char *path, char *out, size_t n)
{
	if (snprintf(out, n, "%s%s", h->mnt, path) >= (int)n)
		out[0] = 0; /* too long: names nothing */
}

/* runc's conversion of a blkio weight [10, 1000] to io.weight [1, 10000]. */
static uint64_t io_weight(uint64_t w) { return 1 + ((w < 10 ? 10 : w) - 10) * 9999 / 990; }

/* blockIO: v1 blkio.* files (the bfq ones where the plain weight is
 * missing), v2 io.max and io.weight. A weight with no weight file at all
 * (no proportional I/O scheduler) is skipped, as docker already warned. */
static int apply_blkio(const hier *h, const char *dir, const oci_resources *r, sbx_err **err)
{
	char v[128];
	int e;
	const char *wfile = NULL, *wdev = NULL;
	if (h->v2) {
		wfile = file_exists(dir, "io.bfq.weight") ? "io.bfq.weight" : file_exists(dir, "io.weight") ? "io.weight" : NULL;
		wdev = wfile;
	} else {
		wfile = file_exists(dir, "blkio.weight")       ? "blkio.weight"
			: file_exists(dir, "blkio.bfq.weight") ? "blkio.bfq.weight"
							       : NULL;
		wdev = file_exists(dir, "blkio.weight_device")	     ? "blkio.weight_device"
		       : file_exists(dir, "blkio.bfq.weight_device") ? "blkio.bfq.weight_device"
								     : NULL;
	}
	bool convert = h->v2 && wfile && streq(wfile, "io.weight");
#define WB(file, ...)                                                                                    	do {                                                                                             		snprintf(v, sizeof(v), __VA_ARGS__);                                                     		if ((e = write_file(dir, file, v)) < 0)                                                  			return err_errnum(err, -e, "cgroup: write %s=%s in '%s'", file, v, dir);          	} while (0)
	if (r->blkio_weight && wfile) {
		uint64_t w = convert ? io_weight(r->blkio_weight) : r->blkio_weight;
		if (h->v2)
			WB(wfile, "default %" PRIu64, w);
		else
			WB(wfile, "%" PRIu64, w);
	}
	if (r->blkio_leaf_weight && !h->v2 && file_exists(dir, "blkio.leaf_weight"))
		WB("blkio.leaf_weight", "%" PRIu64, r->blkio_leaf_weight);
	for (size_t i = 0; i < r->n_blkio_devs; i++) {
		const oci_blkio_dev *d = &r->blkio_devs[i];
		if (d->kind == OCI_BLKIO_WEIGHT) {
			if (!wdev || !d->value)
				continue;
			uint64_t w = convert ? io_weight(d->value) : d->value;
			WB(wdev, "%" PRId64 ":%" PRId64 " %" PRIu64, d->major, d->minor, w);
			if (d->leaf && !h->v2 && file_exists(dir, "blkio.leaf_weight_device"))
				WB("blkio.leaf_weight_device", "%" PRId64 ":%" PRId64 " %" PRIu64, d->major, d->minor, d->leaf);
			continue;
		}
		if (h->v2) {
			static const char *const key[] = {[OCI_BLKIO_READ_BPS] = "rbps", [OCI_BLKIO_WRITE_BPS] = "wbps",
							  [OCI_BLKIO_READ_IOPS] = "riops", [OCI_BLKIO_WRITE_IOPS] = "wiops"};
			if (d->value)
				WB("io.max", "%" PRId64 ":%" PRId64 " %s=%" PRIu64, d->major, d->minor, key[d->kind], d->value);
			else
				WB("io.max", "%" PRId64 ":%" PRId64 " %s=max", d->major, d->minor, key[d->kind]);
		} else {
			static const char *const file[] = {[OCI_BLKIO_READ_BPS] = "blkio.throttle.read_bps_device",
							   [OCI_BLKIO_WRITE_BPS] = "blkio.throttle.write_bps_device",
							   [OCI_BLKIO_READ_IOPS] = "blkio.throttle.read_iops_device",
							   [OCI_BLKIO_WRITE_IOPS] = "blkio.throttle.write_iops_device"};
			WB(file[d->kind], "%" PRId64 ":%" PRId64 " %" PRIu64, d->major, d->minor, d->value);
		}
	}
#undef WB
	return 0;
}

static int apply(const hier *h, const char *dir, const oci_resources *r, sbx_err **err)
{
	char v[64];
	int e;
#define W(file, ...)                                                                                     \
	do {                                                                                             \
		snprintf(v, sizeof(v), __VA_ARGS__);                                                     \
		if ((e = write_file(dir, file, v)) < 0)                                                  \
			return err_errnum(err, -e, "cgroup: write %s=%s in '%s'", file, v, dir);          \
	} while (0)
	if (h->v2) {
		if (r->memory_limit && file_exists(dir, "memory.max")) {
			if (r->memory_limit > 0)
				W("memory.max", "%" PRId64, r->memory_limit);
			else
				W("memory.max", "max");
		}
		if (r->memory_swap && file_exists(dir, "memory.swap.max")) {
			if (r->memory_swap > 0 && r->memory_limit > 0 && r->memory_swap >= r->memory_limit)
				W("memory.swap.max", "%" PRId64, r->memory_swap - r->memory_limit);
			else if (r->memory_swap < 0)
				W("memory.swap.max", "max");
		}
		if (r->pids_limit && file_exists(dir, "pids.max")) {
			if (r->pids_limit > 0)
				W("pids.max", "%" PRId64, r->pids_limit);
			else
				W("pids.max", "max");
		}
		if ((r->cpu_quota || r->cpu_period) && file_exists(dir, "cpu.max")) {
			uint64_t period = r->cpu_period ? r->cpu_period : 100000;
			if (r->cpu_quota > 0)
				W("cpu.max", "%" PRId64 " %" PRIu64, r->cpu_quota, period);
			else
				W("cpu.max", "max %" PRIu64, period);
		}
		if (r->cpu_shares && file_exists(dir, "cpu.weight")) {
			/* runc's conversion of shares [2, 262144] to weight [1, 10000]. */
			uint64_t s = r->cpu_shares < 2 ? 2 : r->cpu_shares > 262144 ? 262144 : r->cpu_shares;
			W("cpu.weight", "%" PRIu64, 1 + ((s - 2) * 9999) / 262142);
		}
		/* swappiness and the OOM killer switch have no v2 files (runc
		 * ignores them there too). */
		if (file_exists(dir, "io.max") && apply_blkio(h, dir, r, err) < 0)
			return -1;
		return 0;
	}
	if (h->memory) {
		/* memsw must stay >= limit: raise memsw first when growing. */
		if (r->memory_swap && file_exists(dir, "memory.memsw.limit_in_bytes"))
			(void)write_file(dir, "memory.memsw.limit_in_bytes", "-1");
		if (r->memory_limit)
			W("memory.limit_in_bytes", "%" PRId64, r->memory_limit);
		if (r->memory_swap && file_exists(dir, "memory.memsw.limit_in_bytes"))
			W("memory.memsw.limit_in_bytes", "%" PRId64, r->memory_swap);
		if (r->memory_reservation)
			W("memory.soft_limit_in_bytes", "%" PRId64, r->memory_reservation);
		if (r->has_swappiness)
			W("memory.swappiness", "%" PRIu64, r->memory_swappiness);
		if (r->disable_oom_killer)
			W("memory.oom_control", "%d", r->disable_oom_killer > 0 ? 1 : 0);
	}
	if (h->blkio && apply_blkio(h, dir, r, err) < 0)
		return -1;
	if (h->pids && r->pids_limit) {
		if (r->pids_limit > 0)
			W("pids.max", "%" PRId64, r->pids_limit);
		else
			W("pids.max", "max");
	}
	if (h->cpu) {
		if (r->cpu_shares)
			W("cpu.shares", "%" PRIu64, r->cpu_shares);
		if (r->cpu_period)
			W("cpu.cfs_period_us", "%" PRIu64, r->cpu_period);
		if (r->cpu_quota)
			W("cpu.cfs_quota_us", "%" PRId64, r->cpu_quota);
	}
	if (h->cpuset) {
		if (r->cpuset_cpus && *r->cpuset_cpus)
			W("cpuset.cpus", "%s", r->cpuset_cpus);
		if (r->cpuset_mems && *r->cpuset_mems)
			W("cpuset.mems", "%s", r->cpuset_mems);
	}
#undef W
	return 0;
}

int rcg_create(const char *path, const oci_resources *res, sbx_err **err)
{
	hier h[MAX_HIER];
	size_t n = hiers(h);
	for (size_t i = 0; i < n; i++) {
		int r = mkdir_below(&h[i], path);
		if (r < 0)
			return err_errnum(err, -r, "cgroup: create '%s' under '%s'", path, h[i].mnt);
		char d[4200];
		dir_of(&h[i], path, d, sizeof(d));
		if ((r = apply(&h[i], d, res, err)) < 0)
			return r;
	}
	return 0;
}

int rcg_update(const char *path, const oci_resources *res, sbx_err **err)
{
	hier h[MAX_HIER];
	size_t n = hiers(h);
	for (size_t i = 0; i < n; i++) {
		char d[4200];
		dir_of(&h[i], path, d, sizeof(d));
		if (access(d, F_OK) < 0)
			continue;
		int r = apply(&h[i], d, res, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int rcg_attach(const char *path, pid_t pid, sbx_err **err)
{
	hier h[MAX_HIER];
	size_t n = hiers(h);
	char v[32];
	snprintf(v, sizeof(v), "%d", (int)pid);
	for (size_t i = 0; i < n; i++) {
		char d[4200];
		dir_of(&h[i], path, d, sizeof(d));
		int r = write_file(d, "cgroup.procs", v);
		if (r < 0)
			return err_errnum(err, -r, "cgroup: move %d into '%s'", (int)pid, d);
	}
	return 0;
}

static const hier *freezer_of(hier *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (h[i].freezer)
			return &h[i];
	for (size_t i = 0; i < n; i++)
		if (h[i].v2)
			return &h[i];
	return NULL;
}

bool rcg_frozen(const char *path)
{
	hier h[MAX_HIER];
	const hier *f = freezer_of(h, hiers(h));
	if (!f)
		return false;
	char d[4200], p[4300];
	dir_of(f, path, d, sizeof(d));
	snprintf(p, sizeof(p), "%s/%s", d, f->v2 ? "cgroup.freeze" : "freezer.state");
	_cleanup_free_ char *v = NULL;
	if (fs_read_file(p, 64, &v, NULL) < 0)
		return false;
	return f->v2 ? v[0] == '1' : startswith(v, "FROZEN");
}

int rcg_freeze(const char *path, bool frozen, sbx_err **err)
{
	hier h[MAX_HIER];
	const hier *f = freezer_of(h, hiers(h));
	if (!f)
		return err_set(err, SBX_E_UNAVAILABLE, EOPNOTSUPP, "no freezer cgroup on this host");
	char d[4200];
	dir_of(f, path, d, sizeof(d));
	int r = f->v2 ? write_file(d, "cgroup.freeze", frozen ? "1" : "0")
		      : write_file(d, "freezer.state", frozen ? "FROZEN" : "THAWED");
	if (r < 0)
		return err_errnum(err, -r, "cgroup: %s '%s'", frozen ? "freeze" : "thaw", d);
	/* Wait (bounded) until the kernel says the state is reached. */
	for (int i = 0; i < 200; i++) {
		if (f->v2) {
			char p[4300];
			snprintf(p, sizeof(p), "%s/cgroup.events", d);
			_cleanup_free_ char *ev = NULL;
			if (fs_read_file(p, 4096, &ev, NULL) < 0 || strstr(ev, frozen ? "frozen 1" : "frozen 0"))
				return 0;
		} else {
			char p[4300];
			snprintf(p, sizeof(p), "%s/freezer.state", d);
			_cleanup_free_ char *st = NULL;
			if (fs_read_file(p, 64, &st, NULL) < 0 || startswith(st, frozen ? "FROZEN" : "THAWED"))
				return 0;
		}
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	return err_set(err, SBX_E_INTERNAL, ETIMEDOUT, "cgroup: '%s' did not reach %s", d, frozen ? "FROZEN" : "THAWED");
}

int rcg_pids(const char *path, pid_t **ret, size_t *ret_n)
{
	hier h[MAX_HIER];
	size_t n = hiers(h);
	const hier *pick = NULL;
	for (size_t i = 0; i < n && !pick; i++)
		if (h[i].v2)
			pick = &h[i];
	for (size_t i = 0; i < n && !pick; i++)
		if (h[i].pids || h[i].memory || h[i].freezer)
			pick = &h[i];
	*ret = NULL;
	*ret_n = 0;
	if (!pick)
		return 0;
	char d[4200], p[4300];
	dir_of(pick, path, d, sizeof(d));
	snprintf(p, sizeof(p), "%s/cgroup.procs", d);
	_cleanup_free_ char *txt = NULL;
	if (fs_read_file(p, 16 << 20, &txt, NULL) < 0)
		return errno == ENOENT ? 0 : -errno;
	size_t cap = 16, k = 0;
	pid_t *v = malloc(cap * sizeof(pid_t));
	if (!v)
		return -ENOMEM;
	for (char *s = txt, *e; *s; s = e) {
		long x = strtol(s, &e, 10);
		if (e == s)
			break;
		if (x > 0) {
			if (k == cap) {
				pid_t *nv = realloc(v, (cap *= 2) * sizeof(pid_t));
				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			v[k++] = (pid_t)x;
		}
	}
	*ret = v;
	*ret_n = k;
	return 0;
}

int rcg_signal_all(const char *path, int sig)
{
	pid_t *p = NULL;
	size_t n = 0;
	int r = rcg_pids(path, &p, &n);
	for (size_t i = 0; i < n; i++)
		(void)kill(p[i], sig);
	free(p);
	return r;
}

int rcg_destroy(const char *path)
{
	hier h[MAX_HIER];
	size_t n = hiers(h);
	int ret = 0;
	for (size_t i = 0; i < n; i++) {
		char d[4200];
		dir_of(&h[i], path, d, sizeof(d));
		int k;
		for (k = 0; k < 100 && rmdir(d) < 0 && errno == EBUSY; k++)
			nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
		if (access(d, F_OK) == 0)
			ret = -EBUSY;
	}
	return ret;
}

static int read_u64(const char *dir, const char *file, uint64_t *ret)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	_cleanup_free_ char *v = NULL;
	if (fs_read_file(p, 4096, &v, NULL) < 0)
		return -errno;
	if (startswith(v, "max")) {
		*ret = 0;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v)
		return -EINVAL;
	*ret = x;
	return 0;
}

static char *read_text(const char *dir, const char *file)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	char *v = NULL;
	if (fs_read_file(p, 1 << 20, &v, NULL) < 0)
		return NULL;
	return v;
}

static void set_u64(json_t *o, const char *k, uint64_t v) { (void)json_object_set_new(o, k, json_integer((json_int_t)v)); }

/* v1 memory: usage, max, limit, failcnt of one counter family. */
static json_t *mem_entry(const char *dir, const char *prefix)
{
	static const struct {
		const char *k, *f;
	} files[] = {{"usage", "usage_in_bytes"}, {"max", "max_usage_in_bytes"}, {"limit", "limit_in_bytes"}, {"failcnt", "failcnt"}};
	json_t *o = json_object();
	for (size_t i = 0; o && i < ARRAY_SIZE(files); i++) {
		char f[128];
		uint64_t v = 0;
		snprintf(f, sizeof(f), "%s%s", prefix, files[i].f);
		(void)read_u64(dir, f, &v);
		set_u64(o, files[i].k, v);
	}
	return o;
}

int rcg_stats(const char *path, json_t **ret, sbx_err **err)
{
	hier h[MAX_HIER];
	size_t n = hiers(h);
	_cleanup_json_ json_t *d = json_object();
	json_t *cpu = json_object(), *usage = json_object(), *thr = json_object(), *mem = json_object(),
	       *pids = json_object();
	if (!d || !cpu || !usage || !thr || !mem || !pids) {
		json_decref(cpu), json_decref(usage), json_decref(thr), json_decref(mem), json_decref(pids);
		return err_oom(err);
	}
	(void)json_object_set_new(cpu, "usage", usage);
	(void)json_object_set_new(cpu, "throttling", thr);
	(void)json_object_set_new(d, "cpu", cpu);
	(void)json_object_set_new(d, "memory", mem);
	(void)json_object_set_new(d, "pids", pids);
	long tck = sysconf(_SC_CLK_TCK);
	uint64_t ns_per_tick = tck > 0 ? 1000000000ull / (uint64_t)tck : 10000000ull;
	/* On a hybrid host the v2 hierarchy has cpu.stat and more without the
	 * controllers: a v1 controller's numbers win. */
	bool v1_cpuacct = false, v1_memory = false, v1_pids = false, found = false;
	for (size_t i = 0; i < n; i++)
		v1_cpuacct |= h[i].cpuacct, v1_memory |= h[i].memory, v1_pids |= h[i].pids;
	for (size_t i = 0; i < n; i++) {
		char dir[4200];
		dir_of(&h[i], path, dir, sizeof(dir));
		if (access(dir, F_OK) < 0)
			continue;
		found = true;
		uint64_t v = 0;
		_cleanup_free_ char *cst = read_text(dir, "cpu.stat");
		if (cst && (h[i].v2 || h[i].cpu)) {
			if (oci_kv_get(cst, "nr_periods", &v) == 0)
				set_u64(thr, "periods", v);
			if (oci_kv_get(cst, "nr_throttled", &v) == 0)
				set_u64(thr, "throttled_periods", v);
			if (oci_kv_get(cst, "throttled_time", &v) == 0)
				set_u64(thr, "throttled_time", v);
			else if (oci_kv_get(cst, "throttled_usec", &v) == 0)
				set_u64(thr, "throttled_time", v * 1000);
			if (h[i].v2 && !v1_cpuacct) {
				if (oci_kv_get(cst, "usage_usec", &v) == 0)
					set_u64(usage, "total", v * 1000);
				if (oci_kv_get(cst, "user_usec", &v) == 0)
					set_u64(usage, "user", v * 1000);
				if (oci_kv_get(cst, "system_usec", &v) == 0)
					set_u64(usage, "kernel", v * 1000);
			}
		}
		if (!h[i].v2 && read_u64(dir, "cpuacct.usage", &v) == 0) {
			set_u64(usage, "total", v);
			_cleanup_free_ char *pc = read_text(dir, "cpuacct.usage_percpu");
			if (pc)
				(void)json_object_set_new(usage, "percpu", oci_u64_array(pc));
			_cleanup_free_ char *st = read_text(dir, "cpuacct.stat");
			if (st && oci_kv_get(st, "user", &v) == 0)
				set_u64(usage, "user", v * ns_per_tick);
			if (st && oci_kv_get(st, "system", &v) == 0)
				set_u64(usage, "kernel", v * ns_per_tick);
		}
		if (h[i].memory) {
			(void)json_object_set_new(mem, "usage", mem_entry(dir, "memory."));
			if (file_exists(dir, "memory.memsw.usage_in_bytes"))
				(void)json_object_set_new(mem, "swap", mem_entry(dir, "memory.memsw."));
			(void)json_object_set_new(mem, "kernel", mem_entry(dir, "memory.kmem."));
			(void)json_object_set_new(mem, "kernelTCP", mem_entry(dir, "memory.kmem.tcp."));
		}
		if (h[i].v2 && !v1_memory && file_exists(dir, "memory.current")) {
			json_t *u = json_object();
			(void)read_u64(dir, "memory.current", &v), set_u64(u, "usage", v);
			v = 0, (void)read_u64(dir, "memory.peak", &v), set_u64(u, "max", v);
			v = 0, (void)read_u64(dir, "memory.max", &v), set_u64(u, "limit", v);
			_cleanup_free_ char *ev = read_text(dir, "memory.events");
			v = 0;
			if (ev)
				(void)oci_kv_get(ev, "max", &v);
			set_u64(u, "failcnt", v);
			(void)json_object_set_new(mem, "usage", u);
			if (file_exists(dir, "memory.swap.current")) {
				json_t *sw = json_object();
				v = 0, (void)read_u64(dir, "memory.swap.current", &v), set_u64(sw, "usage", v);
				v = 0, (void)read_u64(dir, "memory.swap.max", &v), set_u64(sw, "limit", v);
				(void)json_object_set_new(mem, "swap", sw);
			}
		}
		if (h[i].memory || (h[i].v2 && !v1_memory && file_exists(dir, "memory.stat"))) {
			_cleanup_free_ char *ms = read_text(dir, "memory.stat");
			if (ms) {
				if (oci_kv_get(ms, h[i].v2 ? "file" : "cache", &v) == 0)
					set_u64(mem, "cache", v);
				(void)json_object_set_new(mem, "raw", oci_kv_object(ms));
			}
		}
		if (h[i].pids || (h[i].v2 && !v1_pids && file_exists(dir, "pids.current"))) {
			v = 0, (void)read_u64(dir, "pids.current", &v), set_u64(pids, "current", v);
			v = 0, (void)read_u64(dir, "pids.max", &v), set_u64(pids, "limit", v);
		}
	}
	if (!found)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "the container's cgroup '%s' is gone", path);
	*ret = TAKE_PTR(d);
	return 0;
}

int rcg_oom_kills(const char *path, uint64_t *ret)
{
	hier h[MAX_HIER];
	size_t n = hiers(h);
	for (size_t i = 0; i < n; i++) {
		if (!h[i].memory && !h[i].v2)
			continue;
		char dir[4200];
		dir_of(&h[i], path, dir, sizeof(dir));
		_cleanup_free_ char *t = read_text(dir, h[i].v2 ? "memory.events" : "memory.oom_control");
		if (t && oci_kv_get(t, "oom_kill", ret) == 0)
			return 0;
	}
	return -ENOENT;
}
