# Build a small C project with make -j1 (5 units, gcc -O2 -g): the build log,
# the checksums of the objects and the binary, and the binary's output.
d=/root/out/make_j1; rm -rf $d; cp -r /root/corpus/cproj $d; cd $d
make -j1 2>&1
sha256sum *.o app
./app
make clean > /dev/null
