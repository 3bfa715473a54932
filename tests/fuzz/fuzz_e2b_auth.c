/* libFuzzer target: the E2B front door's credentials and routing (pure,
 * src/server/e2b_auth.h): the input as an Authorization value, as a Host
 * (against a fixed domain and against a domain cut from the input), and as
 * the fields of a /files signature (path, op, user, token, signature, exp,
 * one per line), whose verdict must agree with a signature computed for the
 * same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b_auth.h"

static char *line(char **p)
{
	if (!*p)
		return NULL;
	char *s = *p, *nl = strchr(s, '\n');
	if (nl) {
		*nl = 0;
		*p = nl + 1;
	} else {
		*p = NULL;
	}
	return s;
}

static void host(const char *h, const char *domain)
{
	uint16_t port = 0;
	char id[E2B_ID_MAX + 1];
	sbx_err *e = NULL;
	int r = e2b_host_parse(h, domain, &port, id, &e);
	if (r == 1 && (e || port == 0 || !e2b_id_valid(id) || !strcasestr(h, domain)))
		abort();
	if ((r < 0) != (e != NULL) || r > 1)
		abort();
	sbx_err_free(e);
}

static void signature(char *s)
{
	char *p = s;
	const char *path = line(&p), *op = line(&p), *user = line(&p), *token = line(&p), *sig = line(&p),
		   *exp = line(&p);
	int64_t now = p ? strtoll(p, NULL, 10) : 0;
	e2b_sig_verdict v = e2b_file_signature_verify(path, op, user, token, sig, exp, now);
	if (v != E2B_SIG_OK && v != E2B_SIG_BAD && v != E2B_SIG_EXPIRED)
		abort();
	char want[E2B_SIGNATURE_LEN + 1];
	if (e2b_file_signature(path, op, user, token, exp, want, NULL) < 0) {
		if (v != E2B_SIG_BAD)
			abort();
		return;
	}
	if (strlen(want) != E2B_SIGNATURE_LEN || strncmp(want, "v1_", 3) != 0 || strchr(want, '='))
		abort();
	/* OK or EXPIRED only for exactly the right signature */
	if (v != E2B_SIG_BAD && (!sig || strcmp(sig, want) != 0))
		abort();
	/* the right signature is never BAD when token and exp are acceptable */
	e2b_sig_verdict good = e2b_file_signature_verify(path, op, user, token, want, exp, now);
	if (*token && !exp && good != E2B_SIG_OK)
		abort();
	want[5] ^= 1;
	if (e2b_file_signature_verify(path, op, user, token, want, exp, now) != E2B_SIG_BAD)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	char user[E2B_USER_MAX + 1];
	sbx_err *e = NULL;
	int r = e2b_basic_auth_user(s, user, &e);
	if (r == 0 && (e || !user[0] || strlen(user) > E2B_USER_MAX || user[0] == '-' ||
		       strspn(user, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
			   strlen(user)))
		abort();
	if (r < 0 && !e)
		abort();
	sbx_err_free(e);
	uint16_t port;
	if (e2b_port_parse(s, size, &port) == 0 && (port == 0 || size > 5 || s[0] == '0'))
		abort();
	size_t sl = strlen(s);
	if (e2b_id_valid(s) &&
	    (sl == 0 || sl > E2B_ID_MAX || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789") != sl))
		abort();
	host(s, "sbx.example");
	/* host and domain both from the input: "host\ndomain" */
	char *nl = strchr(s, '\n');
	if (nl) {
		*nl = 0;
		host(s, nl + 1);
		*nl = '\n';
	}
	bool eq = e2b_secret_equal(s, "e2b_0123456789abcdef");
	if (eq != (strcmp(s, "e2b_0123456789abcdef") == 0))
		abort();
	signature(s);
	free(s);
	return 0;
}
