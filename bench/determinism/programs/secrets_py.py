# The secrets module (SystemRandom / os.urandom).
import secrets
print(secrets.token_hex(16))
print(secrets.token_urlsafe(16))
print(secrets.choice(["rock", "paper", "scissors", "lizard", "spock"]), secrets.randbelow(10**6))
