# /etc/machine-id: written once per environment at creation, so part of the
# snapshot the command starts from (systemd, D-Bus and journald read it).
cat /etc/machine-id
