/* The README's C example, whole: create an environment, run a command in
 * it, print its output, remove it. Built against an installed sbx by
 * tests/integration/test_install.sh:
 *   cc hello.c $(pkg-config --cflags --libs sbx) -o hello */
#include <sbx.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	sbx_ctx *ctx;
	sbx_err *err = NULL;
	char *id;
	if (sbx_ctx_open(&ctx, &err) < 0)
		goto fail;
	sbx_create_opts co = SBX_CREATE_OPTS_INIT;
	co.memory_bytes = 256 << 20;
	if (sbx_env_create(ctx, &co, &id, NULL, &err) < 0)
		goto fail;
	const char *argv[] = {"sh", "-c", "echo $((6 * 7))", NULL};
	sbx_exec_opts eo = SBX_EXEC_OPTS_INIT;
	eo.argv = argv;
	eo.capture = true;
	sbx_exec_result res;
	if (sbx_env_exec(ctx, id, &eo, &res, &err) < 0)
		goto fail;
	printf("exit %d: %s", res.exit_code, res.stdout_buf);
	sbx_exec_result_free(&res);
	if (sbx_env_remove(ctx, id, &err) < 0)
		goto fail;
	free(id);
	sbx_ctx_free(ctx);
	return 0;
fail:
	fprintf(stderr, "hello: %s\n", sbx_err_message(err));
	sbx_err_free(err);
	return 1;
}
