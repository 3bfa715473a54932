/* CDI specs: parser (JSON through jansson, YAML through libyaml turned into
 * the same JSON tree), resolver and allowlist (pure), and the directory
 * loader (I/O). The contract is cdi.h. */
#include "runtime/cdi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

/* ---- versions ---- */

typedef struct ver {
	unsigned a, b, c;
} ver;

static bool ver_parse(const char *s, ver *v)
{
	char tail;
	if (!s || sscanf(s, "%u.%u.%u%c", &v->a, &v->b, &v->c, &tail) != 3)
		return false;
	return strspn(s, "0123456789.") == strlen(s);
}

static int ver_cmp(ver x, ver y)
{
	if (x.a != y.a)
		return x.a < y.a ? -1 : 1;
	if (x.b != y.b)
		return x.b < y.b ? -1 : 1;
	return x.c == y.c ? 0 : x.c < y.c ? -1 : 1;
}

static void ver_need(ver *minv, unsigned a, unsigned b, unsigned c)
{
	ver v = {a, b, c};
	if (ver_cmp(*minv, v) < 0)
		*minv = v;
}

/* ---- names ---- */

static bool is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* alnum at both ends, alnum or one of `inner` between, 1..max chars. */
static bool seg_ok(const char *s, size_t len, const char *inner, size_t max)
{
	if (len == 0 || len > max || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_alnum(s[i]) && !strchr(inner, s[i]))
			return false;
	return true;
}

static bool kind_ok(const char *k)
{
	const char *slash = strchr(k, '/');
	if (!slash || strchr(slash + 1, '/'))
		return false;
	size_t vl = (size_t)(slash - k);
	if (!seg_ok(k, vl, "-_.", 253) || strstr(k, "..") != NULL)
		return false;
	return seg_ok(slash + 1, strlen(slash + 1), "-_.", 63);
}

static bool devname_ok(const char *n)
{
	return seg_ok(n, strlen(n), "-_.:", 255);
}

int cdi_name_parse(const char *q, char **ret_kind, char **ret_name, sbx_err **err)
{
	const char *eq = q ? strchr(q, '=') : NULL;
	if (!eq)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "device '%s': expected a CDI name vendor/class=name (e.g. nvidia.com/gpu=0)",
			       q ? q : "");
	_cleanup_free_ char *kind = strndup(q, (size_t)(eq - q)), *name = strdup(eq + 1);
	if (!kind || !name)
		return err_oom(err);
	if (!kind_ok(kind))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "device '%s': invalid kind '%s' (expected vendor/class, e.g. nvidia.com/gpu)",
			       q, kind);
	if (!devname_ok(name))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "device '%s': invalid device name '%s' (letters, digits, '-', '_', '.', ':')",
			       q, name);
	*ret_kind = TAKE_PTR(kind);
	*ret_name = TAKE_PTR(name);
	return 0;
}

/* ---- freeing ---- */

void cdi_edits_done(cdi_edits *e)
{
	if (!e)
		return;
	strv_free(e->env);
	for (size_t i = 0; i < e->n_nodes; i++) {
		free(e->nodes[i].path);
		free(e->nodes[i].host_path);
	}
	free(e->nodes);
	for (size_t i = 0; i < e->n_mounts; i++) {
		free(e->mounts[i].host_path);
		free(e->mounts[i].container_path);
		free(e->mounts[i].type);
		strv_free(e->mounts[i].options);
	}
	free(e->mounts);
	for (size_t i = 0; i < e->n_hooks; i++) {
		free(e->hooks[i].name);
		free(e->hooks[i].path);
		strv_free(e->hooks[i].args);
		strv_free(e->hooks[i].env);
	}
	free(e->hooks);
	free(e->gids);
	*e = (cdi_edits){0};
}

cdi_spec *cdi_spec_free(cdi_spec *s)
{
	if (!s)
		return NULL;
	free(s->file);
	free(s->version);
	free(s->kind);
	cdi_edits_done(&s->edits);
	for (size_t i = 0; i < s->n_devices; i++) {
		free(s->devices[i].name);
		cdi_edits_done(&s->devices[i].edits);
	}
	free(s->devices);
	free(s);
	return NULL;
}

void cdi_specs_free(cdi_spec **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		cdi_spec_free(v[i]);
	free(v);
}

static void cdi_spec_freep(cdi_spec **s)
{
	cdi_spec_free(*s);
}

/* ---- YAML -> JSON ---- */

/* Bounds on what a YAML document may expand to: aliases make a DAG that a
 * naive conversion unrolls (the "billion laughs"). */
#define YAML_MAX_NODES 200000
#define YAML_MAX_DEPTH 64

static json_t *yaml_scalar(const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(s, len);
	if (len == 0 || streq(s, "~") || streq(s, "null") || streq(s, "Null") || streq(s, "NULL"))
		return json_null();
	if (streq(s, "true") || streq(s, "True") || streq(s, "TRUE"))
		return json_true();
	if (streq(s, "false") || streq(s, "False") || streq(s, "FALSE"))
		return json_false();
	/* Integers: decimal, 0o/0x as YAML 1.2 writes them, a leading-zero
	 * octal as YAML 1.1 does (fileMode: 0666). */
	char *end = NULL;
	errno = 0;
	long long v;
	if (len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x'))
		v = strtoll(s + 2, &end, s[1] == 'o' ? 8 : 16);
	else
		v = strtoll(s, &end, len > 1 && s[0] == '0' ? 8 : 10);
	if (errno == 0 && end == s + len && len == strlen(s) &&
	    (is_alnum(s[0]) || s[0] == '-' || s[0] == '+'))
		return json_integer(v);
	return json_stringn(s, len);
}

static json_t *yaml_node_json(yaml_document_t *doc, yaml_node_t *n, int depth, size_t *budget)
{
	if (!n || depth > YAML_MAX_DEPTH || *budget == 0)
		return NULL;
	(*budget)--;
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return yaml_scalar(n);
	case YAML_SEQUENCE_NODE: {
		_cleanup_json_ json_t *a = json_array();
		if (!a)
			return NULL;
		for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
		     it++) {
			json_t *v = yaml_node_json(doc, yaml_document_get_node(doc, *it), depth + 1, budget);
			if (!v || json_array_append_new(a, v) < 0)
				return NULL;
		}
		return TAKE_PTR(a);
	}
	case YAML_MAPPING_NODE: {
		_cleanup_json_ json_t *o = json_object();
		if (!o)
			return NULL;
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);
			if (!k || k->type != YAML_SCALAR_NODE ||
			    strlen((char *)k->data.scalar.value) != k->data.scalar.length)
				return NULL;
			json_t *v =
			    yaml_node_json(doc, yaml_document_get_node(doc, p->value), depth + 1, budget);
			if (!v || json_object_set_new(o, (const char *)k->data.scalar.value, v) < 0)
				return NULL;
		}
		return TAKE_PTR(o);
	}
	default:
		return NULL;
	}
}

static int yaml_to_json(const char *text, size_t len, json_t **ret, char *why, size_t why_n)
{
	yaml_parser_t p;
	yaml_document_t doc;
	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &doc)) {
		snprintf(why, why_n, "line %zu column %zu: %s", p.problem_mark.line + 1,
			 p.problem_mark.column + 1, p.problem ? p.problem : "malformed YAML");
		yaml_parser_delete(&p);
		return -EINVAL;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	size_t budget = YAML_MAX_NODES;
	json_t *j = root ? yaml_node_json(&doc, root, 0, &budget) : NULL;
	if (!j)
		snprintf(why, why_n, "%s",
			 !root	       ? "empty document"
			 : budget == 0 ? "too large (aliases expand beyond the limit)"
				       : "unsupported YAML (non-scalar keys, or too deep)");
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	if (!j)
		return -EINVAL;
	*ret = j;
	return 0;
}

/* ---- spec fields ---- */

typedef struct pctx {
	const char *file;
	bool yaml; /* an unquoted integer is also a string (name: 0), as YAML decoders into strings do */
	ver minv;
	sbx_err **err;
} pctx;

static int bad(pctx *c, const char *field, const char *what)
{
	return err_set(c->err, SBX_E_INVALID_ARGUMENT, EINVAL, "spec '%s': %s: %s", c->file, field, what);
}

/* Refuses a key of o not in `known` (NULL-terminated). */
static int only_keys(pctx *c, const json_t *o, const char *field, const char *const *known)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v)
	{
		bool ok = false;
		for (const char *const *q = known; *q && !ok; q++)
			ok = streq(*q, k);
		if (!ok) {
			char f[300];
			snprintf(f, sizeof(f), "%.200s%s%.60s", field, *field ? "." : "", k);
			return bad(c, f, "unknown field");
		}
	}
	return 0;
}

static int get_str(pctx *c, const json_t *o, const char *key, const char *field, bool required, bool absolute,
		   char **ret)
{
	json_t *v = json_object_get(o, key);
	char f[300];
	snprintf(f, sizeof(f), "%.200s.%s", field, key);
	if (!v || json_is_null(v)) {
		if (required)
			return bad(c, f, "missing");
		*ret = NULL;
		return 0;
	}
	char num[32];
	const char *s = NULL;
	if (c->yaml && json_is_integer(v)) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		s = num;
	} else if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return bad(c, f, "must be a string");
	else
		s = json_string_value(v);
	if (absolute && s[0] != '/')
		return bad(c, f, "must be an absolute path");
	if (absolute &&
	    (strstr(s, "/../") || (strlen(s) >= 3 && streq(s + strlen(s) - 3, "/..")) || streq(s, "/..")))
		return bad(c, f, "must not contain '..'");
	if (!(*ret = strdup(s)))
		return err_oom(c->err);
	return 0;
}

static int get_strv(pctx *c, const json_t *o, const char *key, const char *field, bool env_form, char ***ret)
{
	json_t *v = json_object_get(o, key);
	char f[300];
	snprintf(f, sizeof(f), "%.200s.%s", field, key);
	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return bad(c, f, "must be an array of strings");
	size_t i;
	json_t *x;
	json_array_foreach(v, i, x)
	{
		if (!json_is_string(x) || strlen(json_string_value(x)) != json_string_length(x))
			return bad(c, f, "must be an array of strings");
		const char *s = json_string_value(x);
		if (env_form && (!strchr(s, '=') || s[0] == '='))
			return bad(c, f, "entries must be NAME=VALUE");
	}
	if (!(*ret = json_to_strv(v)))
		return err_oom(c->err);
	return 0;
}

static int get_int(pctx *c, const json_t *o, const char *key, const char *field, int64_t lo, int64_t hi,
		   int64_t *ret)
{
	json_t *v = json_object_get(o, key);
	char f[300];
	snprintf(f, sizeof(f), "%.200s.%s", field, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return bad(c, f, "must be an integer in range");
	*ret = json_integer_value(v);
	return 0;
}

static int parse_node(pctx *c, const json_t *o, const char *field, cdi_node *n)
{
	static const char *const keys[] = {"path",     "hostPath",    "type", "major", "minor",
					   "fileMode", "permissions", "uid",  "gid",   NULL};
	*n = (cdi_node){.major = -1, .minor = -1, .file_mode = -1, .uid = -1, .gid = -1};
	strcpy(n->perms, "rwm");
	if (!json_is_object(o))
		return bad(c, field, "must be an object");
	if (only_keys(c, o, field, keys) < 0 || get_str(c, o, "path", field, true, true, &n->path) < 0 ||
	    get_str(c, o, "hostPath", field, false, true, &n->host_path) < 0)
		return -1;
	if (n->host_path)
		ver_need(&c->minv, 0, 5, 0);
	if (!n->host_path && !(n->host_path = strdup(n->path)))
		return err_oom(c->err);
	_cleanup_free_ char *type = NULL, *perms = NULL;
	if (get_str(c, o, "type", field, false, false, &type) < 0 ||
	    get_str(c, o, "permissions", field, false, false, &perms) < 0)
		return -1;
	char f[300];
	snprintf(f, sizeof(f), "%.200s.type", field);
	if (type && (streq(type, "c") || streq(type, "u") || streq(type, "char")))
		n->type = 'c';
	else if (type && (streq(type, "b") || streq(type, "block")))
		n->type = 'b';
	else if (type && (streq(type, "p") || streq(type, "fifo")))
		n->type = 'p';
	else if (type && *type)
		return bad(c, f, "must be c, b, u or p");
	snprintf(f, sizeof(f), "%.200s.permissions", field);
	if (perms && streq(perms, "none"))
		n->perms[0] = 0;
	else if (perms && *perms) {
		if (strlen(perms) > 3 || strspn(perms, "rwm") != strlen(perms))
			return bad(c, f, "must be made of r, w and m (or \"none\")");
		char norm[4] = "";
		size_t k = 0;
		for (const char *q = "rwm"; *q; q++)
			if (strchr(perms, *q))
				norm[k++] = *q;
		norm[k] = 0;
		memcpy(n->perms, norm, sizeof(norm));
	}
	if (get_int(c, o, "major", field, 0, 0xfff, &n->major) < 0 ||
	    get_int(c, o, "minor", field, 0, 0xfffff, &n->minor) < 0 ||
	    get_int(c, o, "fileMode", field, 0, 07777 | 0170000, &n->file_mode) < 0 ||
	    get_int(c, o, "uid", field, 0, UINT32_MAX, &n->uid) < 0 ||
	    get_int(c, o, "gid", field, 0, UINT32_MAX, &n->gid) < 0)
		return -1;
	if (n->type == 'p' && (n->major >= 0 || n->minor >= 0))
		return bad(c, field, "a fifo has no major or minor number");
	return 0;
}

static int parse_mount(pctx *c, const json_t *o, const char *field, cdi_mount *m)
{
	static const char *const keys[] = {"hostPath", "containerPath", "type", "options", NULL};
	if (!json_is_object(o))
		return bad(c, field, "must be an object");
	if (only_keys(c, o, field, keys) < 0 ||
	    get_str(c, o, "hostPath", field, true, false, &m->host_path) < 0 ||
	    get_str(c, o, "containerPath", field, true, true, &m->container_path) < 0 ||
	    get_str(c, o, "type", field, false, false, &m->type) < 0 ||
	    get_strv(c, o, "options", field, false, &m->options) < 0)
		return -1;
	if (m->type)
		ver_need(&c->minv, 0, 4, 0);
	return 0;
}

static const char *const hook_names[] = {
    "createRuntime", "createContainer", "startContainer", "poststart", "poststop", "prestart", NULL};

static int parse_hook(pctx *c, const json_t *o, const char *field, cdi_hook *h)
{
	static const char *const keys[] = {"hookName", "path", "args", "env", "timeout", NULL};
	if (!json_is_object(o))
		return bad(c, field, "must be an object");
	if (only_keys(c, o, field, keys) < 0 || get_str(c, o, "hookName", field, true, false, &h->name) < 0 ||
	    get_str(c, o, "path", field, true, true, &h->path) < 0 ||
	    get_strv(c, o, "args", field, false, &h->args) < 0 ||
	    get_strv(c, o, "env", field, true, &h->env) < 0)
		return -1;
	bool known = false;
	for (const char *const *q = hook_names; *q && !known; q++)
		known = streq(*q, h->name);
	char f[300];
	snprintf(f, sizeof(f), "%.200s.hookName", field);
	if (!known)
		return bad(c, f,
			   "must be createRuntime, createContainer, startContainer, poststart or poststop");
	h->timeout_s = 0;
	if (get_int(c, o, "timeout", field, 1, 86400, &h->timeout_s) < 0)
		return -1;
	return 0;
}

/* Parses the array o[key] into a fresh array of `size`-byte items. */
#define PARSE_ARRAY(c, o, key, field, arr, n, fn)                                                            \
	({                                                                                                   \
		int _r = 0;                                                                                  \
		json_t *_a = json_object_get(o, key);                                                        \
		char _f[300];                                                                                \
		snprintf(_f, sizeof(_f), "%.200s.%.60s", field, key);                                        \
		if (_a && !json_is_null(_a) && !json_is_array(_a))                                           \
			_r = bad(c, _f, "must be an array");                                                 \
		else if (json_array_size(_a) && !((arr) = calloc(json_array_size(_a), sizeof(*(arr)))))      \
			_r = err_oom((c)->err);                                                              \
		for (size_t _i = 0; _r == 0 && _i < json_array_size(_a); _i++) {                             \
			char _fi[320];                                                                       \
			snprintf(_fi, sizeof(_fi), "%.200s[%zu]", _f, _i);                                   \
			(n)++;                                                                               \
			_r = fn(c, json_array_get(_a, _i), _fi, &(arr)[_i]);                                 \
		}                                                                                            \
		_r;                                                                                          \
	})

static int parse_edits(pctx *c, const json_t *o, const char *field, cdi_edits *e)
{
	static const char *const keys[] = {"env",      "deviceNodes",	 "mounts",
					   "hooks",    "additionalGids", "additionalGIDs",
					   "intelRdt", "netDevices",	 NULL};
	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return bad(c, field, "must be an object");
	if (only_keys(c, o, field, keys) < 0 || get_strv(c, o, "env", field, true, &e->env) < 0 ||
	    PARSE_ARRAY(c, o, "deviceNodes", field, e->nodes, e->n_nodes, parse_node) < 0 ||
	    PARSE_ARRAY(c, o, "mounts", field, e->mounts, e->n_mounts, parse_mount) < 0 ||
	    PARSE_ARRAY(c, o, "hooks", field, e->hooks, e->n_hooks, parse_hook) < 0)
		return -1;
	json_t *g = json_object_get(o, "additionalGids") ?: json_object_get(o, "additionalGIDs");
	char f[300];
	snprintf(f, sizeof(f), "%.200s.additionalGids", field);
	if (g && !json_is_null(g)) {
		ver_need(&c->minv, 0, 7, 0);
		if (!json_is_array(g))
			return bad(c, f, "must be an array of group ids");
		if (json_array_size(g) && !(e->gids = calloc(json_array_size(g), sizeof(uint32_t))))
			return err_oom(c->err);
		size_t i;
		json_t *x;
		json_array_foreach(g, i, x)
		{
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    json_integer_value(x) > UINT32_MAX)
				return bad(c, f, "must be an array of group ids");
			if (json_integer_value(x) != 0) /* "a value of 0 is ignored" */
				e->gids[e->n_gids++] = (uint32_t)json_integer_value(x);
		}
	}
	json_t *rdt = json_object_get(o, "intelRdt"), *net = json_object_get(o, "netDevices");
	if (rdt && !json_is_null(rdt)) {
		ver_need(&c->minv, 0, 7, 0);
		e->unsupported = true;
	}
	if (net && !json_is_null(net)) {
		ver_need(&c->minv, 1, 1, 0);
		e->unsupported = true;
	}
	return 0;
}

static int parse_device(pctx *c, const json_t *o, const char *field, cdi_device *d)
{
	static const char *const keys[] = {"name", "annotations", "containerEdits", NULL};
	if (!json_is_object(o))
		return bad(c, field, "must be an object");
	if (only_keys(c, o, field, keys) < 0 || get_str(c, o, "name", field, true, false, &d->name) < 0)
		return -1;
	char f[300];
	snprintf(f, sizeof(f), "%.200s.name", field);
	if (!devname_ok(d->name))
		return bad(c, f, "invalid device name (letters, digits, '-', '_', '.', ':')");
	if (d->name[0] >= '0' && d->name[0] <= '9')
		ver_need(&c->minv, 0, 5, 0);
	if (json_object_get(o, "annotations"))
		ver_need(&c->minv, 0, 6, 0);
	snprintf(f, sizeof(f), "%.200s.containerEdits", field);
	return parse_edits(c, json_object_get(o, "containerEdits"), f, &d->edits);
}

static int spec_from_json(pctx *c, const json_t *o, cdi_spec *s)
{
	static const char *const keys[] = {"cdiVersion", "kind",	   "annotations",
					   "devices",	 "containerEdits", NULL};
	if (!json_is_object(o))
		return bad(c, "(document)", "must be an object");
	if (only_keys(c, o, "", keys) < 0 ||
	    get_str(c, o, "cdiVersion", "(spec)", true, false, &s->version) < 0 ||
	    get_str(c, o, "kind", "(spec)", true, false, &s->kind) < 0)
		return -1;
	ver v, lo = {0, 3, 0}, hi;
	(void)ver_parse(CDI_VERSION_MAX, &hi);
	if (!ver_parse(s->version, &v))
		return bad(c, "cdiVersion", "must be a version such as 0.6.0");
	if (ver_cmp(v, lo) < 0 || ver_cmp(v, hi) > 0)
		return err_set(c->err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "spec '%s': cdiVersion %s is not supported (0.3.0 to " CDI_VERSION_MAX ")",
			       c->file, s->version);
	if (!kind_ok(s->kind))
		return bad(c, "kind", "must be vendor/class (e.g. nvidia.com/gpu)");
	if (json_object_get(o, "annotations"))
		ver_need(&c->minv, 0, 6, 0);
	if (strchr(strchr(s->kind, '/'), '.'))
		ver_need(&c->minv, 0, 6, 0);
	json_t *devs = json_object_get(o, "devices");
	if (!json_is_array(devs) || json_array_size(devs) == 0)
		return bad(c, "devices", "must be a non-empty array");
	if (PARSE_ARRAY(c, o, "devices", "", s->devices, s->n_devices, parse_device) < 0 ||
	    parse_edits(c, json_object_get(o, "containerEdits"), "containerEdits", &s->edits) < 0)
		return -1;
	for (size_t i = 0; i < s->n_devices; i++)
		for (size_t k = 0; k < i; k++)
			if (streq(s->devices[i].name, s->devices[k].name))
				return err_set(c->err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "spec '%s': device '%s' is defined twice", c->file,
					       s->devices[i].name);
	if (ver_cmp(v, c->minv) < 0)
		return err_set(c->err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "spec '%s': uses fields of cdiVersion %u.%u.%u but says %s", c->file,
			       c->minv.a, c->minv.b, c->minv.c, s->version);
	return 0;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && streq(s + a - b, suf);
}

int cdi_spec_parse(const char *text, size_t len, const char *file, cdi_spec **ret, sbx_err **err)
{
	file = file ? file : "(inline)";
	bool yaml = ends_with(file, ".yaml") || ends_with(file, ".yml");
	_cleanup_json_ json_t *doc = NULL;
	char why[300] = "";
	if (!yaml) {
		json_error_t je;
		doc = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
		if (!doc)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "spec '%s': malformed JSON at line %d: %s", file, je.line, je.text);
	} else {
		int r = yaml_to_json(text, len, &doc, why, sizeof(why));
		if (r == -ENOMEM)
			return err_oom(err);
		if (r < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "spec '%s': malformed YAML: %s",
				       file, why);
	}
	_cleanup_(cdi_spec_freep) cdi_spec *s = calloc(1, sizeof(*s));
	if (!s || !(s->file = strdup(file)))
		return err_oom(err);
	pctx c = {.file = file, .yaml = yaml, .minv = {0, 3, 0}, .err = err};
	if (spec_from_json(&c, doc, s) < 0)
		return -1;
	*ret = TAKE_PTR(s);
	return 0;
}

/* ---- resolve ---- */

static bool strv_has(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (streq(*v, s))
			return true;
	return false;
}

static char **strv_dup(char *const *v)
{
	size_t n = 0;
	char **out = NULL;
	for (; v && *v; v++)
		if (strv_push_copy(&out, &n, *v) < 0) {
			strv_free(out);
			return NULL;
		}
	return out;
}

#define GROW(arr, n)                                                                                         \
	({                                                                                                   \
		__typeof__(arr) _p = realloc(arr, ((n) + 1) * sizeof(*(arr)));                               \
		if (_p)                                                                                      \
			(arr) = _p;                                                                          \
		_p != NULL;                                                                                  \
	})

/* Appends a deep copy of src's edits to dst. */
static int edits_append(cdi_edits *dst, const cdi_edits *src)
{
	size_t ne = 0;
	while (dst->env && dst->env[ne])
		ne++;
	for (char **e = src->env; e && *e; e++)
		if (strv_push_copy(&dst->env, &ne, *e) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < src->n_nodes; i++) {
		if (!GROW(dst->nodes, dst->n_nodes))
			return -ENOMEM;
		cdi_node *n = &dst->nodes[dst->n_nodes];
		*n = src->nodes[i];
		n->path = strdup(src->nodes[i].path);
		n->host_path = strdup(src->nodes[i].host_path);
		dst->n_nodes++;
		if (!n->path || !n->host_path)
			return -ENOMEM;
	}
	for (size_t i = 0; i < src->n_mounts; i++) {
		if (!GROW(dst->mounts, dst->n_mounts))
			return -ENOMEM;
		cdi_mount *m = &dst->mounts[dst->n_mounts++], *s = &src->mounts[i];
		*m = (cdi_mount){strdup(s->host_path), strdup(s->container_path),
				 s->type ? strdup(s->type) : NULL, strv_dup(s->options)};
		if (!m->host_path || !m->container_path || (s->type && !m->type) ||
		    (s->options && !m->options))
			return -ENOMEM;
	}
	for (size_t i = 0; i < src->n_hooks; i++) {
		if (!GROW(dst->hooks, dst->n_hooks))
			return -ENOMEM;
		cdi_hook *h = &dst->hooks[dst->n_hooks++], *s = &src->hooks[i];
		*h = (cdi_hook){strdup(s->name), strdup(s->path), strv_dup(s->args), strv_dup(s->env),
				s->timeout_s};
		if (!h->name || !h->path || (s->args && !h->args) || (s->env && !h->env))
			return -ENOMEM;
	}
	for (size_t i = 0; i < src->n_gids; i++) {
		bool dup = false;
		for (size_t k = 0; k < dst->n_gids && !dup; k++)
			dup = dst->gids[k] == src->gids[i];
		if (dup)
			continue;
		if (!GROW(dst->gids, dst->n_gids))
			return -ENOMEM;
		dst->gids[dst->n_gids++] = src->gids[i];
	}
	return 0;
}

/* The spec defining kind/name with the highest priority; -ENOENT if none,
 * -EEXIST (with *ret_other) if two at that priority do. */
static int find_device(cdi_spec *const *specs, size_t n, const char *kind, const char *name, size_t *ret_spec,
		       size_t *ret_dev, size_t *ret_other)
{
	bool found = false, clash = false;
	size_t bs = 0, bd = 0, other = 0;
	for (size_t i = 0; i < n; i++) {
		if (!streq(specs[i]->kind, kind))
			continue;
		for (size_t d = 0; d < specs[i]->n_devices; d++) {
			if (!streq(specs[i]->devices[d].name, name))
				continue;
			if (!found || specs[i]->priority > specs[bs]->priority) {
				found = true, clash = false, bs = i, bd = d;
			} else if (specs[i]->priority == specs[bs]->priority) {
				clash = true, other = i;
			}
		}
	}
	if (!found)
		return -ENOENT;
	*ret_spec = bs, *ret_dev = bd, *ret_other = other;
	return clash ? -EEXIST : 0;
}

int cdi_resolve(cdi_spec *const *specs, size_t n_specs, const char *const *names, cdi_edits *ret,
		char ***ret_names, sbx_err **err)
{
	/* Expand to (spec, device) pairs, in request order, without repeats. */
	_cleanup_strv_free_ char **resolved = NULL;
	size_t n_res = 0;
	_cleanup_free_ size_t *pick_s = NULL, *pick_d = NULL;
	size_t n_pick = 0;
	for (const char *const *q = names; q && *q; q++) {
		_cleanup_free_ char *kind = NULL, *name = NULL;
		if (cdi_name_parse(*q, &kind, &name, err) < 0)
			return -1;
		bool kind_known = false;
		for (size_t i = 0; i < n_specs && !kind_known; i++)
			kind_known = streq(specs[i]->kind, kind);
		if (!kind_known)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT,
				       "device '%s': no CDI spec defines kind '%s'", *q, kind);
		size_t si, di, other;
		int r = find_device(specs, n_specs, kind, name, &si, &di, &other);
		/* "all" without a device of that name: every device of the kind,
		 * each from its highest-priority spec. */
		size_t lo = 0, hi = 0;
		if (r == -ENOENT && streq(name, "all"))
			lo = 0, hi = n_specs;
		else if (r == -ENOENT)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT,
				       "device '%s': kind '%s' has no device '%s'", *q, kind, name);
		else if (r == -EEXIST)
			return err_set(err, SBX_E_CONFLICT, EEXIST,
				       "device '%s': defined by both '%s' and '%s'", *q, specs[si]->file,
				       specs[other]->file);
		for (size_t i = lo; i < hi; i++) {
			if (!streq(specs[i]->kind, kind))
				continue;
			for (size_t d = 0; d < specs[i]->n_devices; d++) {
				size_t s2, d2, o2;
				int r2 = find_device(specs, n_specs, kind, specs[i]->devices[d].name, &s2,
						     &d2, &o2);
				if (r2 == -EEXIST)
					return err_set(err, SBX_E_CONFLICT, EEXIST,
						       "device '%s=%s': defined by both '%s' and '%s'", kind,
						       specs[i]->devices[d].name, specs[s2]->file,
						       specs[o2]->file);
				if (s2 != i)
					continue; /* overridden by a later directory */
				if (!GROW(pick_s, n_pick) || !GROW(pick_d, n_pick))
					return err_oom(err);
				pick_s[n_pick] = i, pick_d[n_pick++] = d;
			}
		}
		if (hi == 0) {
			if (!GROW(pick_s, n_pick) || !GROW(pick_d, n_pick))
				return err_oom(err);
			pick_s[n_pick] = si, pick_d[n_pick++] = di;
		}
	}
	cdi_edits out = {0};
	bool *spec_used = calloc(n_specs + 1, sizeof(bool));
	if (!spec_used)
		return err_oom(err);
	int r = 0;
	for (size_t k = 0; k < n_pick && r == 0; k++) {
		const cdi_spec *s = specs[pick_s[k]];
		const cdi_device *d = &s->devices[pick_d[k]];
		char full[600];
		snprintf(full, sizeof(full), "%s=%s", s->kind, d->name);
		if (strv_has(resolved, full))
			continue;
		if (d->edits.unsupported || s->edits.unsupported) {
			r = err_set(
			    err, SBX_E_UNAVAILABLE, EOPNOTSUPP,
			    "device '%s' (spec '%s'): intelRdt and netDevices edits are not supported by sbx",
			    full, s->file);
			break;
		}
		if (strv_push_copy(&resolved, &n_res, full) < 0 ||
		    (!spec_used[pick_s[k]] && edits_append(&out, &s->edits) < 0) ||
		    edits_append(&out, &d->edits) < 0)
			r = err_oom(err);
		spec_used[pick_s[k]] = true;
	}
	free(spec_used);
	if (r < 0) {
		cdi_edits_done(&out);
		return r;
	}
	*ret = out;
	if (ret_names)
		*ret_names = TAKE_PTR(resolved);
	return 0;
}

/* ---- allowlist ---- */

bool cdi_allowed(const char *const *allow, const char *q)
{
	const char *eq = q ? strchr(q, '=') : NULL;
	if (!eq)
		return false;
	for (; allow && *allow; allow++) {
		const char *a = *allow;
		if (streq(a, "*") || streq(a, q))
			return true;
		size_t al = strlen(a);
		if (al >= 2 && streq(a + al - 2, "=*") && al - 2 == (size_t)(eq - q) &&
		    strncmp(a, q, al - 2) == 0)
			return true;
	}
	return false;
}

/* ---- loading (I/O) ---- */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cdi_load_dirs(const char *dirs, uid_t want_uid, cdi_spec ***ret, size_t *ret_n, sbx_err **err)
{
	_cleanup_free_ char *copy = strdup(dirs && *dirs ? dirs : CDI_DEFAULT_DIRS);
	if (!copy)
		return err_oom(err);
	cdi_spec **v = NULL;
	size_t n = 0;
	int prio = 0, r = 0;
	for (char *save = NULL, *d = strtok_r(copy, ":", &save); d && r == 0;
	     d = strtok_r(NULL, ":", &save), prio++) {
		_cleanup_close_ int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			r = err_errno(err, "CDI spec directory '%s'", d);
			break;
		}
		/* File names sorted: a stable order for messages and conflicts. */
		_cleanup_strv_free_ char **files = NULL;
		size_t nf = 0;
		int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
		DIR *dir = dup >= 0 ? fdopendir(dup) : NULL;
		if (!dir) {
			if (dup >= 0)
				close(dup);
			r = err_errno(err, "read CDI spec directory '%s'", d);
			break;
		}
		for (struct dirent *de; (de = readdir(dir));)
			if (de->d_name[0] != '.' &&
			    (ends_with(de->d_name, ".json") || ends_with(de->d_name, ".yaml") ||
			     ends_with(de->d_name, ".yml")) &&
			    strv_push_copy(&files, &nf, de->d_name) < 0)
				r = err_oom(err);
		closedir(dir);
		if (nf)
			qsort(files, nf, sizeof(char *), name_cmp);
		for (size_t i = 0; i < nf && r == 0; i++) {
			char path[4400];
			snprintf(path, sizeof(path), "%s/%s", d, files[i]);
			_cleanup_close_ int fd =
			    openat(dfd, files[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
			struct stat st;
			if (fd < 0 || fstat(fd, &st) < 0) {
				r = err_errno(err, "CDI spec '%s'", path);
				break;
			}
			if (!S_ISREG(st.st_mode))
				continue;
			bool owner_ok = st.st_uid == 0 || (want_uid != 0 && st.st_uid == want_uid);
			if (!owner_ok || (st.st_mode & 022)) {
				r = err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					    "CDI spec '%s': must be owned by root%s and not writable by "
					    "group or others (its "
					    "hooks run with sbx's privilege)",
					    path, want_uid ? " or the caller" : "");
				break;
			}
			if (st.st_size > CDI_SPEC_MAX_BYTES) {
				r = err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG,
					    "CDI spec '%s': larger than 4 MiB", path);
				break;
			}
			_cleanup_free_ char *buf = NULL;
			size_t len = 0;
			int q = fs_read_fileat(dfd, files[i], CDI_SPEC_MAX_BYTES, &buf, &len);
			if (q < 0) {
				r = err_errnum(err, -q, "read CDI spec '%s'", path);
				break;
			}
			cdi_spec *s = NULL;
			if (cdi_spec_parse(buf, len, path, &s, err) < 0) {
				r = -1;
				break;
			}
			s->priority = prio;
			cdi_spec **nv = realloc(v, (n + 1) * sizeof(*v));
			if (!nv) {
				cdi_spec_free(s);
				r = err_oom(err);
				break;
			}
			v = nv;
			v[n++] = s;
		}
	}
	if (r < 0) {
		cdi_specs_free(v, n);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}
