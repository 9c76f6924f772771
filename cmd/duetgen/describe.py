# duetgen's introspection: what a Python GObject class offers Go.
import importlib.util
import inspect
import sys
import typing

from gi.repository import GObject


def _type_name(hint):
    if hint is inspect.Signature.empty:
        return "any"
    if hint is None or hint is type(None):
        return "None"
    if hint in (int, float, str, bool, bytes):
        return hint.__name__
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (list, tuple) and len(args) >= 1:
        return "list[%s]" % _type_name(args[0])
    if origin is dict and len(args) == 2:
        return "dict[%s, %s]" % (_type_name(args[0]), _type_name(args[1]))
    return "any"


def describe(path, modname, clsname):
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    cls = getattr(mod, clsname)
    props = [
        [p.name, p.value_type.name, p.blurb or "", bool(p.flags & GObject.ParamFlags.WRITABLE)]
        for p in cls.list_properties()
        if p.owner_type == cls.__gtype__
    ]
    signals = []
    for sid in GObject.signal_list_ids(cls.__gtype__):
        q = GObject.signal_query(sid)
        signals.append([q.signal_name, [t.name for t in q.param_types], q.return_type.name])
    methods = []
    for name, fn in cls.__dict__.items():
        if name.startswith("_") or name.startswith("do_") or not inspect.isfunction(fn):
            continue
        sig = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn)
        except Exception:
            hints = {}
        params = [[p.name, _type_name(hints.get(p.name, inspect.Signature.empty))] for p in list(sig.parameters.values())[1:]]
        ret = _type_name(hints.get("return", inspect.Signature.empty))
        methods.append([name, params, ret, (inspect.getdoc(fn) or "").split("\n\n")[0]])
    return {
        "gtype": cls.__gtype__.name,
        "doc": inspect.cleandoc(cls.__dict__.get("__doc__") or "").split("\n\n")[0],
        "props": props,
        "signals": signals,
        "methods": methods,
    }
