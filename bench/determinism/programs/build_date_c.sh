# A binary that embeds the build time (__DATE__ __TIME__): gcc reads the clock.
d=/root/out/build_date; rm -rf $d; mkdir -p $d; cd $d
printf '#include <stdio.h>\nint main(void){puts("built " __DATE__ " " __TIME__);return 0;}\n' > b.c
gcc -O1 -Wno-date-time -o b b.c
./b
sha256sum b
