# Calls Go, which loads this very module again.
import builtins

result = builtins.duet_test_reenter()
