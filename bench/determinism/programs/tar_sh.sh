# tar of a directory records names, mtimes, owners, modes, in readdir order.
d=/root/out/tar; rm -rf $d; mkdir -p $d/src/sub; cd $d
for i in $(seq 1 20); do echo "file $i" > src/f$i; done
echo nested > src/sub/n
tar cf t.tar src
sha256sum t.tar
tar tvf t.tar > list   # (not piped into head: that would race, see pipe_race_sh)
head -5 list
tar cf - --sort=name src | sha256sum
