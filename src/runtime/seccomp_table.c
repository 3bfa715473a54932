/* The unconditional seccomp deny list, as data.
 *
 * Baseline: every syscall that Docker's default profile (moby
 * profiles/seccomp/default.json) refuses to a container holding Docker's
 * default capabilities is denied here too, so this list is at least as strict
 * as Docker's denials. On top of that we deny what the sandbox design names
 * (io_uring, name_to_handle_at, adjtimex/clock_adjtime, ...).
 *
 * Deliberately NOT denied (judgement calls, same as Docker on kernels >= 4.8):
 * ptrace, process_vm_readv and process_vm_writev. They pass the same
 * PTRACE_MODE_ATTACH access check as ptrace itself, the environment has its own
 * pid namespace and no CAP_SYS_PTRACE, so they reach only the environment's
 * own processes; debuggers (gdb, rr, strace) need them.
 * modify_ldt stays allowed on x86 as in Docker (Wine, dosemu).
 *
 * Conditional rules (clone/unshare namespace flags, clone3, ioctl
 * TIOCSTI/TIOCLINUX, personality, socket(AF_VSOCK)) live in seccomp.c.
 * Names libseccomp does not know, or that do not exist on the native
 * architecture (vm86, pciconfig_* on x86_64), are skipped when loading. */
#include <errno.h>

#include "runtime/seccomp.h"

#define DENY(n, w)                                                                                           \
	{                                                                                                    \
		.name = n, .errnum = EPERM, .why = w                                                         \
	}
/* ENOSYS makes callers behave as on a kernel without the feature. */
#define NOSYS(n, w)                                                                                          \
	{                                                                                                    \
		.name = n, .errnum = ENOSYS, .why = w                                                        \
	}

const seccomp_rule seccomp_deny_table[] = {
    /* Mount family: the environment's mount tree is fixed by the runtime. */
    DENY("mount", "changing the mount tree could expose or hide host paths"),
    DENY("umount", "changing the mount tree could expose host paths under a mount"),
    DENY("umount2", "changing the mount tree could expose host paths under a mount"),
    DENY("pivot_root", "changing the root could expose the detached old root"),
    DENY("move_mount", "new mount API: attach mounts outside the fixed tree"),
    DENY("open_tree", "new mount API: clone mounts (detached mount trees)"),
    DENY("open_tree_attr", "new mount API: clone mounts with attributes (idmaps)"),
    DENY("fsopen", "new mount API: create filesystem contexts"),
    DENY("fsconfig", "new mount API: configure filesystem contexts"),
    DENY("fsmount", "new mount API: create mounts"),
    DENY("fspick", "new mount API: reconfigure existing superblocks"),
    DENY("mount_setattr", "new mount API: change mount flags and idmaps"),
    /* Kernel attack surface without a use inside an environment. */
    DENY("bpf", "eBPF programs and maps are a large kernel attack surface"),
    DENY("perf_event_open", "perf events leak kernel/host information and are an attack surface"),
    DENY("userfaultfd", "widely used to win kernel race conditions in exploits"),
    DENY("keyctl", "the kernel keyring is not namespaced"),
    DENY("add_key", "the kernel keyring is not namespaced"),
    DENY("request_key", "the kernel keyring is not namespaced and can upcall to host helpers"),
    NOSYS("io_uring_setup", "io_uring is a large attack surface; ENOSYS makes programs fall back"),
    NOSYS("io_uring_enter", "io_uring is a large attack surface; ENOSYS makes programs fall back"),
    NOSYS("io_uring_register", "io_uring is a large attack surface; ENOSYS makes programs fall back"),
    DENY("kexec_load", "loading a new kernel"),
    DENY("kexec_file_load", "loading a new kernel"),
    DENY("init_module", "loading kernel modules"),
    DENY("finit_module", "loading kernel modules"),
    DENY("delete_module", "unloading kernel modules"),
    DENY("create_module", "obsolete kernel module interface"),
    DENY("get_kernel_syms", "obsolete kernel module interface, leaks kernel symbols"),
    DENY("query_module", "obsolete kernel module interface"),
    DENY("open_by_handle_at", "opens files by handle, bypassing the mount tree (shocker escape)"),
    DENY("name_to_handle_at", "produces handles for open_by_handle_at; leaks mount ids"),
    DENY("lookup_dcookie", "kernel profiling interface, leaks host paths"),
    DENY("fanotify_init", "filesystem-wide event monitoring"),
    DENY("syslog", "reads or clears the host kernel log"),
    DENY("vhangup", "hangs up the controlling terminal of other sessions"),
    DENY("acct", "process accounting writes to a host file"),
    DENY("quotactl", "filesystem quota administration"),
    DENY("quotactl_fd", "filesystem quota administration"),
    DENY("setns", "joining other namespaces"),
    DENY("sethostname", "the hostname is set by the runtime"),
    DENY("setdomainname", "the domain name is set by the runtime"),
    /* Host-wide state. */
    DENY("reboot", "rebooting or halting (or signalling the pid namespace init)"),
    DENY("swapon", "host swap configuration"),
    DENY("swapoff", "host swap configuration"),
    DENY("settimeofday", "the clock is host-wide"),
    DENY("clock_settime", "the clock is host-wide"),
    DENY("clock_adjtime", "the clock is host-wide"),
    DENY("adjtimex", "the clock is host-wide"),
    DENY("stime", "the clock is host-wide (i386 only)"),
    DENY("iopl", "raw I/O port access"),
    DENY("ioperm", "raw I/O port access"),
    DENY("pciconfig_read", "raw PCI configuration space access"),
    DENY("pciconfig_write", "raw PCI configuration space access"),
    DENY("pciconfig_iobase", "raw PCI configuration space access"),
    /* NUMA memory policy: Docker gates these on CAP_SYS_NICE, which we drop. */
    DENY("get_mempolicy", "NUMA policy: gated on CAP_SYS_NICE by Docker"),
    DENY("set_mempolicy", "NUMA policy: gated on CAP_SYS_NICE by Docker"),
    DENY("set_mempolicy_home_node", "NUMA policy: gated on CAP_SYS_NICE by Docker"),
    DENY("mbind", "NUMA policy: gated on CAP_SYS_NICE by Docker"),
    DENY("move_pages", "moves pages of other processes between NUMA nodes"),
    DENY("migrate_pages", "moves pages of other processes between NUMA nodes"),
    /* Cross-process inspection that Docker gates on CAP_SYS_PTRACE. */
    DENY("kcmp", "compares kernel objects of other processes (KASLR/info leak)"),
    DENY("pidfd_getfd", "steals file descriptors from other processes"),
    DENY("process_madvise", "changes memory advice of other processes"),
    /* Obsolete or unimplemented interfaces. */
    DENY("_sysctl", "obsolete sysctl interface"),
    DENY("uselib", "obsolete a.out library loading"),
    DENY("ustat", "obsolete, leaks host filesystem information"),
    DENY("sysfs", "obsolete filesystem type information"),
    DENY("nfsservctl", "obsolete NFS server control"),
    DENY("vm86", "virtual 8086 mode (i386 only)"),
    DENY("vm86old", "virtual 8086 mode (i386 only)"),
    NOSYS("afs_syscall", "unimplemented; denied in case a kernel fills it"),
    NOSYS("getpmsg", "unimplemented; denied in case a kernel fills it"),
    NOSYS("putpmsg", "unimplemented; denied in case a kernel fills it"),
    NOSYS("security", "unimplemented; denied in case a kernel fills it"),
    NOSYS("tuxcall", "unimplemented; denied in case a kernel fills it"),
    NOSYS("vserver", "unimplemented; denied in case a kernel fills it"),
};

const size_t seccomp_deny_table_len = sizeof(seccomp_deny_table) / sizeof(seccomp_deny_table[0]);
