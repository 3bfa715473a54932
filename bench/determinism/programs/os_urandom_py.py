# os.urandom, os.getrandom, SystemRandom.
import os, random
print(os.urandom(16).hex())
print(os.getrandom(16).hex())
print(random.SystemRandom().random())
