# What a Python GObject class offers Go (see shape.go).
import inspect
import typing

from gi.repository import GObject


def type_name(hint):
    """The name duetgen maps to a Go type: int, float, str, bool, bytes,
    None, list[...], dict[..., ...], or any."""
    if hint is inspect.Signature.empty:
        return "any"
    if hint is None or hint is type(None):
        return "None"
    if hint in (int, float, str, bool, bytes):
        return hint.__name__
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (list, tuple) and len(args) >= 1:
        return "list[%s]" % type_name(args[0])
    if origin is dict and len(args) == 2:
        return "dict[%s, %s]" % (type_name(args[0]), type_name(args[1]))
    return "any"


def _gtype(cls):
    if isinstance(cls, type) and issubclass(cls, GObject.Object):
        return cls.__gtype__
    return None


def properties(cls):
    """[name, GType name, blurb, settable] for the class's own properties;
    settable: writable after construction (not construct-only)."""
    gt = _gtype(cls)
    if gt is None:
        return []
    F = GObject.ParamFlags
    return [
        [p.name, p.value_type.name, p.blurb or "", bool(p.flags & F.WRITABLE) and not (p.flags & F.CONSTRUCT_ONLY)]
        for p in cls.list_properties()
        if p.owner_type == gt
    ]


def signals(cls):
    """[name, [param GType names], return GType name] for its own signals."""
    gt = _gtype(cls)
    if gt is None:
        return []
    out = []
    for sid in GObject.signal_list_ids(gt):
        q = GObject.signal_query(sid)
        out.append([q.signal_name, [t.name for t in q.param_types], q.return_type.name])
    return out


def methods(cls):
    """[name, [[param, type, kind]], return type, doc] for its public
    methods (functions in the class's own namespace, not do_ overrides)."""
    out = []
    for name, fn in vars(cls).items():
        if name.startswith("_") or name.startswith("do_") or not inspect.isfunction(fn):
            continue
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        try:
            hints = typing.get_type_hints(fn)
        except Exception:
            hints = {}
        params = [
            [p.name, type_name(hints.get(p.name, inspect.Signature.empty)), p.kind.name]
            for p in list(sig.parameters.values())[1:]
        ]
        ret = type_name(hints.get("return", inspect.Signature.empty))
        out.append([name, params, ret, (inspect.getdoc(fn) or "").split("\n\n")[0]])
    return out


def _params_text(params):
    parts, star = [], False
    for i, (name, hint, kind) in enumerate(params):
        if kind == "VAR_POSITIONAL":
            parts.append("*%s: %s" % (name, hint))
            star = True
            continue
        if kind == "VAR_KEYWORD":
            parts.append("**%s: %s" % (name, hint))
            continue
        if kind == "KEYWORD_ONLY" and not star:
            parts.append("*")
            star = True
        parts.append("%s: %s" % (name, hint))
        if kind == "POSITIONAL_ONLY" and (i + 1 == len(params) or params[i + 1][2] != "POSITIONAL_ONLY"):
            parts.append("/")
    return ", ".join(parts)


def members(cls):
    """[kind, name, line] per member: the line says everything a generated
    wrapper depends on, in Python's notation."""
    out = []
    for name, gtype, _, settable in properties(cls):
        out.append(["property", name, "property %s: %s%s" % (name, gtype, ", settable" if settable else "")])
    for name, params, ret in signals(cls):
        out.append(["signal", name, "signal %s(%s) -> %s" % (name, ", ".join(params), ret)])
    for name, params, ret, _ in methods(cls):
        line = "method %s(%s) -> %s" % (name, _params_text(params), ret)
        fn = vars(cls)[name]
        # A call returns a coroutine or a generator, not the hinted value.
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            line += ", async"
        elif inspect.isgeneratorfunction(fn):
            line += ", generator"
        out.append(["method", name, line])
    return out


def live_members(obj, name):
    """The member lines of each class obj's class derives from, those
    called name first (nearest first: a subclass of the same name may come
    before the class the wrapper was made for), then the others (the class
    may have been renamed since)."""
    mro = [c for c in type(obj).__mro__ if c is not object]
    named = [c for c in mro if c.__name__ == name]
    return [[m[2] for m in members(c)] for c in named + [c for c in mro if c not in named]]
