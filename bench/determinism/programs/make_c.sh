# Build a small C project with make -j2 (5 units, gcc -O2 -g): the build log,
# the checksums of the objects and the binary, and the binary's output.
d=/root/out/make; rm -rf $d; cp -r /root/corpus/cproj $d; cd $d
make -j2 2>&1
sha256sum *.o app
./app
make clean > /dev/null
