# Fails the first time it runs.
import sys

if not getattr(sys, "duet_test_flaky", False):
    sys.duet_test_flaky = True
    raise RuntimeError("first load fails")
