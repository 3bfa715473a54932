/* Which CPU we run on and how many there are. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
	unsigned cpu = 99, node = 99;
	syscall(SYS_getcpu, &cpu, &node, NULL);
	cpu_set_t set;
	sched_getaffinity(0, sizeof(set), &set);
	printf("sched_getcpu %d SYS_getcpu cpu %u node %u\n", sched_getcpu(), cpu, node);
	printf("affinity count %d nprocs %d nprocs_conf %d sysconf_onln %ld\n", CPU_COUNT(&set), get_nprocs(), get_nprocs_conf(),
	       sysconf(_SC_NPROCESSORS_ONLN));
	return 0;
}
