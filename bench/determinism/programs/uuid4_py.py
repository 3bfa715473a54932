# Random UUIDs.
import uuid
print(uuid.uuid4())
print(uuid.uuid4().hex)
