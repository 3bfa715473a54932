/* Dockerfile parsing, variable substitution and .dockerignore matching
 * (pure; the contract is dockerfile.h). */
#include "build/dockerfile.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/macro.h"
#include "util/strbuf.h"

/* ---- instructions ----------------------------------------------------- */

static const struct {
	const char *name;
	int kind; /* a dockerfile_kind, or -1: refused */
	const char *why;
} keywords[] = {
    {"FROM", DF_FROM, NULL},
    {"RUN", DF_RUN, NULL},
    {"COPY", DF_COPY, NULL},
    {"ADD", DF_ADD, NULL},
    {"ENV", DF_ENV, NULL},
    {"ARG", DF_ARG, NULL},
    {"WORKDIR", DF_WORKDIR, NULL},
    {"USER", DF_USER, NULL},
    {"LABEL", DF_LABEL, NULL},
    {"MAINTAINER", DF_LABEL, NULL}, /* deprecated: the label "maintainer" */
    {"SHELL", DF_SHELL, NULL},
    {"CMD", DF_CMD, NULL},
    {"ENTRYPOINT", DF_ENTRYPOINT, NULL},
    {"EXPOSE", DF_EXPOSE, NULL},
    {"HEALTHCHECK", -1, "is not supported (an sbx environment has no health monitor)"},
    {"ONBUILD", -1, "is not supported (no build triggers)"},
    {"STOPSIGNAL", -1, "is not supported"},
    {"VOLUME", -1, "is not supported (give volumes at create: -v HOST:PATH)"},
};

void dockerfile_free(dockerfile *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		dockerfile_instr *in = &d->instr[i];
		free(in->keyword);
		free(in->args);
		strv_free(in->argv);
		free(in->chown);
		free(in->chmod);
		free(in->text);
	}
	free(d->instr);
	free(d);
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A JSON array of strings -> argv, or NULL if s is not one (then the shell form applies). */
static char **json_argv(const char *s)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loads(s, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_array(j))
		return NULL;
	size_t n = json_array_size(j), k = 0;
	char **v = calloc(n + 1, sizeof(char *));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(j, i);
		if (!json_is_string(e) || !(v[k] = strdup(json_string_value(e)))) {
			strv_free(v);
			return NULL;
		}
		k++;
	}
	return v;
}

static bool has_heredoc(const char *s)
{
	for (const char *p = strstr(s, "<<"); p; p = strstr(p + 2, "<<")) {
		const char *q = p + 2;
		if (*q == '-')
			q++;
		if (*q == '"' || *q == '\'')
			q++;
		if (isalpha((unsigned char)*q) || *q == '_')
			return true;
	}
	return false;
}

static int add_instr(dockerfile *d, const char *name, unsigned line, const char *kw, const char *rest,
		     bool *seen_from, sbx_err **err)
{
	int kind = -2;
	const char *why = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(keywords); i++)
		if (!strcasecmp(kw, keywords[i].name)) {
			kind = keywords[i].kind;
			why = keywords[i].why;
		}
	_cleanup_free_ char *up = strdup(kw);
	if (!up)
		return err_oom(err);
	for (char *p = up; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	if (kind == -2)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s:%u: unknown instruction %s", name,
			       line, up);
	if (kind == -1)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s:%u: %s %s", name, line, up, why);
	if (kind == DF_FROM) {
		if (*seen_from)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "%s:%u: a second FROM: multi-stage builds are not supported", name,
				       line);
		*seen_from = true;
	} else if (!*seen_from && kind != DF_ARG) {
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s:%u: %s before FROM", name, line, up);
	}
	if (d->n >= DOCKERFILE_MAX_INSTR)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "%s:%u: more than %u instructions", name,
			       line, DOCKERFILE_MAX_INSTR);
	dockerfile_instr *ni = realloc(d->instr, (d->n + 1) * sizeof(*ni));
	if (!ni)
		return err_oom(err);
	d->instr = ni;
	dockerfile_instr *in = &d->instr[d->n++];
	*in = (dockerfile_instr){.kind = (dockerfile_kind)kind, .line = line, .keyword = TAKE_PTR(up)};
	if (kind == DF_RUN || kind == DF_COPY || kind == DF_ADD)
		if (has_heredoc(rest))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "%s:%u: %s: heredocs (<<WORD) are not supported: put the text in a "
				       "file and COPY it",
				       name, line, in->keyword);
	/* Flags. */
	const char *p = skip_ws(rest);
	while (p[0] == '-' && p[1] == '-') {
		const char *e = p;
		while (*e && *e != ' ' && *e != '\t')
			e++;
		size_t n = (size_t)(e - p);
		_cleanup_free_ char *flag = strndup(p, n);
		if (!flag)
			return err_oom(err);
		char *eq = strchr(flag, '=');
		char **slot = NULL;
		if ((kind == DF_COPY || kind == DF_ADD) && eq && !strncmp(flag, "--chown=", 8))
			slot = &in->chown;
		else if ((kind == DF_COPY || kind == DF_ADD) && eq && !strncmp(flag, "--chmod=", 8))
			slot = &in->chmod;
		if (!slot) {
			if (eq)
				*eq = 0;
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s:%u: %s %s is not supported",
				       name, line, in->keyword, flag);
		}
		free(*slot);
		if (!(*slot = strdup(eq + 1)))
			return err_oom(err);
		if (!**slot)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s:%u: %s %.*s needs a value",
				       name, line, in->keyword, (int)(eq - flag), flag);
		p = skip_ws(e);
	}
	if (in->chmod) {
		char *end;
		unsigned long m = strtoul(in->chmod, &end, 8);
		if (*end || m > 07777)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "%s:%u: --chmod=%s: expected an octal mode", name, line, in->chmod);
	}
	size_t rl = strlen(p);
	while (rl && (p[rl - 1] == ' ' || p[rl - 1] == '\t'))
		rl--;
	if (!(in->args = strndup(p, rl)))
		return err_oom(err);
	if (!*in->args)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s:%u: %s needs an argument", name, line,
			       in->keyword);
	if ((kind == DF_RUN || kind == DF_CMD || kind == DF_ENTRYPOINT || kind == DF_SHELL) &&
	    in->args[0] == '[')
		in->argv = json_argv(in->args);
	if (kind == DF_SHELL && (!in->argv || !in->argv[0]))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "%s:%u: SHELL needs the exec form, e.g. SHELL [\"/bin/bash\", \"-c\"]", name,
			       line);
	if (asprintf(&in->text, "%s%s%s%s%s %s", in->keyword, in->chown ? " --chown=" : "",
		     in->chown ? in->chown : "", in->chmod ? " --chmod=" : "", in->chmod ? in->chmod : "",
		     in->args) < 0) {
		in->text = NULL;
		return err_oom(err);
	}
	return 0;
}

/* A parser directive line "# key=value" (only before anything else). */
static bool directive(const char *line, size_t n, char *ret_key, size_t ksz, const char **ret_val,
		      size_t *ret_vlen)
{
	const char *p = line, *end = line + n;
	if (p >= end || *p != '#')
		return false;
	p++;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	const char *k = p;
	while (p < end && (isalpha((unsigned char)*p)))
		p++;
	size_t kl = (size_t)(p - k);
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (!kl || kl >= ksz || p >= end || *p != '=')
		return false;
	p++;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	const char *v = p;
	const char *ve = end;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r'))
		ve--;
	for (size_t i = 0; i < kl; i++)
		ret_key[i] = (char)tolower((unsigned char)k[i]);
	ret_key[kl] = 0;
	*ret_val = v;
	*ret_vlen = (size_t)(ve - v);
	return true;
}

int dockerfile_parse(const char *text, size_t len, const char *name, dockerfile **ret, sbx_err **err)
{
	if (!name)
		name = "Dockerfile";
	if (memchr(text, 0, len))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s: contains a NUL byte", name);
	_cleanup_dockerfile_ dockerfile *d = calloc(1, sizeof(*d));
	if (!d)
		return err_oom(err);
	d->escape = '\\';
	bool directives = true, seen_from = false, cont = false;
	unsigned lineno = 0, start_line = 0;
	_cleanup_free_ char *acc = NULL; /* the instruction being joined */
	_cleanup_strbuf_ strbuf b = {0};
	size_t pos = 0;
	while (pos < len) {
		const char *ls = text + pos;
		const char *nl = memchr(ls, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - ls) : len - pos;
		pos += n + (nl ? 1 : 0);
		lineno++;
		if (n > DOCKERFILE_MAX_LINE)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "%s:%u: line longer than %u bytes",
				       name, lineno, DOCKERFILE_MAX_LINE);
		if (n && ls[n - 1] == '\r')
			n--;
		if (directives) {
			char key[16];
			const char *v;
			size_t vl;
			if (directive(ls, n, key, sizeof key, &v, &vl)) {
				if (!strcmp(key, "escape")) {
					if (vl != 1 || (v[0] != '\\' && v[0] != '`'))
						return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
							       "%s:%u: escape must be \\ or `", name, lineno);
					d->escape = v[0];
				}
				continue; /* syntax= and unknown directives: Docker ignores them too */
			}
			directives = false;
		}
		/* Strip leading blanks to classify. */
		size_t i = 0;
		while (i < n && (ls[i] == ' ' || ls[i] == '\t'))
			i++;
		if (i == n || ls[i] == '#')
			continue; /* blank or comment, also inside a continuation */
		size_t e = n;
		while (e > i && (ls[e - 1] == ' ' || ls[e - 1] == '\t'))
			e--;
		bool more = e > i && ls[e - 1] == d->escape;
		if (more)
			e--;
		if (!cont)
			start_line = lineno;
		strbuf_add(&b, ls + i, e - i);
		if (b.oom)
			return err_oom(err);
		if (more) {
			cont = true;
			continue;
		}
		cont = false;
		free(acc);
		acc = strbuf_take(&b);
		if (!acc)
			return err_oom(err);
		char *p = acc;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		char save = *p;
		*p = 0;
		_cleanup_free_ char *kw = strdup(acc);
		*p = save;
		if (!kw)
			return err_oom(err);
		if (add_instr(d, name, start_line, kw, p, &seen_from, err) < 0)
			return -1;
	}
	if (cont)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "%s:%u: the file ends inside a line continuation", name, start_line);
	if (!seen_from)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s: no FROM instruction", name);
	*ret = TAKE_PTR(d);
	return 0;
}

/* ---- substitution and word splitting --------------------------------- */

static const char *var_lookup(const char *const *vars, const char *k, size_t kl)
{
	const char *v = NULL;
	for (size_t i = 0; vars && vars[i]; i++)
		if (!strncmp(vars[i], k, kl) && vars[i][kl] == '=')
			v = vars[i] + kl + 1;
	return v;
}

static bool is_name(char c, bool first)
{
	return isalpha((unsigned char)c) || c == '_' || (!first && isdigit((unsigned char)c));
}

int dockerfile_expand(const char *s, const char *const *vars, char escape, char **ret, sbx_err **err)
{
	_cleanup_strbuf_ strbuf b = {0};
	for (const char *p = s; *p && !b.oom;) {
		if (*p == escape && p[1] == '$') {
			strbuf_lit(&b, "$");
			p += 2;
			continue;
		}
		if (*p != '$') {
			strbuf_add(&b, p++, 1);
			continue;
		}
		if (p[1] == '{') {
			const char *k = p + 2, *q = k;
			while (is_name(*q, q == k))
				q++;
			size_t kl = (size_t)(q - k);
			const char *close = strchr(q, '}');
			if (!kl || !close || (*q != '}' && !(q[0] == ':' && (q[1] == '-' || q[1] == '+'))))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "bad substitution in '%s'", s);
			const char *v = var_lookup(vars, k, kl);
			if (*q == '}') {
				if (v)
					strbuf_add(&b, v, strlen(v));
			} else {
				/* The word itself may use variables. */
				_cleanup_free_ char *word = strndup(q + 2, (size_t)(close - q - 2)),
						    *xw = NULL;
				if (!word || dockerfile_expand(word, vars, escape, &xw, err) < 0)
					return word ? -1 : err_oom(err);
				bool set = v && *v;
				const char *use = q[1] == '-' ? (set ? v : xw) : (set ? xw : "");
				strbuf_add(&b, use, strlen(use));
			}
			p = close + 1;
			continue;
		}
		if (is_name(p[1], true)) {
			const char *k = p + 1, *q = k;
			while (is_name(*q, q == k))
				q++;
			const char *v = var_lookup(vars, k, (size_t)(q - k));
			if (v)
				strbuf_add(&b, v, strlen(v));
			p = q;
			continue;
		}
		strbuf_add(&b, p++, 1);
	}
	if (!(*ret = strbuf_take(&b)))
		return err_oom(err);
	return 0;
}

/* The next word of s (quotes removed, escapes honoured), or NULL at the end. */
static int next_word(const char **ps, char escape, char **ret, sbx_err **err)
{
	const char *p = skip_ws(*ps);
	*ret = NULL;
	if (!*p) {
		*ps = p;
		return 0;
	}
	_cleanup_strbuf_ strbuf b = {0};
	char quote = 0;
	for (; *p && !b.oom; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
			else if (*p == escape && quote == '"' && p[1])
				strbuf_add(&b, ++p, 1);
			else
				strbuf_add(&b, p, 1);
		} else if (*p == '"' || *p == '\'') {
			quote = *p;
		} else if (*p == ' ' || *p == '\t') {
			break;
		} else if (*p == escape && p[1]) {
			strbuf_add(&b, ++p, 1);
		} else {
			strbuf_add(&b, p, 1);
		}
	}
	if (b.oom)
		return err_oom(err);
	if (quote)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unterminated quote in '%s'", *ps);
	*ps = p;
	if (!(*ret = strbuf_take(&b)))
		return err_oom(err);
	return 0;
}

int dockerfile_words(const char *s, char escape, char ***ret, sbx_err **err)
{
	_cleanup_strv_free_ char **v = NULL;
	size_t n = 0;
	const char *p = s;
	for (;;) {
		char *w;
		if (next_word(&p, escape, &w, err) < 0)
			return -1;
		if (!w)
			break;
		if (strv_push(&v, &n, w) < 0)
			return err_oom(err);
	}
	if (n < 2)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "expected SOURCE... DEST, got '%s'", s);
	*ret = TAKE_PTR(v);
	return 0;
}

int dockerfile_pairs(const char *s, bool legacy, char escape, char ***ret, sbx_err **err)
{
	_cleanup_strv_free_ char **v = NULL;
	size_t n = 0;
	const char *p = skip_ws(s);
	const char *sp = p;
	while (*sp && *sp != ' ' && *sp != '\t' && *sp != '=')
		sp++;
	if (legacy && *sp != '=') {
		/* "K V...": one pair, the value the rest of the line. */
		if (sp == p || !*sp)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "expected KEY=VALUE, got '%s'",
				       s);
		char *kv;
		if (asprintf(&kv, "%.*s=%s", (int)(sp - p), p, skip_ws(sp)) < 0)
			return err_oom(err);
		if (strv_push(&v, &n, kv) < 0)
			return err_oom(err);
		*ret = TAKE_PTR(v);
		return 0;
	}
	for (;;) {
		char *w;
		if (next_word(&p, escape, &w, err) < 0)
			return -1;
		if (!w)
			break;
		char *eq = strchr(w, '=');
		if (!eq || eq == w) {
			sbx_err *e = NULL;
			err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "expected KEY=VALUE, got '%s'", w);
			free(w);
			if (err)
				*err = e;
			else
				sbx_err_free(e);
			return -EINVAL;
		}
		if (strv_push(&v, &n, w) < 0)
			return err_oom(err);
	}
	if (!n)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "expected KEY=VALUE");
	*ret = TAKE_PTR(v);
	return 0;
}
