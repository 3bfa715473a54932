# Clocks of processes running at once: each date reads its own process's
# virtual clock (started from its parent's at the fork), so the values do not
# depend on which of them the scheduler runs first; the output order is fixed
# by the pipeline's structure.
date +%N | (date +%N; cat) | (date +%N; cat) | cat
a=$(date +%s.%N & date +%s.%N; wait)
echo "$a" | sort
for i in 1 2 3; do date +%s.%N; done | cat
