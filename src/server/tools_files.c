/* The MCP tools of files: one file read, written or listed, and whole
 * trees in and out as tar archives (base64). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server/tools_internal.h"
#include "util/dsse.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/macro.h"

const char tool_environment_read_file_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path'],'properties':"
    "{" ENV_ID_PROP ","
    "'path':{'type':'string','minLength':1,'description':'File to read; relative paths are taken from "
    "/root.'},"
    "'encoding':{'type':'string','enum':['utf8','base64'],'description':'utf8 (default) for text, "
    "base64 for binary files.'},"
    "'max_bytes':{'type':'integer','minimum':1,'description':'Read at most this many bytes (default "
    "10 MiB); truncated tells whether the file is longer.'}}}";

const char tool_environment_read_file_out[] =
    OUTPUT("'content':{'type':'string'},'encoding':{'type':'string'},"
	   "'size':{'type':'integer'},'truncated':{'type':'boolean'}",
	   "'content','encoding','size','truncated'");

const char tool_environment_write_file_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path','content'],"
    "'properties':{" ENV_ID_PROP ","
    "'path':{'type':'string','minLength':1,'description':'File to create or replace (its directory "
    "must exist); relative paths are taken from /root.'},"
    "'content':{'type':'string','description':'The new content, encoded as encoding says.'},"
    "'encoding':{'type':'string','enum':['utf8','base64'],'description':'utf8 (default) or base64 "
    "for binary content.'},"
    "'mode':{'type':'integer','minimum':0,'maximum':4095,'description':'Permission bits as a number, "
    "e.g. 493 for 0755 (default 420, i.e. 0644).'}}}";

const char tool_environment_write_file_out[] =
    OUTPUT("'bytes_written':{'type':'integer'}", "'bytes_written'");

const char tool_environment_list_files_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path'],'properties':"
    "{" ENV_ID_PROP ","
    "'path':{'type':'string','minLength':1,'description':'Directory to list; relative paths are taken "
    "from /root.'}}}";

const char tool_environment_list_files_out[] =
    OUTPUT("'entries':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'},"
	   "'type':{'type':'string'},'size':{'type':'integer'},'mode':{'type':'integer'}}}}",
	   "'entries'");

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Decodes standard base64 (whitespace ignored, padding optional). Returns
 * 0, or -EINVAL for anything else. */
static int b64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len)
{
	unsigned char *out = malloc(len / 4 * 3 + 3), *o = out;
	if (!out)
		return -ENOMEM;
	uint32_t acc = 0;
	int bits = 0, pad = 0;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		if (ch && strchr(" \t\r\n", ch))
			continue;
		if (ch == '=') {
			pad++;
			continue;
		}
		const char *q = ch ? strchr(b64_alphabet, ch) : NULL;
		if (!q || pad) {
			free(out);
			return -EINVAL;
		}
		acc = acc << 6 | (uint32_t)(q - b64_alphabet);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*o++ = (unsigned char)(acc >> bits);
		}
	}
	if (pad > 2 || bits >= 6) {
		free(out);
		return -EINVAL;
	}
	*ret_len = (size_t)(o - out);
	*ret = out;
	return 0;
}

int tool_environment_read_file(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *path = json_str(c->args, "path");
	const char *enc = json_str(c->args, "encoding") ?: "utf8";
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int64_t size = 0;
	bool truncated = false;
	if (sbx_env_read_file(c->ctx, id, path, json_int(c->args, "max_bytes", 0), &data, &len, &size,
			      &truncated, err) < 0)
		return -1;
	json_t *content;
	if (streq(enc, "base64")) {
		_cleanup_free_ char *b = dsse_b64_encode(data, len);
		content = b ? json_string(b) : NULL;
	} else {
		/* A cut may split a multi-byte character: drop its first bytes. */
		if (truncated)
			for (size_t k = 1; k <= 3 && k <= len; k++) {
				unsigned char ch = (unsigned char)data[len - k];
				if ((ch & 0xC0) == 0x80)
					continue;
				size_t need = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC0 ? 2 : 1;
				if (need > k)
					len -= k;
				break;
			}
		content = json_stringn(data, len);
		if (!content)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EILSEQ,
				       "'%s' is not UTF-8 text; read it again with encoding \"base64\"",
				       path);
	}
	*ret = json_pack("{s:o,s:s,s:I,s:b}", "content", content, "encoding", enc, "size", (json_int_t)size,
			 "truncated", truncated);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

int tool_environment_write_file(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *path = json_str(c->args, "path");
	const char *enc = json_str(c->args, "encoding") ?: "utf8";
	json_t *content = json_object_get(c->args, "content");
	const char *data = json_string_value(content);
	size_t len = json_string_length(content);
	_cleanup_free_ unsigned char *decoded = NULL;
	if (streq(enc, "base64")) {
		int r = b64_decode(data, len, &decoded, &len);
		if (r == -EINVAL)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "'content' is not valid base64; encode the bytes with standard base64 "
				       "(A-Z a-z 0-9 + /, = padding) or use encoding \"utf8\" for text");
		if (r < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		data = (const char *)decoded;
	}
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	if (sbx_env_write_file(c->ctx, id, path, data, len, (int)json_int(c->args, "mode", -1), err) < 0)
		return -1;
	*ret = json_pack("{s:I}", "bytes_written", (json_int_t)len);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

int tool_environment_list_files(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_list_files(c->ctx, id, json_str(c->args, "path"), ret, err);
}

#define TREE_MAX (32LL << 20) /* a tree in or out of one call, as a tar before base64 */

const char tool_environment_upload_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path','content'],'"
    "properties':{" ENV_ID_PROP
    ",'path':{'type':'string','minLength':1,'description':'Directory inside the environment to unpack "
    "into (made if missing; its parent must exist).'},'content':{'type':'string','description':'A tar "
    "archive, "
    "base64: its entries land under path. At most 32 MiB of tar.'}}}";

const char tool_environment_upload_out[] =
    OUTPUT("'environment_id':{'type':'string'},'path':{'type':'string'},"
	   "'bytes':{'type':'integer'}",
	   "'environment_id','path','bytes'");

int tool_environment_upload(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	const char *b64 = json_str(c->args, "content") ?: "";
	size_t n = strlen(b64);
	if (n / 4 * 3 > (size_t)TREE_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG,
			       "content: more than 32 MiB of tar (use sbx cp)");
	_cleanup_free_ unsigned char *tar = NULL;
	size_t len = 0;
	int r = b64_decode(b64, n, &tar, &len);
	if (r == -ENOMEM)
		return err_oom(err);
	if (r < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "content: not base64");
	_cleanup_close_ int fd = memfd_create("sbx-upload", MFD_CLOEXEC);
	if (fd < 0 || fd_write_all(fd, tar, len) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return err_errno(err, "upload: buffer the archive");
	const char *path = json_str(c->args, "path");
	if (sbx_env_tar_in(c->ctx, id, path, fd, true, err) < 0)
		return -1;
	*ret = json_pack("{s:s,s:s,s:I}", "environment_id", id, "path", path, "bytes", (json_int_t)len);
	return *ret ? 0 : err_oom(err);
}

const char tool_environment_download_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path'],'properties':"
    "{" ENV_ID_PROP ",'path':{'type':'string','minLength':1,'description':'A directory inside the "
    "environment: its contents come "
    "back as one tar archive (base64), at most 32 MiB of tar.'}}}";

const char tool_environment_download_out[] =
    OUTPUT("'environment_id':{'type':'string'},'path':{'type':'string'},"
	   "'content':{'type':'string'},'encoding':{'type':'string'},'bytes':{'type':'integer'}",
	   "'content','bytes'");

int tool_environment_download(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	const char *path = json_str(c->args, "path");
	_cleanup_close_ int fd = memfd_create("sbx-download", MFD_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "download: buffer the archive");
	/* The memfd is bounded by a seal-free size check after the fact; the
	 * tar of a huge tree is refused rather than cut (a cut tar is useless). */
	if (sbx_env_tar_out(c->ctx, id, path, fd, err) < 0)
		return -1;
	off_t size = lseek(fd, 0, SEEK_END);
	if (size < 0)
		return err_errno(err, "download: size the archive");
	if (size > TREE_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG,
			       "'%s' is %lld bytes as a tar, over the 32 MiB of one call (use sbx cp)", path,
			       (long long)size);
	_cleanup_free_ unsigned char *tar = malloc((size_t)size + 1);
	if (!tar)
		return err_oom(err);
	if (pread(fd, tar, (size_t)size, 0) != size)
		return err_errno(err, "download: read the archive");
	_cleanup_free_ char *b64 = dsse_b64_encode(tar, (size_t)size);
	if (!b64)
		return err_oom(err);
	*ret = json_pack("{s:s,s:s,s:s,s:s,s:I}", "environment_id", id, "path", path, "content", b64,
			 "encoding", "base64+tar", "bytes", (json_int_t)size);
	return *ret ? 0 : err_oom(err);
}
