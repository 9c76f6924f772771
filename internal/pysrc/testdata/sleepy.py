# Says it has started, then sleeps (without the GIL, as time.sleep does):
# its load holds the loader's lock while Python is free for others.
import sys
import time

sys.duet_test_sleeping = True
time.sleep(0.3)
