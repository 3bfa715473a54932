# OpenSSL's DRBG (seeded from getrandom) and a fresh key.
openssl rand -hex 16
openssl genpkey -algorithm ed25519 2>/dev/null | sha256sum
