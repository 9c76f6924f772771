# duetgen's introspection: what a Python GObject class offers Go. Runs in
# the globals of internal/shape's shape.py, whose functions it uses.
import importlib.util
import inspect
import sys


def describe(path, modname, clsname):
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    cls = getattr(mod, clsname)
    return {
        "name": cls.__name__,
        "gtype": cls.__gtype__.name,
        "doc": inspect.cleandoc(cls.__dict__.get("__doc__") or "").split("\n\n")[0],
        "props": properties(cls),
        "signals": signals(cls),
        "methods": methods(cls),
        "members": members(cls),
    }
