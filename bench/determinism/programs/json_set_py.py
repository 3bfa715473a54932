# json.dumps of a set converted to a list: the order follows string hashes.
import json
s = {"red", "green", "blue", "cyan", "magenta", "yellow", "black", "white"}
print(json.dumps(list(s)))
print(json.dumps({"tags": list(s), "sorted": sorted(s)}, sort_keys=True))
