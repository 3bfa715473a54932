# The environment, sorted (sh) and in its given order (Python).
env | sort
python3 -c 'import os; print(list(os.environ))'
