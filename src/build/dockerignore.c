/* .dockerignore: parsing and matching (pure). The matcher compiles a pattern
 * into tokens and runs them as an NFA over the path, so its cost is
 * O(pattern × path) whatever the pattern: a backtracking glob (fnmatch, or
 * trying every split of each `**`) is exponential in the number of stars,
 * and a build context's .dockerignore is input sbx does not write.
 *
 * Wildcards, as Docker's: `*` any run of non-'/' characters, `?` one non-'/'
 * character, `[...]` a bracket expression (fnmatch's syntax, never '/'), `\x`
 * the character x; `**` any run of characters, '/' included, and `**` + '/'
 * zero or more whole components (`a/` + `**` + `/c` matches a/c and a/b/c). A
 * run of three or more stars is `**`. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "build/dockerfile.h"
#include "util/err.h"
#include "util/macro.h"

int dockerignore_parse(const char *text, size_t len, char ***ret, sbx_err **err)
{
	_cleanup_strv_free_ char **v = NULL;
	size_t n = 0, pos = 0;
	if (!(v = calloc(1, sizeof(char *)))) /* an empty file gives an empty list */
		return err_oom(err);
	while (pos < len) {
		const char *ls = text + pos, *nl = memchr(ls, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - ls) : len - pos;
		pos += l + (nl ? 1 : 0);
		while (l && (ls[l - 1] == '\r' || ls[l - 1] == ' ' || ls[l - 1] == '\t'))
			l--;
		while (l && (*ls == ' ' || *ls == '\t'))
			ls++, l--;
		if (!l || *ls == '#' || memchr(ls, 0, l))
			continue;
		bool neg = *ls == '!';
		if (neg)
			ls++, l--;
		for (;;) {
			if (l && *ls == '/')
				ls++, l--;
			else if (l >= 2 && ls[0] == '.' && ls[1] == '/')
				ls += 2, l -= 2;
			else
				break;
		}
		while (l > 1 && ls[l - 1] == '/')
			l--;
		if (!l)
			continue;
		char *pat;
		if (asprintf(&pat, "%s%.*s", neg ? "!" : "", (int)l, ls) < 0)
			return err_oom(err);
		if (strv_push(&v, &n, pat) < 0)
			return err_oom(err);
	}
	*ret = TAKE_PTR(v);
	return 0;
}

typedef enum {
	TK_CHAR,  /* c */
	TK_ONE,	  /* ? */
	TK_CLASS, /* [...]: class is the bracket expression, NUL-terminated */
	TK_STAR,  /* *: non-'/' characters */
	TK_ANY,	  /* **: any characters */
	TK_DIRS,  /* ** then '/': zero or more components, each ending in '/' */
} tk_kind;

typedef struct {
	tk_kind kind;
	char c;
	char *class;
} token;

static void tokens_free(token *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++)
		free(t[i].class);
	free(t);
}

/* The length of the bracket expression at p (p[0] == '['), or 0 if it has
 * no closing ']' (then '[' is an ordinary character, as for fnmatch). */
static size_t class_len(const char *p)
{
	size_t i = 1;
	if (p[i] == '!' || p[i] == '^')
		i++;
	if (p[i] == ']')
		i++;
	while (p[i] && p[i] != ']') {
		if (p[i] == '[' && (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '=')) {
			const char *end = strchr(p + i + 2, p[i + 1]);
			if (!end || end[1] != ']')
				return 0;
			i = (size_t)(end - p) + 2;
		} else
			i++;
	}
	return p[i] == ']' ? i + 1 : 0;
}

static int compile(const char *pat, token **ret, size_t *ret_n)
{
	size_t len = strlen(pat), n = 0;
	token *t = calloc(len + 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < len;) {
		token *k = &t[n++];
		if (pat[i] == '*') {
			size_t j = i;
			while (pat[j] == '*')
				j++;
			if (j - i == 1)
				k->kind = TK_STAR;
			else if (pat[j] == '/' && (i == 0 || pat[i - 1] == '/')) {
				k->kind = TK_DIRS;
				j++;
			} else
				k->kind = TK_ANY;
			i = j;
		} else if (pat[i] == '?') {
			k->kind = TK_ONE;
			i++;
		} else if (pat[i] == '[' && class_len(pat + i)) {
			size_t l = class_len(pat + i);
			k->kind = TK_CLASS;
			if (!(k->class = strndup(pat + i, l))) {
				tokens_free(t, n);
				return -ENOMEM;
			}
			i += l;
		} else if (pat[i] == '\\' && pat[i + 1]) {
			k->kind = TK_CHAR;
			k->c = pat[i + 1];
			i += 2;
		} else {
			k->kind = TK_CHAR;
			k->c = pat[i++];
		}
	}
	*ret = t;
	*ret_n = n;
	return 0;
}

/* NFA states: 2i is "before token i" (2n accepts), 2i+1 is "inside token i's
 * components" for a TK_DIRS (it must still reach a '/'). */
static void add_state(const token *t, size_t n, bool *set, size_t s)
{
	while (!set[s]) {
		set[s] = true;
		if (s & 1 || s / 2 == n)
			return;
		tk_kind k = t[s / 2].kind;
		if (k != TK_STAR && k != TK_ANY && k != TK_DIRS)
			return;
		s += 2; /* each of them may match nothing */
	}
}

static bool one_char_class(const char *class, char c)
{
	char s[2] = {c, 0};
	return fnmatch(class, s, 0) == 0;
}

/* True when pat matches path or one of its parents (path up to a '/'): one
 * pass, the parents being the prefixes at which the NFA accepts. */
static bool pat_match(const char *pat, const char *path)
{
	token *t = NULL;
	size_t n = 0;
	if (compile(pat, &t, &n) < 0)
		return false;
	size_t ns = 2 * n + 2;
	bool *cur = calloc(ns, 1), *next = calloc(ns, 1);
	bool match = false;
	if (!cur || !next)
		goto out;
	add_state(t, n, cur, 0);
	for (const char *p = path; *p; p++) {
		if (*p == '/' && cur[2 * n]) {
			match = true;
			goto out;
		}
		memset(next, 0, ns);
		bool any = false;
		for (size_t s = 0; s < ns; s++) {
			if (!cur[s] || s / 2 == n)
				continue;
			const token *k = &t[s / 2];
			size_t here = s & ~(size_t)1, after = here + 2;
			if (s & 1) { /* inside TK_DIRS: to its next '/' */
				add_state(t, n, next, *p == '/' ? here : s);
				any = true;
				continue;
			}
			bool adv = false;
			switch (k->kind) {
			case TK_CHAR:
				adv = *p == k->c;
				break;
			case TK_ONE:
				adv = *p != '/';
				break;
			case TK_CLASS:
				adv = *p != '/' && one_char_class(k->class, *p);
				break;
			case TK_STAR:
				if (*p != '/')
					add_state(t, n, next, here), any = true;
				break;
			case TK_ANY:
				add_state(t, n, next, here), any = true;
				break;
			case TK_DIRS:
				add_state(t, n, next, *p == '/' ? here : here + 1), any = true;
				break;
			}
			if (adv)
				add_state(t, n, next, after), any = true;
		}
		bool *sw = cur;
		cur = next;
		next = sw;
		if (!any)
			goto out;
	}
	match = cur[2 * n];
out:
	free(cur);
	free(next);
	tokens_free(t, n);
	return match;
}

bool dockerignore_excluded(const char *const *patterns, const char *path)
{
	bool excluded = false;
	for (size_t i = 0; patterns && patterns[i]; i++) {
		const char *p = patterns[i];
		bool neg = *p == '!';
		if (neg)
			p++;
		if (pat_match(p, path)) /* the path itself or any of its parents */
			excluded = !neg;
	}
	return excluded;
}
