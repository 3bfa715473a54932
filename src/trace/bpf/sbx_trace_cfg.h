/* What user space (bpf_rec.c) tells the BPF program (sbx_trace.bpf.c) before
 * loading it: the program's only .rodata variable, so the verifier sees the
 * values as constants. Shared by both sides; fixed-width types only. */
#ifndef SBX_TRACE_CFG_H
#define SBX_TRACE_CFG_H

/* TRACE_NR_MAX of trace_sys.h, which the BPF side cannot include (it pulls
 * in libc headers); bpf_rec.c asserts that the two agree. */
#define SBX_TRACE_NR_MAX 512
/* Default ring buffer size; bpf_rec_start may change it before load. */
#define SBX_TRACE_RINGBUF_DEFAULT (16u << 20)
/* The largest record the program builds (TR_EXEC with a full filename and
 * argv), plus 8 bytes for the zeroed padding word. */
#define SBX_TRACE_SCRATCH_SIZE 2048

struct sbx_trace_cfg {
	uint64_t pidns_dev; /* kernel dev_t (MAJOR << 20 | MINOR) of the nsfs inode */
	uint64_t pidns_ino;
	int32_t nr_exit; /* never return: recorded at entry */
	int32_t nr_exit_group;
	uint8_t str_args[SBX_TRACE_NR_MAX]; /* trace_sys_str_args() per syscall number */
};

/* The program's run-time state (its .bss, mmaped by user space). */
struct sbx_trace_state {
	uint32_t session;   /* the recording in progress (user space writes it), 0 = none */
	uint32_t env_level; /* the recorded namespace's pid level + 1, learnt from its first task */
};

#endif
