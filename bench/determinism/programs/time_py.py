# Wall clock from Python: time.time(), time_ns(), datetime.now(), localtime, ctime.
import datetime, time
print(time.time())
print(time.time_ns())
print(datetime.datetime.now().isoformat())
print(datetime.datetime.utcnow().isoformat())
print(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime()))
print(time.ctime())
