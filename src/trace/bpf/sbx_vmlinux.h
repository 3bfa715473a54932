/* The few kernel types the BPF recorder touches, written by hand instead of a
 * generated vmlinux.h (which would tie the build to one kernel's BTF and add
 * 100k+ lines). Every struct is marked preserve_access_index: libbpf rewrites
 * each field access against the running kernel's BTF at load time (CO-RE),
 * so only the names and types of the fields listed here matter, not their
 * order, offsets or the fields left out.
 *
 * The UAPI constants below are part of the stable bpf(2) ABI (linux/bpf.h);
 * they are copied rather than included because the host's kernel headers
 * need the multiarch asm/ directory, which clang -target bpf does not search. */
#ifndef SBX_VMLINUX_H
#define SBX_VMLINUX_H

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

/* For trace_format.h, which uses the <stdint.h> names. */
typedef __u8 uint8_t;
typedef __u16 uint16_t;
typedef __u32 uint32_t;
typedef __u64 uint64_t;
typedef __s32 int32_t;
typedef __s64 int64_t;

/* linux/bpf.h */
enum bpf_map_type {
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};
enum {
	BPF_F_NO_PREALLOC = 1U << 0,
};
enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1ULL << 0,
};
enum {
	BPF_RB_NO_WAKEUP = 1ULL << 0,
};
struct bpf_pidns_info {
	__u32 pid;
	__u32 tgid;
};

/* Kernel types, relocated by CO-RE. */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long di, si, dx, r10, r8, r9, orig_ax;
};
#elif defined(__TARGET_ARCH_arm64)
/* regs[] sits in an anonymous struct inside a union in the kernel's
 * definition; CO-RE finds fields through anonymous members. */
struct pt_regs {
	__u64 regs[31];
	__u64 orig_x0;
	__s32 syscallno;
};
#else
#error "the BPF recorder supports x86_64 and arm64 (define __TARGET_ARCH_x86 or __TARGET_ARCH_arm64)"
#endif

typedef struct {
	int counter;
} atomic_t;

struct pid_namespace;

struct upid {
	int nr;
	struct pid_namespace *ns;
};

struct pid {
	unsigned int level;
	struct upid numbers[];
};

struct mm_struct {
	unsigned long arg_start, arg_end;
};

struct signal_struct {
	atomic_t live;
};

struct task_struct {
	int pid;
	int tgid;
	int exit_code;
	struct pid *thread_pid;
	struct mm_struct *mm;
	struct signal_struct *signal;
};

struct linux_binprm {
	const char *filename;
	const char *fdpath;
};

/* Has a group_dead field on kernels whose sched_process_exit tracepoint takes
 * the matching argument (6.18 does); used only to probe for it. */
struct trace_event_raw_sched_process_exit {
	bool group_dead;
};

#pragma clang attribute pop

#endif
