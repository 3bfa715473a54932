# File times: stat after writes, find -newer, ls --full-time; and a file from the snapshot.
d=/root/out/mtimes; rm -rf $d; mkdir -p $d; cd $d
echo a > a; sleep 0.02; echo ref > ref; sleep 0.02; echo b > b
echo "newer than ref: $(find . -newer ref -type f | sort | tr '\n' ' ')"
stat -c '%n mtime=%Y.%y ctime=%Z atime=%X' a ref b
ls -l --full-time --time-style=+%s.%N a ref b
stat -c '%n %Y %y' /root/corpus/mtimes_sh.sh
python3 -c 'import os; s=os.stat("b"); print(s.st_mtime_ns, s.st_ctime_ns, s.st_atime_ns)'
