/* Pure state-file handling and decisions (oci_state.h). */
#include "runc/oci_state.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/macro.h"

void oci_state_rec_done(oci_state_rec *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->bundle);
	free(r->rootfs);
	free(r->created);
	free(r->cgroup);
	json_decref(r->annotations);
	json_decref(r->hooks);
	memset(r, 0, sizeof(*r));
}

char *oci_state_format(const oci_state_rec *r)
{
	_cleanup_json_ json_t *j = json_pack("{s:s,s:I,s:I,s:s,s:s,s:s,s:s,s:I,s:O}", "id", r->id, "pid",
					     (json_int_t)r->pid, "start_time", (json_int_t)r->start_time, "bundle",
					     r->bundle, "rootfs", r->rootfs, "created", r->created, "cgroup",
					     r->cgroup, "owner", (json_int_t)r->owner, "annotations",
					     r->annotations ? r->annotations : json_object());
	if (!j)
		return NULL;
	if (r->hooks && json_object_set(j, "hooks", r->hooks) < 0)
		return NULL;
	return json_dumps(j, JSON_COMPACT);
}

static int dup_str(const json_t *j, const char *k, char **ret)
{
	const char *s = json_str(j, k);
	if (!s)
		return -EINVAL;
	return (*ret = strdup(s)) ? 0 : -ENOMEM;
}

int oci_state_parse(const char *text, size_t len, oci_state_rec *ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loadb(text, len, 0, &je);
	if (!j || !json_is_object(j))
		return err_set(err, SBX_E_INTERNAL, EINVAL, "state file is not a JSON object");
	oci_state_rec r = {0};
	int64_t pid = json_int(j, "pid", -1), st = json_int(j, "start_time", -1), owner = json_int(j, "owner", 0);
	if (pid <= 0 || pid > 4194304 || st < 0 || owner < 0 || owner > UINT32_MAX) {
		oci_state_rec_done(&r);
		return err_set(err, SBX_E_INTERNAL, EINVAL, "state file: bad pid or start time");
	}
	r.pid = (pid_t)pid;
	r.start_time = (uint64_t)st;
	r.owner = (uint32_t)owner;
	if (dup_str(j, "id", &r.id) < 0 || dup_str(j, "bundle", &r.bundle) < 0 || dup_str(j, "rootfs", &r.rootfs) < 0 ||
	    dup_str(j, "created", &r.created) < 0 || dup_str(j, "cgroup", &r.cgroup) < 0) {
		oci_state_rec_done(&r);
		return err_set(err, SBX_E_INTERNAL, EINVAL, "state file: a field is missing");
	}
	json_t *a = json_object_get(j, "annotations");
	r.annotations = json_is_object(a) ? json_incref(a) : json_object();
	json_t *h = json_object_get(j, "hooks");
	r.hooks = json_is_object(h) ? json_incref(h) : NULL;
	*ret = r;
	return 0;
}

const char *oci_status_decide(const oci_observed *o)
{
	if (!o->alive)
		return "stopped";
	if (o->frozen)
		return "paused";
	return o->start_pending ? "created" : "running";
}

json_t *oci_state_json(const oci_state_rec *r, const char *status)
{
	bool stopped = streq(status, "stopped");
	return json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:s,s:o}", "ociVersion", OCI_SPEC_VERSION, "id", r->id, "pid",
			 (json_int_t)(stopped ? 0 : r->pid), "status", status, "bundle", r->bundle, "rootfs", r->rootfs,
			 "created", r->created, "owner", "",
			 "annotations", r->annotations ? json_incref(r->annotations) : json_object());
}

char *oci_state_report(const oci_state_rec *r, const char *status)
{
	_cleanup_json_ json_t *j = oci_state_json(r, status);
	if (!j)
		return NULL;
	return json_dumps(j, JSON_INDENT(2));
}

int oci_proc_stat_parse(const char *text, char *ret_state, uint64_t *ret_start_time)
{
	const char *p = strrchr(text, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	p += 2;
	char state = *p;
	/* Fields after the name start at 3 (state); starttime is 22. */
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno || (*end && *end != ' ' && *end != '\n'))
		return -EINVAL;
	*ret_state = state;
	*ret_start_time = v;
	return 0;
}

bool oci_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > 1024 || !isalnum((unsigned char)id[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)id[i]) && !strchr("_.+-", id[i]))
			return false;
	return true;
}

static bool path_safe(const char *p)
{
	/* No "." or ".." component, no empty name other than a leading '/'. */
	for (const char *c = p; *c;) {
		while (*c == '/')
			c++;
		const char *e = strchrnul(c, '/');
		size_t l = (size_t)(e - c);
		if ((l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = e;
	}
	return true;
}

int oci_cgroup_path(const char *cgroups_path, const char *id, bool systemd, char **ret, sbx_err **err)
{
	char *out = NULL;
	if (!cgroups_path || !*cgroups_path) {
		if (asprintf(&out, "/sbx-runc/%s", id) < 0)
			return err_oom(err);
	} else if (systemd) {
		/* slice:prefix:name */
		_cleanup_free_ char *dup = strdup(cgroups_path);
		if (!dup)
			return err_oom(err);
		char *c1 = strchr(dup, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c1 || !c2 || strchr(c2 + 1, ':'))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "cgroupsPath '%s' is not slice:prefix:name (--systemd-cgroup)", cgroups_path);
		*c1 = *c2 = 0;
		const char *slice = *dup ? dup : "system.slice", *prefix = c1 + 1, *name = c2 + 1;
		if (strchr(slice, '/') || strchr(prefix, '/') || strchr(name, '/') || !*name)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "cgroupsPath '%s' is not valid", cgroups_path);
		/* a-b-c.slice lives at /a.slice/a-b.slice/a-b-c.slice; -.slice is the root. */
		char path[4096] = "";
		size_t sl = strlen(slice);
		if (sl < 6 || strcmp(slice + sl - 6, ".slice") != 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' is not a slice", slice);
		if (!streq(slice, "-.slice")) {
			const char *base = slice;
			size_t bl = sl - 6;
			for (size_t i = 0; i <= bl; i++) {
				if (i == bl || base[i] == '-') {
					if (i == 0 || (i < bl && base[i + 1] == '-'))
						return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' is not a valid slice",
							       slice);
					size_t pl = strlen(path);
					if (pl + i + 8 >= sizeof(path))
						return err_set(err, SBX_E_INVALID_ARGUMENT, ENAMETOOLONG, "slice too long");
					snprintf(path + pl, sizeof(path) - pl, "/%.*s.slice", (int)i, base);
				}
			}
		}
		const char *suffix = strstr(name, ".slice") ? "" : ".scope";
		if (*prefix ? asprintf(&out, "%s/%s-%s%s", path, prefix, name, suffix) < 0
			    : asprintf(&out, "%s/%s%s", path, name, suffix) < 0)
			return err_oom(err);
	} else if (cgroups_path[0] == '/') {
		if (!(out = strdup(cgroups_path)))
			return err_oom(err);
	} else if (asprintf(&out, "/%s", cgroups_path) < 0) {
		return err_oom(err);
	}
	if (!path_safe(out) || strlen(out) > 4000) {
		free(out);
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "cgroupsPath '%s' is not a safe path",
			       cgroups_path ? cgroups_path : "");
	}
	*ret = out;
	return 0;
}

/* The n-th (0-based) whitespace-separated field of a line as a number, or -1. */
static long field_num(const char *line, size_t len, int n)
{
	size_t i = 0;
	for (int f = 0;; f++) {
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i >= len)
			return -1;
		size_t st = i;
		while (i < len && line[i] != ' ' && line[i] != '\t')
			i++;
		if (f == n) {
			long v = 0;
			for (size_t k = st; k < i; k++) {
				if (line[k] < '0' || line[k] > '9' || v > 1000000000L)
					return -1;
				v = v * 10 + (line[k] - '0');
			}
			return i > st ? v : -1;
		}
	}
}

int oci_ps_filter(const char *ps_out, const pid_t *pids, size_t n, char **ret)
{
	const char *nl = strchr(ps_out, '\n');
	size_t hlen = nl ? (size_t)(nl - ps_out) : strlen(ps_out);
	/* The PID column's index in the header. */
	int col = -1;
	size_t i = 0;
	for (int f = 0; i < hlen; f++) {
		while (i < hlen && (ps_out[i] == ' ' || ps_out[i] == '\t'))
			i++;
		size_t st = i;
		while (i < hlen && ps_out[i] != ' ' && ps_out[i] != '\t')
			i++;
		if (i > st && i - st == 3 && memcmp(ps_out + st, "PID", 3) == 0) {
			col = f;
			break;
		}
	}
	if (col < 0)
		return -EINVAL;
	size_t total = strlen(ps_out);
	char *out = malloc(total + 2);
	if (!out)
		return -ENOMEM;
	size_t o = 0;
	memcpy(out, ps_out, hlen);
	o = hlen;
	out[o++] = '\n';
	for (const char *l = nl ? nl + 1 : ps_out + total; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		long pid = field_num(l, len, col);
		for (size_t k = 0; pid > 0 && k < n; k++)
			if (pids[k] == (pid_t)pid) {
				memcpy(out + o, l, len);
				o += len;
				out[o++] = '\n';
				break;
			}
		l += len + (e ? 1 : 0);
	}
	out[o] = 0;
	*ret = out;
	return 0;
}


int oci_kv_get(const char *text, const char *key, uint64_t *ret)
{
	size_t kl = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, key, kl) != 0 || l[kl] != ' ')
			continue;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(l + kl + 1, &end, 10);
		if (errno || end == l + kl + 1)
			return -EINVAL;
		*ret = v;
		return 0;
	}
	return -ENOENT;
}

json_t *oci_kv_object(const char *text)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *sp = strchr(l, ' ');
		const char *nl = strchrnul(l, '\n');
		if (!sp || sp > nl || sp == l || sp - l > 255)
			continue;
		char k[256];
		memcpy(k, l, (size_t)(sp - l));
		k[sp - l] = 0;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(sp + 1, &end, 10);
		if (errno || end == sp + 1 || (end != nl && *end != ' '))
			continue;
		if (json_object_set_new(o, k, json_integer((json_int_t)v)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *oci_u64_array(const char *text)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	for (const char *s = text; *s;) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (end == s)
			break;
		if (errno || json_array_append_new(a, json_integer((json_int_t)v)) < 0) {
			json_decref(a);
			return NULL;
		}
		s = end;
	}
	return a;
}

int oci_duration_ms(const char *s, uint64_t *ret)
{
	if (!s || !*s)
		return -EINVAL;
	double total = 0;
	while (*s) {
		char *end;
		errno = 0;
		double v = strtod(s, &end);
		if (end == s || errno || v < 0)
			return -EINVAL;
		s = end;
		double unit;
		if (strncmp(s, "ms", 2) == 0)
			unit = 1, s += 2;
		else if (strncmp(s, "us", 2) == 0)
			unit = 0.001, s += 2;
		else if (strncmp(s, "ns", 2) == 0)
			unit = 0.000001, s += 2;
		else if (*s == 's')
			unit = 1000, s++;
		else if (*s == 'm')
			unit = 60000, s++;
		else if (*s == 'h')
			unit = 3600000, s++;
		else
			return -EINVAL;
		total += v * unit;
		if (total > 1e15)
			return -EINVAL;
	}
	*ret = (uint64_t)total;
	return 0;
}
