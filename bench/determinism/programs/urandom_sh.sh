# /dev/urandom and /dev/random read by od, head and Python's open().
od -An -N16 -tx1 /dev/urandom
head -c 16 /dev/random | od -An -tx1
python3 -c 'print(open("/dev/urandom","rb").read(16).hex())'
dd if=/dev/urandom bs=8 count=2 status=none | od -An -tx1
