# xargs -P2: children run two at a time; each writes a file; the result is
# printed in a deterministic order.
d=/root/out/xargs; rm -rf $d; mkdir -p $d
seq 1 16 | xargs -P2 -n1 sh -c 'echo "item $0" > /root/out/xargs/f$0; echo $0' | sort -n | tr '\n' ' '; echo
cat $d/f* | wc -l
