# Time-based UUIDs: uuid1 mixes the clock, a clock sequence and a node id
# (a MAC address if one is found, else a random number).
import uuid
u = uuid.uuid1()
print(u, u.time, u.clock_seq, "%012x" % u.node)
print(uuid.getnode())
