# CPU counts as tools see them.
nproc
python3 -c 'import os; print(os.cpu_count(), len(os.sched_getaffinity(0)))'
