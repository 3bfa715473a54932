# Host name and kernel identity through uname(2).
hostname
uname -n
uname -a
python3 -c 'import socket, platform; print(socket.gethostname(), platform.node(), platform.uname())'
