# Python object ids are addresses.
o, l = object(), [1, 2, 3]
print(id(o), id(l), hex(id(print)), repr(object()))
