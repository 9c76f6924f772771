# Broken on purpose: a syntax error on line 3.
def ok():
    return (1,
