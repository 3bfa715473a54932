# gzip stores the input's name and mtime; a stream from stdin gets none
# (gzip) or the current time (Python's gzip.compress).
d=/root/out/gzip; rm -rf $d; mkdir -p $d; cd $d
seq 1 2000 > data
gzip -c data > data.gz
sha256sum data.gz
gzip -lv data.gz | tail -1
gzip -c < data | sha256sum
python3 -c 'import gzip,hashlib; print(hashlib.sha256(gzip.compress(b"hello"*100)).hexdigest())'
