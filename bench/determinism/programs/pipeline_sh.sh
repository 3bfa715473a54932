# Pipelines of several processes whose output uses randomness: sort -R, shuf.
# (awk NR<=8 rather than head -8: head exits early and races the writer, see pipe_race_sh.)
seq 1 200 | sort -R | awk 'NR<=8' | tr '\n' ' '; echo
seq 1 200 | shuf | awk 'NR<=8' | tr '\n' ' '; echo
shuf -i 1-1000 -n 3 | tr '\n' ' '; echo
seq 1 5000 | sort -rn | awk '{s += $1} END {print s}'
