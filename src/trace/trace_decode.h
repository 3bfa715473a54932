/* Internal to src/trace: what the decoder (trace_decode.c), the model
 * (trace_model.c) and the renderers (trace_render.c) share. The public
 * contract is trace_view.h. */
#pragma once
#include "trace/trace_sys.h"
#include "trace/trace_view.h"

#define PATH_CAP 4096 /* a tracked path longer than this is cut (joins can nest without bound) */

/* glibc defines O_LARGEFILE as 0 on 64-bit; the kernel's bit is this. */
#if defined(__x86_64__)
#define KO_LARGEFILE 0100000
#elif defined(__aarch64__)
#define KO_LARGEFILE 0400000
#else
#error "traces are recorded on x86_64 and arm64 only"
#endif

/* The argument index of the k-th string argument, or -1. */
int trace_str_arg_index(int32_t nr, int k);
/* "SIGKILL", "SIGRT_3", or the number. */
void trace_sb_signal(trace_sbuf *b, int64_t sig);
/* "AF_UNIX,SOCK_STREAM": a socket's domain and type (without flags). */
void trace_sb_socket(trace_sbuf *b, int64_t domain, int64_t type);
