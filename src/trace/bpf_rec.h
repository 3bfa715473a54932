/* The eBPF syscall recorder (used as root): records every syscall, fork, exec
 * and exit of the tasks of one pid namespace into a trace stream
 * (trace_format.h). The kernel side is src/trace/bpf/sbx_trace.bpf.c,
 * embedded in the library at build time.
 *
 * Test knob: SBX_TRACE_RINGBUF_BYTES=N (a power of two, at least the page
 * size) replaces the 16 MiB ring buffer, so tests can force losses. */
#ifndef SBX_TRACE_BPF_REC_H
#define SBX_TRACE_BPF_REC_H

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

typedef struct bpf_rec bpf_rec;

/* True if this process can load the recorder: BPF usable (CAP_BPF and
 * CAP_PERFMON, or CAP_SYS_ADMIN, and bpf(2) not blocked) and kernel BTF
 * present. Cheap enough to call per recording. */
bool bpf_rec_available(void);

/* Starts recording every syscall of every task whose active pid namespace is
 * (pidns_dev, pidns_ino): st_dev/st_ino of stat("/proc/PID/ns/pid"). The
 * first start in a process loads the BPF programs (~90 ms); later ones for
 * the same namespace reuse them (a stopped recorder is kept loaded, and
 * attached for a few seconds: see bpf_rec.c). One recording per process at a
 * time reuses them; a concurrent one loads its own. Writes
 * the stream (struct trace_file_header, then records) to out_fd from a drain
 * thread that polls the ring buffer every ~10 ms. out_fd stays the caller's;
 * it must not be written to by anyone else until bpf_rec_stop returns. The
 * header is written before this returns (a failure to write it fails the
 * start); later write failures are reported by bpf_rec_stop. */
int bpf_rec_start(uint64_t pidns_dev, uint64_t pidns_ino, int out_fd, bpf_rec **ret, sbx_err **err);

typedef struct bpf_rec_stats {
	uint64_t records; /* records drained from the kernel into the stream (TR_LOST not counted) */
	uint64_t lost;	  /* records dropped (each reported in a TR_LOST record) */
	uint64_t bytes;	  /* bytes written to out_fd, header and TR_LOST records included */
} bpf_rec_stats;

/* Stops: switches recording off, drains what is left, writes a TR_LOST
 * record if anything was dropped since the last one, and reports counters.
 * Releases r (also on error: a failed write to out_fd is reported here); its
 * loaded programs stay with the process for the next start. */
int bpf_rec_stop(bpf_rec *r, bpf_rec_stats *ret_stats, sbx_err **err);

#endif
