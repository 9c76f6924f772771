# duet's reload (internal/reload): a module of the app's, edited on disk,
# applied to the running program. reload() runs on the UI thread, between
# two events.
#
# The new source runs in the module's own __dict__ (a snapshot of it is put
# back if it raises), so every function it makes has the module's real
# globals. Its top-level class statements for a class the module already
# has do not make a class: the body runs into a fresh namespace and the old
# class is what the name gets; once the whole module ran, each such body is
# applied to the old class. Functions the module and those classes already
# had keep their identity and get the new code (fn.__code__ = new.__code__),
# so everything that holds them (a signal connection, a bound method,
# PyGObject's vfunc closure made when the class was registered) runs the
# new code at its next call.
import ast
import builtins
import gc
import linecache
import os
import sys
import traceback
import types

_real_build_class = builtins.__build_class__
_active = None  # the _Reload under way (one at a time, on the UI thread)

# GObject classes a reload made and then dropped because the module raised
# afterwards: their GType stays registered, so the next reload of the
# module patches them rather than register the name again ("could not
# create new GType"). Module name -> {class name: class}.
_orphans = {}

_FORWARD = "__duet_forward__"
_TARGET = "__duet_target__"
_forwards = {}  # co_freevars -> a forwarding function's code

# What a class statement's body defines that is not an attribute to apply.
_BODY_SKIP = {"__module__", "__qualname__", "__classcell__", "__dict__", "__weakref__"}
# Declarations compared on their own (GObject) rather than set.
_DECLARED = {"__gtype_name__", "__gsignals__", "__gproperties__"}


def reload(name, filename, src, old_src):
    """Re-runs module name (file filename) from src and applies it; old_src
    is the source the running code came from. Returns a dict: ok (bool);
    then functions, methods, added, removed, redrawn (counts) and restart
    (a list of [owner, what] the running objects could not take), or error
    and traceback."""
    global _active
    module = sys.modules.get(name)
    if module is None or not getattr(module, "__duet_module__", False) or \
            getattr(module, "__file__", None) != filename:
        return {"ok": False, "error": "the module %s is no longer loaded from %s" % (name, filename), "traceback": ""}
    if _active is not None:
        return {"ok": False, "error": "a reload is already under way", "traceback": ""}
    try:
        tree = ast.parse(src, filename)
        r = _Reload(module, filename, tree, old_src)
        code = compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        return _failed(e, None, src, filename)
    g = module.__dict__
    snapshot = dict(g)
    base = g.get("__builtins__", builtins.__dict__)
    if isinstance(base, types.ModuleType):
        base = base.__dict__
    run_builtins = dict(base)
    run_builtins["__build_class__"] = _build_class
    # The module's frame takes its builtins from the globals when the
    # function is made, the functions its code makes take theirs when they
    # are made: so only the module's own class statements see the
    # override, and nothing made keeps the copy.
    g["__builtins__"] = run_builtins
    try:
        body = types.FunctionType(code, g)
    finally:
        g["__builtins__"] = snapshot.get("__builtins__", base)
    _active = r
    try:
        body()
    except KeyboardInterrupt:
        _restore(g, snapshot)
        raise
    except BaseException as e:
        _restore(g, snapshot)
        _keep_orphans(r)
        return _failed(e, e.__traceback__, src, filename)
    finally:
        _active = None
    r.apply(snapshot)
    _forget_orphans(r)
    try:
        redrawn = _redraw(module)
    except Exception:
        # The new code is in: a widget that would not be redrawn (its own
        # get_first_child raising, say) does not make this a failed reload.
        import traceback
        traceback.print_exc()
        redrawn = 0
    if not os.path.exists(filename):
        # A file Python cannot read (go:embed's path): tracebacks of the new
        # code quote the new source.
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    return {"ok": True, "functions": r.functions, "methods": r.methods, "added": r.added,
            "removed": r.removed, "restart": r.restart, "redrawn": redrawn}


def _redraw(module):
    """Queues a resize and a draw of every widget in a window whose class
    (or one of its bases) the module defines, and says how many. GTK keeps
    each widget's render node from the last frame and calls do_snapshot
    (do_measure) again only for a widget queued: without this, a widget
    whose drawing changed (its do_snapshot, or a function or constant it
    reads) would show the old drawing until something else invalidated
    it. Every reload of the module does it, not only those that changed a
    method: what a drawing reads may be a module constant."""
    gtk = sys.modules.get("gi.repository.Gtk")
    if gtk is None:
        return 0
    name = module.__name__
    ours = {}  # type -> whether the module defines it or a base of it
    n = 0
    todo = list(gtk.Window.list_toplevels())
    while todo:
        w = todo.pop()
        t = type(w)
        mine = ours.get(t)
        if mine is None:
            mine = ours[t] = any(getattr(c, "__module__", None) == name for c in t.__mro__)
        if mine:
            # GTK's own, not an override the program's class may have.
            gtk.Widget.queue_resize(w)
            gtk.Widget.queue_draw(w)
            n += 1
        c = gtk.Widget.get_first_child(w)
        while c is not None:
            todo.append(c)
            c = gtk.Widget.get_next_sibling(c)
    return n


def _failed(e, tb, src, filename):
    """The error in one line, and its traceback without this module's
    frames (the user's code is what failed)."""
    was = linecache.cache.get(filename)
    if not os.path.exists(filename):
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    try:
        te = traceback.TracebackException(type(e), e, tb)
        _strip(te, set())
        text = "".join(te.format())
    finally:
        if not os.path.exists(filename):
            if was is None:
                linecache.cache.pop(filename, None)
            else:
                linecache.cache[filename] = was
    if isinstance(e, SyntaxError):
        line = "%s: %s" % (type(e).__name__, e)  # "invalid syntax (feed.py, line 12)"
    else:
        line = traceback.format_exception_only(type(e), e)[-1].strip()
        where = [f.lineno for f in te.stack if f.filename == filename]
        if where:
            line += " (line %d)" % where[-1]
    return {"ok": False, "error": line, "traceback": text}


def _strip(te, seen):
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != __file__])
    _strip(te.__cause__, seen)
    _strip(te.__context__, seen)


def _restore(g, snapshot):
    for k in [k for k in g if k not in snapshot]:
        del g[k]
    g.update(snapshot)


def _keep_orphans(r):
    if r.made:
        _orphans.setdefault(r.module.__name__, {}).update(r.made)


def _forget_orphans(r):
    left = _orphans.get(r.module.__name__)
    if left is None:
        return
    g = r.module.__dict__
    for k in [k for k, c in left.items() if g.get(k) is c]:
        del left[k]
    if not left:
        del _orphans[r.module.__name__]


def _build_class(func, name, *bases, **kwds):
    r = _active
    if r is None or getattr(func, "__globals__", None) is not r.module.__dict__ or func.__closure__:
        return _real_build_class(func, name, *bases, **kwds)
    return r.build_class(func, name, bases, kwds)


# ---- the reload ------------------------------------------------------------


class _Plan:
    def __init__(self, cls, ns, bases, meta):
        self.cls, self.ns, self.bases, self.meta = cls, ns, bases, meta


class _Reload:
    def __init__(self, module, filename, tree, old_src):
        self.module = module
        self.filename = filename
        self.plans = []
        self.made = {}  # GObject classes this reload made, by name
        self.functions = self.methods = self.added = self.removed = 0
        self.restart = []
        self._said = set()
        g = module.__dict__
        mine = {}
        for k, v in list(_orphans.get(module.__name__, {}).items()) + list(g.items()):
            if isinstance(v, type) and v.__module__ == module.__name__ and v.__qualname__ == k:
                mine[k] = v
        try:
            old_defs = _class_defs(ast.parse(old_src, filename)) if old_src is not None else {}
        except (SyntaxError, ValueError):
            old_defs = {}
        # What each class statement of an existing class does: "patch" (its
        # body applied to the class), "keep" (a class whose metaclass makes
        # it more than its namespace, unchanged: not run again), or
        # "rebuild" (such a class, changed: made anew, as importlib.reload
        # would). Decorators of a class that is kept or patched do not run
        # again: they did their work on that class already (Gtk.Template
        # even refuses to run twice).
        self.mode = {}
        self.decorators_changed = set()
        self.decorated = set()
        for cname, nodes in _class_defs(tree).items():
            cls = mine.get(cname)
            if cls is None:
                continue
            was = old_defs.get(cname)
            if _patchable(type(cls)):
                self.mode[cname] = "patch"
                if was is not None and [_dump(n.decorator_list) for n in nodes] != [_dump(n.decorator_list) for n in was]:
                    self.decorators_changed.add(cname)
            elif was is not None and [_dump(n) for n in nodes] == [_dump(n) for n in was]:
                self.mode[cname] = "keep"
            else:
                self.mode[cname] = "rebuild"
                continue
            for n in nodes:
                if n.decorator_list:
                    self.decorated.add(cname)
                n.decorator_list = []
        self.old_classes = {k: mine[k] for k in self.mode}

    def say(self, owner, what):
        if (owner, what) not in self._said:
            self._said.add((owner, what))
            self.restart.append([owner, what])

    # Called for the module's own class statements while its code runs.
    def build_class(self, func, name, bases, kwds):
        old = self.old_classes.get(name)
        mode = self.mode.get(name)
        if old is None or mode == "rebuild":
            cls = _real_build_class(func, name, *bases, **kwds)
            if old is not None:
                self.say(name, "rebuilt (metaclass %s): objects made before keep the old class" % type(old).__name__)
            if _is_gobject(cls):
                self.made[name] = cls
            return cls
        if mode == "keep":
            return old
        resolved = types.resolve_bases(bases) or (object,)
        meta = kwds.get("metaclass")
        if meta is None:
            meta = type(resolved[0]) if resolved else type
        if isinstance(meta, type):
            for b in resolved:
                if issubclass(type(b), meta):
                    meta = type(b)
        ns = {}
        exec(func.__code__, func.__globals__, ns)
        cell = ns.pop("__classcell__", None)
        if cell is not None:
            cell.cell_contents = old  # zero-argument super() and __class__
        self.plans.append(_Plan(old, ns, resolved, meta))
        return old

    def apply(self, snapshot):
        g = self.module.__dict__
        for k, new in list(g.items()):
            old = snapshot.get(k, _MISSING)
            if old is _MISSING or old is new or isinstance(new, type):
                continue
            try:
                kept, changed = self.take(old, new)
            except Exception as e:  # a bug of this module's: say it, go on
                self.say(k, "could not be applied: %s: %s" % (type(e).__name__, e))
                continue
            if kept:
                g[k] = old
                if changed:
                    self.functions += 1
        for p in self.plans:
            try:
                self.patch(p)
            except Exception as e:  # a bug of this module's: say it, go on
                self.say(p.cls.__qualname__, "could not be applied: %s: %s" % (type(e).__name__, e))

    # take makes old (a module's function, or a wrapper of one) run new's
    # code, and says whether old was kept and whether its code changed.
    def take(self, old, new, depth=0):
        if old is new:
            return True, False
        if isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType):
            if self.ours(old) and self.ours(new):
                inner = list(_wrapped_pairs(old, new)) if depth < 3 else []
                changed = _swap(old, new)
            elif old.__code__ is new.__code__ and depth < 3:
                # A wrapper a decorator of elsewhere made (the same code):
                # what it wraps is in its closure.
                inner = list(_wrapped_pairs(old, new))
                changed = False
            else:
                return False, False
            # A decorator's wrapper keeps calling what its closure holds:
            # the old function, which takes the new code; its other cells
            # take the new values (the decorator's arguments).
            for o, n in inner:
                if isinstance(o, types.CellType):
                    o.cell_contents = n
                    continue
                kept, c = self.take(o, n, depth + 1)
                changed = changed or c
            return True, changed
        if isinstance(old, (staticmethod, classmethod)) and type(old) is type(new):
            return self.take(old.__func__, new.__func__, depth + 1)
        if type(old) is type(new) and hasattr(old, "__wrapped__") and hasattr(new, "__wrapped__") and depth < 3 \
                and not isinstance(old, type):
            # functools.lru_cache and such: the old wrapper stays, the
            # function it wraps takes the new code.
            kept, changed = self.take(old.__wrapped__, new.__wrapped__, depth + 1)
            if kept and changed and hasattr(old, "cache_clear"):
                old.cache_clear()
            return kept, changed
        return False, False

    def ours(self, fn):
        return fn.__globals__ is self.module.__dict__ and _code(fn).co_filename == self.filename

    def patch(self, p):
        cls, ns = p.cls, p.ns
        owner = cls.__qualname__
        if tuple(p.bases) != cls.__bases__ or any(a is not b for a, b in zip(p.bases, cls.__bases__)):
            self.say(owner, "its bases changed (%s -> %s): its code was not changed" % (
                _names(cls.__bases__), _names(p.bases)))
            return
        if p.meta is not type(cls):
            self.say(owner, "its metaclass changed: its code was not changed")
            return
        if owner in self.decorators_changed:
            self.say(owner, "its decorators changed (they did not run again)")
        gobject = _is_gobject(cls)
        if gobject:
            self.check_gobject(cls, ns, owner)
        elif owner in self.decorated and cls.__dict__.get("__annotations__") != ns.get("__annotations__"):
            self.say(owner, "its fields changed (its decorators did not run again)")
        generated = _generated(cls) if gobject else set()
        if cls.__dict__.get("__slots__") != ns.get("__slots__"):
            self.say(owner, "__slots__ changed")
        for k, new in ns.items():
            if k in _BODY_SKIP or k in _DECLARED or k == "__slots__":
                continue
            try:
                self.patch_attr(cls, owner, k, new, gobject, generated)
            except Exception as e:
                self.say(owner, "%s could not be applied: %s: %s" % (k, type(e).__name__, e))
        for k, old in list(cls.__dict__.items()):
            if k in ns or k in generated or not self.defined_here(cls, k, old):
                continue
            if gobject and k.startswith("do_") and _vfunc(cls, k):
                self.say(owner, "%s was removed: GTK keeps calling it" % k)
                continue
            if k == "__init__" and _instances(cls):
                self.say(owner, "__init__ removed (those made already keep what the old one did)")
            try:
                delattr(cls, k)
            except Exception as e:
                self.say(owner, "%s could not be removed: %s: %s" % (k, type(e).__name__, e))
                continue
            self.removed += 1

    def patch_attr(self, cls, owner, k, new, gobject, generated):
        # What type() makes of these functions in a class body.
        if k in ("__init_subclass__", "__class_getitem__") and isinstance(new, types.FunctionType):
            new = classmethod(new)
        elif k == "__new__" and isinstance(new, types.FunctionType):
            new = staticmethod(new)
        tmpl = sys.modules.get("gi._gtktemplate")
        if tmpl is not None and isinstance(new, tmpl.CallThing):
            # A Gtk.Template callback: the decorator (which did not run
            # again) made the class attribute its function.
            handler = new._name or k
            if handler not in getattr(cls, "__gtktemplate_methods__", {}):
                self.say(owner, "template callback '%s' added" % handler)
                return
            new = new._func
        elif tmpl is not None and isinstance(new, tmpl.Child):
            if (new._name or k) not in getattr(cls, "__gtktemplate_widgets__", {}):
                self.say(owner, "template child '%s' added" % (new._name or k))
            return
        old = cls.__dict__.get(k, _MISSING)
        if gobject and _is_gproperty(new):
            self.take_gproperty(old, new)
            return
        if gobject and _is_gsignal(new):
            if _is_gsignal(old) and callable(old.func) and callable(new.func):
                kept, changed = self.take(old.func, new.func)
                self.methods += changed
            return
        if k == "__init__" and isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType) \
                and not _same_code(_code(old), new.__code__):
            n = _instances(cls)
            if n:
                self.say(owner, "__init__ changed (the %d made already keep what the old one did)" % n)
        elif k == "__init__" and (old is _MISSING) != (new is _MISSING) and _instances(cls):
            self.say(owner, "__init__ changed (those made already keep what the old one did)")
        if old is not _MISSING:
            kept, changed = self.take_attr(old, new)
            if kept:
                self.methods += changed
                return
            if callable(new) and k.startswith("do_") and gobject and _vfunc(cls, k) and k not in generated:
                self.say(owner, "%s can no longer be changed in place: GTK keeps calling the old one" % k)
                return
            _set(cls, k, new)
            return
        if gobject and k.startswith("do_") and callable(new) and _vfunc(cls, k):
            self.say(owner, "%s is new: GTK calls it only in a new process" % k)
            return
        _set(cls, k, new)
        if callable(new) or isinstance(new, (staticmethod, classmethod, property)):
            self.added += 1

    def take_attr(self, old, new):
        if isinstance(old, property) and isinstance(new, property):
            changed, kept = False, True
            for a in ("fget", "fset", "fdel"):
                o, n = getattr(old, a), getattr(new, a)
                if o is None and n is None:
                    continue
                if o is None or n is None:
                    return False, False  # replaced by the new property
                k, c = self.take(o, n)
                kept, changed = kept and k, changed or c
            return kept, changed
        return self.take(old, new)

    def defined_here(self, cls, k, v):
        fn = v
        if isinstance(v, (staticmethod, classmethod)):
            fn = v.__func__
        elif isinstance(v, property):
            fn = v.fget
        return isinstance(fn, types.FunctionType) and self.ours(fn) and \
            fn.__qualname__ in ("%s.%s" % (cls.__qualname__, k), "%s.%s" % (cls.__qualname__, fn.__name__))

    # ---- GObject classes: what GLib registered cannot change -------------

    def check_gobject(self, cls, ns, owner):
        if cls.__dict__.get("__gtype_name__") != ns.get("__gtype_name__"):
            self.say(owner, "__gtype_name__ changed (%s -> %s)" % (
                cls.__gtype__.name, ns.get("__gtype_name__", "generated")))
        old = _registered_properties(cls)
        new = _declared_properties(ns)
        for n in new:
            if n not in old:
                self.say(owner, "property '%s' added" % n)
            elif not _same_property(old[n], new[n]):
                self.say(owner, "property '%s' changed" % n)
        for n in old:
            if n not in new:
                self.say(owner, "property '%s' removed" % n)
        old = _registered_signals(cls)
        new = _declared_signals(ns)
        for n in new:
            if n not in old:
                self.say(owner, "signal '%s' added" % n)
            elif old[n] != new[n]:
                self.say(owner, "signal '%s' changed" % n)
        for n in old:
            if n not in new:
                self.say(owner, "signal '%s' removed" % n)

    def take_gproperty(self, old, new):
        """A GObject.Property the class has: its getter and setter take the
        new code (the property itself, registered, cannot change)."""
        if not _is_gproperty(old):
            return
        for a in ("fget", "fset"):
            o, n = getattr(old, a), getattr(new, a)
            if isinstance(n, types.MethodType) and n.__self__ is new:
                # One of the Property's own accessors (the default getter).
                mine = getattr(old, n.__func__.__name__, None)
                if mine is not None and not (isinstance(o, types.MethodType) and o.__self__ is old and
                                             o.__func__ is n.__func__):
                    setattr(old, a, mine)
                continue
            if isinstance(o, types.FunctionType) and isinstance(n, types.FunctionType):
                kept, changed = self.take(o, n)
                if kept:
                    self.methods += changed
                    continue
            setattr(old, a, n)
            self.methods += 1


_MISSING = object()


def _set(cls, k, v):
    if k == "__doc__":
        # type's own setter: PyGObject's metaclass has a read-only __doc__.
        type.__dict__["__doc__"].__set__(cls, v)
        return
    setattr(cls, k, v)
    set_name = getattr(type(v), "__set_name__", None)
    if set_name is not None:
        set_name(v, cls, k)


def _names(bases):
    return "(%s)" % ", ".join(getattr(b, "__qualname__", repr(b)) for b in bases)


def _dump(node):
    if isinstance(node, list):
        return [ast.dump(n) for n in node]
    return ast.dump(node)


def _class_defs(tree):
    """The class statements the module's own frame runs (those at its top
    level, in if/try/with blocks too): name -> [ClassDef]."""
    out = {}
    _walk_block(tree.body, out)
    return out


def _walk_block(stmts, out):
    for s in stmts:
        if isinstance(s, ast.ClassDef):
            out.setdefault(s.name, []).append(s)
        elif not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for field in ("body", "orelse", "finalbody"):
                _walk_block(getattr(s, field, None) or [], out)
            for h in getattr(s, "handlers", None) or []:
                _walk_block(h.body, out)
            for c in getattr(s, "cases", None) or []:
                _walk_block(c.body, out)


# ---- functions ---------------------------------------------------------------


def _code(fn):
    """The code fn runs: its target's when it forwards."""
    target = _target(fn)
    return fn.__code__ if target is None else target.__code__


def _swap(old, new):
    """Makes old run new's code; says whether the code changed (not only
    moved)."""
    changed = not _same_code(_code(old), new.__code__)
    target = _target(old)  # the function old forwards to, if it does
    if target is not None and old.__dict__.get("__wrapped__") is target:
        del old.__wrapped__
    if old.__code__.co_freevars == new.__code__.co_freevars:
        old.__code__ = new.__code__
        old.__defaults__ = new.__defaults__
        old.__kwdefaults__ = new.__kwdefaults__
    else:
        # The closures differ (the new code uses super() where the old one
        # did not, say): old's cells cannot change, so old calls new.
        old.__code__ = _forward(old.__code__.co_freevars)
        old.__defaults__ = None
        old.__kwdefaults__ = {_TARGET: new}
        if "__wrapped__" not in old.__dict__:
            old.__wrapped__ = new  # inspect.signature(old) is new's
    old.__doc__ = new.__doc__
    old.__annotations__ = new.__annotations__
    for k, v in new.__dict__.items():
        if k != "__wrapped__":  # a wrapper's stays what its closure calls
            setattr(old, k, v)
    return changed


def _target(fn):
    if fn.__code__.co_name == _FORWARD and fn.__kwdefaults__ and _TARGET in fn.__kwdefaults__:
        return fn.__kwdefaults__[_TARGET]
    return None


def _forward(freevars):
    """A function's code that calls its keyword default __duet_target__
    with its arguments, with freevars as its free variables (a function's
    code can only be swapped for code with the same ones)."""
    code = _forwards.get(freevars)
    if code is None:
        names = ", ".join(freevars)
        src = "def _outer(%s):\n" \
              "    def %s(*args, %s=None, **kwargs):\n" \
              "        (%s)\n" \
              "        return %s(*args, **kwargs)\n" \
              "    return %s\n" % (names, _FORWARD, _TARGET, names + ("," if len(freevars) == 1 else ""),
                                  _TARGET, _FORWARD)
        ns = {}
        exec(compile(src, "<duet reload forward>", "exec"), ns)
        code = _inner_code(ns["_outer"].__code__)
        assert code.co_freevars == freevars, (code.co_freevars, freevars)
        _forwards[freevars] = code
    return code


def _inner_code(code):
    for c in code.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == _FORWARD:
            return c
    raise AssertionError("no forwarding code")


def _wrapped_pairs(old, new):
    """What a wrapper's closure holds, old and new: (old function, new
    function) for functions, (old cell, new value) for other values that
    changed. A function's own class cell (__class__) is left alone."""
    if not old.__closure__ or not new.__closure__ or old.__code__.co_freevars != new.__code__.co_freevars:
        if callable(getattr(old, "__wrapped__", None)) and callable(getattr(new, "__wrapped__", None)):
            yield old.__wrapped__, new.__wrapped__
        return
    for name, a, b in zip(old.__code__.co_freevars, old.__closure__, new.__closure__):
        if name == "__class__":
            continue
        try:
            o, n = a.cell_contents, b.cell_contents
        except ValueError:
            continue
        if o is n:
            continue
        if isinstance(o, types.FunctionType) and isinstance(n, types.FunctionType):
            yield o, n
        elif not isinstance(o, type):
            yield a, n


def _same_code(a, b):
    """Whether two code objects do the same, wherever their lines are."""
    if a is b:
        return True
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars, a.co_argcount,
            a.co_posonlyargcount, a.co_kwonlyargcount, a.co_flags, a.co_name) != \
            (b.co_code, b.co_names, b.co_varnames, b.co_freevars, b.co_cellvars, b.co_argcount,
             b.co_posonlyargcount, b.co_kwonlyargcount, b.co_flags, b.co_name):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same_code(x, y):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def _instances(cls):
    return sum(1 for o in gc.get_objects() if issubclass(type(o), cls))


# ---- GObject -----------------------------------------------------------------


def _gi():
    return sys.modules.get("gi.types")


def _patchable(meta):
    """Classes whose metaclass is type, ABCMeta or PyGObject's: their
    namespace is what they are, so applying a new one is the reload."""
    if meta is type:
        return True
    abc = sys.modules.get("abc")
    if abc is not None and meta is abc.ABCMeta:
        return True
    gt = _gi()
    return gt is not None and isinstance(meta, type) and issubclass(meta, gt._GObjectMetaBase)


def _is_gobject(cls):
    gt = _gi()
    return gt is not None and isinstance(cls, gt._GObjectMetaBase) and "__gtype__" in cls.__dict__


def _is_gproperty(v):
    ph = sys.modules.get("gi._propertyhelper")
    return ph is not None and isinstance(v, ph.Property)


def _is_gsignal(v):
    sh = sys.modules.get("gi._signalhelper")
    return sh is not None and isinstance(v, sh.Signal)


def _generated(cls):
    """Attributes PyGObject put on the class when it was made: the property
    accessors, a Signal's class closure (do_<signal>)."""
    out = set()
    for k, v in cls.__dict__.items():
        if k in ("do_get_property", "do_set_property") and isinstance(v, types.FunctionType) and \
                v.__qualname__.startswith("install_properties.<locals>."):
            out.add(k)
        if _is_gsignal(v) and v.func is not None:
            fn = "do_" + str(v).replace("-", "_")
            if cls.__dict__.get(fn) is v.func:
                out.add(fn)
    return out


def _vfunc(cls, name):
    """Whether name (do_*) is a virtual function of one of cls's GObject
    bases, which PyGObject binds to the GType when the class is made."""
    gt = _gi()
    if gt is None:
        return False
    from gi._gi import VFuncInfo
    for base in cls.__mro__[1:]:
        if isinstance(getattr(base, name, None), VFuncInfo):
            return True
        info = getattr(base, "__info__", None)
        if info is None or not hasattr(info, "get_vfuncs"):
            continue
        prefix = "do_%s_" % gt.snake_case(info.get_type_name())
        if name.startswith(prefix) and any(v.get_name() == name[len(prefix):] for v in info.get_vfuncs()):
            return True
    return gt.find_vfunc_info_in_interface(cls.__bases__, name[len("do_"):]) is not None


def _gtype(t):
    from gi.repository import GObject
    if t is None:
        return GObject.TYPE_NONE
    return GObject.GType(t)


def _family(gtype):
    from gi.repository import GObject
    f = gtype.fundamental
    if f in (GObject.TYPE_INT, GObject.TYPE_UINT, GObject.TYPE_LONG, GObject.TYPE_ULONG, GObject.TYPE_INT64,
             GObject.TYPE_UINT64, GObject.TYPE_FLOAT, GObject.TYPE_DOUBLE):
        return "range"
    if f in (GObject.TYPE_STRING, GObject.TYPE_BOOLEAN, GObject.TYPE_ENUM, GObject.TYPE_FLAGS,
             GObject.TYPE_VARIANT):
        return "default"
    return "none"


def _registered_properties(cls):
    """The properties cls's GType registered itself: name -> (type name,
    nick, blurb, min, max, default, flags)."""
    out = {}
    for p in cls.list_properties():
        if p.owner_type != cls.__gtype__:
            continue
        fam = _family(p.value_type)
        mn = mx = default = None
        if fam == "range":
            mn, mx, default = p.minimum, p.maximum, p.default_value
        elif fam == "default":
            default = p.default_value
        out[p.name] = (p.value_type.name, p.nick or "", p.blurb or "", mn, mx, default, int(p.flags))
    return out


def _declared_properties(ns):
    """The properties a class body declares, in _registered_properties'
    form."""
    out = {}
    for name, args in dict(ns.get("__gproperties__", {})).items():
        out[name.replace("_", "-")] = _property_args(args)
    for k, v in ns.items():
        if _is_gproperty(v):
            out[(v.name or k).replace("_", "-")] = _property_args(v.get_pspec_args())
    return out


def _property_args(args):
    t = _gtype(args[0])
    mid = tuple(args[3:-1])
    mn = mx = default = None
    if _family(t) == "range" and len(mid) == 3:
        mn, mx, default = mid
    elif _family(t) == "default" and len(mid) == 1:
        default = mid[0]
    return (t.name, args[1] or "", args[2] or "", mn, mx, default, int(args[-1]))


def _same_property(a, b):
    if a[:3] != b[:3] or a[6] != b[6]:
        return False
    for x, y in zip(a[3:6], b[3:6]):
        if isinstance(x, float) or isinstance(y, float):
            if x is None or y is None or abs(float(x) - float(y)) > 1e-6 * max(1.0, abs(float(x))):
                return False
        elif x != y and not (isinstance(x, int) and isinstance(y, int) and int(x) == int(y)):
            return False
    return True


def _registered_signals(cls):
    from gi.repository import GObject
    out = {}
    for n in GObject.signal_list_names(cls.__gtype__):
        q = GObject.signal_query(n, cls.__gtype__)
        out[n] = (int(q.signal_flags), q.return_type.name, tuple(t.name for t in q.param_types))
    return out


def _declared_signals(ns):
    out = {}
    for name, args in dict(ns.get("__gsignals__", {})).items():
        if isinstance(args, str):
            continue  # "override": a base's signal
        out[name.replace("_", "-")] = _signal_args(args)
    for k, v in ns.items():
        if _is_gsignal(v):
            out[(str(v) or k).replace("_", "-")] = _signal_args(v.get_signal_args())
    return out


def _signal_args(args):
    return (int(args[0]), _gtype(args[1]).name, tuple(_gtype(t).name for t in args[2]))
