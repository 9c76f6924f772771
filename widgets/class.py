# Builds GObject classes whose methods are Go callbacks (widgets.DefineClass).
from gi.repository import GObject

_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "object": object}


def _pytype(name):
    if name in ("", None):
        return None
    try:
        return _TYPES[name]
    except KeyError:
        raise TypeError("unknown type %r (use int, float, bool, str or object)" % (name,))


def define_class(name, base, methods, signals, props, init):
    ns = {"__module__": "duet.go", "__qualname__": name}
    ns.update(methods)
    if signals:
        ns["__gsignals__"] = {
            sig: (GObject.SignalFlags.RUN_LAST, _pytype(spec["return"]), tuple(_pytype(t) for t in spec["params"]))
            for sig, spec in signals.items()
        }
    own = set()
    for p in props or ():
        kw = {"type": _pytype(p["type"]), "nick": p["nick"] or p["name"], "blurb": p["blurb"] or ""}
        if p["default"] is not None:
            kw["default"] = p["default"]
        if p["min"] is not None:
            kw["minimum"] = p["min"]
        if p["max"] is not None:
            kw["maximum"] = p["max"]
        ns[p["name"].replace("-", "_")] = GObject.Property(**kw)
        own.add(p["name"].replace("_", "-"))
    if init is not None:
        def __init__(self, **kw):
            names = {ps.name for ps in type(self).list_properties()} | own
            props = {k: v for k, v in kw.items() if k.replace("_", "-") in names}
            rest = {k: v for k, v in kw.items() if k not in props}
            base.__init__(self, **props)
            init(self, **rest)
        ns["__init__"] = __init__
    return type(base)(name, (base,), ns)
