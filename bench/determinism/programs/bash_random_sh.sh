# bash $RANDOM (seeded from the time and pid) and $SRANDOM (getrandom).
bash -c 'echo $RANDOM $RANDOM $RANDOM; echo $SRANDOM'
