# Python's per-process hash seed (PYTHONHASHSEED unset): string hashes and the
# iteration order of sets of strings. (dict order is insertion order.)
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
print(hash("abc"), hash(b"abc"), hash(("a", 1)))
print(list(set(words)))
print(list(frozenset(w.upper() for w in words)))
d = {w: len(w) for w in set(words)}
print(list(d))
