/* The environment's end, the supervisor's side: init killed (its pid
 * namespace, and the mount and network namespaces with its last process),
 * what the supervisor ran beside it stopped (the freeze, the egress proxy,
 * the plugin host, the recorder, the standby), every process reaped (in
 * degraded mode, each descendant found and killed), then the cgroup, the
 * devices and the control socket removed. In three steps, so that a
 * one-shot environment can be hidden and answered between them
 * (supervisor_main). */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin/plugin.h"
#include "runtime/devices.h"
#include "runtime/startup_trace.h"
#include "runtime/sup_internal.h"
#include "util/fs.h"

/* SIGKILLs every descendant of this process (reparented orphans included,
 * since we are their subreaper) until none is left, and reaps them. */
static void kill_descendants(void)
{
	pid_t self = getpid();
	for (int round = 0; round < 100; round++) {
		size_t n = 0, cap = 0;
		_cleanup_free_ pid_t *pids = NULL, *ppids = NULL;
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			char p[300];
			_cleanup_free_ char *st = NULL;
			snprintf(p, sizeof(p), "/proc/%s/stat", de->d_name);
			if (fs_read_file(p, 4096, &st, NULL) < 0)
				continue;
			char *rp = strrchr(st, ')');
			int ppid = 0;
			if (!rp || sscanf(rp + 2, "%*c %d", &ppid) != 1)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				pid_t *a = realloc(pids, cap * sizeof(pid_t)),
				      *b = a ? realloc(ppids, cap * sizeof(pid_t)) : NULL;
				if (a)
					pids = a;
				if (!a || !b)
					break;
				ppids = b;
			}
			pids[n] = atoi(de->d_name);
			ppids[n++] = ppid;
		}
		if (d)
			closedir(d);
		size_t killed = 0;
		for (size_t i = 0; i < n; i++) {
			/* Is `self` an ancestor of pids[i]? Walk the parent chain. */
			pid_t p = ppids[i];
			for (int depth = 0; depth < 4096 && p > 1 && p != self; depth++) {
				size_t k;
				for (k = 0; k < n && pids[k] != p; k++)
					;
				p = k < n ? ppids[k] : 0;
			}
			if (p == self && pids[i] != self) {
				(void)kill(pids[i], SIGKILL);
				killed++;
			}
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (killed == 0)
			return;
		usleep(2000);
	}
}

/* The teardown in three steps (sup_teardown() runs them in a row): the first
 * sends init its SIGKILL, the second waits until every process of the
 * environment is gone, the third removes the cgroup and the devices. A
 * one-shot stop hides the environment between the first two (while init
 * dies) and answers between the last two (supervisor_main). */
void sup_teardown_signal(supervisor *s)
{
	startup_mark("teardown: begin");
	sup_warm_resume(s); /* sbx pause's freeze too */
	sup_thaw(s);	    /* a v1-frozen task does not even die until thawed */
	sup_egress_stop(s);
	sup_ports_stop(s); /* published ports: listeners closed, connections ended */
	/* fini, then the plugin host ends (not freed: a resolver thread of the
	 * proxy may still ask it, and then gets a refusal) */
	plugin_host_stop(s->plugins);
	sup_stop_recorder(s, NULL);
	sup_restore_standby_drop(s);
	/* A remover that lets the unmount follow the reply: the dead init's
	 * mount namespace is held (past its death) and let go after "stopped"
	 * (linger_release), so the overlays' unmount, which syncs the upper's
	 * filesystem (a disk flush per overlay), is off the remover's path. */
	if (s->linger_ok && s->init_pid > 0 && !s->c->degraded) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)s->init_pid);
		s->linger_ns = open(p, O_RDONLY | O_CLOEXEC);
	}
	sup_signal_init(s);
}

void sup_teardown_reap(supervisor *s)
{
	if (s->init_pid > 0)
		(void)RETRY_EINTR(waitpid(s->init_pid, NULL, 0));
	if (s->old_init_pid > 0) /* replaced by a standby, not reaped yet */
		(void)RETRY_EINTR(waitpid(s->old_init_pid, NULL, 0));
	if (s->linger_ns < 0) /* else let go with the dead init's, after the reply */
		s->old_mnt_ns = safe_close(s->old_mnt_ns);
	sup_restore_wait_helpers(s); /* unmounting a replaced init's overlays */
	startup_mark("teardown: init reaped");
	/* Without a pid namespace, init's death does not take its descendants
	 * with it; as their subreaper we find and kill them all. */
	if (s->c->degraded)
		kill_descendants();
}

void sup_teardown_cgroup(supervisor *s)
{
	devices_teardown(s->c, s->init_pid); /* CDI poststop hooks, device cgroup */
	if (s->cg) {
		(void)cgroup_destroy(s->cg, NULL);
		cgroup_free(s->cg);
		s->cg = NULL;
	}
	startup_mark("teardown: cgroup destroyed");
	char path[4200];
	snprintf(path, sizeof(path), "%s/ctl.sock", s->c->run_dir);
	(void)unlink(path);
}

void sup_teardown(supervisor *s)
{
	sup_teardown_signal(s);
	sup_teardown_reap(s);
	sup_teardown_cgroup(s);
}
