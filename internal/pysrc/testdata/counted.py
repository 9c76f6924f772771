# Counts its runs, and takes long enough for other loads to arrive while it
# runs.
import sys
import time

sys.duet_test_runs = getattr(sys, "duet_test_runs", 0) + 1
time.sleep(0.05)
