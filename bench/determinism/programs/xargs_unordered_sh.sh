# xargs -P4 echo: the order in which parallel children write to the shared
# pipe depends on scheduling.
seq 1 24 | xargs -P4 -n1 echo | tr '\n' ' '; echo
