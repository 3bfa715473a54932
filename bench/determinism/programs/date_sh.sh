# Wall clock from the shell: date(1) reads clock_gettime(CLOCK_REALTIME) through the vDSO.
date
date -u +%s.%N
date -R
