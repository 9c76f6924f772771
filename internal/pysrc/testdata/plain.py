# A module with nothing in it but a value, for the tests of Load itself.
VALUE = 42
