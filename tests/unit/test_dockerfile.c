/* src/build/dockerfile.c: the Dockerfile parser, substitution, .dockerignore (pure). */
#include <string.h>

#include "build/dockerfile.h"
#include "unit.h"

static dockerfile *parse(const char *s, sbx_err **e)
{
	dockerfile *d = NULL;
	if (dockerfile_parse(s, strlen(s), "Dockerfile", &d, e) < 0)
		return NULL;
	return d;
}

static bool refused(const char *s, const char *msg)
{
	sbx_err *e = NULL;
	dockerfile *d = parse(s, &e);
	bool ok = !d && e && strstr(sbx_err_message(e), msg) && sbx_err_code(e) == SBX_E_INVALID_ARGUMENT;
	if (!ok)
		fprintf(stderr, "  got: %s\n", e ? sbx_err_message(e) : "(parsed)");
	dockerfile_free(d);
	sbx_err_free(e);
	return ok;
}

TEST(every_instruction)
{
	const char *s = "# syntax=docker/dockerfile:1\n"
			"ARG BASE=host\n"
			"from $BASE\n"
			"# a comment\n"
			"RUN echo a \\\n"
			"  # dropped comment inside a continuation\n"
			"\n"
			"    && echo b\n"
			"RUN [\"/bin/echo\", \"x y\"]\n"
			"COPY --chown=1:2 --chmod=0640 a b /dst/\n"
			"ADD c /d\n"
			"ENV A=1 B=\"two words\"\n"
			"ENV LEGACY value with spaces\n"
			"WORKDIR /app\n"
			"USER nobody\n"
			"LABEL k=v\n"
			"SHELL [\"/bin/bash\", \"-c\"]\n"
			"CMD [\"python3\"]\n"
			"ENTRYPOINT run me\n"
			"EXPOSE 8000\n";
	sbx_err *e = NULL;
	dockerfile *d = parse(s, &e);
	CHECK(d != NULL);
	if (!d)
		return;
	CHECK(d->n == 15);
	CHECK(d->instr[0].kind == DF_ARG && d->instr[0].line == 2);
	CHECK(d->instr[1].kind == DF_FROM && !strcmp(d->instr[1].keyword, "FROM") &&
	      !strcmp(d->instr[1].args, "$BASE"));
	CHECK(d->instr[2].kind == DF_RUN && d->instr[2].line == 5 &&
	      !strcmp(d->instr[2].args, "echo a && echo b"));
	CHECK(d->instr[2].argv == NULL);
	CHECK(d->instr[3].argv && !strcmp(d->instr[3].argv[1], "x y") && !d->instr[3].argv[2]);
	CHECK(d->instr[3].line == 9);
	CHECK(d->instr[4].kind == DF_COPY && !strcmp(d->instr[4].chown, "1:2") &&
	      !strcmp(d->instr[4].chmod, "0640"));
	CHECK(!strcmp(d->instr[4].args, "a b /dst/"));
	CHECK(!strcmp(d->instr[4].text, "COPY --chown=1:2 --chmod=0640 a b /dst/"));
	CHECK(d->instr[12].kind == DF_CMD && d->instr[12].argv && !strcmp(d->instr[12].argv[0], "python3"));
	CHECK(d->instr[13].kind == DF_ENTRYPOINT && !d->instr[13].argv);
	dockerfile_free(d);
}

TEST(escape_directive)
{
	dockerfile *d = parse("# escape=`\nFROM host\nRUN dir c:\\ `\n  && echo\n", NULL);
	CHECK(d && d->escape == '`' && d->n == 2 && !strcmp(d->instr[1].args, "dir c:\\ && echo"));
	dockerfile_free(d);
	/* A directive after the first instruction is a comment. */
	d = parse("FROM host\n# escape=`\nRUN a \\\n b\n", NULL);
	CHECK(d && d->escape == '\\' && !strcmp(d->instr[1].args, "a b"));
	dockerfile_free(d);
}

TEST(refusals_name_the_line)
{
	CHECK(refused("FROM host\nRUN true\n\n\n\n\nHEALTHCHECK CMD true\n",
		      "Dockerfile:7: HEALTHCHECK is not supported"));
	CHECK(refused("FROM host\nonbuild RUN x\n", "Dockerfile:2: ONBUILD is not supported"));
	CHECK(refused("FROM host\nVOLUME /data\n", "Dockerfile:2: VOLUME is not supported"));
	CHECK(refused("FROM host\nFOO bar\n", "Dockerfile:2: unknown instruction FOO"));
	CHECK(refused("FROM host\nRUN <<EOF\necho\nEOF\n", "Dockerfile:2: RUN: heredocs"));
	CHECK(refused("FROM host\nRUN --mount=type=cache,target=/x true\n",
		      "Dockerfile:2: RUN --mount is not supported"));
	CHECK(refused("FROM host\nCOPY --from=build /a /b\n", "Dockerfile:2: COPY --from is not supported"));
	CHECK(refused("FROM host\nFROM host\n", "Dockerfile:2: a second FROM"));
	CHECK(refused("RUN true\nFROM host\n", "Dockerfile:1: RUN before FROM"));
	CHECK(refused("FROM host\nRUN a \\\n", "Dockerfile:2: the file ends inside a line continuation"));
	CHECK(refused("FROM host\nRUN\n", "Dockerfile:2: RUN needs an argument"));
	CHECK(refused("# hello\n", "no FROM"));
	CHECK(refused("FROM host\nSHELL /bin/bash\n", "SHELL needs the exec form"));
	CHECK(refused("FROM host\nCOPY --chmod=999 a b\n", "expected an octal mode"));
	CHECK(refused("# escape=x\nFROM host\n", "escape must be"));
}

TEST(expand)
{
	const char *vars[] = {"A=1", "B=two", "A=3", "E=", NULL};
	struct {
		const char *in, *out;
	} cases[] = {
	    {"$A", "3"},	  {"${B}x", "twox"}, {"${C:-d$B}", "dtwo"}, {"${E:-def}", "def"},
	    {"${B:+alt}", "alt"}, {"${C:+alt}", ""}, {"\\$A", "$A"},	    {"$", "$"},
	    {"a$Cb", "a"},	  {"50$", "50$"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *o = NULL;
		CHECK(dockerfile_expand(cases[i].in, vars, '\\', &o, NULL) == 0 && !strcmp(o, cases[i].out));
		free(o);
	}
	char *o = NULL;
	CHECK(dockerfile_expand("${A", vars, '\\', &o, NULL) < 0 && !o);
	CHECK(dockerfile_expand("${A?x}", vars, '\\', &o, NULL) < 0);
}

TEST(pairs_and_words)
{
	char **v = NULL;
	CHECK(dockerfile_pairs("A=1 B=\"two words\" C='x\\y'", true, '\\', &v, NULL) == 0);
	CHECK(v && !strcmp(v[0], "A=1") && !strcmp(v[1], "B=two words") && !strcmp(v[2], "C=x\\y") && !v[3]);
	strv_free(v);
	v = NULL;
	CHECK(dockerfile_pairs("K  value with  spaces", true, '\\', &v, NULL) == 0 &&
	      !strcmp(v[0], "K=value with  spaces"));
	strv_free(v);
	v = NULL;
	CHECK(dockerfile_pairs("K value", false, '\\', &v, NULL) < 0);
	CHECK(dockerfile_pairs("A=\"open", true, '\\', &v, NULL) < 0);
	CHECK(dockerfile_words("a \"b c\" /d", '\\', &v, NULL) == 0 && !strcmp(v[1], "b c") &&
	      !strcmp(v[2], "/d"));
	strv_free(v);
	v = NULL;
	CHECK(dockerfile_words("onlyone", '\\', &v, NULL) < 0);
}

TEST(dockerignore)
{
	const char *t = "# comment\n*.log\n/build\n!keep.log\ndocs/**/*.tmp\n./secret\n**/node_modules\n";
	char **p = NULL;
	CHECK(dockerignore_parse(t, strlen(t), &p, NULL) == 0);
	const char *const *cp = (const char *const *)p;
	CHECK(dockerignore_excluded(cp, "a.log"));
	CHECK(!dockerignore_excluded(cp, "keep.log"));
	CHECK(!dockerignore_excluded(cp, "sub/a.log")); /* '*' does not cross '/' */
	CHECK(dockerignore_excluded(cp, "build"));
	CHECK(dockerignore_excluded(cp, "build/x/y.c")); /* under an excluded directory */
	CHECK(dockerignore_excluded(cp, "docs/a.tmp"));
	CHECK(dockerignore_excluded(cp, "docs/x/y/a.tmp"));
	CHECK(!dockerignore_excluded(cp, "docs/a.txt"));
	CHECK(dockerignore_excluded(cp, "secret"));
	CHECK(dockerignore_excluded(cp, "node_modules/x"));
	CHECK(dockerignore_excluded(cp, "a/b/node_modules"));
	CHECK(!dockerignore_excluded(cp, "src/main.c"));
	strv_free(p);
	CHECK(dockerignore_parse("", 0, &p, NULL) == 0 && p && !p[0] &&
	      !dockerignore_excluded((const char *const *)p, "x"));
	strv_free(p);
}
