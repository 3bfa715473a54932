# Python's random module without a seed (seeded from os.urandom at import).
import random
print(random.random(), random.randint(0, 10**9))
l = list(range(20)); random.shuffle(l); print(l)
print(random.choice("abcdefghijklmnop"), random.gauss(0, 1))
