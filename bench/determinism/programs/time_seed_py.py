# A PRNG seeded with a hash of the current time.
import hashlib, random, time
seed = int(hashlib.sha256(str(time.time()).encode()).hexdigest(), 16)
r = random.Random(seed)
print(seed % 10**12, r.random(), r.randint(0, 99))
