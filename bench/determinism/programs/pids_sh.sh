# pids in the shell: $$, $PPID, a subshell's pid, $! of a background job.
echo "shell $$ parent $PPID"
sh -c 'echo "child shell $$ parent $PPID"'
sleep 0 & echo "background $!"; wait
python3 -c 'import os; print("python", os.getpid(), os.getppid())'
